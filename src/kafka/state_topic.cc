#include "kafka/state_topic.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "core/checkpoint.h"
#include "kafka/checkpoint_reader.h"
#include "kafka/checkpoint_topic.h"

namespace outbox {

StateTopic::StateTopic(KafkaOptions options, std::string topic, int timeout_ms,
                       KafkaConfig::InternalTopics internal, std::string what)
    : options_(std::move(options)),
      topic_(std::move(topic)),
      timeout_ms_(timeout_ms),
      internal_(internal),
      what_(std::move(what)) {}

StateTopic::~StateTopic() = default;

absl::Status StateTopic::EnsureTopic() {
  if (topic_checked_) return absl::OkStatus();
  absl::StatusOr<CheckpointTopicState> t = EnsureCheckpointTopic(
      options_, topic_, internal_, timeout_ms_, "state topic");
  if (absl::IsUnavailable(t.status())) return t.status();
  topic_checked_ = true;
  if (!t.ok()) {
    // Maybe only creating or describing is denied: reading may work.
    Log(Severity::kWarn, std::string(t.status().message()),
        {{"state_topic", topic_}});
    unchecked_ = std::string(t.status().message());
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
  return absl::OkStatus();
}

absl::Status StateTopic::Unchecked(const absl::Status& s) const {
  if (!absl::IsUnavailable(s) || unchecked_.empty()) return s;
  return absl::UnavailableError(absl::StrCat(
      s.message(), "; whether it exists could not be checked: ", unchecked_));
}

// The topic exists (seen or created), or whether it does could not be
// checked: either way "unknown topic" is a broker that does not know it
// yet, not "no record".
absl::StatusOr<std::vector<std::optional<std::string>>> StateTopic::ReadKeys(
    const std::vector<std::string>& keys) {
  if (absl::Status s = EnsureTopic(); !s.ok()) return s;
  absl::StatusOr<std::vector<std::optional<std::string>>> values =
      ReadLatestValues(options_, topic_, keys, timeout_ms_, "state topic",
                       /*topic_exists=*/true);
  if (!values.ok()) return Unchecked(values.status());
  return values;
}

absl::StatusOr<std::map<std::string, std::string>> StateTopic::ReadPrefix(
    const std::string& prefix) {
  if (absl::Status s = EnsureTopic(); !s.ok()) return s;
  absl::StatusOr<std::map<std::string, std::string>> values =
      ReadLatestValuesWithPrefix(options_, topic_, prefix, timeout_ms_,
                                 "state topic", /*topic_exists=*/true);
  if (!values.ok()) return Unchecked(values.status());
  return values;
}

absl::Status StateTopic::Write(const std::string& key,
                               const std::string& value) {
  absl::Status s = WriteOnce(key, value);
  if (!s.ok() && producer_ != nullptr) {
    // Whatever failed (a refused Produce(), a delivery error, a fatal
    // producer error, a timeout), the next Write() starts from a new
    // producer: nothing of this one's state (an idempotence sequence gone
    // wrong, a fatal error) can stall the records until a restart. Purged,
    // the record cannot land after a newer one.
    producer_->Purge();
    producer_->Poll(0);
    producer_.reset();
  }
  return s;
}

absl::Status StateTopic::WriteOnce(const std::string& key,
                                   const std::string& value) {
  if (producer_ == nullptr) {
    KafkaOptions o = options_;
    o.on_connection_state = nullptr;
    o.on_statistics = nullptr;  // the relay's producer's, not this one's
    o.transactional_id.clear();
    o.properties["client.id"] = "outbox-relay-state";
    // One record at a time, each awaited: nothing to keep in order behind a
    // refused one, and a gapless producer's fatal error would outlive the
    // cause (relay_config.cc sets it for the events under on_invalid halt).
    o.properties.erase("enable.gapless.guarantee");
    absl::StatusOr<std::unique_ptr<RdKafkaSink>> p = RdKafkaSink::Create(o);
    if (!p.ok()) return p.status();
    producer_ = std::move(*p);
  }
  const auto failed = [this](absl::string_view why) {
    return absl::UnavailableError(
        absl::StrCat("cannot write ", what_, " to ", topic_, ": ", why));
  };
  if (absl::Status h = producer_->health(); !h.ok()) return failed(h.message());
  // Shared: Write() purges after a failure, which reports after this returns.
  auto delivered = std::make_shared<absl::Status>(
      absl::UnavailableError("no delivery report"));
  producer_->SetDeliveryHandler(
      [delivered](const DeliveryReport& r) { *delivered = r.status; });
  Record record;
  record.topic = topic_;
  record.key = key;
  record.value = value;
  if (absl::Status s = producer_->Produce(record, 0); !s.ok()) {
    return failed(s.message());
  }
  if (absl::Status f = producer_->Flush(timeout_ms_); !f.ok()) {
    // Not acknowledged in time: Write() drops it (a later Write() writes the
    // newer record) rather than let it land after that one.
    return failed(f.message());
  }
  if (!delivered->ok()) return failed(delivered->message());
  return absl::OkStatus();
}

KafkaSlotMarkerStore::KafkaSlotMarkerStore(KafkaOptions options,
                                           std::string topic,
                                           std::string marker_id,
                                           std::string slot, int timeout_ms,
                                           KafkaConfig::InternalTopics internal)
    : slot_(std::move(slot)),
      key_(absl::StrCat(marker_id, "/", slot_)),
      state_(std::move(options), std::move(topic), timeout_ms, internal,
             "the slot marker") {}

KafkaSlotMarkerStore::~KafkaSlotMarkerStore() = default;

std::string KafkaSlotMarkerStore::where(const std::string&) const {
  return absl::StrCat("the record keyed ", key_, " in Kafka topic ",
                      state_.topic(), " (postgres.slot_marker kafka)");
}

absl::StatusOr<std::optional<std::string>> KafkaSlotMarkerStore::Load(
    const std::string& system_id) {
  std::vector<std::string> keys = {key_};
  if (!system_id.empty()) keys.push_back(Checkpoint::Key(system_id, slot_));
  absl::StatusOr<std::vector<std::optional<std::string>>> values =
      state_.ReadKeys(keys);
  if (!values.ok()) return values.status();
  if ((*values)[0].has_value() || keys.size() == 1) return (*values)[0];
  if ((*values)[1].has_value()) {
    Log(Severity::kInfo,
        "read the slot marker an older relay wrote under the system "
        "identifier; it is written under postgres.slot_marker_id from now on",
        {{"topic", state_.topic()}, {"old_key", keys[1]}, {"key", key_}});
  }
  return (*values)[1];
}

absl::Status KafkaSlotMarkerStore::Save(const std::string&,
                                        const std::string& text) {
  return state_.Write(key_, text);
}

}  // namespace outbox
