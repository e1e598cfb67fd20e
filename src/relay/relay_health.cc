#include "relay/relay_health.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kafka/rdkafka_sink.h"

namespace outbox {
namespace {

// Slack on top of the longest blocking call: a loop turn is <= 100 ms.
constexpr int64_t kAliveSlackUs = 5'000'000;

}  // namespace

int64_t RelayAliveWindowUs(const Config& config) {
  // The calls that block the supervisor or the loop, each bounded: a
  // connect (connect_timeout_s); the final flush of a session
  // (flush_timeout_ms); exactly once, a Kafka commit or abort, or
  // init_transactions (the producer's transaction timeout), after that
  // flush at a session's end.
  int64_t longest_ms = std::max(config.postgres.connect_timeout_s * 1000,
                                config.kafka.flush_timeout_ms);
  if (config.kafka.exactly_once) {
    longest_ms = config.kafka.flush_timeout_ms +
                 std::max<int64_t>(KafkaOptions{}.transaction_timeout_ms,
                                   config.postgres.connect_timeout_s * 1000);
  }
  return kAliveSlackUs + longest_ms * 1000;
}

int64_t SessionOpenBoundUs(const Config& config) {
  const int64_t flush_ms = config.kafka.flush_timeout_ms;
  int64_t bound_ms = config.postgres.connect_timeout_s * 1000;
  if (config.postgres.slot_marker == SlotMarkerBackend::kKafka) {
    bound_ms += 3 * flush_ms;
  }
  bound_ms += config.kafka.exactly_once
                  ? KafkaOptions{}.transaction_timeout_ms + flush_ms
                  : flush_ms;
  return kAliveSlackUs + bound_ms * 1000;
}

HealthState RelayHealth(const RelayMetrics& metrics, const Config& config,
                        int64_t now_us) {
  HealthState h;
  const Role role = metrics.role().role();
  h.role = std::string(RoleName(role));
  const int64_t idle_us = now_us - metrics.last_turn_us();
  h.alive =
      idle_us < RelayAliveWindowUs(config) || now_us < metrics.busy_until_us();
  std::string slot_problem = metrics.slot_problem();
  // Paused (POST /pause), nothing is read, so no heartbeat comes back.
  if (slot_problem.empty() && config.postgres.heartbeat_interval_s > 0 &&
      !metrics.paused()) {
    slot_problem = metrics.heartbeat_problem(
        now_us, config.postgres.heartbeat_timeout_s * 1'000'000);
  }
  h.active = h.alive && role == Role::kActive && metrics.ready() &&
             slot_problem.empty();
  const bool healthy_standby =
      role == Role::kStandby && metrics.role().slot_held_elsewhere();
  h.ready = h.active || (h.alive && healthy_standby);
  if (!h.alive) {
    h.detail = absl::StrCat("relay loop has not turned for ",
                            idle_us / 1'000'000, " s");
  } else if (!slot_problem.empty() && role == Role::kActive) {
    h.detail = slot_problem;
  } else if (h.active && metrics.paused()) {
    h.detail = absl::StrCat("active: paused, holding slot ",
                            config.postgres.slot, " (POST /resume continues)");
  } else if (h.active) {
    h.detail =
        absl::StrCat("active: streaming from slot ", config.postgres.slot);
  } else if (healthy_standby) {
    h.detail = absl::StrCat("standby: slot ", config.postgres.slot,
                            " is held by another instance");
  } else if (role == Role::kDraining || role == Role::kStopped) {
    h.detail = absl::StrCat(RoleName(role), ": ending the session on slot ",
                            config.postgres.slot);
  } else {
    h.detail = absl::StrCat("not streaming from slot ", config.postgres.slot,
                            " (connecting or waiting to reconnect)");
  }
  return h;
}

}  // namespace outbox
