// The Kafka helpers of test_env.h: producing, topics, consuming, and
// whether the transactions on topics are decided.
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "e2e/test_env.h"
#include "gtest/gtest.h"

namespace outbox::testing {

std::string KafkaMessage::Header(const std::string& name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return v;
  }
  return "";
}

namespace {

rd_kafka_conf_t* BaseConf(const std::string& brokers) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  rd_kafka_conf_set(conf, "bootstrap.servers", brokers.c_str(), err,
                    sizeof(err));
  rd_kafka_conf_set(conf, "log_level", "3", err, sizeof(err));
  return conf;
}

}  // namespace

absl::Status ProduceSync(const std::string& brokers, const std::string& topic,
                         const std::string& key, const std::string& value) {
  rd_kafka_conf_t* conf = BaseConf(brokers);
  static rd_kafka_resp_err_t last_err;
  last_err = RD_KAFKA_RESP_ERR__IN_PROGRESS;
  rd_kafka_conf_set_dr_msg_cb(conf, [](rd_kafka_t*, const rd_kafka_message_t* m,
                                       void*) { last_err = m->err; });
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (rk == nullptr) return absl::InternalError(err);
  rd_kafka_resp_err_t e = rd_kafka_producev(
      rk, RD_KAFKA_V_TOPIC(topic.c_str()),
      RD_KAFKA_V_KEY(key.data(), key.size()),
      RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR) rd_kafka_flush(rk, 30000);
  rd_kafka_destroy(rk);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return absl::InternalError(rd_kafka_err2str(e));
  }
  if (last_err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return absl::InternalError(rd_kafka_err2str(last_err));
  }
  return absl::OkStatus();
}

namespace {

// Runs one admin request on a throwaway client and hands its result event
// to `result` (the event dies with the client).
absl::Status RunAdmin(
    const std::string& brokers,
    const std::function<void(rd_kafka_t*, rd_kafka_queue_t*)>& request,
    const std::function<absl::Status(rd_kafka_event_t*)>& result) {
  char err[512];
  rd_kafka_t* rk =
      rd_kafka_new(RD_KAFKA_PRODUCER, BaseConf(brokers), err, sizeof(err));
  if (rk == nullptr) return absl::InternalError(err);
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  request(rk, q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 30000);
  absl::Status s;
  if (ev == nullptr) {
    s = absl::DeadlineExceededError("admin request timed out");
  } else if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    s = absl::InternalError(rd_kafka_event_error_string(ev));
  } else {
    s = result(ev);
  }
  if (ev != nullptr) rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
  return s;
}

}  // namespace

absl::Status CreateTopic(const std::string& brokers, const std::string& topic,
                         int partitions,
                         const std::map<std::string, std::string>& configs) {
  char err[512];
  rd_kafka_NewTopic_t* nt =
      rd_kafka_NewTopic_new(topic.c_str(), partitions, 1, err, sizeof(err));
  if (nt == nullptr) return absl::InvalidArgumentError(err);
  for (const auto& [k, v] : configs) {
    rd_kafka_NewTopic_set_config(nt, k.c_str(), v.c_str());
  }
  absl::Status s = RunAdmin(
      brokers,
      [&](rd_kafka_t* rk, rd_kafka_queue_t* q) {
        rd_kafka_CreateTopics(rk, &nt, 1, nullptr, q);
      },
      [](rd_kafka_event_t* ev) {
        size_t n = 0;
        const rd_kafka_topic_result_t** results =
            rd_kafka_CreateTopics_result_topics(
                rd_kafka_event_CreateTopics_result(ev), &n);
        if (n != 1) return absl::InternalError("CreateTopics: no result");
        if (rd_kafka_topic_result_error(results[0]) !=
            RD_KAFKA_RESP_ERR_NO_ERROR) {
          return absl::InternalError(
              rd_kafka_topic_result_error_string(results[0]));
        }
        return absl::OkStatus();
      });
  rd_kafka_NewTopic_destroy(nt);
  return s;
}

absl::StatusOr<std::map<std::string, std::string>> TopicConfigs(
    const std::string& brokers, const std::string& topic) {
  rd_kafka_ConfigResource_t* res =
      rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str());
  std::map<std::string, std::string> out;
  absl::Status s = RunAdmin(
      brokers,
      [&](rd_kafka_t* rk, rd_kafka_queue_t* q) {
        rd_kafka_DescribeConfigs(rk, &res, 1, nullptr, q);
      },
      [&](rd_kafka_event_t* ev) {
        size_t n = 0;
        const rd_kafka_ConfigResource_t** resources =
            rd_kafka_DescribeConfigs_result_resources(
                rd_kafka_event_DescribeConfigs_result(ev), &n);
        if (n != 1) return absl::InternalError("DescribeConfigs: no result");
        if (rd_kafka_ConfigResource_error(resources[0]) !=
            RD_KAFKA_RESP_ERR_NO_ERROR) {
          return absl::NotFoundError(
              rd_kafka_ConfigResource_error_string(resources[0]));
        }
        size_t count = 0;
        const rd_kafka_ConfigEntry_t** entries =
            rd_kafka_ConfigResource_configs(resources[0], &count);
        for (size_t i = 0; i < count; ++i) {
          const char* value = rd_kafka_ConfigEntry_value(entries[i]);
          out[rd_kafka_ConfigEntry_name(entries[i])] = value ? value : "";
        }
        return absl::OkStatus();
      });
  rd_kafka_ConfigResource_destroy(res);
  if (!s.ok()) return s;
  return out;
}

std::vector<KafkaMessage> ConsumeAll(const std::string& brokers,
                                     const std::vector<std::string>& topics,
                                     size_t want, int timeout_ms) {
  return ConsumeUntil(
      brokers, topics,
      [want](const std::vector<KafkaMessage>& got) {
        return got.size() >= want;
      },
      timeout_ms);
}

namespace {

// A consumed record (err NO_ERROR) as a KafkaMessage.
KafkaMessage ToKafkaMessage(const rd_kafka_message_t* m) {
  KafkaMessage km;
  km.topic = rd_kafka_topic_name(m->rkt);
  km.partition = m->partition;
  km.offset = m->offset;
  km.timestamp_ms = rd_kafka_message_timestamp(m, nullptr);
  km.key_null = m->key == nullptr;
  km.value_null = m->payload == nullptr;
  if (m->key) km.key.assign(static_cast<char*>(m->key), m->key_len);
  if (m->payload) {
    km.value.assign(static_cast<char*>(m->payload), m->len);
  }
  rd_kafka_headers_t* hdrs = nullptr;
  if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    const char* name;
    const void* val;
    size_t size;
    for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &val, &size) ==
                       RD_KAFKA_RESP_ERR_NO_ERROR;
         ++i) {
      km.headers.emplace_back(
          name, val ? std::string(static_cast<const char*>(val), size)
                    : std::string());
    }
  }
  return km;
}

}  // namespace

std::vector<KafkaMessage> ConsumeUntil(
    const std::string& brokers, const std::vector<std::string>& topics,
    const std::function<bool(const std::vector<KafkaMessage>&)>& done,
    int timeout_ms) {
  rd_kafka_conf_t* conf = BaseConf(brokers);
  char err[512];
  rd_kafka_conf_set(conf, "group.id", UniqueName("test").c_str(), err,
                    sizeof(err));
  rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", err, sizeof(err));
  rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof(err));
  rd_kafka_conf_set(conf, "topic.metadata.refresh.interval.ms", "500", err,
                    sizeof(err));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  std::vector<KafkaMessage> out;
  if (rk == nullptr) {
    ADD_FAILURE() << err;
    return out;
  }
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t* subs =
      rd_kafka_topic_partition_list_new(static_cast<int>(topics.size()));
  for (const auto& t : topics) {
    rd_kafka_topic_partition_list_add(subs, t.c_str(), RD_KAFKA_PARTITION_UA);
  }
  rd_kafka_subscribe(rk, subs);
  rd_kafka_topic_partition_list_destroy(subs);
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!done(out) && std::chrono::steady_clock::now() < deadline) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 200);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      out.push_back(ToKafkaMessage(m));
      deadline = std::chrono::steady_clock::now() +
                 std::chrono::milliseconds(timeout_ms);
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return out;
}

bool TransactionsDecided(const std::string& brokers,
                         const std::vector<std::string>& topics,
                         std::string* problem) {
  std::string why;
  // The end a consumer of each isolation level is told: read_committed's is
  // the last stable offset, read_uncommitted's the high watermark.
  auto client = [&](const char* isolation) {
    rd_kafka_conf_t* conf = BaseConf(brokers);
    char err[512];
    rd_kafka_conf_set(conf, "isolation.level", isolation, err, sizeof(err));
    return rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  };
  rd_kafka_t* committed = client("read_committed");
  rd_kafka_t* uncommitted = client("read_uncommitted");
  bool decided = committed != nullptr && uncommitted != nullptr;
  if (!decided) why = "cannot create a Kafka client";
  for (size_t t = 0; decided && t < topics.size(); ++t) {
    const char* name = topics[t].c_str();
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(committed, name, nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    decided = rd_kafka_metadata(committed, 0, rkt, &md, 5000) ==
                  RD_KAFKA_RESP_ERR_NO_ERROR &&
              md->topic_cnt == 1 &&
              md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR;
    if (!decided) why = absl::StrCat("no metadata for ", topics[t]);
    for (int p = 0; decided && p < md->topics[0].partition_cnt; ++p) {
      int64_t low = 0, stable = -1, high = -2;
      decided = rd_kafka_query_watermark_offsets(committed, name, p, &low,
                                                 &stable, 5000) ==
                    RD_KAFKA_RESP_ERR_NO_ERROR &&
                rd_kafka_query_watermark_offsets(uncommitted, name, p, &low,
                                                 &high, 5000) ==
                    RD_KAFKA_RESP_ERR_NO_ERROR &&
                stable == high;
      if (!decided) {
        why = absl::StrCat(topics[t], " partition ", p, ": last stable offset ",
                           stable, ", high watermark ", high);
      }
    }
    if (md != nullptr) rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
  }
  if (committed != nullptr) rd_kafka_destroy(committed);
  if (uncommitted != nullptr) rd_kafka_destroy(uncommitted);
  if (problem != nullptr) *problem = why;
  return decided;
}

std::vector<KafkaMessage> ConsumeToEnd(const std::string& brokers,
                                       const std::vector<std::string>& topics,
                                       int timeout_ms, int settle_ms) {
  rd_kafka_conf_t* conf = BaseConf(brokers);
  char err[512];
  // No group is joined (assign, not subscribe); librdkafka wants an id.
  rd_kafka_conf_set(conf, "group.id", UniqueName("test").c_str(), err,
                    sizeof(err));
  rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof(err));
  rd_kafka_conf_set(conf, "enable.partition.eof", "true", err, sizeof(err));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  std::vector<KafkaMessage> out;
  if (rk == nullptr) {
    ADD_FAILURE() << err;
    return out;
  }
  rd_kafka_poll_set_consumer(rk);
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  // Every partition of every topic, from the metadata (retried while a
  // leader is unknown, e.g. right after a broker restart).
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(8);
  for (const auto& t : topics) {
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, t.c_str(), nullptr);
    std::string problem;
    bool listed = WaitUntil(
        [&] {
          const rd_kafka_metadata_t* md = nullptr;
          rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, 5000);
          if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
            problem = rd_kafka_err2str(e);
            return false;
          }
          bool ok = md->topic_cnt == 1 &&
                    md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR &&
                    md->topics[0].partition_cnt > 0;
          if (!ok) {
            problem = md->topic_cnt == 1 ? rd_kafka_err2str(md->topics[0].err)
                                         : std::string("no metadata");
          }
          for (int p = 0; ok && p < md->topics[0].partition_cnt; ++p) {
            ok = md->topics[0].partitions[p].leader >= 0;
            if (!ok) problem = "a partition has no leader";
          }
          if (ok) {
            for (int p = 0; p < md->topics[0].partition_cnt; ++p) {
              rd_kafka_topic_partition_list_add(parts, t.c_str(),
                                                md->topics[0].partitions[p].id)
                  ->offset = RD_KAFKA_OFFSET_BEGINNING;
            }
          }
          rd_kafka_metadata_destroy(md);
          return ok;
        },
        timeout_ms);
    rd_kafka_topic_destroy(rkt);
    if (!listed) {
      ADD_FAILURE() << "ConsumeToEnd: no partitions of topic " << t << ": "
                    << problem;
    }
  }
  rd_kafka_assign(rk, parts);
  // The partitions not read to their end yet, and those read to a last
  // stable offset below the high watermark (a transaction undecided, or
  // its marker not written yet) while settle_ms has not passed.
  std::set<std::pair<std::string, int32_t>> open, unsettled;
  for (int i = 0; i < parts->cnt; ++i) {
    open.emplace(parts->elems[i].topic, parts->elems[i].partition);
  }
  rd_kafka_topic_partition_list_destroy(parts);
  std::chrono::steady_clock::time_point settle_deadline{};
  while (std::chrono::steady_clock::now() < deadline) {
    if (open.empty()) {
      if (unsettled.empty()) break;
      if (settle_deadline == std::chrono::steady_clock::time_point{}) {
        settle_deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(settle_ms);
      }
      if (std::chrono::steady_clock::now() >= settle_deadline) break;
    }
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 50);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      out.push_back(ToKafkaMessage(m));
    } else if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      // m->offset: the end reached (the last stable offset).
      const std::pair<std::string, int32_t> tp(rd_kafka_topic_name(m->rkt),
                                               m->partition);
      int64_t low = -1, high = -1;
      rd_kafka_get_watermark_offsets(rk, tp.first.c_str(), tp.second, &low,
                                     &high);
      open.erase(tp);
      if (settle_ms > 0 && m->offset < high) {
        unsettled.insert(tp);
      } else {
        unsettled.erase(tp);
      }
    }
    rd_kafka_message_destroy(m);
  }
  if (!open.empty()) {
    ADD_FAILURE() << "ConsumeToEnd: " << open.size()
                  << " partition(s) not read to their end in " << timeout_ms
                  << " ms (" << open.begin()->first << " ["
                  << open.begin()->second << "], ...)";
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return out;
}

}  // namespace outbox::testing
