#include "kafka/state_topic.h"

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "core/checkpoint.h"
#include "kafka/checkpoint_reader.h"
#include "kafka/checkpoint_topic.h"

namespace outbox {

KafkaSlotMarkerStore::KafkaSlotMarkerStore(KafkaOptions options,
                                           std::string topic, std::string slot,
                                           int timeout_ms)
    : options_(std::move(options)),
      topic_(std::move(topic)),
      slot_(std::move(slot)),
      timeout_ms_(timeout_ms) {}

KafkaSlotMarkerStore::~KafkaSlotMarkerStore() = default;

std::string KafkaSlotMarkerStore::Key(const std::string& system_id) const {
  return Checkpoint::Key(system_id, slot_);
}

std::string KafkaSlotMarkerStore::where(const std::string& system_id) const {
  return absl::StrCat("the record keyed ", Key(system_id), " in Kafka topic ",
                      topic_, " (postgres.slot_marker kafka)");
}

absl::StatusOr<std::optional<std::string>> KafkaSlotMarkerStore::Load(
    const std::string& system_id) {
  if (!topic_checked_) {
    absl::StatusOr<CheckpointTopicState> t =
        EnsureCheckpointTopic(options_, topic_, timeout_ms_);
    if (absl::IsUnavailable(t.status())) return t.status();
    topic_checked_ = true;
    if (!t.ok()) {
      // Maybe only creating or describing is denied: reading may work.
      Log(Severity::kWarn, std::string(t.status().message()),
          {{"state_topic", topic_}});
    } else if (t->created) {
      Log(Severity::kInfo, "created the state topic",
          {{"topic", topic_}, {"cleanup.policy", t->cleanup_policy}});
    } else if (!t->compacted()) {
      Log(Severity::kWarn,
          "the state topic is not compacted: retention may delete the slot "
          "marker, and with it the guard against creating a dropped slot "
          "anew; set cleanup.policy=compact on it",
          {{"topic", topic_}, {"cleanup.policy", t->cleanup_policy}});
    }
  }
  return ReadLatestValue(options_, topic_, Key(system_id), timeout_ms_,
                         "state topic");
}

absl::Status KafkaSlotMarkerStore::Save(const std::string& system_id,
                                        const std::string& text) {
  if (producer_ == nullptr) {
    KafkaOptions o = options_;
    o.on_connection_state = nullptr;
    o.transactional_id.clear();
    o.properties["client.id"] = "outbox-relay-state";
    absl::StatusOr<std::unique_ptr<RdKafkaSink>> p = RdKafkaSink::Create(o);
    if (!p.ok()) return p.status();
    producer_ = std::move(*p);
  }
  absl::Status delivered = absl::UnavailableError("no delivery report");
  producer_->SetDeliveryHandler(
      [&delivered](const DeliveryReport& r) { delivered = r.status; });
  const std::string key = Key(system_id);
  Record record;
  record.topic = topic_;
  record.key = key;
  record.value = text;
  if (absl::Status s = producer_->Produce(record, 0); !s.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "cannot write the slot marker to ", topic_, ": ", s.message()));
  }
  if (absl::Status f = producer_->Flush(timeout_ms_); !f.ok()) {
    // Not acknowledged in time: drop it (a later Save() writes the newer
    // marker) rather than let it land after that one.
    producer_->Purge();
    producer_->Poll(0);
    producer_.reset();
    return absl::UnavailableError(absl::StrCat(
        "cannot write the slot marker to ", topic_, ": ", f.message()));
  }
  if (!delivered.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "cannot write the slot marker to ", topic_, ": ", delivered.message()));
  }
  return absl::OkStatus();
}

}  // namespace outbox
