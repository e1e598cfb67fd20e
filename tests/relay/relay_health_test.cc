// RelayHealth: what /healthz, /readyz and /activez answer in each role
// (issue 25), with a fake loop-turn time instead of waiting.
#include "relay/relay_health.h"

#include "daemon/lifecycle.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kafka/rdkafka_sink.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace outbox {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kSecond = 1'000'000;
constexpr int64_t kNow = 1000 * kSecond;

class RelayHealthTest : public ::testing::Test {
 protected:
  RelayHealthTest()
      : registry_(std::make_shared<prometheus::Registry>()),
        metrics_(registry_) {
    metrics_.Heartbeat(kNow);
  }
  HealthState Health(int64_t idle_us = 0) {
    return RelayHealth(metrics_, config_, kNow + idle_us);
  }
  std::string Scrape() {
    return prometheus::TextSerializer().Serialize(registry_->Collect());
  }

  Config config_;
  std::shared_ptr<prometheus::Registry> registry_;
  RelayMetrics metrics_;
};

TEST_F(RelayHealthTest, AHealthyStandbyIsAliveAndReadyButNotActive) {
  metrics_.role().Set(Role::kStandby, /*slot_held_elsewhere=*/true);
  HealthState h = Health();
  EXPECT_TRUE(h.alive);
  EXPECT_TRUE(h.ready);
  EXPECT_FALSE(h.active);
  EXPECT_EQ(h.role, "standby");
  EXPECT_THAT(h.detail, HasSubstr("held by another instance"));
  const std::string text = Scrape();
  EXPECT_THAT(text, HasSubstr("outbox_relay_role{role=\"standby\"} 1"));
  EXPECT_THAT(text, HasSubstr("outbox_relay_role{role=\"active\"} 0"));
  EXPECT_THAT(text, HasSubstr("outbox_relay_ready 1"));
}

TEST_F(RelayHealthTest, AStandbyThatCannotReachPostgresIsNotReady) {
  metrics_.role().Set(Role::kStandby, /*slot_held_elsewhere=*/false);
  HealthState h = Health();
  EXPECT_TRUE(h.alive);
  EXPECT_FALSE(h.ready);
  EXPECT_THAT(Scrape(), HasSubstr("outbox_relay_ready 0"));
}

TEST_F(RelayHealthTest, TheActiveInstanceIsActiveWhileStreaming) {
  metrics_.role().Set(Role::kActive);
  EXPECT_FALSE(Health().active);  // holds the slot, not streaming yet
  metrics_.SetStreaming(true);
  HealthState h = Health();
  EXPECT_TRUE(h.ready);
  EXPECT_TRUE(h.active);
  EXPECT_EQ(h.role, "active");
  metrics_.role().Set(Role::kDraining);
  EXPECT_FALSE(Health().active);
  EXPECT_THAT(Scrape(), HasSubstr("outbox_relay_role{role=\"draining\"} 1"));
}

// Exactly once, a Kafka commit or abort (up to the producer's transaction
// timeout) comes after the session's final flush (flush_timeout_ms): the
// loop may be away for both, longer than the at-least-once window
// (max(connect_timeout_s, flush_timeout_ms) + 5 s), and is still alive.
// Fails on 6593be9, where /healthz declared the loop dead after
// connect_timeout_s + 5 s, and whenever exactly once stops widening the
// window.
TEST_F(RelayHealthTest, AnExactlyOnceRelayWaitingOnAKafkaCommitIsAlive) {
  metrics_.role().Set(Role::kActive);
  // A flush followed by a whole transaction timeout, just under the sum.
  const int64_t flush_then_commit_us =
      (config_.kafka.flush_timeout_ms + KafkaOptions{}.transaction_timeout_ms) *
          1000 -
      kSecond;
  // At least once, that long is a wedged loop ...
  ASSERT_GT(flush_then_commit_us, RelayAliveWindowUs(config_));
  EXPECT_FALSE(Health(flush_then_commit_us).alive);
  // ... exactly once, it is a commit waiting on Kafka.
  config_.kafka.exactly_once = true;
  EXPECT_TRUE(Health(flush_then_commit_us).alive);
  // A connect timeout longer than the transaction timeout widens it too.
  config_.postgres.connect_timeout_s = 60;
  EXPECT_TRUE(Health((config_.kafka.flush_timeout_ms + 60'000) * 1000).alive);
  // A wedged loop is still found out.
  HealthState h = Health(300 * kSecond);
  EXPECT_FALSE(h.alive);
  EXPECT_THAT(h.detail, HasSubstr("has not turned for 300 s"));
}

// Opening a session with the Kafka slot marker during a Kafka outage: the
// connect, the marker's topic check, read and write, each up to its timeout,
// outlast the loop's window; the supervisor is alive while it is in that
// bounded call, and dead once the call overruns its bound.
TEST_F(RelayHealthTest, ASupervisorOpeningASessionIsAliveForItsBound) {
  config_.postgres.slot_marker = SlotMarkerBackend::kKafka;
  const int64_t open_us = (config_.postgres.connect_timeout_s * 1000 +
                           3 * config_.kafka.flush_timeout_ms) *
                          1000;
  ASSERT_GT(open_us, RelayAliveWindowUs(config_));
  EXPECT_FALSE(Health(open_us).alive);  // nothing says it is busy
  metrics_.BusyUntil(kNow + SessionOpenBoundUs(config_));
  EXPECT_TRUE(Health(open_us).alive);
  EXPECT_FALSE(Health(SessionOpenBoundUs(config_) + kSecond).alive);
  metrics_.BusyUntil(0);  // the call returned
  EXPECT_FALSE(Health(open_us).alive);
}

TEST_F(RelayHealthTest, TheLifecycleMovesTheRole) {
  std::atomic<bool> stop{false};
  Lifecycle lifecycle(config_.postgres, stop, &metrics_.role(),
                      &metrics_.daemon_status());
  EXPECT_EQ(metrics_.role().role(), Role::kStandby);
  lifecycle.Activate();
  EXPECT_EQ(metrics_.role().role(), Role::kActive);
  lifecycle.Drain();
  EXPECT_EQ(metrics_.role().role(), Role::kDraining);
  stop = true;  // RetryAfter returns at once
  lifecycle.RetryAfter("PostgreSQL", absl::UnavailableError("in use"),
                       /*slot_held_elsewhere=*/true);
  EXPECT_EQ(metrics_.role().role(), Role::kStandby);
  EXPECT_TRUE(metrics_.role().slot_held_elsewhere());
  StatusSnapshot s;
  metrics_.daemon_status().Fill(&s);
  EXPECT_THAT(*s.postgres_state, HasSubstr("retry in 1000 ms"));
  EXPECT_EQ(lifecycle.Stop(3), 3);
  EXPECT_EQ(metrics_.role().role(), Role::kStopped);
}

}  // namespace
}  // namespace outbox
