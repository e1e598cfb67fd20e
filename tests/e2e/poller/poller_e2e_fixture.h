// PollerE2ETest: the fixture of outbox-poller's end-to-end tests: the real
// binary against the real PostgreSQL and Kafka of the test fixture. Each
// test uses its own outbox table (LIKE public.outbox, so it has the poller
// columns and the partial index) and its own aggregatetype, so its topic is
// its own.
#ifndef OUTBOX_TESTS_E2E_POLLER_POLLER_E2E_FIXTURE_H_
#define OUTBOX_TESTS_E2E_POLLER_POLLER_E2E_FIXTURE_H_

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "e2e/test_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox::testing {

class PollerE2ETest : public ::testing::Test {
 protected:
  struct Row {
    std::string id, key, payload;
    bool payload_null = false;
    int64_t seq = 0;
  };

  void SetUp() override {
    env_ = &TestEnv::Get();
    db_ = PgConn::Connect(env_->pg_conninfo());
    ASSERT_NE(db_, nullptr);
    table_ = UniqueName("poll");
    aggtype_ = UniqueName("agg");
    topic_ = "outbox.event." + aggtype_;
    CreateOutboxTable(*db_, table_);
    dir_ = TempDir("poller_e2e");
  }

  void TearDown() override { pollers_.clear(); }

  static std::string Root() { return getenv("OUTBOX_ROOT"); }

  std::vector<std::string> PollerArgs() {
    return {BinaryPath("outbox-poller"),
            "--pg",
            env_->pg_conninfo(),
            "--kafka",
            env_->kafka_brokers(),
            "--tables",
            "public." + table_,
            "--set",
            "log.progress_interval_s=1",
            "--set",
            "http.listen=127.0.0.1:0",
            "--set",
            "postgres.reconnect_backoff_max_ms=1000",
            "--set",
            "poller.interval_ms=100"};
  }

  Process* StartPoller(std::vector<std::string> extra = {}) {
    auto args = PollerArgs();
    args.insert(args.end(), extra.begin(), extra.end());
    pollers_.push_back(Process::Start(
        args, absl::StrCat(dir_, "/poller", pollers_.size(), ".log")));
    return pollers_.back().get();
  }

  // Inserts n rows in one statement: keys k0..k{keys-1} round robin, jsonb
  // payloads numbered from `first` in insert (= seq) order.
  void Insert(int n, int keys, int first = 1) {
    db_->Exec(absl::StrCat(
        "INSERT INTO public.", table_,
        " (id, aggregatetype, aggregateid, type, payload) SELECT "
        "gen_random_uuid(), '",
        aggtype_, "', 'k' || (g % ", keys,
        "), 'Created', jsonb_build_object('i', g, 'note', 'caf\u00e9 "
        "\"q\" \\\\ b', 'pad', repeat('x', 100)) FROM generate_series(",
        first, ", ", first + n - 1, ") g"));
  }

  // A 2 MB payload: over the producer's message.max.bytes (1 MB).
  void InsertHuge(const std::string& id) {
    db_->Exec(HugeEventSql(table_, aggtype_, id));
  }

  std::map<std::string, Row> Rows(const std::string& where = "true") {
    auto res = db_->Query(absl::StrCat(
        "SELECT id, aggregateid, coalesce(payload::text, ''), payload IS "
        "NULL, seq FROM public.",
        table_, " WHERE ", where));
    EXPECT_TRUE(res.ok()) << res.status();
    std::map<std::string, Row> out;
    if (!res.ok()) return out;
    for (const auto& r : *res) {
      Row row{r[0], r[1], r[2], r[3] == "t", 0};
      EXPECT_TRUE(absl::SimpleAtoi(r[4], &row.seq));
      out[row.id] = row;
    }
    return out;
  }

  int64_t Count(const std::string& where) {
    int64_t n = -1;
    EXPECT_TRUE(absl::SimpleAtoi(
        db_->Scalar(absl::StrCat("SELECT count(*) FROM public.", table_,
                                 " WHERE ", where)),
        &n));
    return n;
  }

  bool WaitAllSent(int timeout_ms = 120000) {
    return WaitUntil(
        [&] {
          return Count("sent_at IS NULL AND dead_lettered_at IS NULL") == 0;
        },
        timeout_ms);
  }

  // Reads `topic` until every id in `want` was seen.
  std::vector<KafkaMessage> ConsumeIds(const std::string& topic,
                                       const std::map<std::string, Row>& want,
                                       int timeout_ms = 60000) {
    std::set<std::string> seen;
    size_t scanned = 0;
    return ConsumeUntil(
        env_->kafka_brokers(), {topic},
        [&](const std::vector<KafkaMessage>& msgs) {
          for (; scanned < msgs.size(); ++scanned) {
            std::string id = msgs[scanned].Header("id");
            if (want.count(id)) seen.insert(id);
          }
          return seen.size() == want.size();
        },
        timeout_ms);
  }

  // Every row in Kafka with its key and payload; returns the duplicates.
  // With check_order, each key's first occurrences follow seq order.
  int Audit(const std::map<std::string, Row>& rows,
            const std::vector<KafkaMessage>& got, bool check_order) {
    std::set<std::string> seen;
    std::map<std::string, int64_t> last_seq;  // key -> seq
    int duplicates = 0;
    for (const auto& m : got) {
      std::string id = m.Header("id");
      auto it = rows.find(id);
      if (it == rows.end()) continue;
      if (!seen.insert(id).second) {
        ++duplicates;
        continue;
      }
      EXPECT_EQ(m.topic, topic_);
      EXPECT_EQ(m.key, it->second.key);
      EXPECT_EQ(m.value_null, it->second.payload_null) << id;
      if (!it->second.payload_null) {
        EXPECT_EQ(m.value, it->second.payload);
      }
      if (check_order) {
        auto [pos, fresh] = last_seq.emplace(m.key, it->second.seq);
        if (!fresh) {
          EXPECT_LT(pos->second, it->second.seq)
              << "order violated for key " << m.key;
          pos->second = it->second.seq;
        }
      }
    }
    EXPECT_EQ(seen.size(), rows.size()) << "rows missing from Kafka";
    return duplicates;
  }

  // The body of the poller's /metrics ("" if it did not answer).
  static std::string ScrapeMetrics(const Process& p) {
    std::string out = p.Output();
    size_t at = out.find("serving metrics");
    if (at == std::string::npos) return "";
    at = out.find("port=", at);
    std::string port =
        out.substr(at + 5, out.find_first_of(" \n", at) - at - 5);
    std::string metrics;
    FILE* f =
        popen(("curl -s http://127.0.0.1:" + port + "/metrics").c_str(), "r");
    if (f == nullptr) return "";
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) metrics.append(buf, n);
    pclose(f);
    return metrics;
  }

  // "session ended delivered=N ..." of a stopped poller.
  static int64_t Delivered(const std::string& log) {
    size_t at = log.rfind("session ended delivered=");
    if (at == std::string::npos) return -1;
    int64_t n = -1;
    absl::SimpleAtoi(log.substr(at + 24, log.find(' ', at + 24) - at - 24), &n);
    return n;
  }

  const TestEnv* env_;
  std::unique_ptr<PgConn> db_;
  std::string table_, aggtype_, topic_, dir_;
  std::vector<std::unique_ptr<Process>> pollers_;
};

}  // namespace outbox::testing

#endif  // OUTBOX_TESTS_E2E_POLLER_POLLER_E2E_FIXTURE_H_
