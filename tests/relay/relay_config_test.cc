// DeriveRelayConfig (relay/relay_config.h): what each session's options
// are derived from, computed once.
#include "relay/relay_config.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "relay/heartbeat.h"

namespace outbox {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

absl::StatusOr<RelayConfig> Derive(const Config& config) {
  auto router = Router::Create(config);
  EXPECT_TRUE(router.ok()) << router.status();
  return DeriveRelayConfig(config, **router);
}

TEST(RelayConfigTest, TheHeartbeatPrefixIsTheRelays) {
  Config config;
  config.outbox.messages.enabled = true;
  config.outbox.messages.prefix = kHeartbeatPrefix;
  absl::StatusOr<RelayConfig> r = Derive(config);
  ASSERT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("heartbeat prefix"));
}

TEST(RelayConfigTest, LingerIsTheBatchingDelay) {
  Config config;  // kafka.properties' default linger.ms
  EXPECT_EQ(Derive(config)->pipeline.batching_delay_us,
            static_cast<int64_t>(
                std::stod(config.kafka.properties.at("linger.ms")) * 1000));
  config.kafka.properties["linger.ms"] = "2.5";
  EXPECT_EQ(Derive(config)->pipeline.batching_delay_us, 2500);
  config.kafka.properties["queue.buffering.max.ms"] = "7";      // the alias
  EXPECT_EQ(Derive(config)->pipeline.batching_delay_us, 2500);  // the name's
  config.kafka.properties.erase("linger.ms");
  EXPECT_EQ(Derive(config)->pipeline.batching_delay_us, 7000);
  config.kafka.properties.erase("queue.buffering.max.ms");
  EXPECT_EQ(Derive(config)->pipeline.batching_delay_us,
            RelayOptions().batching_delay_us);  // librdkafka's default
}

TEST(RelayConfigTest, TransactionsSplitWellBeforeTheBrokerAborts) {
  Config config;
  EXPECT_EQ(Derive(config)->transactions.timeout_ms, 60000);
  EXPECT_EQ(Derive(config)->transactions.split_ms, 20000);
  config.kafka.properties["transaction.timeout.ms"] = "9000";
  EXPECT_EQ(TransactionTimeoutMs(config), 9000);
  EXPECT_EQ(Derive(config)->transactions.split_ms, 3000);
}

TEST(RelayConfigTest, PluginOptions) {
  Config config;
  config.postgres.pgoutput_binary = PgOutputBinary::kOff;
  config.postgres.heartbeat_interval_s = 10;
  RelayConfig r = *Derive(config);
  EXPECT_EQ(r.plugin.binary, PluginOptions::Binary::kOff);
  EXPECT_THAT(r.plugin.message_prefixes, Contains(kHeartbeatPrefix));
  EXPECT_EQ(r.plugin.tables.size(), r.stream.tables.size());
  EXPECT_EQ(r.stream.slot, config.postgres.slot);
  EXPECT_EQ(r.stream.slot_marker, nullptr);  // the supervisor's to set
}

}  // namespace
}  // namespace outbox
