// audit_sources.h's Kafka half: the topics the configuration routes to
// (TopicPattern, RoutedTopicPatterns) and what they hold
// (ReadPublishedRecords). The outbox tables' half is audit_sources.cc.
#include <librdkafka/rdkafka.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "audit/audit_sources.h"
#include "common/progress.h"
#include "kafka/checkpoint_reader.h"
#include "kafka/kafka_refusal.h"
#include "kafka/rdkafka_log.h"
#include "outbox/status_macros.h"
#include "pg/pg_connection.h"
#include "route/topic_regex.h"

namespace outbox {

std::string TopicPattern(absl::string_view topic_template) {
  std::string re = "^";
  for (size_t i = 0; i < topic_template.size(); ++i) {
    char c = topic_template[i];
    if (c == '{' && i + 1 < topic_template.size() &&
        topic_template[i + 1] == '{') {
      re += "\\{";
      ++i;
    } else if (c == '}' && i + 1 < topic_template.size() &&
               topic_template[i + 1] == '}') {
      re += "\\}";
      ++i;
    } else if (c == '{') {
      size_t end = topic_template.find('}', i);
      if (end == absl::string_view::npos) break;
      re += ".+";
      i = end;
    } else {
      if (c == '.' || c == '-') re += '\\';
      re += c;
    }
  }
  return re + "$";
}

namespace {

// `topic` as a regex that matches it alone.
std::string ExactPattern(absl::string_view topic) {
  std::string re = "^";
  for (char c : topic) {
    if (absl::string_view("\\^$.|?*+()[]{}-/").find(c) !=
        absl::string_view::npos) {
      re += '\\';
    }
    re += c;
  }
  return re + "$";
}

}  // namespace

absl::StatusOr<std::vector<std::string>> RoutedTopicPatterns(
    const Config& config, absl::string_view application_name) {
  std::vector<std::string> patterns;
  if (config.outbox.topic_regex.empty()) {
    for (const OutboxTable& t : config.outbox.tables) {
      patterns.push_back(TopicPattern(t.topic));
    }
    return patterns;
  }
  // The topic of a value that the regex does not match is the value itself:
  // no pattern short of "every topic" covers them, so read the values.
  ASSIGN_OR_RETURN(TopicRegex regex,
                   TopicRegex::Create(config.outbox.topic_regex,
                                      config.outbox.topic_replacement));
  PgConnectOptions options;
  options.conninfo = config.postgres.conninfo;
  options.application_name = std::string(application_name);
  options.connect_timeout_s =
      static_cast<int>(config.postgres.connect_timeout_s);
  ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> conn,
                   PgConnection::Connect(options));
  std::set<std::string> topics;
  for (const OutboxTable& t : config.outbox.tables) {
    const std::string column = conn->Identifier(t.columns.aggregatetype);
    absl::StatusOr<PgResult> res = conn->Query(absl::StrCat(
        "SELECT DISTINCT ", column, "::text FROM ", conn->Identifier(t.schema),
        ".", conn->Identifier(t.name), " WHERE ", column, " IS NOT NULL"));
    if (!res.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "outbox table ", t.QualifiedName(), ": ", res.status().message()));
    }
    std::string topic;
    for (int i = 0; i < PgConnection::Rows(*res); ++i) {
      regex.Apply(PgConnection::Value(*res, i, 0), &topic);
      topics.insert(topic);
    }
  }
  for (const std::string& topic : topics) {
    patterns.push_back(ExactPattern(topic));
  }
  return patterns;
}

absl::StatusOr<std::vector<PublishedRecord>> ReadPublishedRecords(
    const Config& config, const std::vector<std::string>& patterns,
    int timeout_s, bool read_committed, FILE* progress) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  UseRdKafkaLog(conf);
  char err[512];
  auto set = [&](const std::string& k, const std::string& v) {
    return rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) ==
           RD_KAFKA_CONF_OK;
  };
  // Connection settings (TLS, SASL) apply to the consumer too; producer-only
  // ones are skipped.
  for (const auto& [k, v] : config.kafka.properties) {
    if (k.rfind("security.", 0) == 0 || k.rfind("ssl.", 0) == 0 ||
        k.rfind("sasl.", 0) == 0 || k == "client.id") {
      set(k, v);
    }
  }
  set("bootstrap.servers", config.kafka.brokers);
  set("group.id", "outbox-audit");
  set("enable.auto.commit", "false");
  set("enable.partition.eof", "true");
  // Explicit: librdkafka's default is read_committed. Either way the end of
  // a partition is reported (at the last stable offset when committed).
  set("isolation.level",
      read_committed ? "read_committed" : "read_uncommitted");
  set("log_level", "3");
  // A refused password or certificate ends the wait for metadata at once,
  // and says why (not only "transport failure").
  KafkaRefusal refusal(config.kafka.brokers);
  refusal.Watch(conf);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    return absl::InvalidArgumentError(err);
  }
  std::unique_ptr<rd_kafka_t, void (*)(rd_kafka_t*)> guard(rk,
                                                           rd_kafka_destroy);
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t e =
      refusal.Metadata(rk, /*all_topics=*/true, nullptr, &md, 10000);
  if (!refusal.status().ok()) return refusal.status();
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    (void)refusal.Check(rk);  // the reason of an error told meanwhile
    return absl::UnavailableError(
        absl::StrCat("cannot connect to Kafka (", config.kafka.brokers,
                     "): metadata: ", rd_kafka_err2str(e),
                     refusal.last_error().empty()
                         ? ""
                         : absl::StrCat(" (", refusal.last_error(), ")")));
  }
  std::vector<std::regex> res;
  for (const auto& p : patterns) res.emplace_back(p);
  rd_kafka_topic_partition_list_t* assign =
      rd_kafka_topic_partition_list_new(16);
  std::map<std::pair<std::string, int32_t>, int64_t> end;
  int64_t total = 0;
  for (int i = 0; i < md->topic_cnt; ++i) {
    std::string topic = md->topics[i].topic;
    bool match = false;
    for (const auto& re : res) match |= std::regex_match(topic, re);
    if (!match) continue;
    for (int p = 0; p < md->topics[i].partition_cnt; ++p) {
      int32_t part = md->topics[i].partitions[p].id;
      int64_t lo = 0, hi = 0;
      e = static_cast<rd_kafka_resp_err_t>(
          QueryWatermarks(rk, topic, part, 10000, &lo, &hi));
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        // Never taken for an empty partition: its events would be reported
        // missing.
        rd_kafka_topic_partition_list_destroy(assign);
        rd_kafka_metadata_destroy(md);
        return absl::UnavailableError(
            absl::StrCat("cannot read the end of Kafka topic ", topic,
                         " partition ", part, ": ", rd_kafka_err2str(e)));
      }
      if (hi <= lo) continue;
      end[{topic, part}] = hi;
      total += hi - lo;
      rd_kafka_topic_partition_list_add(assign, topic.c_str(), part)->offset =
          RD_KAFKA_OFFSET_BEGINNING;
    }
  }
  rd_kafka_metadata_destroy(md);
  std::vector<PublishedRecord> out;
  if (end.empty()) {
    rd_kafka_topic_partition_list_destroy(assign);
    return out;
  }
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_assign(rk, assign);
  rd_kafka_topic_partition_list_destroy(assign);
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  size_t done = 0;
  std::map<std::pair<std::string, int32_t>, bool> finished;
  // Offsets, not records: a transactional topic's commit markers take some.
  Progress meter(progress, progress != nullptr, "reading Kafka", "records",
                 total);
  while (done < end.size()) {
    meter.Update(static_cast<int64_t>(out.size()));
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "read ", out.size(), " records but ", end.size() - done,
          " partitions did not reach their end within ", timeout_s, " s"));
    }
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 500);
    if (m == nullptr) continue;
    std::string topic = m->rkt ? rd_kafka_topic_name(m->rkt) : "";
    auto key = std::make_pair(topic, m->partition);
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      PublishedRecord r;
      r.topic = topic;
      r.partition = m->partition;
      r.offset = m->offset;
      if (m->key) r.key.assign(static_cast<char*>(m->key), m->key_len);
      rd_kafka_headers_t* hdrs = nullptr;
      const void* val = nullptr;
      size_t size = 0;
      if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR &&
          rd_kafka_header_get_last(hdrs, "id", &val, &size) ==
              RD_KAFKA_RESP_ERR_NO_ERROR &&
          val != nullptr) {
        r.id.assign(static_cast<const char*>(val), size);
      }
      out.push_back(std::move(r));
    }
    bool at_end = m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF ||
                  (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && end.count(key) &&
                   m->offset + 1 >= end[key]);
    if (at_end && end.count(key) && !finished[key]) {
      finished[key] = true;
      ++done;
    }
    rd_kafka_message_destroy(m);
  }
  meter.Finish(static_cast<int64_t>(out.size()));
  rd_kafka_consumer_close(rk);
  return out;
}

}  // namespace outbox
