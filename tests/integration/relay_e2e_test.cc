// outbox-relay end to end: the real binary against the real PostgreSQL and
// Kafka of the test fixture. Each test uses its own outbox table, slot and
// topic, so tests do not see each other's events.
#include <signal.h>

#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/test_env.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

struct Event {
  std::string id, key, payload;
  int writer = 0, seq = 0;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class RelayE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = &TestEnv::Get();
    db_ = PgConn::Connect(env_->pg_conninfo());
    ASSERT_NE(db_, nullptr);
    db_->Exec(ReadFile(std::string(getenv("OUTBOX_ROOT")) + "/sql/outbox.sql"));
    table_ = UniqueName("outbox");
    slot_ = UniqueName("slot");
    aggtype_ = UniqueName("agg");
    topic_ = "outbox.event." + aggtype_;
    db_->Exec("CREATE TABLE public." + table_ +
              " (LIKE public.outbox INCLUDING ALL)");
    dir_ = TempDir("relay_e2e");
  }

  void TearDown() override {
    relay_.reset();
    db_->Query("SELECT pg_drop_replication_slot('" + slot_ + "')")
        .status()
        .IgnoreError();
  }

  std::vector<std::string> RelayArgs() {
    return {BinaryPath("outbox-relay"),
            "--pg",
            env_->pg_conninfo(),
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
            "http.listen=127.0.0.1:0"};
  }

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
    auto conn = PgConn::Connect(env_->pg_conninfo());
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
  // occurrences follows commit order. Returns the duplicate count.
  int Audit(const std::vector<Event>& committed,
            const std::vector<std::string>& rolled_back, size_t want) {
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

  // A 2 MB payload: over the producer's message.max.bytes (1 MB).
  void InsertHugeEvent(const std::string& id) {
    db_->Exec("INSERT INTO public." + table_ +
              " (id, aggregatetype, aggregateid, type, payload) VALUES ('" +
              id + "', '" + aggtype_ +
              "', 'big', 'Huge', jsonb_build_object('blob', repeat('y', "
              "2000000)))");
  }

  const TestEnv* env_;
  std::unique_ptr<PgConn> db_;
  std::string table_, slot_, aggtype_, topic_, dir_;
  std::unique_ptr<Process> relay_;
};

TEST_F(RelayE2ETest, ConcurrentWritersArriveExactlyAsCommitted) {
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::vector<std::vector<Event>> committed(4);
  std::vector<std::vector<std::string>> rolled_back(4);
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back(
        [&, w] { Write(w, 40, 5, 7, &committed[w], &rolled_back[w]); });
  }
  for (auto& t : writers) t.join();
  std::vector<Event> all;
  std::vector<std::string> all_rolled_back;
  for (int w = 0; w < 4; ++w) {
    all.insert(all.end(), committed[w].begin(), committed[w].end());
    all_rolled_back.insert(all_rolled_back.end(), rolled_back[w].begin(),
                           rolled_back[w].end());
  }
  ASSERT_GT(all_rolled_back.size(), 0u);
  int dups = Audit(all, all_rolled_back, all.size());
  EXPECT_EQ(dups, 0);
  // SIGTERM: flush, confirm, exit 0; afterwards the slot holds nothing
  // undelivered.
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();
  EXPECT_THAT(relay_->Output(), HasSubstr("streaming"));
  EXPECT_EQ(db_->Scalar("SELECT count(*) FROM pg_logical_slot_peek_changes('" +
                        slot_ +
                        "', NULL, NULL, 'format-version', '2', 'add-tables', "
                        "'public." +
                        table_ +
                        "', 'actions', 'insert') WHERE data LIKE "
                        "'%\"action\":\"I\"%'"),
            "0");
}

TEST_F(RelayE2ETest, ConfirmedLsnAdvancesWhenOnlyOtherTablesAreWritten) {
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::string before = ConfirmedFlush();
  std::string other = UniqueName("other");
  db_->Exec("CREATE TABLE " + other + " (a int)");
  for (int i = 0; i < 50; ++i) {
    db_->Exec("INSERT INTO " + other + " VALUES (" + std::to_string(i) + ")");
  }
  std::string target = db_->Scalar("SELECT pg_current_wal_lsn()");
  EXPECT_TRUE(WaitUntil(
      [&] {
        return db_->Scalar("SELECT confirmed_flush_lsn >= '" + target +
                           "'::pg_lsn FROM pg_replication_slots WHERE "
                           "slot_name = '" +
                           slot_ + "'") == "t";
      },
      30000))
      << "confirmed stayed at " << ConfirmedFlush() << " (was " << before
      << ", want " << target << ")\n"
      << relay_->Output();
}

TEST_F(RelayE2ETest, SigkillAtRandomMomentsLosesNothing) {
  std::vector<Event> committed;
  std::vector<std::string> rolled_back;
  std::atomic<bool> stop{false};
  // The slot must exist before the first event: rows committed before it
  // was created are not in its stream (by design).
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::thread writer(
      [&] { Write(1, 100000, 4, 0, &committed, &rolled_back, &stop); });
  std::mt19937 rng(42);
  for (int cycle = 0; cycle < 6; ++cycle) {
    if (cycle > 0) StartRelay();
    std::this_thread::sleep_for(std::chrono::milliseconds(300 + rng() % 1200));
    relay_->Signal(SIGKILL);
    relay_->Wait(10000);
  }
  stop = true;
  writer.join();
  StartRelay();
  ASSERT_GT(committed.size(), 0u);
  int dups = Audit(committed, rolled_back, committed.size());
  RecordProperty("committed", static_cast<int>(committed.size()));
  RecordProperty("duplicates", dups);
  std::cerr << "sigkill: " << committed.size() << " events, " << dups
            << " duplicates\n";
}

TEST_F(RelayE2ETest, KafkaOutageLosesNothing) {
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::vector<Event> committed;
  std::vector<std::string> rolled_back;
  Write(1, 20, 3, 0, &committed, &rolled_back);
  ASSERT_EQ(RunScript("kafka.sh kill " + env_->kafka_dir()), 0);
  std::string confirmed_during = ConfirmedFlush();
  Write(2, 40, 3, 0, &committed, &rolled_back);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ASSERT_EQ(RunScript("kafka.sh restart " + env_->kafka_dir()), 0);
  Write(3, 20, 3, 0, &committed, &rolled_back);
  Audit(committed, rolled_back, committed.size());
  EXPECT_TRUE(relay_->Running()) << relay_->Output();
}

TEST_F(RelayE2ETest, PostgresRestartAndTerminatedWalsenderLoseNothing) {
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::vector<Event> committed;
  std::vector<std::string> rolled_back;
  Write(1, 20, 3, 0, &committed, &rolled_back);
  // The server ends the replication connection.
  db_->Exec(
      "SELECT pg_terminate_backend(active_pid) FROM "
      "pg_replication_slots WHERE slot_name = '" +
      slot_ + "'");
  Write(2, 20, 3, 0, &committed, &rolled_back);
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  // A fast restart of PostgreSQL itself.
  ASSERT_EQ(RunScript("pg.sh restart " + env_->pg_dir() + " fast"), 0);
  db_ = PgConn::Connect(env_->pg_conninfo());
  ASSERT_NE(db_, nullptr);
  Write(3, 20, 3, 0, &committed, &rolled_back);
  Audit(committed, rolled_back, committed.size());
  EXPECT_TRUE(relay_->Running()) << relay_->Output();
  EXPECT_THAT(relay_->Output(), HasSubstr("session ended"));
}

TEST_F(RelayE2ETest, PoisonRowHaltsNamingTheEvent) {
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::vector<Event> committed;
  std::vector<std::string> rolled_back;
  Write(1, 3, 2, 0, &committed, &rolled_back);
  InsertHugeEvent("00000000-0000-4000-8000-0000000000aa");
  EXPECT_EQ(relay_->Wait(60000), 4) << relay_->Output();
  EXPECT_THAT(relay_->Output(),
              HasSubstr("00000000-0000-4000-8000-0000000000aa"));
  Audit(committed, rolled_back, committed.size());
  // Restarting halts again on the same row: it was not confirmed.
  StartRelay();
  EXPECT_EQ(relay_->Wait(60000), 4) << relay_->Output();
}

TEST_F(RelayE2ETest, PoisonRowIsDeadLetteredAndTheRestFlows) {
  std::string dlq = UniqueName("dlq");
  StartRelay({"--set", "outbox.on_invalid=dead_letter", "--set",
              "outbox.dead_letter_topic=" + dlq});
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::vector<Event> committed;
  std::vector<std::string> rolled_back;
  Write(1, 3, 2, 0, &committed, &rolled_back);
  InsertHugeEvent("00000000-0000-4000-8000-0000000000bb");
  Write(2, 3, 2, 0, &committed, &rolled_back);
  Audit(committed, rolled_back, committed.size());
  auto dead = ConsumeAll(env_->kafka_brokers(), {dlq}, 1, 30000);
  ASSERT_EQ(dead.size(), 1u) << relay_->Output();
  EXPECT_EQ(dead[0].Header("id"), "00000000-0000-4000-8000-0000000000bb");
  EXPECT_THAT(dead[0].Header("error"), HasSubstr("too large"));
  EXPECT_FALSE(dead[0].Header("truncated").empty());
  EXPECT_TRUE(relay_->Running()) << relay_->Output();
}

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
    EXPECT_THAT(relay_->Output(), HasSubstr(message));
  }
};

TEST_F(PreconditionTest, MissingTable) {
  ExpectRefusal("does not exist", {"--tables", "public.no_such_outbox"});
}

TEST_F(PreconditionTest, SlotWithAnotherPlugin) {
  db_->Exec("SELECT pg_create_logical_replication_slot('" + slot_ +
            "', 'test_decoding')");
  ExpectRefusal("not wal2json");
}

TEST_F(PreconditionTest, RoleWithoutReplication) {
  std::string role = UniqueName("norepl");
  db_->Exec("CREATE ROLE " + role + " LOGIN");
  auto args = RelayArgs();
  args[2] = env_->pg_conninfo() + " user=" + role;
  ExpectRefusal("REPLICATION", {}, args);
}

TEST_F(PreconditionTest, PluginNotAllowed) {
  db_->Exec("ALTER SYSTEM SET output_plugin_libraries = pgoutput");
  db_->Exec("SELECT pg_reload_conf()");
  WaitUntil(
      [&] { return db_->Scalar("SHOW output_plugin_libraries") == "pgoutput"; },
      5000);
  ExpectRefusal("output_plugin_libraries");
  db_->Exec("ALTER SYSTEM RESET output_plugin_libraries");
  db_->Exec("SELECT pg_reload_conf()");
  WaitUntil(
      [&] { return db_->Scalar("SHOW output_plugin_libraries") != "pgoutput"; },
      5000);
}

TEST_F(PreconditionTest, WalLevelNotLogical) {
  std::string pgdir = TempDir("pg_replica") + "/pg";
  ASSERT_EQ(RunScript("pg.sh start " + pgdir + " >/dev/null"), 0);
  std::string port = ReadFile(pgdir + "/port");
  while (!port.empty() && port.back() == '\n') port.pop_back();
  std::string conninfo =
      "host=127.0.0.1 port=" + port + " user=postgres dbname=postgres";
  {
    auto db = PgConn::Connect(conninfo);
    ASSERT_NE(db, nullptr);
    db->Exec("ALTER SYSTEM SET wal_level = replica");
  }
  ASSERT_EQ(RunScript("pg.sh restart " + pgdir), 0);
  auto args = RelayArgs();
  args[2] = conninfo;
  ExpectRefusal("wal_level", {}, args);
  RunScript("pg.sh stop " + pgdir);
}

}  // namespace
}  // namespace outbox::testing
