// outbox-poller end to end: the real binary against the real PostgreSQL and
// Kafka of the test fixture. Each test uses its own outbox table (LIKE
// public.outbox, so it has the poller columns and the partial index) and its
// own aggregatetype, so its topic is its own.
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/test_env.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Row {
  std::string id, key, payload;
  bool payload_null = false;
  int64_t seq = 0;
};

class PollerE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = &TestEnv::Get();
    db_ = PgConn::Connect(env_->pg_conninfo());
    ASSERT_NE(db_, nullptr);
    db_->Exec(ReadFile(Root() + "/sql/outbox.sql"));
    table_ = UniqueName("poll");
    aggtype_ = UniqueName("agg");
    topic_ = "outbox.event." + aggtype_;
    db_->Exec("CREATE TABLE public." + table_ +
              " (LIKE public.outbox INCLUDING ALL)");
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
    db_->Exec("INSERT INTO public." + table_ +
              " (id, aggregatetype, aggregateid, type, payload) VALUES ('" +
              id + "', '" + aggtype_ +
              "', 'big', 'Huge', jsonb_build_object('blob', repeat('y', "
              "2000000)))");
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

TEST_F(PollerE2ETest, RecordsMatchOutboxRelayByteForByte) {
  // Both relays on the same table, each to its own topic; every record
  // must be the same but for the topic.
  std::string slot = UniqueName("slot");
  std::string relay_topic = "relayed." + aggtype_;
  std::string poller_topic = "polled." + aggtype_;
  auto relay = Process::Start(
      {BinaryPath("outbox-relay"), "--pg", env_->pg_conninfo(), "--kafka",
       env_->kafka_brokers(), "--slot", slot, "--tables", "public." + table_,
       "--topic", "relayed.{aggregatetype}", "--set",
       "outbox.headers.type=event_type", "--set", "http.listen="},
      dir_ + "/relay.log");
  ASSERT_TRUE(WaitUntil(
      [&] {
        return db_->Scalar(
                   "SELECT count(*) FROM pg_replication_slots WHERE "
                   "slot_name = '" +
                   slot + "' AND active") == "1";
      },
      30000))
      << relay->Output();
  Insert(200, 7);
  db_->Exec("INSERT INTO public." + table_ +
            " (id, aggregatetype, aggregateid, type, payload) VALUES "
            "(gen_random_uuid(), '" +
            aggtype_ + "', 'k-null', 'Empty', NULL), (gen_random_uuid(), '" +
            aggtype_ +
            "', 'k-json', 'Odd', '{\"b\": [1, 2.50, null], \"a\": "
            "\"\\u00e9\\n\\\"\", \"z\": {}}')");
  Process* poller = StartPoller({"--topic", "polled.{aggregatetype}", "--set",
                                 "outbox.headers.type=event_type"});
  auto rows = Rows();
  ASSERT_EQ(rows.size(), 202u);
  auto relayed = ConsumeIds(relay_topic, rows);
  auto polled = ConsumeIds(poller_topic, rows);
  std::map<std::string, const KafkaMessage*> by_id;
  for (const auto& m : relayed) by_id.emplace(m.Header("id"), &m);
  ASSERT_EQ(by_id.size(), rows.size()) << relay->Output();
  std::set<std::string> seen;
  for (const auto& m : polled) {
    std::string id = m.Header("id");
    ASSERT_TRUE(by_id.count(id)) << id;
    if (!seen.insert(id).second) continue;
    const KafkaMessage& r = *by_id[id];
    EXPECT_EQ(m.key, r.key);
    EXPECT_EQ(m.key_null, r.key_null);
    EXPECT_EQ(m.value, r.value) << id;
    EXPECT_EQ(m.value_null, r.value_null) << id;
    EXPECT_EQ(m.headers, r.headers) << id;
    // And the value is the payload's text output.
    EXPECT_EQ(m.value, rows[id].payload);
    EXPECT_EQ(m.value_null, rows[id].payload_null);
  }
  EXPECT_EQ(seen.size(), rows.size()) << poller->Output();
  EXPECT_FALSE(by_id.empty());
  EXPECT_EQ(by_id.begin()->second->Header("event_type").empty(), false);
  ASSERT_TRUE(WaitAllSent()) << poller->Output();
  // SIGTERM: finish, exit 0.
  poller->Signal(SIGTERM);
  EXPECT_EQ(poller->Wait(30000), 0) << poller->Output();
  EXPECT_THAT(poller->Output(), HasSubstr("polling"));
  relay->Signal(SIGTERM);
  relay->Wait(30000);
  db_->Query("SELECT pg_drop_replication_slot('" + slot + "')")
      .status()
      .IgnoreError();
}

TEST_F(PollerE2ETest, OneInstanceKeepsEachKeysSeqOrder) {
  Process* poller = StartPoller({"--set", "poller.batch_size=50"});
  // Backlog plus rows written while it runs, one writer (seq order is
  // commit order).
  Insert(1000, 5, 1);
  for (int i = 0; i < 20; ++i) Insert(50, 5, 1001 + 50 * i);
  auto rows = Rows();
  ASSERT_EQ(rows.size(), 2000u);
  auto got = ConsumeIds(topic_, rows);
  EXPECT_EQ(Audit(rows, got, /*check_order=*/true), 0);
  ASSERT_TRUE(WaitAllSent()) << poller->Output();
  EXPECT_EQ(Count("attempts <> 0"), 0);
  poller->Signal(SIGTERM);
  EXPECT_EQ(poller->Wait(30000), 0) << poller->Output();
  EXPECT_EQ(Delivered(poller->Output()), 2000);
}

TEST_F(PollerE2ETest, TwoInstancesPublishEachRowOnce) {
  Insert(6000, 16);
  Process* a = StartPoller({"--set", "poller.batch_size=100"});
  Process* b = StartPoller({"--set", "poller.batch_size=100"});
  auto rows = Rows();
  ASSERT_TRUE(WaitAllSent()) << a->Output() << b->Output();
  auto got = ConsumeIds(topic_, rows);
  EXPECT_EQ(Audit(rows, got, /*check_order=*/false), 0);
  EXPECT_EQ(got.size(), rows.size());
  a->Signal(SIGTERM);
  b->Signal(SIGTERM);
  EXPECT_EQ(a->Wait(30000), 0) << a->Output();
  EXPECT_EQ(b->Wait(30000), 0) << b->Output();
  int64_t da = Delivered(a->Output()), db = Delivered(b->Output());
  EXPECT_EQ(da + db, 6000);
  std::cerr << "two instances: " << da << " + " << db << " rows\n";
}

TEST_F(PollerE2ETest, SigkillMidBatchLosesNothing) {
  Insert(30000, 32);
  auto rows = Rows();
  int64_t before = 0;
  for (int cycle = 0; cycle < 3; ++cycle) {
    Process* p = StartPoller({"--set", "poller.batch_size=500"});
    // Kill once this instance has settled at least one more batch: it is
    // then in the middle of another one.
    ASSERT_TRUE(
        WaitUntil([&] { return Count("sent_at IS NOT NULL") > before; }, 60000))
        << p->Output();
    p->Signal(SIGKILL);
    p->Wait(10000);
    before = Count("sent_at IS NOT NULL");
  }
  ASSERT_LT(before, 30000) << "drained before the last kill";
  Process* p = StartPoller({"--set", "poller.batch_size=500"});
  ASSERT_TRUE(WaitAllSent()) << p->Output();
  auto got = ConsumeIds(topic_, rows, 120000);
  int dups = Audit(rows, got, /*check_order=*/true);
  std::cerr << "sigkill: " << rows.size() << " rows, " << dups
            << " duplicates\n";
  RecordProperty("duplicates", dups);
}

TEST_F(PollerE2ETest, FailedRowIsRetriedThenDeadLetteredWhileOthersFlow) {
  std::string dlq = UniqueName("dlq");
  Process* p = StartPoller({"--set", "poller.max_attempts=3", "--set",
                            "poller.backoff_initial_ms=50", "--set",
                            "poller.backoff_max_ms=200", "--set",
                            "outbox.on_invalid=dead_letter", "--set",
                            "outbox.dead_letter_topic=" + dlq});
  Insert(20, 3, 1);
  const std::string huge = "00000000-0000-4000-8000-0000000000cc";
  InsertHuge(huge);
  Insert(20, 3, 21);
  ASSERT_TRUE(WaitUntil(
      [&] { return Count("dead_lettered_at IS NOT NULL") == 1; }, 60000))
      << p->Output();
  auto dead = db_->Query(
      "SELECT id, attempts, last_error, sent_at IS NULL "
      "FROM public." +
      table_ + " WHERE dead_lettered_at IS NOT NULL");
  ASSERT_TRUE(dead.ok()) << dead.status();
  ASSERT_EQ(dead->size(), 1u);
  EXPECT_EQ((*dead)[0][0], huge);
  EXPECT_EQ((*dead)[0][1], "3");
  EXPECT_THAT((*dead)[0][2], HasSubstr("too large"));
  EXPECT_EQ((*dead)[0][3], "t");
  auto rows = Rows("id <> '" + huge + "'");
  ASSERT_TRUE(WaitAllSent()) << p->Output();
  auto got = ConsumeIds(topic_, rows);
  EXPECT_EQ(Audit(rows, got, /*check_order=*/true), 0);
  auto dl = ConsumeAll(env_->kafka_brokers(), {dlq}, 1, 30000);
  ASSERT_EQ(dl.size(), 1u) << p->Output();
  EXPECT_EQ(dl[0].Header("id"), huge);
  EXPECT_EQ(dl[0].Header("topic"), topic_);
  EXPECT_EQ(dl[0].Header("attempts"), "3");
  EXPECT_THAT(dl[0].Header("error"), HasSubstr("too large"));
  EXPECT_FALSE(dl[0].Header("truncated").empty());
  EXPECT_THAT(p->Output(), HasSubstr("dead-lettered outbox row"));
  EXPECT_THAT(p->Output(), HasSubstr("will retry"));

  // The operator signals, on the metrics endpoint.
  std::string out = p->Output();
  size_t at = out.find("serving metrics");
  ASSERT_NE(at, std::string::npos);
  at = out.find("port=", at);
  std::string port = out.substr(at + 5, out.find_first_of(" \n", at) - at - 5);
  std::string metrics;
  ASSERT_TRUE(WaitUntil(
      [&] {
        metrics.clear();
        FILE* f = popen(
            ("curl -s http://127.0.0.1:" + port + "/metrics").c_str(), "r");
        if (f == nullptr) return false;
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof(buf), f)) > 0) metrics.append(buf, n);
        pclose(f);
        return metrics.find("outbox_poller_unsent_rows{table=\"public." +
                            table_ + "\"} 0") != std::string::npos;
      },
      30000))
      << metrics;
  EXPECT_THAT(metrics, HasSubstr("outbox_poller_dead_lettered_total 1"));
  EXPECT_THAT(metrics, HasSubstr("outbox_poller_failures_total 3"));
  EXPECT_THAT(metrics, HasSubstr("outbox_poller_events_delivered_total 40"));
  EXPECT_THAT(metrics, HasSubstr("outbox_poller_oldest_unsent_age_seconds"));
  p->Signal(SIGTERM);
  EXPECT_EQ(p->Wait(30000), 0) << p->Output();
}

TEST_F(PollerE2ETest, DeleteModeDeletesDeliveredRows) {
  Insert(300, 4);
  auto rows = Rows();
  Process* p = StartPoller({"--set", "poller.mode=delete"});
  auto got = ConsumeIds(topic_, rows);
  EXPECT_EQ(Audit(rows, got, /*check_order=*/true), 0);
  ASSERT_TRUE(WaitUntil([&] { return Count("true") == 0; }, 60000))
      << p->Output();
}

TEST_F(PollerE2ETest, JanitorRemovesOldSentRows) {
  Insert(300, 4);
  auto rows = Rows();
  // An old sent row and a recent one; the janitor keeps rows for 60 s.
  db_->Exec("UPDATE public." + table_ +
            " SET sent_at = now() - interval '1 hour' WHERE seq = (SELECT "
            "min(seq) FROM public." +
            table_ + ")");
  Process* p = StartPoller({"--set", "poller.retention_s=60"});
  ASSERT_TRUE(WaitAllSent()) << p->Output();
  ASSERT_TRUE(WaitUntil([&] { return Count("true") == 299; }, 60000))
      << p->Output();
  // Only the old one went; the fresh ones stay for the retention.
  EXPECT_EQ(Count("sent_at < now() - interval '1 minute'"), 0);
  p->Signal(SIGTERM);
  EXPECT_EQ(p->Wait(30000), 0) << p->Output();
  // With a 1 s retention everything goes, in bounded batches.
  p = StartPoller({"--set", "poller.retention_s=1"});
  ASSERT_TRUE(WaitUntil([&] { return Count("true") == 0; }, 60000))
      << p->Output();
}

TEST_F(PollerE2ETest, NotifyWakesTheIdlePoller) {
  std::string channel = UniqueName("chan");
  std::string sql =
      absl::StrReplaceAll(ReadFile(Root() + "/sql/poller_notify.sql"),
                          {{"ON public.outbox", "ON public." + table_},
                           {"'outbox_relay'", "'" + channel + "'"}});
  db_->Exec(sql);
  Insert(1, 1, 1);
  // A minute between polls: only the NOTIFY can bring the second row
  // within this test's waits.
  Process* p = StartPoller({"--set", "poller.interval_ms=60000", "--set",
                            "poller.notify=true", "--set",
                            "poller.notify_channel=" + channel});
  auto first = Rows();
  ConsumeIds(topic_, first);
  ASSERT_TRUE(WaitAllSent(30000)) << p->Output();
  Insert(1, 1, 2);
  auto rows = Rows();
  auto got = ConsumeIds(topic_, rows, 20000);
  EXPECT_EQ(Audit(rows, got, /*check_order=*/true), 0) << p->Output();
  p->Signal(SIGTERM);
  EXPECT_EQ(p->Wait(30000), 0) << p->Output();
}

}  // namespace
}  // namespace outbox::testing
