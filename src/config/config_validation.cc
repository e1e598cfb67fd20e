#include "config/config_validation.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "config/kafka_safety.h"
#include "config/redact.h"
#include "outbox/lsn.h"

namespace outbox {

absl::Status ConfigKeyError(absl::string_view source, absl::string_view path,
                            absl::string_view message, int line) {
  return absl::InvalidArgumentError(
      absl::StrCat(source, ": \"", path, "\": ", message,
                   line >= 0 ? absl::StrCat(" (line ", line + 1, ")") : ""));
}

absl::Status InvalidConfigValue(absl::string_view path,
                                absl::string_view message) {
  return ConfigKeyError("config", path, message);
}

absl::Status ValidateConfig(const Config& c) {
  if (!IsValidSlotName(c.postgres.slot)) {
    return InvalidConfigValue(
        "postgres.slot",
        absl::StrCat("\"", c.postgres.slot,
                     "\" is not a slot name (1-63 of a-z, 0-9, _)"));
  }
  for (const auto& [key, conninfo] :
       {std::pair{"postgres.conninfo", &c.postgres.conninfo},
        std::pair{"postgres.standby_conninfo", &c.postgres.standby_conninfo}}) {
    if (absl::Status s = CheckConninfoSecrets(*conninfo); !s.ok()) {
      return InvalidConfigValue(key, s.message());
    }
  }
  for (const auto& [key, value] :
       {std::pair{"kafka.topic_creation.partitions",
                  c.kafka.topic_creation.partitions},
        std::pair{"kafka.topic_creation.replication_factor",
                  c.kafka.topic_creation.replication_factor},
        std::pair{"kafka.internal_topics.replication_factor",
                  c.kafka.internal_topics.replication_factor},
        std::pair{"kafka.internal_topics.min_insync_replicas",
                  c.kafka.internal_topics.min_insync_replicas}}) {
    if (value == 0)
      return InvalidConfigValue(key, "0 (use -1 for the broker's default)");
  }
  if (const KafkaConfig::InternalTopics& it = c.kafka.internal_topics;
      it.replication_factor > 0 &&
      it.min_insync_replicas > it.replication_factor) {
    return InvalidConfigValue(
        "kafka.internal_topics.min_insync_replicas",
        absl::StrCat(it.min_insync_replicas,
                     " is above kafka.internal_topics.replication_factor ",
                     it.replication_factor,
                     ": no write to those topics could ever succeed"));
  }
  if (!c.postgres.acknowledge_slot_loss.empty() &&
      !ParseLsn(c.postgres.acknowledge_slot_loss).ok()) {
    return InvalidConfigValue(
        "postgres.acknowledge_slot_loss",
        absl::StrCat("\"", c.postgres.acknowledge_slot_loss,
                     "\" is not an LSN (like 0/16B3748)"));
  }
  if (c.kafka.state_topic == c.kafka.checkpoint_topic) {
    return InvalidConfigValue(
        "kafka.state_topic",
        absl::StrCat("\"", c.kafka.state_topic,
                     "\" is kafka.checkpoint_topic too: slot markers and "
                     "exactly-once checkpoints need topics of their own (each "
                     "would read the other's records); name another"));
  }
  if (c.postgres.slot_marker == SlotMarkerBackend::kKafka &&
      c.postgres.slot_marker_id.empty()) {
    return InvalidConfigValue(
        "postgres.slot_marker_id",
        "must be set when postgres.slot_marker is kafka: a name for this "
        "relay, unique among the relays sharing kafka.state_topic (the Helm "
        "chart sets it); it keys the slot marker");
  }
  if (c.postgres.reconnect_backoff_max_ms <
      c.postgres.reconnect_backoff_initial_ms) {
    return InvalidConfigValue(
        "postgres.reconnect_backoff_max_ms",
        "must be at least postgres.reconnect_backoff_initial_ms");
  }
  if (c.outbox.on_invalid == OnInvalid::kDeadLetter &&
      c.outbox.dead_letter_topic.empty()) {
    return InvalidConfigValue(
        "outbox.dead_letter_topic",
        "must be set when outbox.on_invalid is dead_letter");
  }
  if (c.postgres.heartbeat_interval_s > 0 &&
      c.postgres.heartbeat_timeout_s <= c.postgres.heartbeat_interval_s) {
    return InvalidConfigValue(
        "postgres.heartbeat_timeout_s",
        "must be longer than postgres.heartbeat_interval_s");
  }
  if (c.outbox.messages.enabled && c.outbox.messages.prefix.empty()) {
    return InvalidConfigValue(
        "outbox.messages.prefix",
        "must be set when outbox.messages.enabled is true");
  }
  if (c.kafka.brokers.empty())
    return InvalidConfigValue("kafka.brokers", "is empty");
  for (absl::string_view p : {"bootstrap.servers", "metadata.broker.list"}) {
    if (c.kafka.properties.count(std::string(p)) > 0) {
      return InvalidConfigValue(absl::StrCat("kafka.properties.", p),
                                "use kafka.brokers instead");
    }
  }
  if (!c.kafka.allow_unsafe) {
    std::vector<UnsafeKafkaProperty> unsafe =
        UnsafeKafkaProperties(c.kafka.properties);
    if (!unsafe.empty()) {
      const UnsafeKafkaProperty& u = unsafe.front();
      return InvalidConfigValue(
          absl::StrCat("kafka.properties.", u.name),
          absl::StrCat("\"", u.value, "\" ", u.reason,
                       "; remove it, or set kafka.allow_unsafe: "
                       "true to accept the risk"));
    }
  }
  if (!c.http.listen.empty()) {
    size_t colon = c.http.listen.rfind(':');
    int port = 0;
    if (colon == std::string::npos ||
        !absl::SimpleAtoi(absl::string_view(c.http.listen).substr(colon + 1),
                          &port) ||
        port < 0 || port > 65535) {
      return InvalidConfigValue(
          "http.listen",
          absl::StrCat("\"", c.http.listen, "\" is not host:port"));
    }
  }
  if (c.poller.backoff_max_ms < c.poller.backoff_initial_ms) {
    return InvalidConfigValue("poller.backoff_max_ms",
                              "must be at least poller.backoff_initial_ms");
  }
  if (c.poller.notify && c.poller.notify_channel.empty()) {
    return InvalidConfigValue("poller.notify_channel",
                              "must be set when poller.notify is true");
  }
  return absl::OkStatus();
}

}  // namespace outbox
