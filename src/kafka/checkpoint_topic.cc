#include "kafka/checkpoint_topic.h"

#include <librdkafka/rdkafka.h>

#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "kafka/admin_call.h"
#include "kafka/topic_admin.h"
#include "outbox/status_macros.h"

namespace outbox {
namespace {

constexpr char kCleanupPolicy[] = "cleanup.policy";

// The topic's cleanup.policy; NotFound when the topic does not exist.
absl::StatusOr<std::string> DescribeCleanupPolicy(TopicAdmin* admin,
                                                  const std::string& topic,
                                                  int timeout_ms,
                                                  absl::string_view what) {
  rd_kafka_t* rk = admin->handle();
  rd_kafka_ConfigResource_t* res =
      rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str());
  rd_kafka_ConfigResource_set_config(res, kCleanupPolicy, nullptr);
  AdminCall call(admin);
  rd_kafka_DescribeConfigs(rk, &res, 1, nullptr, call.queue());
  rd_kafka_ConfigResource_destroy(res);
  absl::StatusOr<rd_kafka_event_t*> ev =
      call.Wait(timeout_ms, absl::StrCat("describing the ", what));
  if (!ev.ok()) return ev.status();
  size_t n = 0;
  const rd_kafka_ConfigResource_t** resources =
      rd_kafka_DescribeConfigs_result_resources(
          rd_kafka_event_DescribeConfigs_result(*ev), &n);
  if (n != 1) return absl::InternalError("DescribeConfigs: no result");
  rd_kafka_resp_err_t e = rd_kafka_ConfigResource_error(resources[0]);
  if (e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
    return absl::NotFoundError(topic);
  }
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot describe the ", what, " ", topic, ": ",
                     rd_kafka_ConfigResource_error_string(resources[0])));
  }
  size_t count = 0;
  const rd_kafka_ConfigEntry_t** entries =
      rd_kafka_ConfigResource_configs(resources[0], &count);
  for (size_t i = 0; i < count; ++i) {
    if (std::string(rd_kafka_ConfigEntry_name(entries[i])) == kCleanupPolicy) {
      const char* v = rd_kafka_ConfigEntry_value(entries[i]);
      return std::string(v != nullptr ? v : "");
    }
  }
  return std::string("delete");  // Kafka's default
}

}  // namespace

absl::StatusOr<CheckpointTopicState> EnsureCheckpointTopic(
    const KafkaOptions& options, const std::string& topic,
    const KafkaConfig::InternalTopics& internal, int timeout_ms,
    absl::string_view what) {
  ASSIGN_OR_RETURN(std::unique_ptr<TopicAdmin> admin,
                   TopicAdmin::Create(options));
  CheckpointTopicState state;
  absl::StatusOr<std::string> policy =
      DescribeCleanupPolicy(admin.get(), topic, timeout_ms, what);
  if (absl::IsNotFound(policy.status())) {
    // One partition (one key per database and slot), compacted; the
    // replication kafka.internal_topics sets (default: the cluster's).
    NewTopicSpec spec;
    spec.partitions = 1;
    spec.configs[kCleanupPolicy] = "compact";
    ApplyInternalTopics(internal, &spec);
    if (absl::Status s = admin->CreateTopic(topic, spec, timeout_ms); !s.ok()) {
      return s;
    }
    state.created = true;
    policy = DescribeCleanupPolicy(admin.get(), topic, timeout_ms, what);
    // Created, but not yet visible to a describe: it was made compacted.
    if (absl::IsNotFound(policy.status())) policy = std::string("compact");
  }
  if (!policy.ok()) return policy.status();
  state.cleanup_policy = *policy;
  return state;
}

}  // namespace outbox
