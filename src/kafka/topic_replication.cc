#include "kafka/topic_replication.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kafka/kafka_refusal.h"
#include "kafka/topic_admin.h"
#include "outbox/status_macros.h"

namespace outbox {

absl::StatusOr<ClusterReplication> DescribeTopicReplication(
    const KafkaOptions& options, int timeout_ms) {
  ASSIGN_OR_RETURN(std::unique_ptr<TopicAdmin> admin,
                   TopicAdmin::Create(options));
  const rd_kafka_metadata_t* md = nullptr;
  const rd_kafka_resp_err_t e = admin->refusal()->Metadata(
      admin->handle(), /*all_topics=*/true, nullptr, &md, timeout_ms);
  RETURN_IF_ERROR(admin->refusal()->status());
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return absl::UnavailableError(absl::StrCat(
        "cannot read the topics' metadata: ", rd_kafka_err2str(e)));
  }
  ClusterReplication out;
  out.brokers = md->broker_cnt;
  for (int i = 0; i < md->topic_cnt; ++i) {
    const rd_kafka_metadata_topic_t& t = md->topics[i];
    if (t.err != RD_KAFKA_RESP_ERR_NO_ERROR || t.partition_cnt == 0) continue;
    int rf = t.partitions[0].replica_cnt;
    for (int p = 1; p < t.partition_cnt; ++p) {
      rf = std::min(rf, t.partitions[p].replica_cnt);
    }
    out.topics.push_back({t.topic, rf});
  }
  rd_kafka_metadata_destroy(md);
  return out;
}

std::vector<std::string> UnreplicatedTopics(const ClusterReplication& cluster,
                                            const std::vector<KafkaAcl>& acls) {
  std::vector<std::string> out;
  if (cluster.brokers < kReplicatedClusterBrokers) return out;
  for (const TopicReplicationFactor& t : cluster.topics) {
    if (t.replication_factor != 1) continue;
    const bool depends =
        std::any_of(acls.begin(), acls.end(), [&t](const KafkaAcl& a) {
          if (a.resource != "topic" || a.name == "*") return false;
          return a.prefixed ? absl::StartsWith(t.topic, a.name)
                            : t.topic == a.name;
        });
    if (depends) out.push_back(t.topic);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string UnreplicatedTopicsWarning(const std::vector<std::string>& topics,
                                      int brokers) {
  if (topics.empty()) return "";
  return absl::StrCat(
      "topics the relay depends on have replication factor 1 on a cluster "
      "of ",
      brokers, " brokers: ", absl::StrJoin(topics, ", "),
      "; each is unavailable while its one broker is down and lost with its "
      "disk (recreate it replicated, or raise its replication factor with "
      "kafka-reassign-partitions; kafka.internal_topics.replication_factor "
      "sets it for the topics the relay creates)");
}

}  // namespace outbox
