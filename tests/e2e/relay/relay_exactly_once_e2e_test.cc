// outbox-relay with kafka.exactly_once against the real servers: through
// SIGKILLs at random moments and a standby fencing a paused instance, a
// read_committed consumer (the fixture's Audit: librdkafka consumers default
// to isolation.level=read_committed) sees every committed event exactly
// once, in order per key.
#include <atomic>
#include <csignal>
#include <iostream>
#include <random>
#include <thread>

#include "core/checkpoint.h"
#include "e2e/relay/relay_e2e_fixture.h"

namespace outbox::testing {
namespace {

class RelayExactlyOnceE2ETest : public ExactlyOnceRelayE2ETest {
 protected:
  // `writers` threads write until *stop; their events are merged into
  // *committed / *rolled_back by Join().
  void StartWriters(int writers) {
    committed_.resize(writers);
    rolled_back_.resize(writers);
    for (int w = 0; w < writers; ++w) {
      threads_.emplace_back([this, w] {
        Write(w + 1, 100000, 4, 5, &committed_[w], &rolled_back_[w], &stop_);
      });
    }
  }
  // A failed ASSERT returns before Join(): the writers must not outlive
  // the vectors they write to.
  void TearDown() override {
    stop_ = true;
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
    ExactlyOnceRelayE2ETest::TearDown();
  }
  // The relay's own word that it streams: under exactly once the slot is
  // taken before init_transactions, which may still fail and be retried
  // (a broker's coordinator loading, for one), so the slot's "active" alone
  // does not say this process holds it.
  bool WaitStreaming(const Process& relay, int timeout_ms = 60000) {
    return WaitUntil(
        [&] {
          return relay.Output().find("role active was=standby") !=
                 std::string::npos;
        },
        timeout_ms);
  }
  void Join(std::vector<Event>* committed,
            std::vector<std::string>* rolled_back) {
    stop_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
    for (size_t w = 0; w < committed_.size(); ++w) {
      committed->insert(committed->end(), committed_[w].begin(),
                        committed_[w].end());
      rolled_back->insert(rolled_back->end(), rolled_back_[w].begin(),
                          rolled_back_[w].end());
    }
  }

  // Runs outbox-audit on this test's table and topic; returns its exit code
  // and sets *duplicates from its JSON report (-1 if absent).
  int RunAudit(bool read_committed, int* duplicates) {
    std::vector<std::string> extra = {"--json"};
    if (read_committed) extra.push_back("--read-committed");
    std::string out;
    const int rc = RunOutboxAudit(extra, &out);
    *duplicates = AuditReportCount(out, "duplicates");
    std::cerr << "outbox-audit" << (read_committed ? " --read-committed" : "")
              << ": exit " << rc << " "
              << out.substr(
                     out.rfind('{') == std::string::npos ? 0 : out.rfind('{'))
              << "\n";
    return rc;
  }

  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
  std::vector<std::vector<Event>> committed_;
  std::vector<std::vector<std::string>> rolled_back_;
};

TEST_F(RelayExactlyOnceE2ETest, SigkillAtRandomMomentsNoDuplicates) {
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  const std::string start = ConfirmedFlush();
  StartWriters(3);
  std::mt19937 rng(1414);
  for (int cycle = 0; cycle < 5; ++cycle) {
    if (cycle > 0) StartRelay();
    std::this_thread::sleep_for(std::chrono::milliseconds(800 + rng() % 2000));
    relay_->Signal(SIGKILL);
    relay_->Wait(10000);
  }
  std::vector<Event> committed;
  std::vector<std::string> rolled_back;
  Join(&committed, &rolled_back);
  StartRelay();
  ASSERT_GT(committed.size(), 0u);
  int dups = Audit(committed, rolled_back, committed.size());
  EXPECT_EQ(dups, 0) << relay_->Output();
  // The slot is confirmed once the covering Kafka transactions commit.
  EXPECT_TRUE(WaitUntil([&] { return ConfirmedFlush() != start; }, 30000))
      << relay_->Output();
  // The product's own audit agrees for read_committed consumers (a
  // read_uncommitted one also sees the aborted transactions' records).
  int rc_dups = -1, ru_dups = -1;
  EXPECT_EQ(RunAudit(/*read_committed=*/true, &rc_dups), 0);
  EXPECT_EQ(rc_dups, 0);
  RunAudit(/*read_committed=*/false, &ru_dups);
  std::cerr << "exactly-once sigkill: " << committed.size() << " events, "
            << dups << " duplicates\n";
}

TEST_F(RelayExactlyOnceE2ETest, StandbyFencesAPausedInstance) {
  // The first instance keeps its Kafka transaction open (it commits every
  // 20 s), so it holds one when it is paused. Its walsender ends the
  // connection once the paused instance has been silent for
  // wal_sender_timeout (3 s here, for this instance's connections only),
  // which frees the slot, as for a zombie. (pg_terminate_backend is no
  // model: a walsender told to end writes its FATAL message to a client
  // that reads nothing, blocks once the socket's buffer is full, and keeps
  // the slot.)
  StartRelay({"--set", "kafka.transaction.max_ms=20000", "--set",
              "kafka.transaction.max_events=1000000", "--set",
              "postgres.conninfo=" + pg_conninfo_ +
                  " options=-cwal_sender_timeout=3s"});
  ASSERT_TRUE(WaitStreaming(*relay_)) << relay_->Output();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  StartWriters(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  // Pause the first instance; a second instance takes its slot over once
  // the walsender has given up on it, and fences it.
  std::unique_ptr<Process> first = std::move(relay_);
  first->Signal(SIGSTOP);
  // Its own log file: the first one's log is asserted on below.
  relay_ = Process::Start(RelayArgs(), dir_ + "/standby.log");
  // Active once it has initialised its transactions (the fencing) and
  // streams: the slot's "active" alone may still be the first one's
  // terminated walsender, and the first resumed before the fencing would
  // meet only the lost connection.
  ASSERT_TRUE(WaitStreaming(*relay_)) << relay_->Output();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  first->Signal(SIGCONT);
  // The resumed instance finds itself fenced, says so, and waits as a
  // standby instead of exiting.
  EXPECT_TRUE(WaitUntil(
      [&] {
        return first->Output().find(
                   "fenced by another instance with the same "
                   "transactional.id; back to standby") != std::string::npos;
      },
      20000))
      << first->Output();
  EXPECT_TRUE(first->Running()) << first->Output();
  std::vector<Event> committed;
  std::vector<std::string> rolled_back;
  Join(&committed, &rolled_back);
  // It never committed a stale transaction: read_committed consumers see
  // every event once, and the committed checkpoints only move forward (a
  // stale commit would carry an older position after a newer one).
  int dups = Audit(committed, rolled_back, committed.size());
  EXPECT_EQ(dups, 0);
  auto checkpoints =
      ConsumeAll(env_->kafka_brokers(), {checkpoint_topic_}, 1000, 5000);
  ASSERT_FALSE(checkpoints.empty());
  Lsn previous = kInvalidLsn;
  for (const auto& m : checkpoints) {
    absl::StatusOr<Checkpoint> c = Checkpoint::Parse(m.value);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_GT(c->end_lsn, previous)
        << "checkpoint went back at offset " << m.offset;
    previous = c->end_lsn;
  }
  // The fenced instance takes over as a standby would when the other goes.
  relay_->Signal(SIGKILL);
  relay_->Wait(10000);
  std::vector<Event> more;
  Write(3, 20, 3, 0, &more, &rolled_back);
  committed.insert(committed.end(), more.begin(), more.end());
  EXPECT_EQ(Audit(committed, rolled_back, committed.size()), 0)
      << first->Output();
  std::cerr << "fenced instance's log:\n" << first->Output() << "\n";
}

// Stops and continues the relay in a loop (stopped `stop_ms`, running
// `run_ms`) until destroyed: a slow stream, as wide rows or Kafka
// backpressure make one, on purpose.
class Throttle {
 public:
  Throttle(Process* p, int stop_ms, int run_ms)
      : thread_([this, p, stop_ms, run_ms] {
          while (!done_.load()) {
            p->Signal(SIGSTOP);
            std::this_thread::sleep_for(std::chrono::milliseconds(stop_ms));
            p->Signal(SIGCONT);
            std::this_thread::sleep_for(std::chrono::milliseconds(run_ms));
          }
        }) {}
  ~Throttle() {
    done_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// Issue 23 item 4: one PostgreSQL transaction that takes longer than the
// producer's transaction.timeout.ms to stream. Split by count only, its
// Kafka transaction outlived the timeout, the broker aborted it, and every
// replay did the same (a livelock, logged as a fencing); split by time too,
// it is published, once.
TEST_F(RelayExactlyOnceE2ETest, ASlowTransactionIsSplitBeforeTheTimeout) {
  StartRelay({"--set", "kafka.properties.transaction.timeout.ms=15000"});
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  constexpr int kEvents = 150000;
  db_->Exec(absl::StrCat(
      "INSERT INTO public.", table_,
      " (id, aggregatetype, aggregateid, type, payload) SELECT "
      "gen_random_uuid(), '",
      aggtype_,
      "', 'k' || (i % 4), 'Created', jsonb_build_object('seq', i, 'pad', "
      "repeat('x', 200)) FROM generate_series(1, ",
      kEvents, ") i"));
  auto rows = db_->Query(
      "SELECT id, aggregateid, payload::text, "
      "(payload->>'seq')::int FROM public." +
      table_);
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::vector<Event> committed;
  for (const auto& r : *rows) {
    Event e;
    e.id = r[0];
    e.key = r[1];
    e.payload = r[2];
    e.seq = atoi(r[3].c_str());
    committed.push_back(e);
  }
  ASSERT_EQ(committed.size(), static_cast<size_t>(kEvents));
  {
    // Running an eighth of the time: streaming the transaction takes far
    // longer than 15 s plus the broker's check for timed-out transactions
    // (every 10 s), for every replay alike. The slot is confirmed past it
    // once all of it is committed in Kafka.
    Throttle slow(relay_.get(), 700, 100);
    ExpectConfirmedReachesCurrentWal(240000);
  }
  EXPECT_EQ(Audit(committed, {}, committed.size()), 0);
  const std::string out = relay_->Output();
  EXPECT_EQ(out.find("fenced by another instance"), std::string::npos) << out;
  EXPECT_TRUE(relay_->Running()) << out;
}

// A Kafka transaction the broker aborted for its age (the relay paused past
// transaction.timeout.ms) is reported as that, not as a fencing by another
// instance; it is replayed from the checkpoint and nothing is lost or
// repeated.
TEST_F(RelayExactlyOnceE2ETest, ATimedOutTransactionIsNotCalledFenced) {
  // Each Kafka transaction stays open 2 s (commits every 100 ms by
  // default): a pause then nearly always finds one open, not between a
  // commit (slow on a loaded machine) and the next begin; three pauses
  // that found none failed the test once.
  StartRelay({"--set", "kafka.properties.transaction.timeout.ms=3000", "--set",
              "kafka.transaction.max_ms=2000"});
  ASSERT_TRUE(WaitStreaming(*relay_)) << relay_->Output();
  StartWriters(1);
  // A session ends once the broker has aborted a transaction.
  const std::string ended = "session ended";
  for (int i = 0; i < 3 && relay_->Output().find(ended) == std::string::npos;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    // A writer keeps a Kafka transaction open nearly all the time. Paused
    // past the 3 s timeout and the broker's check for timed-out
    // transactions (every 10 s).
    relay_->Signal(SIGSTOP);
    std::this_thread::sleep_for(std::chrono::milliseconds(14000));
    relay_->Signal(SIGCONT);
    WaitUntil([&] { return relay_->Output().find(ended) != std::string::npos; },
              10000);
  }
  std::vector<Event> committed;
  std::vector<std::string> rolled_back;
  Join(&committed, &rolled_back);
  const std::string out = relay_->Output();
  EXPECT_NE(out.find(ended), std::string::npos) << out;
  // librdkafka 2.0.2 reports the broker's abort as _FENCED (or a record's
  // delivery as "old epoch"): never as another instance.
  EXPECT_EQ(out.find("fenced by another instance"), std::string::npos) << out;
  EXPECT_EQ(Audit(committed, rolled_back, committed.size()), 0) << out;
  for (size_t at = out.find(ended); at != std::string::npos;
       at = out.find(ended, at + 1)) {
    const size_t begin = out.rfind('\n', at) + 1;
    std::cerr << "the relay's words: "
              << out.substr(begin, out.find('\n', at) - begin) << "\n";
  }
}

}  // namespace
}  // namespace outbox::testing
