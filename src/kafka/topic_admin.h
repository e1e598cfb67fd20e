// Topic administration over a short-lived admin client: creating a topic
// (the exactly-once checkpoint topic and the state topic,
// kafka/checkpoint_topic.h, with kafka.internal_topics' replication, and
// missing event and dead-letter topics under kafka.topic_creation,
// docs/operations/topics.md).
//
// TopicAdmin is a producer that never produces, built from the relay's
// Kafka options (TLS and SASL included). Includes rdkafka.h for that only.
// Threading: one thread at a time; each call blocks up to its timeout.
#ifndef OUTBOX_KAFKA_TOPIC_ADMIN_H_
#define OUTBOX_KAFKA_TOPIC_ADMIN_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "config/config.h"
#include "kafka/rdkafka_sink.h"

struct rd_kafka_s;

namespace outbox {

class KafkaRefusal;

// What a new topic gets. -1: the broker's default (num.partitions,
// default.replication.factor).
struct NewTopicSpec {
  int partitions = -1;
  int replication_factor = -1;
  std::map<std::string, std::string> configs;  // topic configs
};

// kafka.internal_topics: sets `spec`'s replication factor and
// min.insync.replicas (topic config) for a topic the relay creates for
// itself; a -1 setting leaves what `spec` has (for the checkpoint and state
// topics the cluster's default; for the dead-letter topic
// kafka.topic_creation's).
void ApplyInternalTopics(const KafkaConfig::InternalTopics& internal,
                         NewTopicSpec* spec);

class TopicAdmin {
 public:
  // InvalidArgument names a property librdkafka rejected.
  static absl::StatusOr<std::unique_ptr<TopicAdmin>> Create(
      const KafkaOptions& options);
  ~TopicAdmin();
  TopicAdmin(const TopicAdmin&) = delete;
  TopicAdmin& operator=(const TopicAdmin&) = delete;

  // Creates `topic` as `spec` says. OK when created, and when it exists
  // already (someone else was first). Unavailable when Kafka did not
  // answer within timeout_ms; PermissionDenied (the broker's words) when it
  // refused: an ACL, a policy, a replication factor above the brokers.
  absl::Status CreateTopic(const std::string& topic, const NewTopicSpec& spec,
                           int timeout_ms);

  rd_kafka_s* handle() const { return rk_; }

  // OK, or FailedPrecondition when the brokers refused this client's
  // password, CA or certificate (kafka/kafka_refusal.h): the calls above
  // stop waiting for an answer that cannot come.
  absl::Status Refused();
  KafkaRefusal* refusal() { return refusal_.get(); }

 private:
  TopicAdmin(rd_kafka_s* rk, std::unique_ptr<KafkaRefusal> refusal);
  rd_kafka_s* rk_;
  std::unique_ptr<KafkaRefusal> refusal_;  // the client's opaque
};

// kafka.topic_creation: creates `topic`, which Kafka said does not exist,
// with the configured partitions, replication factor and configs; logs
// the outcome. `internal` non-null: the topic is one the relay depends on
// itself (the dead-letter topic), whose replication factor and
// min.insync.replicas come from kafka.internal_topics instead. Errors as
// CreateTopic()'s (and Create()'s).
absl::Status CreateMissingTopic(
    const KafkaOptions& kafka, const KafkaConfig::TopicCreation& creation,
    const std::string& topic, int timeout_ms,
    const KafkaConfig::InternalTopics* internal = nullptr);

}  // namespace outbox

#endif  // OUTBOX_KAFKA_TOPIC_ADMIN_H_
