// ReadCheckpoint: the last committed exactly-once checkpoint of one
// database and slot (core/checkpoint.h), read at start-up with a
// read_committed consumer from the compacted checkpoint topic: every
// partition from its beginning to its high watermark, the newest record
// with the key wins. Records of other keys are ignored.
//
// Returns a Checkpoint with end_lsn kInvalidLsn when there is none (a first
// run, or the topic does not exist yet). Unavailable when Kafka cannot be
// read within timeout_ms; DataLoss for a malformed record with our key.
// Includes rdkafka.h for consuming only.
#ifndef OUTBOX_KAFKA_CHECKPOINT_READER_H_
#define OUTBOX_KAFKA_CHECKPOINT_READER_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/checkpoint.h"
#include "kafka/rdkafka_sink.h"

namespace outbox {

// The value of the newest record with `key` in compacted `topic` (read as
// above); nullopt when there is none or the topic does not exist. `what`
// names the topic in errors ("checkpoint topic", "state topic").
absl::StatusOr<std::optional<std::string>> ReadLatestValue(
    const KafkaOptions& options, const std::string& topic,
    const std::string& key, int timeout_ms, absl::string_view what);

absl::StatusOr<Checkpoint> ReadCheckpoint(const KafkaOptions& options,
                                          const std::string& topic,
                                          const std::string& system_identifier,
                                          const std::string& slot,
                                          int timeout_ms);

}  // namespace outbox

#endif  // OUTBOX_KAFKA_CHECKPOINT_READER_H_
