// KafkaSlotMarkerStore: postgres.slot_marker kafka, the slot marker
// (relay/stored_slot_marker.h) as the newest record keyed "<marker id>/<slot>"
// in the compacted kafka.state_topic, beside the exactly-once checkpoints.
// The marker id (postgres.slot_marker_id) is the identity the operator gives
// the relay (as Debezium keys its offsets by connector name; the Helm chart
// gives one per database entry): no change of the server (pg_upgrade, a
// restore, a rebuilt primary: a new system identifier) changes the key, so
// the marker is found and the system identifier it holds is compared, and
// relays of other clusters sharing the topic with the same slot and
// database names never read each other's marker. Every instance of a pair
// reads and writes the same record, so none needs a disk of its own: a pod
// rescheduled without its volume, or a whole pair replaced, still refuses
// to create a dropped slot anew.
//
// Migration: when no record has the key, Load() reads the one an older
// relay wrote under "<system identifier>/<slot>"; the next Save() writes it
// under the new key (the old record stays, unread once the new one exists).
//
// The topic is created (compacted, one partition, kafka.internal_topics'
// replication) when missing, at the first Load(). Once that check saw the topic
// (or created it, or could not tell), a broker answering "unknown topic"
// (restarting, stale metadata) is Unavailable, never "no marker". Save()
// produces the record with an idempotent producer of its own (never
// enable.gapless.guarantee) and waits for the broker's acknowledgement
// (acks=all); any failure drops that producer, so the next Save() starts from a
// new one (a fatal producer error, a missing WRITE ACL granted later). Kafka
// unreachable within the timeout: Unavailable (the relay retries).
//
// StateTopic is what both the marker store and the pair's control records
// (kafka/control_records.h) use: the topic check at the first read, reads of
// the newest values, and awaited writes with a producer of its own.
//
// Threading: StoredSlotMarker serializes the calls; StateTopic is
// thread-compatible.
#ifndef OUTBOX_KAFKA_STATE_TOPIC_H_
#define OUTBOX_KAFKA_STATE_TOPIC_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "kafka/rdkafka_sink.h"
#include "pg/slot_marker.h"

namespace outbox {

// One compacted state topic (created when missing, at the first read).
class StateTopic {
 public:
  // `what` names the records in errors ("the slot marker").
  StateTopic(KafkaOptions options, std::string topic, int timeout_ms,
             KafkaConfig::InternalTopics internal, std::string what);
  ~StateTopic();

  // The newest value of each of `keys`, in their order.
  absl::StatusOr<std::vector<std::optional<std::string>>> ReadKeys(
      const std::vector<std::string>& keys);
  // The newest value of every key starting with `prefix`, in key order.
  absl::StatusOr<std::map<std::string, std::string>> ReadPrefix(
      const std::string& prefix);
  // Produces `value` under `key` (acks=all) and waits for the broker.
  absl::Status Write(const std::string& key, const std::string& value);

  const std::string& topic() const { return topic_; }
  RdKafkaSink* producer_for_testing() { return producer_.get(); }

 private:
  absl::Status EnsureTopic();
  absl::Status Unchecked(const absl::Status& s) const;
  absl::Status WriteOnce(const std::string& key, const std::string& value);

  const KafkaOptions options_;
  const std::string topic_;
  const int timeout_ms_;
  const KafkaConfig::InternalTopics internal_;
  const std::string what_;
  bool topic_checked_ = false;
  // Why the first read could not check the topic; "" when it could.
  std::string unchecked_;
  std::unique_ptr<RdKafkaSink> producer_;  // made at a Write() without one
};

class KafkaSlotMarkerStore final : public SlotMarkerStore {
 public:
  // `options`: the relay's producer options (brokers, TLS, SASL).
  // `marker_id`: postgres.slot_marker_id (not empty).
  // `internal`: the replication of the topic when it is created
  // (kafka.internal_topics).
  KafkaSlotMarkerStore(KafkaOptions options, std::string topic,
                       std::string marker_id, std::string slot, int timeout_ms,
                       KafkaConfig::InternalTopics internal = {});
  ~KafkaSlotMarkerStore() override;

  // `system_id` names the record of an older relay, read when the marker
  // id's has none.
  absl::StatusOr<std::optional<std::string>> Load(
      const std::string& system_id) override;
  absl::Status Save(const std::string& system_id,
                    const std::string& text) override;
  bool keyed_by_system() const override { return true; }
  bool shared() const override { return true; }
  std::string where(const std::string& system_id) const override;

  // The record's key: "<marker id>/<slot>".
  const std::string& key() const { return key_; }
  // Tests only: the producer the next Save() uses; null before the first
  // Save() and after a failed one dropped it.
  RdKafkaSink* producer_for_testing() { return state_.producer_for_testing(); }

 private:
  const std::string slot_;
  const std::string key_;
  StateTopic state_;
};

}  // namespace outbox

#endif  // OUTBOX_KAFKA_STATE_TOPIC_H_
