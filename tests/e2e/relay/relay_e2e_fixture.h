// RelayE2ETest: the fixture of outbox-relay's end-to-end tests. Each test
// gets its own outbox table (LIKE public.outbox), slot, aggregate type and
// topic, so tests do not see each other's events; helpers start the real
// binary, write events, and check Kafka against what was committed.
#ifndef OUTBOX_TESTS_E2E_RELAY_RELAY_E2E_FIXTURE_H_
#define OUTBOX_TESTS_E2E_RELAY_RELAY_E2E_FIXTURE_H_

#include <signal.h>

#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "e2e/test_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox::testing {

// Starts a PostgreSQL cluster of `major` in `dir` (scripts/pg.sh, after
// stopping whatever was there); its conninfo, or "" when it did not start.
// Stop it with RunScript("pg.sh stop " + dir).
inline std::string StartPgCluster(int major, const std::string& dir) {
  if (RunScript("pg.sh stop " + dir +
                " >/dev/null 2>&1; OUTBOX_PG_MAJOR=" + std::to_string(major) +
                " " + std::string(getenv("OUTBOX_ROOT")) +
                "/scripts/pg.sh start " + dir + " >/dev/null") != 0) {
    return "";
  }
  std::string port = ReadFile(dir + "/port");
  while (!port.empty() && port.back() == '\n') port.pop_back();
  return "host=127.0.0.1 port=" + port + " user=postgres dbname=postgres";
}

// One PostgreSQL cluster per major for the whole test binary, started by
// the first test that asks (StartPgCluster) and stopped when the binary
// ends; its conninfo, or "" when it did not start. Tests on it keep to
// their own tables, slots and publications (the fixture's unique names)
// and change no server setting, so they share it: starting a cluster per
// test cost a few seconds each (issue 35, the suite's time).
class SharedPgClusters : public ::testing::Environment {
 public:
  static std::string Conninfo(int major) {
    auto it = conninfo().find(major);
    if (it != conninfo().end()) return it->second;
    std::string dir = TempDir("pg" + std::to_string(major)) + "/pg";
    std::string c = StartPgCluster(major, dir);
    if (!c.empty()) dirs().push_back(dir);
    conninfo()[major] = c;
    return c;
  }
  void TearDown() override {
    for (const auto& dir : dirs()) RunScript("pg.sh stop " + dir);
  }

 private:
  static std::map<int, std::string>& conninfo() {
    static auto* m = new std::map<int, std::string>();
    return *m;
  }
  static std::vector<std::string>& dirs() {
    static auto* d = new std::vector<std::string>();
    return *d;
  }
};
inline ::testing::Environment* const kSharedPgClusters =
    ::testing::AddGlobalTestEnvironment(new SharedPgClusters);

struct Event {
  std::string id, key, payload;
  int writer = 0, seq = 0;
};

class RelayE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = &TestEnv::Get();
    pg_conninfo_ = PgConninfo();
    ASSERT_FALSE(pg_conninfo_.empty()) << "no PostgreSQL for this test";
    db_ = PgConn::Connect(pg_conninfo_);
    ASSERT_NE(db_, nullptr);
    table_ = UniqueName("outbox");
    slot_ = UniqueName("slot");
    aggtype_ = UniqueName("agg");
    topic_ = "outbox.event." + aggtype_;
    CreateOutboxTable(*db_, table_);
    dir_ = TempDir("relay_e2e");
  }

  void TearDown() override {
    relay_.reset();
    if (db_ == nullptr) return;
    db_->Query("SELECT pg_drop_replication_slot('" + slot_ + "')")
        .status()
        .IgnoreError();
  }

  // The database the test runs against: the fixture's PostgreSQL unless a
  // subclass starts its own (another major version); "" fails SetUp.
  virtual std::string PgConninfo() { return env_->pg_conninfo(); }

  std::vector<std::string> RelayArgs() {
    std::vector<std::string> args = {BinaryPath("outbox-relay"),
                                     "--pg",
                                     pg_conninfo_,
                                     "--kafka",
                                     env_->kafka_brokers(),
                                     "--slot",
                                     slot_,
                                     "--tables",
                                     "public." + table_,
                                     "--set",
                                     "log.progress_interval_s=1",
                                     "--set",
                                     "postgres.reconnect_backoff_max_ms=1000",
                                     "--set",
                                     "http.listen=127.0.0.1:0",
                                     "--set",
                                     "postgres.state_dir=" + StateDir()};
    args.insert(args.end(), extra_relay_args_.begin(), extra_relay_args_.end());
    return args;
  }

  // The relay's slot marker directory: one per test, so a test's slot
  // history starts empty and stays out of $HOME.
  std::string StateDir() const { return dir_ + "/state"; }

  void StartRelay(std::vector<std::string> extra = {}) {
    auto args = RelayArgs();
    args.insert(args.end(), extra.begin(), extra.end());
    relay_ = Process::Start(args, dir_ + "/relay.log");
  }

  // Waits until the relay holds the slot.
  bool WaitActive(int timeout_ms = 30000) {
    return WaitUntil(
        [&] {
          return db_->Scalar(
                     "SELECT count(*) FROM pg_replication_slots WHERE "
                     "slot_name = '" +
                     slot_ + "' AND active") == "1";
        },
        timeout_ms);
  }

  // Whether the relay's session streams: it logged "streaming", after its
  // producer was created. WaitActive only says the slot is held, which a
  // session still creating its producer (a round trip to Kafka) already
  // does: a test that stops the broker must wait for this first.
  bool WaitStreaming(int timeout_ms = 30000) {
    return WaitUntil(
        [&] {
          return relay_ != nullptr &&
                 relay_->Output().find(" INFO streaming host=") !=
                     std::string::npos;
        },
        timeout_ms);
  }

  std::string ConfirmedFlush() {
    return db_->Scalar(
        "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE "
        "slot_name = '" +
        slot_ + "'");
  }

  // Writes `txns` transactions of 1..max_per_txn events from one writer,
  // rolling back every `rollback_every`-th. Committed events go to
  // *committed, rolled-back ids to *rolled_back.
  void Write(int writer, int txns, int max_per_txn, int rollback_every,
             std::vector<Event>* committed,
             std::vector<std::string>* rolled_back,
             std::atomic<bool>* stop = nullptr) {
    auto conn = PgConn::Connect(pg_conninfo_);
    ASSERT_NE(conn, nullptr);
    std::mt19937 rng(writer);
    int seq = 0;
    for (int t = 0; t < txns && !(stop && stop->load()); ++t) {
      int n = 1 + static_cast<int>(rng() % max_per_txn);
      bool rollback = rollback_every > 0 && t % rollback_every == 3;
      std::string sql = "BEGIN;";
      std::vector<Event> events;
      for (int i = 0; i < n; ++i) {
        Event e;
        e.writer = writer;
        e.seq = ++seq;
        e.key = absl::StrCat("w", writer, "-a", rng() % 4);
        e.id = conn->Scalar("SELECT gen_random_uuid()");
        events.push_back(e);
        absl::StrAppend(
            &sql, "INSERT INTO public.", table_,
            " (id, aggregatetype, aggregateid, type, payload) VALUES ('", e.id,
            "', '", aggtype_, "', '", e.key,
            "', 'Created', jsonb_build_object("
            "'writer', ",
            writer, ", 'seq', ", e.seq,
            ", 'note', 'caf\u00e9 \"quoted\" \\\\ back', 'pad', repeat('x', "
            "300)));");
      }
      sql += rollback ? "ROLLBACK;" : "COMMIT;";
      conn->Exec(sql);
      if (rollback) {
        for (auto& e : events) rolled_back->push_back(e.id);
      } else {
        for (auto& e : events) {
          e.payload = conn->Scalar(
              absl::StrCat("SELECT jsonb_build_object('writer', ", writer,
                           ", 'seq', ", e.seq,
                           ", 'note', 'caf\u00e9 \"quoted\" \\\\ back', 'pad', "
                           "repeat('x', 300))::text"));
          committed->push_back(e);
        }
      }
    }
  }

  // Checks Kafka against the committed events: every one present with its
  // key, value and id header; nothing rolled back; per-key order of first
  // occurrences follows commit order. Returns the duplicate count; with
  // `repeated`, also the ids that came more than once.
  int Audit(const std::vector<Event>& committed,
            const std::vector<std::string>& rolled_back, size_t want,
            std::set<std::string>* repeated = nullptr) {
    std::set<std::string> want_ids;
    for (const auto& e : committed) want_ids.insert(e.id);
    // Consume until every committed id was seen (duplicates do not count).
    std::set<std::string> seen;
    size_t scanned = 0;
    auto got = ConsumeUntil(
        env_->kafka_brokers(), {topic_},
        [&](const std::vector<KafkaMessage>& msgs) {
          for (; scanned < msgs.size(); ++scanned) {
            std::string id = msgs[scanned].Header("id");
            if (want_ids.count(id)) seen.insert(id);
          }
          return seen.size() >= want && seen.size() == want_ids.size();
        },
        30000);
    std::map<std::string, const KafkaMessage*> by_id;
    int duplicates = 0;
    std::map<std::string, std::vector<int>> order;  // key -> seqs
    std::map<std::string, const Event*> events;
    for (const auto& e : committed) events[e.id] = &e;
    for (const auto& m : got) {
      std::string id = m.Header("id");
      if (by_id.count(id)) {
        ++duplicates;
        if (repeated != nullptr) repeated->insert(id);
        continue;
      }
      by_id[id] = &m;
      auto it = events.find(id);
      if (it == events.end()) continue;
      order[m.key].push_back(it->second->seq);
    }
    for (const auto& id : rolled_back) {
      EXPECT_EQ(by_id.count(id), 0u) << "rolled-back event published: " << id;
    }
    int missing = 0;
    for (const auto& e : committed) {
      auto it = by_id.find(e.id);
      if (it == by_id.end()) {
        ++missing;
        continue;
      }
      EXPECT_EQ(it->second->key, e.key);
      EXPECT_EQ(it->second->value, e.payload);
      EXPECT_EQ(it->second->topic, topic_);
    }
    EXPECT_EQ(missing, 0) << "of " << committed.size() << " committed events";
    for (const auto& [key, seqs] : order) {
      for (size_t i = 1; i < seqs.size(); ++i) {
        EXPECT_LT(seqs[i - 1], seqs[i]) << "order violated for key " << key;
      }
    }
    return duplicates;
  }

  // The START_REPLICATION command (its options) of the walsender streaming
  // `slot`, once there is one (not while it still creates the slot); "" if
  // none within 30 s.
  std::string StartReplicationCommand(const std::string& slot) {
    std::string command;
    WaitUntil(
        [&] {
          command = db_->Scalar(
              "SELECT coalesce(max(a.query), '') FROM pg_stat_activity a "
              "JOIN pg_replication_slots s ON s.active_pid = a.pid WHERE "
              "s.slot_name = '" +
              slot + "'");
          return command.find("START_REPLICATION") != std::string::npos;
        },
        30000);
    return command;
  }

  // Two relays' records of the same rows: reads `count` from each topic and
  // expects them the same, matched by their "id" header: key, value (null
  // included), headers, partition and, with `timestamps`, timestamp.
  // `a` and `b` are the relays, for their output on a failure.
  void ExpectSameRecords(const std::string& topic_a, const std::string& topic_b,
                         size_t count, Process& a, Process& b,
                         bool timestamps = false) {
    const auto enough = [count](const std::vector<KafkaMessage>& m) {
      return m.size() >= count;
    };
    auto got_a = ConsumeUntil(env_->kafka_brokers(), {topic_a}, enough, 60000);
    auto got_b = ConsumeUntil(env_->kafka_brokers(), {topic_b}, enough, 60000);
    ASSERT_EQ(got_a.size(), count) << a.Output();
    ASSERT_EQ(got_b.size(), count) << b.Output();
    std::map<std::string, const KafkaMessage*> by_id;
    for (const auto& m : got_b) by_id[m.Header("id")] = &m;
    for (const auto& x : got_a) {
      auto it = by_id.find(x.Header("id"));
      ASSERT_NE(it, by_id.end()) << x.Header("id");
      const KafkaMessage& y = *it->second;
      EXPECT_EQ(x.key, y.key);
      EXPECT_EQ(x.key_null, y.key_null);
      EXPECT_EQ(x.value, y.value) << x.Header("id");
      EXPECT_EQ(x.value_null, y.value_null);
      EXPECT_EQ(x.headers, y.headers);
      EXPECT_EQ(x.partition, y.partition);
      if (timestamps) {
        EXPECT_EQ(x.timestamp_ms, y.timestamp_ms);
      }
    }
  }

  // outbox-audit, the product's own check, on this test's table and topic
  // against the fixture's PostgreSQL and Kafka, with `extra` arguments.
  // Returns its exit code; *output gets what it printed. `terminal`: run
  // it at a pseudo-terminal.
  int RunOutboxAudit(const std::vector<std::string>& extra, std::string* output,
                     bool terminal = false) {
    std::vector<std::string> args = {BinaryPath("outbox-audit"),
                                     "--pg",
                                     pg_conninfo_,
                                     "--kafka",
                                     env_->kafka_brokers(),
                                     "--tables",
                                     "public." + table_,
                                     "--topic",
                                     topic_};
    args.insert(args.end(), extra.begin(), extra.end());
    if (terminal) args = AtATerminal(args);
    // A log of its own per run: the output is this run's only.
    auto audit = Process::Start(
        args, absl::StrCat(dir_, "/audit-", ++audit_runs_, ".log"));
    int code = audit->Wait(180000);
    *output = audit->Output();
    return code;
  }

  // A count in outbox-audit's --json report ("duplicates", "missing", ...);
  // -1 when the report has none.
  static int AuditReportCount(const std::string& report,
                              const std::string& field) {
    std::smatch m;
    return std::regex_search(report, m,
                             std::regex("\"" + field + "\": *([0-9]+)"))
               ? std::stoi(m[1])
               : -1;
  }

  // SQL inserting one event whose payload's JSON text is `bytes` long.
  std::string SizedEventSql(const std::string& id, const std::string& key,
                            size_t bytes) {
    // {"blob": "yyy..."}: 12 bytes around the string.
    return absl::StrCat("INSERT INTO public.", table_,
                        " (id, aggregatetype, aggregateid, type, payload) "
                        "VALUES ('",
                        id, "', '", aggtype_, "', '", key,
                        "', 'Sized', jsonb_build_object('blob', repeat('y', ",
                        bytes - 12, ")));");
  }

  // A 2 MB payload: over the producer's message.max.bytes (1 MB).
  void InsertHugeEvent(const std::string& id) {
    db_->Exec(HugeEventSql(table_, aggtype_, id));
  }

  // Scenarios more than one test runs (wal2json and pgoutput alike).

  // `writers` threads each commit `txns` transactions (some rolled back)
  // while the relay runs; returns the duplicates Audit() found.
  int WriteConcurrentlyAndAudit(int writers, int txns) {
    std::vector<std::vector<Event>> committed(writers);
    std::vector<std::vector<std::string>> rolled_back(writers);
    std::vector<std::thread> threads;
    for (int w = 0; w < writers; ++w) {
      threads.emplace_back(
          [&, w] { Write(w, txns, 5, 7, &committed[w], &rolled_back[w]); });
    }
    for (auto& t : threads) t.join();
    std::vector<Event> all;
    std::vector<std::string> all_rolled_back;
    for (int w = 0; w < writers; ++w) {
      all.insert(all.end(), committed[w].begin(), committed[w].end());
      all_rolled_back.insert(all_rolled_back.end(), rolled_back[w].begin(),
                             rolled_back[w].end());
    }
    EXPECT_GT(all_rolled_back.size(), 0u);
    return Audit(all, all_rolled_back, all.size());
  }

  // Writes only another table; the slot's confirmed position must pass it
  // within `timeout_ms` (a quiet outbox must not pin WAL).
  void ExpectConfirmedPassesOtherTablesWrites(int timeout_ms) {
    std::string other = UniqueName("other");
    db_->Exec("CREATE TABLE " + other + " (a int)");
    for (int i = 0; i < 50; ++i) {
      db_->Exec("INSERT INTO " + other + " VALUES (" + std::to_string(i) + ")");
    }
    ExpectConfirmedReachesCurrentWal(timeout_ms);
  }

  // The slot's confirmed position must reach the current end of WAL within
  // `timeout_ms`: everything written so far was delivered or skipped.
  void ExpectConfirmedReachesCurrentWal(int timeout_ms) {
    std::string target = db_->Scalar("SELECT pg_current_wal_lsn()");
    EXPECT_TRUE(WaitUntil(
        [&] {
          return db_->Scalar("SELECT confirmed_flush_lsn >= '" + target +
                             "'::pg_lsn FROM pg_replication_slots WHERE "
                             "slot_name = '" +
                             slot_ + "'") == "t";
        },
        timeout_ms))
        << "confirmed stayed at " << ConfirmedFlush() << ", want " << target
        << "\n"
        << relay_->Output();
  }

  // A writer commits events while the relay is SIGKILLed `cycles` times at
  // random moments (seeded) and restarted; then the relay runs once more.
  // Fills `committed`/`rolled_back` for Audit().
  void WriteThroughSigkills(int cycles, unsigned seed,
                            std::vector<Event>* committed,
                            std::vector<std::string>* rolled_back) {
    std::atomic<bool> stop{false};
    std::thread writer(
        [&] { Write(1, 100000, 4, 0, committed, rolled_back, &stop); });
    std::mt19937 rng(seed);
    for (int cycle = 0; cycle < cycles; ++cycle) {
      if (cycle > 0) StartRelay();
      std::this_thread::sleep_for(
          std::chrono::milliseconds(300 + rng() % 1200));
      relay_->Signal(SIGKILL);
      relay_->Wait(10000);
    }
    stop = true;
    writer.join();
    StartRelay();
  }

  const TestEnv* env_;
  std::unique_ptr<PgConn> db_;
  std::string table_, slot_, aggtype_, topic_, dir_;
  int audit_runs_ = 0;
  std::string pg_conninfo_;
  std::vector<std::string> extra_relay_args_;  // appended by RelayArgs()
  std::unique_ptr<Process> relay_;
};

// Runs the relay expecting it to refuse to start (exit 3) with a message.
class PreconditionTest : public RelayE2ETest {
 protected:
  // Runs the relay with `args` appended; expects exit 3 with `message`.
  void ExpectRefusal(const std::string& message,
                     std::vector<std::string> extra = {},
                     std::vector<std::string> base = {}) {
    auto args = base.empty() ? RelayArgs() : base;
    args.insert(args.end(), extra.begin(), extra.end());
    relay_ = Process::Start(args, dir_ + "/relay.log");
    EXPECT_EQ(relay_->Wait(30000), 3) << relay_->Output();
    EXPECT_THAT(relay_->Output(), ::testing::HasSubstr(message));
  }
};

// The relay with kafka.exactly_once and a checkpoint topic of its own.
class ExactlyOnceRelayE2ETest : public RelayE2ETest {
 protected:
  void SetUp() override {
    RelayE2ETest::SetUp();
    if (HasFatalFailure()) return;
    checkpoint_topic_ = UniqueName("cp");
    extra_relay_args_ = {"--set", "kafka.exactly_once=true", "--set",
                         "kafka.checkpoint_topic=" + checkpoint_topic_};
  }

  std::string checkpoint_topic_;
};

}  // namespace outbox::testing

#endif  // OUTBOX_TESTS_E2E_RELAY_RELAY_E2E_FIXTURE_H_
