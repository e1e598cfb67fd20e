// EnsureCheckpointTopic: makes sure the exactly-once checkpoint topic
// (core/checkpoint.h) exists, and says whether it is compacted.
//
// Compaction keeps the newest checkpoint per key forever; under the default
// cleanup.policy=delete, retention would eventually delete the last
// checkpoint of a quiet relay, and the next start would publish again
// everything the slot still holds. A missing topic is created with one
// partition (one key per database and slot: nothing to spread),
// cleanup.policy=compact, and the replication factor and
// min.insync.replicas of kafka.internal_topics (default: the cluster's); an
// existing one is only inspected, never altered: it belongs to the
// operator.
//
// Uses a short-lived admin client; includes rdkafka.h for that only.
// Threading: any thread; blocks up to timeout_ms.
#ifndef OUTBOX_KAFKA_CHECKPOINT_TOPIC_H_
#define OUTBOX_KAFKA_CHECKPOINT_TOPIC_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "config/config.h"
#include "kafka/rdkafka_sink.h"

namespace outbox {

struct CheckpointTopicState {
  bool created = false;  // it was missing and this call created it
  // Its cleanup.policy ("compact", "delete", "compact,delete", ...).
  std::string cleanup_policy;
  bool compacted() const {
    return cleanup_policy.find("compact") != std::string::npos;
  }
};

// Unavailable when Kafka cannot be asked within timeout_ms; other errors
// (authorization, a policy refusing the creation) name the topic and the
// broker's message.
// `internal`: the replication factor and min.insync.replicas of a created
// topic (kafka.internal_topics). `what` names the topic in errors (the
// state topic is made the same way).
absl::StatusOr<CheckpointTopicState> EnsureCheckpointTopic(
    const KafkaOptions& options, const std::string& topic,
    const KafkaConfig::InternalTopics& internal, int timeout_ms,
    absl::string_view what = "checkpoint topic");

}  // namespace outbox

#endif  // OUTBOX_KAFKA_CHECKPOINT_TOPIC_H_
