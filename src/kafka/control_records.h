// ControlRecords: the operator state the two instances of a pair share, as
// JSON records in the compacted kafka.state_topic (kafka/state_topic.h: the
// topic the Kafka slot marker uses, created when missing with
// kafka.internal_topics' replication), whatever postgres.slot_marker is:
//
//   <pair>/<slot>/pause                  PauseRecord (below)
//   <pair>/<slot>/operator/<at>-<uuid>   {"action":"skip"|"advance",...}
//
// <pair> is postgres.slot_marker_id when set, else the PostgreSQL system
// identifier (ControlPair()). Read() reads the topic from its beginning
// (a compacted topic, small); Write() produces with acks=all and waits.
// Kafka unreachable within timeout_ms: Unavailable, nothing written.
//
// Threading: thread-compatible (one caller at a time per instance).
#ifndef OUTBOX_KAFKA_CONTROL_RECORDS_H_
#define OUTBOX_KAFKA_CONTROL_RECORDS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "config/config.h"
#include "kafka/rdkafka_sink.h"
#include "kafka/state_topic.h"

namespace outbox {

class ControlRecords {
 public:
  // `options`: KafkaOptions as the KafkaSlotMarkerStore takes them.
  ControlRecords(KafkaOptions options, std::string topic, std::string pair,
                 std::string slot, int timeout_ms,
                 KafkaConfig::InternalTopics internal = {});

  // The newest value of every key under "<pair>/<slot>/<prefix>", in key
  // order, each as (full key, value); a tombstone removes its key.
  // Unavailable when Kafka cannot be read.
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Read(
      const std::string& prefix);
  // Produces key "<pair>/<slot>/<suffix>" with acks=all and waits.
  absl::Status Write(const std::string& suffix, const std::string& json);

  // "<pair>/<slot>/".
  const std::string& key_prefix() const { return key_prefix_; }
  const std::string& topic() const { return state_.topic(); }

 private:
  const std::string key_prefix_;
  StateTopic state_;
};

// The pair's identity: postgres.slot_marker_id when set, else the system
// identifier.
std::string ControlPair(const std::string& slot_marker_id,
                        const std::string& system_identifier);

// The value of "<pair>/<slot>/pause".
struct PauseRecord {
  bool paused = false;
  std::string by;
  std::string at;  // RFC 3339 UTC
  std::string reason;

  std::string Encode() const;
  // DataLoss (one line) for a malformed record.
  static absl::StatusOr<PauseRecord> Parse(absl::string_view json);
};

// The suffix of the pause record's key.
inline constexpr char kPauseSuffix[] = "pause";

// Now, as PauseRecord::at wants it ("2026-11-27T16:05:42Z").
std::string Rfc3339Now();

}  // namespace outbox

#endif  // OUTBOX_KAFKA_CONTROL_RECORDS_H_
