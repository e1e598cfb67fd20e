// The fault suites' harness: concurrent outbox writers, the system under
// test started as a user starts it (outbox-relay at least once or exactly
// once, outbox-poller), waits on the slot, and the audit by outbox-audit
// (nothing missing, no rolled-back or unknown events, no per-key order
// violations; duplicates counted, none allowed for read_committed in
// exactly-once mode), recorded as a row of $OUTBOX_FAULT_RESULTS.
// Used by fault_test.cc (the suite's single broker) and the cluster suite.
#ifndef OUTBOX_TESTS_FAULT_FAULT_HARNESS_H_
#define OUTBOX_TESTS_FAULT_FAULT_HARNESS_H_

#include <signal.h>

#include <atomic>
#include <fstream>
#include <optional>
#include <random>
#include <regex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "e2e/outage_checks.h"
#include "e2e/test_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox::testing {

inline int EnvInt(const char* name, int def) {
  const char* v = getenv(name);
  return v ? atoi(v) : def;
}

inline int64_t JsonInt(const std::string& json, const std::string& key) {
  std::smatch m;
  std::regex re("\"" + key + "\":(-?[0-9]+)");
  return std::regex_search(json, m, re) ? std::stoll(m[1]) : -1;
}

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes outbox rows in small transactions until stopped, reconnecting
// through server restarts. The database is the truth the audit reads, so a
// commit whose outcome was lost in a crash needs no bookkeeping here. Every
// 5th transaction rolls back. Each key belongs to one writer, so one key's
// events commit in creation order.
class Writers {
 public:
  Writers(std::string table, std::string aggtype, int count)
      : table_(std::move(table)), aggtype_(std::move(aggtype)) {
    for (int w = 0; w < count; ++w) {
      threads_.emplace_back([this, w] { Run(w); });
    }
  }
  ~Writers() { Stop(); }
  void Stop() {
    stop_ = true;
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  int64_t commits() const { return commits_; }
  // Each writer finishes its statement and writes nothing more until
  // Resume(); returns once all have stopped (false if one has not in 60 s).
  bool Pause() {
    paused_ = true;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (parked_ < static_cast<int>(threads_.size())) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }
  void Resume() { paused_ = false; }

 private:
  void Run(int w) {
    std::unique_ptr<PgConn> conn;
    int t = 0;
    bool parked = false;
    while (!stop_) {
      if (paused_ != parked) {
        parked = paused_;
        parked_ += parked ? 1 : -1;
      }
      if (parked) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      if (!conn) {
        conn = PgConn::ConnectQuietly(TestEnv::Get().pg_conninfo());
        if (!conn) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          continue;
        }
      }
      ++t;
      std::string sql = absl::StrCat(
          "BEGIN; INSERT INTO public.", table_,
          " (id, aggregatetype, aggregateid, type, payload) SELECT "
          "gen_random_uuid(), '",
          aggtype_, "', 'w", w,
          "-k' || (i % 5), 'Tick', jsonb_build_object("
          "'w', ",
          w, ", 't', ", t,
          ", 'i', i, 'pad', repeat('p', 200)) FROM "
          "generate_series(1, ",
          1 + t % 4, ") i; ", t % 5 == 0 ? "ROLLBACK;" : "COMMIT;");
      if (conn->Query(sql).ok()) {
        if (t % 5 != 0) ++commits_;
      } else {
        conn.reset();  // server went away: reconnect
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  std::string table_, aggtype_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> paused_{false};
  std::atomic<int> parked_{0};
  std::atomic<int64_t> commits_{0};
  std::vector<std::thread> threads_;
};

// kRelayExactlyOnce: outbox-relay with kafka.exactly_once, audited as a
// read_committed consumer, with zero duplicates required.
enum class System { kRelay, kPoller, kRelayExactlyOnce };

inline std::string Binary(System s) {
  return s == System::kPoller ? "outbox-poller" : "outbox-relay";
}

inline std::string SystemName(System s) {
  return s == System::kRelayExactlyOnce ? "outbox-relay (exactly once)"
                                        : Binary(s);
}

class FaultHarness : public ::testing::TestWithParam<System> {
 protected:
  void SetUp() override {
    env_ = &TestEnv::Get();
    db_ = PgConn::Connect(env_->pg_conninfo());
    ASSERT_NE(db_, nullptr);
    db_->Exec(ReadAll(std::string(getenv("OUTBOX_ROOT")) + "/sql/outbox.sql"));
    table_ = UniqueName("fault");
    aggtype_ = UniqueName("f");
    slot_ = UniqueName("fslot");
    db_->Exec("CREATE TABLE public." + table_ +
              " (LIKE public.outbox INCLUDING ALL)");
    dir_ = TempDir("fault");
    cycles_ = EnvInt("OUTBOX_FAULT_CYCLES", 3);
  }

  void TearDown() override {
    relays_.clear();
    Reconnect();
    db_->Query("SELECT pg_drop_replication_slot('" + slot_ + "')")
        .status()
        .IgnoreError();
  }

  void Reconnect() {
    WaitUntil(
        [&] {
          db_ = PgConn::ConnectQuietly(env_->pg_conninfo());
          return db_ != nullptr;
        },
        60000);
    ASSERT_NE(db_, nullptr);
  }

  // The Kafka the system under test and the audit use: the suite's broker
  // (a test on another cluster overrides it).
  virtual std::string Brokers() const { return env_->kafka_brokers(); }

  // The PostgreSQL the system under test connects to: the suite's (a test
  // that cuts only the system's path overrides it; the writers and the
  // audit keep the suite's).
  virtual std::string SystemConninfo() const { return env_->pg_conninfo(); }

  std::vector<std::string> CommonArgs() {
    return {"--pg",    env_->pg_conninfo(), "--kafka",
            Brokers(), "--tables",          "public." + table_};
  }

  bool relay() const { return GetParam() != System::kPoller; }
  bool exactly_once() const { return GetParam() == System::kRelayExactlyOnce; }

  // Starts the system under test: outbox-relay on the test's slot, or
  // outbox-poller polling every 100 ms; `extra` appended (relay only).
  Process* StartRelay(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {BinaryPath(Binary(GetParam()))};
    for (auto& a : CommonArgs()) args.push_back(a);
    args[2] = SystemConninfo();  // --pg's value
    for (auto& a :
         std::vector<std::string>{"--set", "log.progress_interval_s=2", "--set",
                                  "postgres.reconnect_backoff_max_ms=1000",
                                  "--set", "http.listen="}) {
      args.push_back(a);
    }
    if (exactly_once()) {
      args.insert(args.end(), {"--set", "kafka.exactly_once=true", "--set",
                               "kafka.checkpoint_topic=" + slot_ + "_cp"});
    }
    if (relay()) {
      // A fixed window, as before the window followed the
      // acknowledgements: the outage checks need the relay to read on
      // while Kafka is away, which a window sized for a healthy broker's
      // round trip stops within a few hundred milliseconds. 8 MiB with
      // each record's 512 bytes counted holds about as many of these
      // records as the 4 MiB of keys and values it was.
      args.insert(args.end(), {"--slot", slot_, "--set",
                               "postgres.state_dir=" + dir_ + "/state", "--set",
                               "limits.min_inflight_bytes=8MiB", "--set",
                               "limits.max_inflight_bytes=8MiB"});
      args.insert(args.end(), extra.begin(), extra.end());
    } else {
      args.insert(args.end(), {"--set", "poller.interval_ms=100", "--set",
                               "poller.backoff_initial_ms=100", "--set",
                               "poller.backoff_max_ms=1000"});
    }
    relays_.push_back(Process::Start(
        args, absl::StrCat(dir_, "/relay", relays_.size(), ".log")));
    return relays_.back().get();
  }

  // The relay holds its slot; the poller has connected and polls.
  bool Ready(Process* p, int timeout_ms = 30000) {
    if (relay()) return SlotActive(timeout_ms);
    return WaitUntil(
        [&] { return p->Output().find("polling") != std::string::npos; },
        timeout_ms);
  }

  // Ends the system's server-side session: the walsender, or the poller's
  // backend.
  void TerminateBackend() {
    db_->Exec(relay() ? "SELECT pg_terminate_backend(active_pid) FROM "
                        "pg_replication_slots WHERE slot_name = '" +
                            slot_ + "' AND active"
                      : "SELECT pg_terminate_backend(pid) FROM "
                        "pg_stat_activity WHERE application_name = "
                        "'outbox-poller'");
  }

  bool SlotActive(int timeout_ms = 30000) {
    return WaitUntil(
        [&] {
          auto rows = db_->Query(
              "SELECT 1 FROM pg_replication_slots WHERE slot_name = '" + slot_ +
              "' AND active");
          return rows.ok() && rows->size() == 1;
        },
        timeout_ms);
  }

  // Relay: waits until the slot has confirmed all WAL written so far, so the
  // relay reads live WAL, not a backlog, when the next fault begins (and
  // ExpectOutageNotConfirmed() sees it read what the outage brings).
  void WaitCaughtUp() {
    if (!relay()) return;
    std::string now = db_->Scalar("SELECT pg_current_wal_flush_lsn()");
    ASSERT_TRUE(WaitUntil(
        [&] {
          return db_->Scalar("SELECT confirmed_flush_lsn >= '" + now +
                             "'::pg_lsn FROM pg_replication_slots WHERE "
                             "slot_name = '" +
                             slot_ + "'") == "t";
        },
        120000))
        << "the relay did not catch up with " << now << "\n"
        << Logs();
  }

  // Kills the suite's broker (kafka.sh kill) once the relay has caught up,
  // then OutageBegan(). Exactly once: with the writers paused until then,
  // so that no Kafka transaction's commit is in flight. Kafka 4.4's single
  // combined node SIGKILLed between a commit's acknowledgement and its
  // markers, then restarted, records the transaction complete without
  // writing them: its new incarnation acts on the old one's registration
  // until the controller fences that, skips the markers for partitions
  // whose leader is then unknown ("likely deleted already and hence can be
  // skipped") and leaves a hanging transaction that no producer ends
  // (docs/operations/kafka-errors.md#hanging-transactions). The cluster
  // fault tests kill nodes with commits in flight.
  void KillBroker(Writers& writers) {
    if (exactly_once()) {
      ASSERT_TRUE(writers.Pause());
    }
    WaitCaughtUp();
    if (exactly_once()) {
      std::string problem;
      ASSERT_TRUE(WaitUntil(
          [&] {
            return TransactionsDecided(
                Brokers(), {"outbox.event." + aggtype_, slot_ + "_cp"},
                &problem);
          },
          60000))
          << "a Kafka transaction stayed undecided: " << problem << "\n"
          << Logs();
    }
    ASSERT_EQ(RunScript("kafka.sh kill " + env_->kafka_dir()), 0);
    OutageBegan();
    writers.Resume();
  }

  // Call right after the broker died: what commits from now on cannot reach
  // Kafka before it is back.
  void OutageBegan() {
    outage_ = db_->Scalar(
        relay() ? "SELECT pg_current_wal_flush_lsn()"
                : "SELECT coalesce(max(seq), 0) FROM public." + table_);
  }

  // Watches for `watch_ms`, while the outage goes on, that nothing committed
  // since OutageBegan() counts as delivered. Relay: the slot stays at or
  // below the first such commit, which the relay has read (outage_checks.h).
  // Poller: none of those rows is marked sent (a row with a higher seq than
  // any visible when the outage began committed after it).
  void ExpectOutageNotConfirmed(int watch_ms) {
    if (relay()) {
      std::optional<CommitRecord> first;
      ASSERT_TRUE(WaitUntil(
          [&] {
            first = FirstCommitInto(*db_, table_, outage_);
            return first.has_value();
          },
          10000))
          << "nothing was committed during the outage";
      // The exactly-once relay stops reading while its commit waits for
      // Kafka (docs/concepts/delivery-guarantees.md#exactly-once): it cannot
      // prove it read `first`.
      EXPECT_TRUE(SlotHoldsBefore(*db_, slot_, *first, watch_ms,
                                  /*require_received=*/!exactly_once()))
          << Logs();
      return;
    }
    const std::string sql = "SELECT count(*) FROM public." + table_ +
                            " WHERE seq > " + outage_ +
                            " AND sent_at IS NOT NULL";
    auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(watch_ms);
    do {
      ASSERT_EQ(db_->Scalar(sql), "0")
          << "rows committed during the Kafka outage were marked sent\n"
          << Logs();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    } while (std::chrono::steady_clock::now() < deadline);
  }

  std::string Logs() {
    std::string out;
    for (auto& r : relays_) out += r->Output();
    return out;
  }

  // Runs outbox-audit until nothing is missing (the relay may still be
  // catching up) or 120 s pass; checks and records the result.
  // `order_guaranteed`: false where the system documents that per-key order
  // may break (several outbox-poller instances); the count is recorded.
  void AuditAndRecord(const std::string& fault, int cycles,
                      bool order_guaranteed = true) {
    std::string json;
    WaitUntil(
        [&] {
          std::vector<std::string> args = {BinaryPath("outbox-audit")};
          for (auto& a : CommonArgs()) args.push_back(a);
          // Only this test's topic (the template without placeholders).
          args.push_back("--topic");
          args.push_back("outbox.event." + aggtype_);
          args.push_back("--json");
          // What a read_committed consumer sees; no duplicate tolerated.
          if (exactly_once()) args.push_back("--read-committed");
          auto p = Process::Start(args, dir_ + "/audit.log");
          p->Wait(180000);
          std::string out = p->Output();
          size_t brace = out.rfind('{');
          json = brace == std::string::npos ? out : out.substr(brace);
          std::ofstream(dir_ + "/audit.log", std::ios::trunc);
          return JsonInt(json, "missing") == 0;
        },
        120000);
    int64_t committed = JsonInt(json, "committed");
    int64_t missing = JsonInt(json, "missing");
    int64_t dups = JsonInt(json, "duplicates");
    int64_t unknown = JsonInt(json, "unknown");
    int64_t order = JsonInt(json, "order_violations");
    EXPECT_GT(committed, 0) << json;
    EXPECT_EQ(missing, 0) << json << "\n" << Logs();
    EXPECT_EQ(unknown, 0) << json;
    if (order_guaranteed) {
      EXPECT_EQ(order, 0) << json;
    }
    if (exactly_once()) {
      EXPECT_EQ(dups, 0) << json << "\n" << Logs();
    }
    EXPECT_EQ(JsonInt(json, "misrouted"), 0) << json;
    const char* path = getenv("OUTBOX_FAULT_RESULTS");
    std::ofstream out(path ? path : "fault-results.md", std::ios::app);
    out << "| " << SystemName(GetParam()) << " | " << fault << " | " << cycles
        << " | " << committed << " | " << missing << " | " << dups << " | "
        << order << " |\n";
    std::cerr << SystemName(GetParam()) << " fault " << fault << ": " << json
              << "\n";
  }

  const TestEnv* env_;
  std::unique_ptr<PgConn> db_;
  std::string table_, aggtype_, slot_, dir_;
  std::string outage_;  // see OutageBegan()
  int cycles_ = 3;
  std::vector<std::unique_ptr<Process>> relays_;
};

}  // namespace outbox::testing

#endif  // OUTBOX_TESTS_FAULT_FAULT_HARNESS_H_
