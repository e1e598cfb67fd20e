// ReadCheckpoint: the last committed exactly-once checkpoint of one
// database and slot (core/checkpoint.h), read at start-up with a
// read_committed consumer from the compacted checkpoint topic: every
// partition from its beginning to its high watermark (asked of a
// read_uncommitted client), the furthest record with the key wins
// (Checkpoint::After, not read order). Records of other keys (other
// relays sharing the topic) are ignored.
//
// Under read_committed the end of a partition is its last stable offset;
// while an open transaction (another relay's on the shared topic, or one
// this relay left open) holds it below the high watermark, newer
// checkpoints may lie behind it, so the reader waits up to timeout_ms and
// then returns Unavailable (the supervisor retries): never an older
// checkpoint.
//
// Returns a Checkpoint with end_lsn kInvalidLsn when there is none: a first
// run, or the topic does not exist (and `topic_exists` is false: the
// caller did not see it exist). Unavailable when Kafka cannot be read within
// timeout_ms, a partition has no leader, or the broker does not know a
// topic known to exist (stale metadata after a restart); FailedPrecondition
// (one line) when not authorized; DataLoss for a malformed record with our
// key. `where`, when given, receives where the checkpoint was found and
// what was read ("p0@41 of p0 [0,43)", or "none in empty"): the log line
// that shows a session's start point. Includes rdkafka.h for consuming only.
#ifndef OUTBOX_KAFKA_CHECKPOINT_READER_H_
#define OUTBOX_KAFKA_CHECKPOINT_READER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/checkpoint.h"
#include "kafka/rdkafka_sink.h"

typedef struct rd_kafka_s rd_kafka_t;  // librdkafka/rdkafka.h

namespace outbox {

// The value of the newest record with `key` in compacted `topic`, read the
// same way; nullopt when there is none, or when the topic does not exist and
// `topic_exists` is false. With `topic_exists` true (the caller saw the topic
// exist or created it, or could not check), an unknown topic is Unavailable
// (a broker restarting, stale metadata), never "none". `what` names the
// topic in errors ("state topic").
absl::StatusOr<std::optional<std::string>> ReadLatestValue(
    const KafkaOptions& options, const std::string& topic,
    const std::string& key, int timeout_ms, absl::string_view what,
    bool topic_exists);
// The same for several keys in one pass over the topic: one value per key,
// in the order of `keys`.
absl::StatusOr<std::vector<std::optional<std::string>>> ReadLatestValues(
    const KafkaOptions& options, const std::string& topic,
    const std::vector<std::string>& keys, int timeout_ms,
    absl::string_view what, bool topic_exists);
// The newest value of every key that starts with `prefix`, in key order,
// read the same way (a tombstone removes the key).
absl::StatusOr<std::map<std::string, std::string>> ReadLatestValuesWithPrefix(
    const KafkaOptions& options, const std::string& topic,
    const std::string& prefix, int timeout_ms, absl::string_view what,
    bool topic_exists);

absl::StatusOr<Checkpoint> ReadCheckpoint(
    const KafkaOptions& options, const std::string& topic,
    const std::string& system_identifier, const std::string& slot,
    int timeout_ms, bool topic_exists = false, std::string* where = nullptr);

// The low and high watermarks of one partition of `topic` (ListOffsets;
// `rk` a client of either kind; never longer than timeout_ms, even when the
// leader's broker is down), asked
// again while the partition is not there yet until timeout_ms has passed: a
// topic or a leader made a moment ago answers "unknown topic or partition",
// "not leader" or "offset not available" for a moment, and librdkafka does
// not retry a watermark query. Returns its rd_kafka_resp_err_t.
int QueryWatermarks(rd_kafka_t* rk, const std::string& topic, int partition,
                    int timeout_ms, int64_t* low, int64_t* high);

// The status a metadata or fetch error on the checkpoint topic means
// (rd_kafka_resp_err_t `err`): OK for none; NotFound for an unknown topic
// not known to exist; Unavailable for one known to exist and for transient
// errors; FailedPrecondition for authorization.
absl::Status CheckpointTopicError(const std::string& topic, int err,
                                  bool topic_exists);

}  // namespace outbox

#endif  // OUTBOX_KAFKA_CHECKPOINT_READER_H_
