// kafka.properties that would weaken the delivery guarantees are refused at
// configuration load, one line naming the key and the reason, unless
// kafka.allow_unsafe accepts them (each then logged as a warning).
#include "config/kafka_safety.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "config/command_line.h"
#include "config/config.h"
#include "daemon/daemon_start.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

absl::StatusOr<Config> WithProperty(const std::string& name,
                                    const std::string& value,
                                    const std::string& extra = "") {
  return ParseConfigYaml(absl::StrCat("kafka:\n  properties:\n    ", name,
                                      ": \"", value, "\"\n", extra),
                         "relay.yaml");
}

struct Case {
  const char* name;
  const char* value;
  const char* why;  // a word of the reason
};

const Case kUnsafe[] = {
    {"acks", "1", "in-sync replica"},
    {"acks", "0", "in-sync replica"},
    {"request.required.acks", "1", "in-sync replica"},
    {"enable.idempotence", "false", "idempotent"},
    {"enable.idempotence", "0", "idempotent"},
    {"enable.idempotence", "F", "idempotent"},
    {"max.in.flight", "6", "at most 5"},
    {"max.in.flight.requests.per.connection", "1000000", "at most 5"},
    {"message.timeout.ms", "300000", "times out"},
    {"delivery.timeout.ms", "120000", "times out"},
    {"retries", "3", "retries"},
    {"message.send.max.retries", "0x10", "retries"},
    {"queuing.strategy", "lifo", "newer records first"},
    {"partitioner", "random", "per-key order"},
    {"delivery.report.only.error", "true", "confirm"},
    {"test.mock.num.brokers", "3", "mock"},
};

TEST(KafkaSafetyTest, EachUnsafePropertyIsRefusedInOneLineNamingIt) {
  for (const Case& c : kUnsafe) {
    SCOPED_TRACE(absl::StrCat(c.name, "=", c.value));
    auto config = WithProperty(c.name, c.value);
    ASSERT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
    std::string message(config.status().message());
    EXPECT_THAT(message,
                HasSubstr(absl::StrCat("\"kafka.properties.", c.name, "\"")));
    EXPECT_THAT(message, HasSubstr(absl::StrCat("\"", c.value, "\"")));
    EXPECT_THAT(message, HasSubstr(c.why));
    EXPECT_THAT(message, HasSubstr("kafka.allow_unsafe"));
    EXPECT_THAT(message, Not(HasSubstr("\n")));
  }
}

TEST(KafkaSafetyTest, SafeValuesAndOtherPropertiesAreAccepted) {
  const std::pair<const char*, const char*> kSafe[] = {
      {"acks", "all"},
      {"acks", "ALL"},
      {"acks", "-1"},
      {"request.required.acks", "all"},
      {"enable.idempotence", "true"},
      {"max.in.flight", "5"},
      {"max.in.flight.requests.per.connection", "1"},
      {"message.timeout.ms", "0"},
      {"delivery.timeout.ms", "0"},
      {"retries", "2147483647"},
      {"queuing.strategy", "fifo"},
      {"partitioner", "murmur2"},
      {"partitioner", "consistent_random"},
      {"enable.gapless.guarantee", "true"},
      {"message.max.bytes", "2000000"},
      {"linger.ms", "100"},
      {"delivery.report.only.error", "false"},
  };
  for (const auto& [name, value] : kSafe) {
    SCOPED_TRACE(absl::StrCat(name, "=", value));
    auto config = WithProperty(name, value);
    EXPECT_TRUE(config.ok()) << config.status();
  }
  EXPECT_THAT(UnsafeKafkaProperties(Config{}.kafka.properties), IsEmpty());
}

TEST(KafkaSafetyTest, GaplessGuaranteeDoesNotMakeATimeoutSafe) {
  // librdkafka: "enable.gapless.guarantee does not apply to timed-out
  // messages".
  auto config = WithProperty("message.timeout.ms", "60000",
                             "    enable.gapless.guarantee: \"true\"\n");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr("gapless"));
}

TEST(KafkaSafetyTest, EveryAliasIsChecked) {
  // The safe name does not hide the unsafe alias, whichever librdkafka
  // applies last.
  auto config = ParseConfigYaml(
      "kafka:\n  properties: {acks: all, request.required.acks: 1}\n",
      "relay.yaml");
  EXPECT_THAT(config.status().message(),
              HasSubstr("kafka.properties.request.required.acks"));
}

TEST(KafkaSafetyTest, AllowUnsafeAcceptsAndListsThem) {
  auto config = ParseConfigYaml(
      "kafka:\n  allow_unsafe: true\n  properties: {acks: 1, retries: 3}\n",
      "relay.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->kafka.allow_unsafe);
  auto unsafe = UnsafeKafkaProperties(config->kafka.properties);
  ASSERT_EQ(unsafe.size(), 2u);
  EXPECT_EQ(unsafe[0].name, "acks");
  EXPECT_EQ(unsafe[1].name, "retries");
}

// Runs StartDaemon on the arguments; returns its exit code (-1: none).
int Start(std::vector<std::string> args, std::string* stderr_text) {
  args.insert(args.begin(), "outbox-relay");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  static std::atomic<bool> stop{false};
  ::testing::internal::CaptureStderr();
  DaemonStart start = StartDaemon(Tool::kRelay, static_cast<int>(argv.size()),
                                  argv.data(), &stop);
  *stderr_text = ::testing::internal::GetCapturedStderr();
  return start.exit_code.value_or(-1);
}

TEST(KafkaSafetyTest, DaemonsExitTwoOrWarnWhenAllowed) {
  std::string err;
  EXPECT_EQ(Start({"--set", "kafka.properties.acks=1"}, &err), 2);
  EXPECT_THAT(err, HasSubstr("kafka.properties.acks"));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;

  EXPECT_EQ(Start({"--set", "kafka.properties.acks=1", "--set",
                   "kafka.allow_unsafe=true"},
                  &err),
            -1);
  EXPECT_THAT(err, HasSubstr("WARN unsafe Kafka property accepted"));
  EXPECT_THAT(err, HasSubstr("property=acks"));
}

}  // namespace
}  // namespace outbox
