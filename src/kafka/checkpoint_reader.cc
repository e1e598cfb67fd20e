#include "kafka/checkpoint_reader.h"

#include <librdkafka/rdkafka.h>

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"

namespace outbox {
namespace {

struct KafkaDeleter {
  void operator()(rd_kafka_t* rk) const {
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
  }
};

// Producer-only properties a consumer would warn about or refuse.
bool ConsumerProperty(const std::string& key) {
  static const char* const kProducerOnly[] = {
      "enable.idempotence",
      "acks",
      "partitioner",
      "message.timeout.ms",
      "linger.ms",
      "batch.num.messages",
      "queue.buffering.max.messages",
      "queue.buffering.max.kbytes",
      "compression.type",
      "transactional.id",
      "enable.gapless.guarantee",
      "max.in.flight",
      "retries",
      "max.in.flight.requests.per.connection",
      "message.send.max.retries",
      "queue.buffering.max.ms",
      "compression.codec",
      "request.required.acks",
      "transaction.timeout.ms",
      "batch.size",
      "delivery.timeout.ms",
      "sticky.partitioning.linger.ms",
      "retry.backoff.ms"};
  for (const char* p : kProducerOnly) {
    if (key == p) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<Checkpoint> ReadCheckpoint(const KafkaOptions& options,
                                          const std::string& topic,
                                          const std::string& system_identifier,
                                          const std::string& slot,
                                          int timeout_ms) {
  Checkpoint last;
  last.system_identifier = system_identifier;
  last.slot = slot;
  absl::StatusOr<std::optional<std::string>> value =
      ReadLatestValue(options, topic, Checkpoint::Key(system_identifier, slot),
                      timeout_ms, "checkpoint topic");
  if (!value.ok()) return value.status();
  if (!value->has_value()) return last;
  return Checkpoint::Parse(**value);
}

absl::StatusOr<std::optional<std::string>> ReadLatestValue(
    const KafkaOptions& options, const std::string& topic,
    const std::string& key, int timeout_ms, absl::string_view what) {
  std::optional<std::string> last;
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  std::vector<std::pair<std::string, std::string>> props;
  for (const auto& [k, v] : options.properties) {
    if (ConsumerProperty(k)) props.emplace_back(k, v);
  }
  props.emplace_back("bootstrap.servers", options.brokers);
  props.emplace_back("group.id", "outbox-relay-checkpoint-reader");
  props.emplace_back("enable.auto.commit", "false");
  props.emplace_back("isolation.level", "read_committed");
  props.emplace_back("enable.partition.eof", "true");
  props.emplace_back("client.id", "outbox-relay-checkpoint-reader");
  for (const auto& [k, v] : props) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) !=
        RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return absl::InvalidArgumentError(
          absl::StrCat("kafka property ", k, " (", what, " reader): ", err));
    }
  }
  rd_kafka_t* raw = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  if (raw == nullptr) {
    rd_kafka_conf_destroy(conf);
    return absl::InternalError(
        absl::StrCat("cannot create the ", what, " reader: ", err));
  }
  std::unique_ptr<rd_kafka_t, KafkaDeleter> rk(raw);
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk.get(), topic.c_str(), nullptr);
  rd_kafka_resp_err_t e = rd_kafka_metadata(rk.get(), 0, rkt, &md, timeout_ms);
  rd_kafka_topic_destroy(rkt);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return absl::UnavailableError(absl::StrCat(
        "cannot read the ", what, " ", topic, ": ", rd_kafka_err2str(e)));
  }
  int partitions = 0;
  bool missing = md->topic_cnt == 0 || md->topics[0].err != 0;
  if (!missing) partitions = md->topics[0].partition_cnt;
  rd_kafka_metadata_destroy(md);
  if (missing || partitions == 0) return last;  // no checkpoint yet

  rd_kafka_topic_partition_list_t* list =
      rd_kafka_topic_partition_list_new(partitions);
  int to_read = 0;
  for (int p = 0; p < partitions; ++p) {
    int64_t low = 0, high = 0;
    e = rd_kafka_query_watermark_offsets(rk.get(), topic.c_str(), p, &low,
                                         &high, timeout_ms);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_topic_partition_list_destroy(list);
      return absl::UnavailableError(absl::StrCat(
          "cannot read the ", what, " ", topic, ": ", rd_kafka_err2str(e)));
    }
    if (high <= low) continue;
    rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
    ++to_read;
  }
  if (to_read == 0) {
    rd_kafka_topic_partition_list_destroy(list);
    return last;
  }
  e = rd_kafka_assign(rk.get(), list);
  rd_kafka_topic_partition_list_destroy(list);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return absl::UnavailableError(absl::StrCat(
        "cannot read the ", what, " ", topic, ": ", rd_kafka_err2str(e)));
  }
  // read_committed stops at the last stable offset; end of partition is
  // reported there.
  int eofs = 0;
  int waited = 0;
  while (eofs < to_read) {
    if (waited >= timeout_ms) {
      return absl::UnavailableError(
          absl::StrCat("timed out reading the ", what, " ", topic));
    }
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk.get(), 100);
    if (m == nullptr) {
      waited += 100;
      continue;
    }
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      ++eofs;
    } else if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      std::string error = rd_kafka_message_errstr(m);
      rd_kafka_message_destroy(m);
      return absl::UnavailableError(
          absl::StrCat("cannot read the ", what, " ", topic, ": ", error));
    } else if (m->key != nullptr &&
               absl::string_view(static_cast<const char*>(m->key),
                                 m->key_len) == key) {
      // A tombstone (null value) deletes the key.
      if (m->payload == nullptr) {
        last.reset();
      } else {
        last = std::string(static_cast<const char*>(m->payload), m->len);
      }
    }
    rd_kafka_message_destroy(m);
  }
  return last;
}

}  // namespace outbox
