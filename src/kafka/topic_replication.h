// The start-up check that the topics the relay depends on survive a broker
// (kafka.internal_topics, docs/operations/topics.md): a topic with
// replication factor 1 on a cluster of 3 or more brokers is lost with the
// one broker holding it (the checkpoint topic: exactly once restarts from
// nothing; the state topic: the slot marker; an event topic: the events).
//
// Which topics: those config/kafka_acls.h says the relay writes (its topic
// resources: literal names, and every topic under a prefix; a template that
// starts with a placeholder, '*', is not checked). One metadata request for
// every topic gives each one's replication factor (the smallest of its
// partitions') and the number of brokers; topics the principal may not
// Describe are absent from it, hence unchecked. Nothing is altered.
//
// Threading: any thread; DescribeTopicReplication() blocks up to its
// timeout.
#ifndef OUTBOX_KAFKA_TOPIC_REPLICATION_H_
#define OUTBOX_KAFKA_TOPIC_REPLICATION_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/kafka_acls.h"
#include "kafka/rdkafka_sink.h"

namespace outbox {

struct TopicReplicationFactor {
  std::string topic;
  int replication_factor = 0;  // the smallest of its partitions'
};

struct ClusterReplication {
  int brokers = 0;
  std::vector<TopicReplicationFactor> topics;
};

// The cluster's brokers and every topic's replication factor (a metadata
// request for all topics). Unavailable when Kafka does not answer within
// timeout_ms.
absl::StatusOr<ClusterReplication> DescribeTopicReplication(
    const KafkaOptions& options, int timeout_ms);

// The broker count at and above which a topic with replication factor 1 is
// warned about.
inline constexpr int kReplicatedClusterBrokers = 3;

// Pure: the topics of `cluster` that `acls`' topic resources cover and
// whose replication factor is 1, when the cluster has
// kReplicatedClusterBrokers or more brokers (none otherwise: a smaller
// cluster, a single broker above all, cannot do better), sorted.
std::vector<std::string> UnreplicatedTopics(const ClusterReplication& cluster,
                                            const std::vector<KafkaAcl>& acls);

// The warning line for them ("" when there are none).
std::string UnreplicatedTopicsWarning(const std::vector<std::string>& topics,
                                      int brokers);

}  // namespace outbox

#endif  // OUTBOX_KAFKA_TOPIC_REPLICATION_H_
