#include "kafka/checkpoint_topic.h"

#include <librdkafka/rdkafka.h>

#include <map>
#include <memory>

#include "absl/strings/str_cat.h"

namespace outbox {
namespace {

constexpr char kCleanupPolicy[] = "cleanup.policy";

// One admin request and its result, on a client that lives for the call.
class AdminCall {
 public:
  explicit AdminCall(rd_kafka_t* rk) : queue_(rd_kafka_queue_new(rk)) {}
  ~AdminCall() {
    if (event_ != nullptr) rd_kafka_event_destroy(event_);
    rd_kafka_queue_destroy(queue_);
  }
  rd_kafka_queue_t* queue() { return queue_; }
  // Waits for the result; Unavailable on timeout, else the request's error.
  absl::StatusOr<rd_kafka_event_t*> Wait(int timeout_ms,
                                         absl::string_view what) {
    event_ = rd_kafka_queue_poll(queue_, timeout_ms);
    if (event_ == nullptr) {
      return absl::UnavailableError(absl::StrCat("Kafka did not answer ", what,
                                                 " in ", timeout_ms, " ms"));
    }
    if (rd_kafka_event_error(event_) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return absl::UnavailableError(
          absl::StrCat(what, ": ", rd_kafka_event_error_string(event_)));
    }
    return event_;
  }

 private:
  rd_kafka_queue_t* queue_;
  rd_kafka_event_t* event_ = nullptr;
};

// The topic's cleanup.policy; NotFound when the topic does not exist.
absl::StatusOr<std::string> DescribeCleanupPolicy(rd_kafka_t* rk,
                                                  const std::string& topic,
                                                  int timeout_ms) {
  rd_kafka_ConfigResource_t* res =
      rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str());
  rd_kafka_ConfigResource_set_config(res, kCleanupPolicy, nullptr);
  AdminCall call(rk);
  rd_kafka_DescribeConfigs(rk, &res, 1, nullptr, call.queue());
  rd_kafka_ConfigResource_destroy(res);
  absl::StatusOr<rd_kafka_event_t*> ev =
      call.Wait(timeout_ms, "describing the checkpoint topic");
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
        absl::StrCat("cannot describe the checkpoint topic ", topic, ": ",
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

// Creates the topic compacted. OK too when someone else just created it.
absl::Status CreateCompacted(rd_kafka_t* rk, const std::string& topic,
                             int timeout_ms) {
  char err[512];
  // Replication factor -1: the broker's default.replication.factor.
  rd_kafka_NewTopic_t* nt =
      rd_kafka_NewTopic_new(topic.c_str(), 1, -1, err, sizeof(err));
  if (nt == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint topic ", topic, ": ", err));
  }
  rd_kafka_NewTopic_set_config(nt, kCleanupPolicy, "compact");
  AdminCall call(rk);
  rd_kafka_CreateTopics(rk, &nt, 1, nullptr, call.queue());
  rd_kafka_NewTopic_destroy(nt);
  absl::StatusOr<rd_kafka_event_t*> ev =
      call.Wait(timeout_ms, "creating the checkpoint topic");
  if (!ev.ok()) return ev.status();
  size_t n = 0;
  const rd_kafka_topic_result_t** results = rd_kafka_CreateTopics_result_topics(
      rd_kafka_event_CreateTopics_result(*ev), &n);
  if (n != 1) return absl::InternalError("CreateTopics: no result");
  rd_kafka_resp_err_t e = rd_kafka_topic_result_error(results[0]);
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR ||
      e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("cannot create the checkpoint topic ", topic, ": ",
                   rd_kafka_topic_result_error_string(results[0])));
}

}  // namespace

absl::StatusOr<CheckpointTopicState> EnsureCheckpointTopic(
    const KafkaOptions& options, const std::string& topic, int timeout_ms) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  // The user's properties carry TLS and SASL; they are producer properties,
  // and this client is a producer that never produces.
  std::map<std::string, std::string> props = options.properties;
  props["bootstrap.servers"] = options.brokers;
  props["client.id"] = "outbox-relay-admin";
  for (const auto& [k, v] : props) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) !=
        RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return absl::InvalidArgumentError(
          absl::StrCat("kafka property ", k, " (admin client): ", err));
    }
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    return absl::InternalError(
        absl::StrCat("cannot create the Kafka admin client: ", err));
  }
  std::unique_ptr<rd_kafka_t, void (*)(rd_kafka_t*)> owner(rk,
                                                           &rd_kafka_destroy);
  CheckpointTopicState state;
  absl::StatusOr<std::string> policy =
      DescribeCleanupPolicy(rk, topic, timeout_ms);
  if (absl::IsNotFound(policy.status())) {
    if (absl::Status s = CreateCompacted(rk, topic, timeout_ms); !s.ok()) {
      return s;
    }
    state.created = true;
    policy = DescribeCleanupPolicy(rk, topic, timeout_ms);
    // Created, but not yet visible to a describe: it was made compacted.
    if (absl::IsNotFound(policy.status())) policy = std::string("compact");
  }
  if (!policy.ok()) return policy.status();
  state.cleanup_policy = *policy;
  return state;
}

}  // namespace outbox
