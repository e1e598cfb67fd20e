#include "kafka/topic_admin.h"

#include <librdkafka/rdkafka.h>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "kafka/admin_call.h"
#include "kafka/kafka_refusal.h"
#include "kafka/rdkafka_log.h"

namespace outbox {

void ApplyInternalTopics(const KafkaConfig::InternalTopics& internal,
                         NewTopicSpec* spec) {
  if (internal.replication_factor > 0) {
    spec->replication_factor = static_cast<int>(internal.replication_factor);
  }
  if (internal.min_insync_replicas > 0) {
    spec->configs["min.insync.replicas"] =
        absl::StrCat(internal.min_insync_replicas);
  }
}

absl::StatusOr<std::unique_ptr<TopicAdmin>> TopicAdmin::Create(
    const KafkaOptions& options) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  // The user's properties carry TLS and SASL; they are producer properties,
  // and this client is a producer that never produces.
  std::map<std::string, std::string> props = options.properties;
  props["bootstrap.servers"] = options.brokers;
  props["client.id"] = "outbox-relay-admin";
  // Not a client setting librdkafka's admin side accepts.
  props.erase("transactional.id");
  // It produces nothing: no producer id to ask for, no gaps to guard.
  props.erase("enable.idempotence");
  props.erase("enable.gapless.guarantee");
  for (const auto& [k, v] : props) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) !=
        RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return absl::InvalidArgumentError(
          absl::StrCat("kafka property ", k, " (admin client): ", err));
    }
  }
  UseRdKafkaLog(conf);
  auto refusal = std::make_unique<KafkaRefusal>(options.brokers);
  refusal->Watch(conf);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    return absl::InternalError(
        absl::StrCat("cannot create the Kafka admin client: ", err));
  }
  return std::unique_ptr<TopicAdmin>(new TopicAdmin(rk, std::move(refusal)));
}

TopicAdmin::TopicAdmin(rd_kafka_t* rk, std::unique_ptr<KafkaRefusal> refusal)
    : rk_(rk), refusal_(std::move(refusal)) {}

TopicAdmin::~TopicAdmin() { rd_kafka_destroy(rk_); }

absl::Status TopicAdmin::Refused() { return refusal_->Check(rk_); }

absl::Status TopicAdmin::CreateTopic(const std::string& topic,
                                     const NewTopicSpec& spec, int timeout_ms) {
  char err[512];
  rd_kafka_NewTopic_t* nt =
      rd_kafka_NewTopic_new(topic.c_str(), spec.partitions,
                            spec.replication_factor, err, sizeof(err));
  if (nt == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("topic ", topic, ": ", err));
  }
  for (const auto& [k, v] : spec.configs) {
    rd_kafka_NewTopic_set_config(nt, k.c_str(), v.c_str());
  }
  AdminCall call(this);
  rd_kafka_CreateTopics(rk_, &nt, 1, nullptr, call.queue());
  rd_kafka_NewTopic_destroy(nt);
  absl::StatusOr<rd_kafka_event_t*> ev =
      call.Wait(timeout_ms, absl::StrCat("creating topic ", topic));
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
      absl::StrCat("cannot create topic ", topic, ": ",
                   rd_kafka_topic_result_error_string(results[0])));
}

absl::Status CreateMissingTopic(const KafkaOptions& kafka,
                                const KafkaConfig::TopicCreation& creation,
                                const std::string& topic, int timeout_ms,
                                const KafkaConfig::InternalTopics* internal) {
  absl::StatusOr<std::unique_ptr<TopicAdmin>> admin = TopicAdmin::Create(kafka);
  if (!admin.ok()) return admin.status();
  NewTopicSpec spec;
  spec.partitions = static_cast<int>(creation.partitions);
  spec.replication_factor = static_cast<int>(creation.replication_factor);
  spec.configs = creation.configs;
  if (internal != nullptr) ApplyInternalTopics(*internal, &spec);
  absl::Status s = (*admin)->CreateTopic(topic, spec, timeout_ms);
  if (!s.ok()) {
    Log(Severity::kWarn, "cannot create the missing topic",
        {{"topic", topic}, {"error", std::string(s.message())}});
    return s;
  }
  Log(Severity::kInfo, "created the missing topic (kafka.topic_creation)",
      {{"topic", topic},
       {"partitions", absl::StrCat(spec.partitions)},
       {"replication_factor", absl::StrCat(spec.replication_factor)},
       {"min.insync.replicas", spec.configs.count("min.insync.replicas")
                                   ? spec.configs["min.insync.replicas"]
                                   : "-1"}});
  return absl::OkStatus();
}

}  // namespace outbox
