// KafkaSlotMarkerStore: postgres.slot_marker kafka, the slot marker
// (relay/stored_slot_marker.h) as the newest record keyed "<system
// identifier>/<slot>" in the compacted kafka.state_topic, beside the
// exactly-once checkpoints. Every instance of a pair reads and writes the
// same record, so none needs a disk of its own: a pod rescheduled without
// its volume, or a whole pair replaced, still refuses to create a dropped
// slot anew.
//
// The topic is created (compacted, one partition) when missing, at the
// first Load(). Save() produces the record with an idempotent producer and
// waits for the broker's acknowledgement (acks=all). Kafka unreachable
// within the timeout: Unavailable (the relay retries the session).
//
// Threading: StoredSlotMarker serializes the calls.
#ifndef OUTBOX_KAFKA_STATE_TOPIC_H_
#define OUTBOX_KAFKA_STATE_TOPIC_H_

#include <memory>
#include <string>

#include "kafka/rdkafka_sink.h"
#include "pg/slot_marker.h"

namespace outbox {

class KafkaSlotMarkerStore final : public SlotMarkerStore {
 public:
  // `options`: the relay's producer options (brokers, TLS, SASL).
  KafkaSlotMarkerStore(KafkaOptions options, std::string topic,
                       std::string slot, int timeout_ms);
  ~KafkaSlotMarkerStore() override;

  absl::StatusOr<std::optional<std::string>> Load(
      const std::string& system_id) override;
  absl::Status Save(const std::string& system_id,
                    const std::string& text) override;
  bool keyed_by_system() const override { return true; }
  std::string where(const std::string& system_id) const override;

 private:
  std::string Key(const std::string& system_id) const;

  const KafkaOptions options_;
  const std::string topic_;
  const std::string slot_;
  const int timeout_ms_;
  bool topic_checked_ = false;
  std::unique_ptr<RdKafkaSink> producer_;  // made at the first Save()
};

}  // namespace outbox

#endif  // OUTBOX_KAFKA_STATE_TOPIC_H_
