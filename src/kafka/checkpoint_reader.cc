#include "kafka/checkpoint_reader.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kafka/kafka_refusal.h"
#include "kafka/rdkafka_log.h"
#include "outbox/status_macros.h"

namespace outbox {
namespace {

struct KafkaDeleter {
  void operator()(rd_kafka_t* rk) const {
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
  }
};

// A reader's client, and the refusal its error callback records (its
// opaque: destroyed after the client).
struct Consumer {
  std::unique_ptr<KafkaRefusal> refusal;
  std::unique_ptr<rd_kafka_t, KafkaDeleter> rk;
  rd_kafka_t* get() const { return rk.get(); }
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

// A client with the reader's properties and isolation level. Its own
// client.id suffix tells the two apart in broker logs.
absl::StatusOr<Consumer> NewConsumer(const KafkaOptions& options,
                                     absl::string_view isolation,
                                     absl::string_view what) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  std::vector<std::pair<std::string, std::string>> props;
  for (const auto& [k, v] : options.properties) {
    if (ConsumerProperty(k)) props.emplace_back(k, v);
  }
  props.emplace_back("bootstrap.servers", options.brokers);
  props.emplace_back("group.id", "outbox-relay-checkpoint-reader");
  props.emplace_back("enable.auto.commit", "false");
  props.emplace_back("isolation.level", std::string(isolation));
  props.emplace_back("enable.partition.eof", "true");
  // A fetch at the end of a partition answers at once instead of waiting
  // (500 ms by default) for records that are not coming; destroying the
  // client also waits for that fetch. Each session start reads up to three
  // topics this way (checkpoint, pause, operator records).
  props.emplace_back("fetch.wait.max.ms", "10");
  // Partitions are assigned at the low watermark read a moment before: if
  // it moved meanwhile (retention, DeleteRecords), start from the new
  // beginning, never from the end.
  props.emplace_back("auto.offset.reset", "earliest");
  props.emplace_back("allow.auto.create.topics", "false");
  UseRdKafkaLog(conf);
  props.emplace_back("client.id", "outbox-relay-checkpoint-reader");
  for (const auto& [k, v] : props) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) !=
        RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return absl::InvalidArgumentError(
          absl::StrCat("kafka property ", k, " (", what, " reader): ", err));
    }
  }
  Consumer consumer;
  consumer.refusal = std::make_unique<KafkaRefusal>(options.brokers);
  consumer.refusal->Watch(conf);
  rd_kafka_t* raw = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  if (raw == nullptr) {
    rd_kafka_conf_destroy(conf);
    return absl::InternalError(
        absl::StrCat("cannot create the ", what, " reader: ", err));
  }
  consumer.rk.reset(raw);
  return consumer;
}

absl::Status TopicError(absl::string_view what, const std::string& topic,
                        int err, bool topic_exists) {
  const auto e = static_cast<rd_kafka_resp_err_t>(err);
  switch (e) {
    case RD_KAFKA_RESP_ERR_NO_ERROR:
      return absl::OkStatus();
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
      if (!topic_exists) return absl::NotFoundError(topic);
      return absl::UnavailableError(absl::StrCat(
          "the ", what, " ", topic,
          " was seen to exist (or could not be checked) but the broker does "
          "not know it (",
          rd_kafka_err2str(e),
          "; stale metadata after a restart?): retried, never taken for "
          "nothing recorded"));
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
      return absl::FailedPreconditionError(absl::StrCat(
          "not authorized to read the ", what, " ", topic, " (",
          rd_kafka_err2str(e),
          "): the relay's principal needs READ and DESCRIBE on it"));
    default:
      return absl::UnavailableError(absl::StrCat(
          "cannot read the ", what, " ", topic, ": ", rd_kafka_err2str(e)));
  }
}

}  // namespace

absl::Status CheckpointTopicError(const std::string& topic, int err,
                                  bool topic_exists) {
  return TopicError("checkpoint topic", topic, err, topic_exists);
}

namespace {

constexpr std::chrono::milliseconds kMetadataRetry(200);

// A partition that is "not there yet": the metadata or the broker has not
// caught up with a topic created a moment ago or a leader elected a moment
// ago (a KRaft broker publishes new metadata before its replica manager
// has made the partition's log; a new leader's high watermark is not known
// until its followers report). Asked again until the read's deadline;
// librdkafka does not retry these for a watermark query.
bool NotYet(int err) {
  switch (static_cast<rd_kafka_resp_err_t>(err)) {
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
    case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
    case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
    case RD_KAFKA_RESP_ERR_OFFSET_NOT_AVAILABLE:
      return true;
    default:
      return false;
  }
}

// Whether another try fits before `deadline` (and waits for it when so).
bool RetryBefore(std::chrono::steady_clock::time_point deadline) {
  if (std::chrono::steady_clock::now() + kMetadataRetry >= deadline) {
    return false;
  }
  std::this_thread::sleep_for(kMetadataRetry);
  return true;
}

}  // namespace

namespace {

// One offset of one partition by ListOffsets: RD_KAFKA_OFFSET_BEGINNING
// (the low watermark) or RD_KAFKA_OFFSET_END (the high one; the last stable
// offset for a read_committed client). rd_kafka_offsets_for_times, not
// rd_kafka_query_watermark_offsets: in librdkafka before 2.3.0 the latter
// ignores its timeout and waits for a leader whose broker is down until it
// is back (librdkafka #2588), which held a session's start for as long as
// Kafka was away; this one returns _TIMED_OUT when timeout_ms has passed.
rd_kafka_resp_err_t ListOffset(rd_kafka_t* rk, const std::string& topic,
                               int partition, int64_t which, int timeout_ms,
                               int64_t* offset) {
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(list, topic.c_str(), partition)->offset =
      which;
  rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(rk, list, timeout_ms);
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
    const rd_kafka_topic_partition_t* p = &list->elems[0];
    e = p->err;
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) *offset = p->offset;
  }
  rd_kafka_topic_partition_list_destroy(list);
  return e;
}

}  // namespace

int QueryWatermarks(rd_kafka_t* rk, const std::string& topic, int partition,
                    int timeout_ms, int64_t* low, int64_t* high) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  const auto left = [&] {
    return static_cast<int>(
        std::max<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                              deadline - std::chrono::steady_clock::now())
                              .count(),
                          1));
  };
  for (;;) {
    int64_t first = -1;
    int64_t last = -1;
    rd_kafka_resp_err_t e = ListOffset(
        rk, topic, partition, RD_KAFKA_OFFSET_BEGINNING, left(), &first);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
      e = ListOffset(rk, topic, partition, RD_KAFKA_OFFSET_END, left(), &last);
    }
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
      // An empty partition may answer the beginning with no offset.
      *high = last;
      *low = first < 0 ? last : first;
      return e;
    }
    if (!NotYet(e) || !RetryBefore(deadline)) return e;
  }
}

namespace {

// The number of partitions of `topic`, from the metadata. NotFound when the
// topic does not exist and !topic_exists. A topic known to exist that the
// metadata does not show yet (created a moment ago: the brokers learn of it
// asynchronously; or stale metadata after a restart), or whose partitions
// have no leader yet, is asked again until timeout_ms has passed.
absl::StatusOr<int> TopicPartitions(Consumer& consumer,
                                    const std::string& topic, int timeout_ms,
                                    absl::string_view what, bool topic_exists) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    const int metadata_wait =
        static_cast<int>(std::max<int64_t>(left.count(), 1));
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_topic_t* rkt =
        rd_kafka_topic_new(consumer.get(), topic.c_str(), nullptr);
    const rd_kafka_resp_err_t e = consumer.refusal->Metadata(
        consumer.get(), /*all_topics=*/false, rkt, &md, metadata_wait);
    rd_kafka_topic_destroy(rkt);
    RETURN_IF_ERROR(consumer.refusal->status());
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return absl::UnavailableError(absl::StrCat(
          "cannot read the ", what, " ", topic, ": ", rd_kafka_err2str(e)));
    }
    int err = md->topic_cnt == 0 ? RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART
                                 : md->topics[0].err;
    int partitions = 0;
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      partitions = md->topics[0].partition_cnt;
      for (int p = 0; p < partitions && err == RD_KAFKA_RESP_ERR_NO_ERROR;
           ++p) {
        err = md->topics[0].partitions[p].err;
      }
    }
    rd_kafka_metadata_destroy(md);
    absl::Status status = TopicError(what, topic, err, topic_exists);
    const bool no_partitions = status.ok() && partitions == 0;
    if (no_partitions) {
      status = absl::UnavailableError(
          absl::StrCat("the ", what, " ", topic, " has no partitions yet"));
    }
    if (status.ok()) return partitions;
    // Only "not there yet" is asked again: a topic known to exist that the
    // metadata does not show, a partition without a leader, no partitions.
    // A missing ACL, a topic that does not exist or a name the broker
    // refuses answers at once.
    if (!absl::IsUnavailable(status) || !(no_partitions || NotYet(err)) ||
        !RetryBefore(deadline)) {
      return status;
    }
  }
}

// Where a keyed record was read.
struct RecordPosition {
  int partition = -1;
  int64_t offset = -1;
};

using OnKeyedValue = std::function<absl::Status(
    absl::string_view, std::optional<absl::string_view>, RecordPosition)>;

// Every keyed record in `topic`, in offset order within a partition, to
// on_value (its key; nullopt for a tombstone; where it was), read as
// ReadCheckpoint's comment says: to the high watermark, never stopping at a
// last stable offset below it. OK without a call when the topic does not
// exist (and topic_exists is false). `extent`, when given, receives what was
// read: "p<partition> [<low>,<high>)" per partition, or "empty".
absl::Status ReadKeyedValues(const KafkaOptions& options,
                             const std::string& topic, int timeout_ms,
                             absl::string_view what, bool topic_exists,
                             const OnKeyedValue& on_value,
                             std::string* extent = nullptr) {
  if (extent != nullptr) *extent = "empty";
  // The high watermarks come from a read_uncommitted client: a
  // read_committed one may answer with the last stable offset.
  absl::StatusOr<Consumer> probe =
      NewConsumer(options, "read_uncommitted", what);
  if (!probe.ok()) return probe.status();
  absl::StatusOr<Consumer> reader =
      NewConsumer(options, "read_committed", what);
  if (!reader.ok()) return reader.status();
  rd_kafka_t* rk = reader->get();

  absl::StatusOr<int> described =
      TopicPartitions(*probe, topic, timeout_ms, what, topic_exists);
  // Only a topic that does not exist means "nothing recorded yet".
  if (absl::IsNotFound(described.status())) return absl::OkStatus();
  if (!described.ok()) return described.status();
  const int partitions = *described;
  rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;

  rd_kafka_topic_partition_list_t* list =
      rd_kafka_topic_partition_list_new(partitions);
  std::vector<int64_t> high(partitions, 0);
  int to_read = 0;
  std::string ranges;
  for (int p = 0; p < partitions; ++p) {
    int64_t low = 0;
    e = static_cast<rd_kafka_resp_err_t>(
        QueryWatermarks(probe->get(), topic, p, timeout_ms, &low, &high[p]));
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_topic_partition_list_destroy(list);
      absl::Status s = TopicError(what, topic, e, /*topic_exists=*/true);
      return s.ok() ? absl::UnavailableError(topic) : s;
    }
    if (high[p] <= low) continue;
    absl::StrAppend(&ranges, to_read == 0 ? "" : " ", "p", p, " [", low, ",",
                    high[p], ")");
    // The low watermark just read, not OFFSET_BEGINNING: no offset lookup
    // (a ListOffsets round trip, and librdkafka's wait before it).
    rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = low;
    ++to_read;
  }
  if (extent != nullptr) *extent = to_read == 0 ? "empty" : ranges;
  if (to_read == 0) {
    rd_kafka_topic_partition_list_destroy(list);
    return absl::OkStatus();
  }
  // The reader's own metadata first: its connection to the leaders is up
  // before it is assigned, instead of its first fetch waiting for it.
  if (absl::StatusOr<int> warm =
          TopicPartitions(*reader, topic, timeout_ms, what, topic_exists);
      !warm.ok()) {
    rd_kafka_topic_partition_list_destroy(list);
    return warm.status();
  }
  e = rd_kafka_assign(rk, list);
  rd_kafka_topic_partition_list_destroy(list);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return absl::UnavailableError(absl::StrCat(
        "cannot read the ", what, " ", topic, ": ", rd_kafka_err2str(e)));
  }
  // read_committed reports the end of a partition at its last stable
  // offset: the first offset of the oldest open transaction on it (another
  // relay's, sharing the topic, or one this relay left open). Every record
  // below the high watermark read above must be decided before the newest
  // checkpoint is known, so wait (bounded) for the end to reach it.
  std::vector<int64_t> end(partitions, -1);
  int done = 0;
  int waited = 0;
  while (done < to_read) {
    if (waited >= timeout_ms) {
      std::string held;
      for (int p = 0; p < partitions; ++p) {
        if (end[p] >= 0 && end[p] < high[p]) {
          held =
              absl::StrCat(" (partition ", p,
                           ": an open transaction holds "
                           "the last stable offset at ",
                           end[p], ", below the high watermark ", high[p], ")");
          break;
        }
      }
      return absl::UnavailableError(absl::StrCat(
          "timed out reading the ", what, " ", topic, held,
          "; an older record is never used",
          held.empty() ? ""
                       : " (open past every producer's "
                         "transaction.timeout.ms: a hanging transaction, see "
                         "docs/operations/kafka-errors.md"
                         "#hanging-transactions)"));
    }
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (m == nullptr) {
      waited += 100;
      continue;
    }
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      const int p = m->partition;
      if (p >= 0 && p < partitions) {
        const bool was_done = end[p] >= high[p];
        end[p] = std::max(end[p], m->offset);
        if (!was_done && end[p] >= high[p]) ++done;
      }
    } else if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      absl::Status s = m->err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED
                           ? TopicError(what, topic, m->err, true)
                           : absl::UnavailableError(absl::StrCat(
                                 "cannot read the ", what, " ", topic, ": ",
                                 rd_kafka_message_errstr(m)));
      rd_kafka_message_destroy(m);
      return s;
    } else if (m->key != nullptr) {
      const absl::string_view k(static_cast<const char*>(m->key), m->key_len);
      // A tombstone (null value) deletes the key.
      std::optional<absl::string_view> value;
      if (m->payload != nullptr) {
        value = absl::string_view(static_cast<const char*>(m->payload), m->len);
      }
      absl::Status s = on_value(k, value, {m->partition, m->offset});
      if (!s.ok()) {
        rd_kafka_message_destroy(m);
        return s;
      }
    }
    rd_kafka_message_destroy(m);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::optional<std::string>>> ReadLatestValues(
    const KafkaOptions& options, const std::string& topic,
    const std::vector<std::string>& keys, int timeout_ms,
    absl::string_view what, bool topic_exists) {
  std::vector<std::optional<std::string>> last(keys.size());
  RETURN_IF_ERROR(ReadKeyedValues(
      options, topic, timeout_ms, what, topic_exists,
      [&](absl::string_view k, std::optional<absl::string_view> v,
          RecordPosition) {
        const auto it = std::find(keys.begin(), keys.end(), k);
        if (it == keys.end()) return absl::OkStatus();
        std::optional<std::string>& slot = last[it - keys.begin()];
        if (v.has_value()) {
          slot = std::string(*v);
        } else {
          slot.reset();
        }
        return absl::OkStatus();
      }));
  return last;
}

absl::StatusOr<std::map<std::string, std::string>> ReadLatestValuesWithPrefix(
    const KafkaOptions& options, const std::string& topic,
    const std::string& prefix, int timeout_ms, absl::string_view what,
    bool topic_exists) {
  std::map<std::string, std::string> last;
  RETURN_IF_ERROR(
      ReadKeyedValues(options, topic, timeout_ms, what, topic_exists,
                      [&](absl::string_view k,
                          std::optional<absl::string_view> v, RecordPosition) {
                        if (!absl::StartsWith(k, prefix))
                          return absl::OkStatus();
                        if (v.has_value()) {
                          last[std::string(k)] = std::string(*v);
                        } else {
                          last.erase(std::string(k));
                        }
                        return absl::OkStatus();
                      }));
  return last;
}

absl::StatusOr<std::optional<std::string>> ReadLatestValue(
    const KafkaOptions& options, const std::string& topic,
    const std::string& key, int timeout_ms, absl::string_view what,
    bool topic_exists) {
  ASSIGN_OR_RETURN(
      std::vector<std::optional<std::string>> values,
      ReadLatestValues(options, topic, {key}, timeout_ms, what, topic_exists));
  return values[0];
}

absl::StatusOr<Checkpoint> ReadCheckpoint(const KafkaOptions& options,
                                          const std::string& topic,
                                          const std::string& system_identifier,
                                          const std::string& slot,
                                          int timeout_ms, bool topic_exists,
                                          std::string* where) {
  Checkpoint last;
  RecordPosition at;
  std::string extent;
  last.system_identifier = system_identifier;
  last.slot = slot;
  bool found = false;
  const std::string key = Checkpoint::Key(system_identifier, slot);
  RETURN_IF_ERROR(ReadKeyedValues(
      options, topic, timeout_ms, "checkpoint topic", topic_exists,
      [&](absl::string_view k, std::optional<absl::string_view> v,
          RecordPosition position) -> absl::Status {
        if (k != key || !v.has_value()) return absl::OkStatus();
        ASSIGN_OR_RETURN(Checkpoint c, Checkpoint::Parse(*v));
        // The furthest one, whatever the read order.
        if (!found || c.After(last)) {
          last = c;
          at = position;
        }
        found = true;
        return absl::OkStatus();
      },
      &extent));
  if (where != nullptr) {
    *where =
        found ? absl::StrCat("p", at.partition, "@", at.offset, " of ", extent)
              : absl::StrCat("none in ", extent);
  }
  return last;
}

}  // namespace outbox
