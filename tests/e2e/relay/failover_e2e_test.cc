// A real PostgreSQL 17 failover under load (issue 13): a primary and a
// physical streaming standby on loopback (scripts/pg.sh start, standby:
// slot synchronization on), the relay on the multi-host conninfo
// (target_session_attrs=read-write), its slot a failover slot, writers on the
// same conninfo. The primary's postmaster is SIGKILLed mid-load, the standby
// promoted (scripts/pg.sh promote); the writers reconnect to it and the relay
// follows on its own, resuming from the synchronized slot. Then the audit
// against the new primary (what it has is the truth: with asynchronous
// replication, rows the old primary committed but did not ship are gone, and
// synchronized_standby_slots kept the relay from publishing any of them):
// zero missing, zero unknown, per-key order kept, duplicates counted and
// bounded.
//
// The bound: the relay resumes from the synchronized slot's confirmed
// position L (read on the standby after the kill: nothing moves it until
// the promotion). Decoding restarts at the first transaction whose commit
// record ends after L, so only events committed after L can come twice. Each
// writer reads pg_current_wal_insert_lsn() right after its COMMIT, an upper
// bound of the commit's end: an event whose bound is <= L must never be a
// duplicate, nor one written to the new primary (its session never ends),
// so the duplicates are at most the events the old primary took whose bound
// is > L or unknown (the connection died during COMMIT) and that the new
// primary has.
#include <unistd.h>

#include <cinttypes>
#include <cstdio>

#include "e2e/relay/relay_e2e_fixture.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

uint64_t ParseLsnText(const std::string& s) {
  unsigned hi = 0, lo = 0;
  if (sscanf(s.c_str(), "%X/%X", &hi, &lo) != 2) return UINT64_MAX;
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// A JSON number field of outbox-audit --json, or -1.
long long JsonField(const std::string& json, const std::string& name) {
  size_t at = json.find("\"" + name + "\":");
  if (at == std::string::npos) return -1;
  return atoll(json.c_str() + at + name.size() + 3);
}

class FailoverE2ETest : public RelayE2ETest {
 protected:
  std::string PgConninfo() override {
    std::string root = TempDir("failover");
    primary_dir_ = root + "/primary";
    standby_dir_ = root + "/standby";
    const std::string pg =
        std::string(getenv("OUTBOX_ROOT")) + "/scripts/pg.sh";
    if (RunScript("pg.sh stop " + primary_dir_ +
                  " >/dev/null 2>&1; "
                  "OUTBOX_PG_MAJOR=17 " +
                  pg + " start " + primary_dir_ + " >/dev/null && " + pg +
                  " standby " + primary_dir_ + " " + standby_dir_ +
                  " >/dev/null") != 0) {
      return "";
    }
    primary_port_ = Trimmed(ReadFile(primary_dir_ + "/port"));
    standby_port_ = Trimmed(ReadFile(standby_dir_ + "/port"));
    standby_conninfo_ = "host=127.0.0.1 port=" + standby_port_ +
                        " user=postgres dbname=postgres";
    return "host=127.0.0.1,127.0.0.1 port=" + primary_port_ + "," +
           standby_port_ +
           " user=postgres dbname=postgres target_session_attrs=read-write "
           "connect_timeout=2";
  }

  void SetUp() override {
    RelayE2ETest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_THAT(db_->Scalar("SHOW server_version_num"),
                ::testing::StartsWith("17"));
    extra_relay_args_ = {"--set", "postgres.plugin=pgoutput", "--set",
                         "postgres.publication=" + slot_ + "_pub"};
    db_->Exec("CREATE PUBLICATION " + slot_ + "_pub FOR TABLE public." +
              table_ + " WITH (publish = 'insert')");
    // No slot: the relay creates its own, a failover slot
    // (postgres.failover_slot defaults to true on PostgreSQL 17).
  }

  void TearDown() override {
    RelayE2ETest::TearDown();
    db_.reset();
    if (!standby_dir_.empty()) RunScript("pg.sh stop " + standby_dir_);
    if (!primary_dir_.empty()) {
      RunScript("pg.sh stop " + primary_dir_);
      rmdir(primary_dir_.substr(0, primary_dir_.rfind('/')).c_str());
    }
  }

  struct Written {
    std::string id;
    uint64_t commit_bound =
        UINT64_MAX;            // insert LSN after COMMIT; MAX: unknown
    bool old_primary = false;  // written to the node that was killed
  };

  // One writer until `stop`: transactions of 1..4 events (every 7th rolled
  // back) on the multi-host conninfo, reconnecting after any error (the
  // outcome of a transaction whose connection died is unknown: its events
  // are recorded with an unknown bound, and the new primary decides).
  void WriteAcrossFailover(int writer, const std::atomic<bool>& stop,
                           std::vector<Written>* written,
                           std::vector<std::string>* rolled_back,
                           std::atomic<int>* commits) {
    std::mt19937_64 rng(std::random_device{}());
    std::unique_ptr<PgConn> conn;
    bool on_old_primary = false;
    int seq = 0;
    for (int t = 0; !stop.load(); ++t) {
      if (conn == nullptr) {
        conn = PgConn::ConnectQuietly(pg_conninfo_);
        if (conn == nullptr) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          continue;
        }
        auto port = conn->Query("SELECT inet_server_port()");
        if (!port.ok() || port->empty()) {
          conn.reset();
          continue;
        }
        on_old_primary = (*port)[0][0] == primary_port_;
      }
      int n = 1 + static_cast<int>(rng() % 4);
      bool rollback = t % 7 == 3;
      std::string sql = "BEGIN;";
      std::vector<std::string> ids;
      for (int i = 0; i < n; ++i) {
        char id[40];
        uint64_t a = rng(), b = rng();
        snprintf(id, sizeof id,
                 "%08" PRIx64 "-%04" PRIx64 "-4%03" PRIx64 "-8%03" PRIx64
                 "-%012" PRIx64,
                 a >> 32, (a >> 16) & 0xffff, a & 0xfff, b >> 52,
                 static_cast<uint64_t>(b & 0xffffffffffffULL));
        ids.push_back(id);
        absl::StrAppend(&sql, "INSERT INTO public.", table_,
                        " (id, aggregatetype, aggregateid, type, payload) "
                        "VALUES ('",
                        id, "', '", aggtype_, "', 'w", writer, "-a", rng() % 4,
                        "', 'Created', jsonb_build_object('writer', ", writer,
                        ", 'seq', ", ++seq, ", 'pad', repeat('x', 200)));");
      }
      sql +=
          rollback ? "ROLLBACK;" : "COMMIT; SELECT pg_current_wal_insert_lsn()";
      auto res = conn->Query(sql);
      if (rollback) {
        if (res.ok())
          rolled_back->insert(rolled_back->end(), ids.begin(), ids.end());
        if (!res.ok()) conn.reset();
        continue;
      }
      uint64_t bound = UINT64_MAX;
      if (res.ok() && !res->empty() && !(*res)[0].empty()) {
        bound = ParseLsnText((*res)[0][0]);
        ++*commits;
      } else {
        conn.reset();
      }
      for (const auto& id : ids)
        written->push_back({id, bound, on_old_primary});
    }
  }

  // The WHERE clause of the test's slot in pg_replication_slots.
  std::string SlotRow() const {
    return "FROM pg_replication_slots WHERE slot_name = '" + slot_ + "'";
  }

  // Waits until the standby's copy of the slot is synchronized (persistent,
  // no longer the temporary copy of the first sync) and then moves once more
  // (it follows the primary's).
  bool WaitSynchronized(PgConn* standby) {
    if (!WaitUntil(
            [&] {
              return standby->Scalar("SELECT count(*) " + SlotRow() +
                                     " AND synced AND NOT temporary AND "
                                     "failover") == "1";
            },
            120000)) {
      ADD_FAILURE() << "the standby never synchronized the slot";
      return false;
    }
    const std::string synced_once =
        standby->Scalar("SELECT confirmed_flush_lsn " + SlotRow());
    return WaitUntil(
        [&] {
          return standby->Scalar("SELECT confirmed_flush_lsn > '" +
                                 synced_once + "' " + SlotRow()) == "t";
        },
        60000);
  }

  // SIGKILL of the primary's postmaster, then a moment for its children
  // (walsenders, backends) to notice and exit.
  void KillPrimary() {
    pid_t postmaster =
        atoi(ReadFile(primary_dir_ + "/data/postmaster.pid").c_str());
    ASSERT_GT(postmaster, 0);
    ASSERT_EQ(kill(postmaster, SIGKILL), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }

  // The primary dies, the standby is promoted, and db_ connects to it.
  void FailOverToTheStandby() {
    ASSERT_NO_FATAL_FAILURE(KillPrimary());
    ASSERT_EQ(RunScript("pg.sh promote " + standby_dir_), 0);
    db_ = PgConn::Connect(pg_conninfo_);
    ASSERT_NE(db_, nullptr);
    ASSERT_EQ(db_->Scalar("SELECT inet_server_port()"), standby_port_);
  }

  std::string primary_dir_, standby_dir_, primary_port_, standby_port_,
      standby_conninfo_;
};

TEST_F(FailoverE2ETest, PrimaryKilledMidLoadRelayFollowsThePromotedStandby) {
  const auto started = std::chrono::steady_clock::now();
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  ASSERT_EQ(db_->Scalar("SELECT failover " + SlotRow()), "t");
  auto standby = PgConn::Connect(standby_conninfo_);
  ASSERT_NE(standby, nullptr);

  constexpr int kWriters = 3;
  std::atomic<bool> stop{false};
  std::atomic<int> commits{0};
  std::vector<std::vector<Written>> written(kWriters);
  std::vector<std::vector<std::string>> rolled_back(kWriters);
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      WriteAcrossFailover(w, stop, &written[w], &rolled_back[w], &commits);
    });
  }
  ASSERT_TRUE(WaitSynchronized(standby.get())) << relay_->Output();
  std::this_thread::sleep_for(
      std::chrono::milliseconds(500 + std::random_device{}() % 1500));

  // The primary dies: SIGKILL of its postmaster.
  const int commits_before_kill = commits.load();
  ASSERT_NO_FATAL_FAILURE(KillPrimary());
  // Nothing moves the standby's slot until the promotion.
  const std::string resume_at =
      standby->Scalar("SELECT confirmed_flush_lsn " + SlotRow());
  const uint64_t resume_lsn = ParseLsnText(resume_at);
  standby.reset();
  ASSERT_EQ(RunScript("pg.sh promote " + standby_dir_), 0);
  const int commits_at_promotion = commits.load();
  // The writers find the new primary on their own; let them write there.
  ASSERT_TRUE(WaitUntil(
      [&] { return commits.load() >= commits_at_promotion + 60; }, 60000));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  stop = true;
  for (auto& t : writers) t.join();

  // The truth: what the new primary has.
  db_ = PgConn::Connect(pg_conninfo_);
  ASSERT_NE(db_, nullptr);
  ASSERT_EQ(db_->Scalar("SELECT inet_server_port()"), standby_port_);
  auto rows = db_->Query(
      "SELECT id, aggregateid, payload::text, "
      "(payload->>'writer')::int, (payload->>'seq')::int "
      "FROM public." +
      table_);
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::map<std::string, Written> bound_of;
  size_t attempted = 0;
  for (const auto& w : written) {
    attempted += w.size();
    for (const auto& e : w) bound_of[e.id] = e;
  }
  std::vector<Event> committed;
  std::set<std::string> may_repeat;
  for (const auto& r : *rows) {
    Event e;
    e.id = r[0];
    e.key = r[1];
    e.payload = r[2];
    e.writer = atoi(r[3].c_str());
    e.seq = atoi(r[4].c_str());
    committed.push_back(e);
    auto it = bound_of.find(e.id);
    ASSERT_NE(it, bound_of.end()) << "a row no writer wrote: " << e.id;
    if (it->second.old_primary && (it->second.commit_bound == UINT64_MAX ||
                                   it->second.commit_bound > resume_lsn)) {
      may_repeat.insert(e.id);
    }
  }
  std::vector<std::string> all_rolled_back;
  for (const auto& r : rolled_back) {
    all_rolled_back.insert(all_rolled_back.end(), r.begin(), r.end());
  }
  // Acknowledged commits the standby never received (asynchronous
  // replication): counted, not asserted.
  size_t acked_lost = 0;
  std::set<std::string> on_new;
  for (const auto& e : committed) on_new.insert(e.id);
  for (const auto& [id, w] : bound_of) {
    if (w.commit_bound != UINT64_MAX && !on_new.count(id)) ++acked_lost;
  }

  // Kafka against the new primary: every row, key, value, order (the
  // fixture's check), and which ids came twice.
  std::set<std::string> repeated;
  const int duplicates =
      Audit(committed, all_rolled_back, committed.size(), &repeated);
  int early_duplicates = 0;
  for (const std::string& id : repeated) {
    if (!may_repeat.count(id)) {
      ++early_duplicates;
      ADD_FAILURE() << "event " << id << " committed before the resume "
                    << "position " << resume_at << " came more than once";
    }
  }
  EXPECT_EQ(early_duplicates, 0);
  EXPECT_LE(duplicates, static_cast<int>(may_repeat.size()));

  // outbox-audit, the product's own check, against the new primary.
  std::string out;
  int code = RunOutboxAudit(
      {"--max-duplicates", std::to_string(may_repeat.size()), "--json"}, &out);
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("\"missing\":0"));
  EXPECT_THAT(out, HasSubstr("\"unknown\":0"));
  EXPECT_THAT(out, HasSubstr("\"order_violations\":0"));

  // The relay followed on its own: still the first process, it logged the
  // promotion and streams from the new primary.
  EXPECT_TRUE(relay_->Running()) << relay_->Output();
  EXPECT_THAT(
      relay_->Output(),
      HasSubstr("promoted: timeline 1 -> 2 on 127.0.0.1:" + standby_port_));
  EXPECT_THAT(relay_->Output(), HasSubstr("host=127.0.0.1:" + standby_port_));
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  std::cerr << "failover figures: attempted " << attempted << " events, "
            << commits_before_kill << " commits before the kill, "
            << committed.size() << " events on the new primary, " << acked_lost
            << " acknowledged on the old primary but never "
            << "replicated; audit missing=" << JsonField(out, "missing")
            << " unknown=" << JsonField(out, "unknown")
            << " order_violations=" << JsonField(out, "order_violations")
            << " duplicates=" << JsonField(out, "duplicates")
            << " (fixture count " << duplicates << ", bound "
            << may_repeat.size() << " events after the resume position "
            << resume_at << "); " << seconds << " s\n";
}

// The relay is down during the failover: the new process's first session
// compares with the server its slot marker recorded and logs the promotion.
TEST_F(FailoverE2ETest, ARelayStartedAfterThePromotionLogsItFromTheMarker) {
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  auto standby = PgConn::Connect(standby_conninfo_);
  ASSERT_NE(standby, nullptr);
  std::vector<Event> committed;
  std::vector<std::string> rolled_back;
  std::atomic<bool> stop{false};
  std::thread writer(
      [&] { Write(1, 100000, 3, 0, &committed, &rolled_back, &stop); });
  const bool synced = WaitSynchronized(standby.get());
  stop = true;
  writer.join();
  ASSERT_TRUE(synced) << relay_->Output();
  relay_->Signal(SIGTERM);
  ASSERT_EQ(relay_->Wait(30000), 0) << relay_->Output();
  // Every committed row on the standby, so the audit below can use what
  // the writer saw committed.
  const std::string end = db_->Scalar("SELECT pg_current_wal_lsn()");
  ASSERT_TRUE(WaitUntil(
      [&] {
        return standby->Scalar("SELECT pg_last_wal_replay_lsn() >= '" + end +
                               "'") == "t";
      },
      30000));
  standby.reset();
  ASSERT_NO_FATAL_FAILURE(FailOverToTheStandby());
  Write(2, 20, 3, 0, &committed, &rolled_back);

  StartRelay();
  const int duplicates = Audit(committed, rolled_back, committed.size());
  EXPECT_THAT(relay_->Output(),
              HasSubstr("promoted: timeline 1 -> 2 on 127.0.0.1:" +
                        standby_port_ + " slot="));
  EXPECT_THAT(ReadFile(StateDir() + "/" + slot_ + ".slot"),
              HasSubstr("\ntimeline=2\nendpoint=127.0.0.1:" + standby_port_));
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();
  std::cerr << "failover with the relay down: " << committed.size()
            << " events, " << duplicates << " duplicates\n";
}

// Exactly once across a promotion that lost WAL (issue 23 item 3): the
// asynchronous standby stops receiving at P while the relay publishes up to
// checkpoint X > P from the primary; the primary dies, the standby is
// promoted at P, and its own transactions commit at LSNs in [P, X). They
// were never published: the relay trusts the checkpoint only up to the
// fork (TIMELINE_HISTORY) and publishes them, once, and drops nothing.
// The slot on the new primary is one made on the standby beforehand (a
// logical slot on a standby, PostgreSQL 16+), not a failover slot, which
// synchronized_standby_slots would have kept from getting ahead of P.
TEST_F(FailoverE2ETest, ExactlyOnceTrustsTheCheckpointOnlyUpToTheFork) {
  const std::string checkpoint_topic = UniqueName("cp");
  extra_relay_args_.insert(extra_relay_args_.end(),
                           {"--set", "postgres.failover_slot=false", "--set",
                            "kafka.exactly_once=true", "--set",
                            "kafka.checkpoint_topic=" + checkpoint_topic});
  auto standby = PgConn::Connect(standby_conninfo_);
  ASSERT_NE(standby, nullptr);
  // The standby's own slot, behind everything written below.
  std::atomic<bool> created{false};
  std::thread create([&] {
    auto conn = PgConn::Connect(standby_conninfo_);
    conn->Exec("SELECT pg_create_logical_replication_slot('" + slot_ +
               "', 'pgoutput')");
    created = true;
  });
  while (!created.load()) {
    db_->Exec("SELECT pg_log_standby_snapshot()");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  create.join();

  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::vector<Event> before, lost, after;
  std::vector<std::string> rolled_back;
  Write(1, 20, 3, 0, &before, &rolled_back);
  ASSERT_EQ(Audit(before, rolled_back, before.size()), 0);
  // The standby has all of that, then stops receiving.
  const std::string sent = db_->Scalar("SELECT pg_current_wal_lsn()");
  ASSERT_TRUE(WaitUntil(
      [&] {
        return standby->Scalar("SELECT pg_last_wal_replay_lsn() >= '" + sent +
                               "'") == "t";
      },
      30000));
  standby->Exec("ALTER SYSTEM SET primary_conninfo = ''");
  standby->Exec("SELECT pg_reload_conf()");
  ASSERT_TRUE(WaitUntil(
      [&] {
        return standby->Scalar("SELECT count(*) FROM pg_stat_wal_receiver") ==
               "0";
      },
      30000));
  // Published from the primary only: the checkpoint moves past P.
  Write(2, 150, 4, 0, &lost, &rolled_back);
  ASSERT_EQ(Audit(lost, rolled_back, lost.size()), 0);
  relay_->Signal(SIGTERM);
  ASSERT_EQ(relay_->Wait(30000), 0) << relay_->Output();
  uint64_t checkpoint = 0;
  for (const auto& m :
       ConsumeToEnd(env_->kafka_brokers(), {checkpoint_topic}, 60000, 5000)) {
    checkpoint = std::max(
        checkpoint,
        ParseLsnText(m.value.substr(m.value.find("\"end_lsn\":\"") + 11)));
  }
  const uint64_t fork =
      ParseLsnText(standby->Scalar("SELECT pg_last_wal_replay_lsn()::text"));
  ASSERT_LT(fork, checkpoint);
  standby.reset();
  ASSERT_NO_FATAL_FAILURE(FailOverToTheStandby());
  // The new primary's transactions: committed in [P, X).
  Write(3, 15, 2, 0, &after, &rolled_back);
  ASSERT_LT(ParseLsnText(db_->Scalar("SELECT pg_current_wal_lsn()::text")),
            checkpoint)
      << "the new transactions did not stay below the checkpoint";

  StartRelay();
  // Kafka against the new primary (what it has is the truth): every event
  // of it once, the new timeline's included.
  std::vector<Event> truth = before;
  truth.insert(truth.end(), after.begin(), after.end());
  EXPECT_EQ(Audit(truth, rolled_back, truth.size()), 0) << relay_->Output();
  EXPECT_THAT(relay_->Output(), HasSubstr("forked off"));
  ExpectConfirmedReachesCurrentWal(30000);
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();
  // The relay's next checkpoint records the new timeline.
  bool on_timeline_2 = false;
  for (const auto& m :
       ConsumeToEnd(env_->kafka_brokers(), {checkpoint_topic}, 60000, 5000)) {
    on_timeline_2 |= m.value.find("\"timeline\":2") != std::string::npos;
  }
  EXPECT_TRUE(on_timeline_2);
}

}  // namespace
}  // namespace outbox::testing
