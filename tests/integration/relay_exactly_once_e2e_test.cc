// outbox-relay with kafka.exactly_once against the real servers: through
// SIGKILLs at random moments and a standby fencing a paused instance, a
// read_committed consumer (the fixture's Audit: librdkafka consumers default
// to isolation.level=read_committed) sees every committed event exactly
// once, in order per key.
#include <csignal>
#include <fstream>
#include <iostream>
#include <random>
#include <regex>
#include <thread>

#include "integration/relay_e2e_fixture.h"

namespace outbox::testing {
namespace {

class RelayExactlyOnceE2ETest : public RelayE2ETest {
 protected:
  void SetUp() override {
    RelayE2ETest::SetUp();
    extra_relay_args_ = {"--set", "kafka.exactly_once=true", "--set",
                         "kafka.checkpoint_topic=" + UniqueName("cp")};
  }

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
  void Join(std::vector<Event>* committed,
            std::vector<std::string>* rolled_back) {
    stop_ = true;
    for (auto& t : threads_) t.join();
    for (size_t w = 0; w < committed_.size(); ++w) {
      committed->insert(committed->end(), committed_[w].begin(),
                        committed_[w].end());
      rolled_back->insert(rolled_back->end(), rolled_back_[w].begin(),
                          rolled_back_[w].end());
    }
  }

  std::atomic<bool> stop_{false};
  // Runs outbox-audit on this test's table and topic; returns its exit code
  // and sets *duplicates from its JSON report (-1 if absent).
  int RunAudit(bool read_committed, int* duplicates) {
    std::vector<std::string> args = {BinaryPath("outbox-audit"),
                                     "--pg",
                                     pg_conninfo_,
                                     "--kafka",
                                     env_->kafka_brokers(),
                                     "--tables",
                                     "public." + table_,
                                     "--topic",
                                     topic_,
                                     "--json"};
    if (read_committed) args.push_back("--read-committed");
    auto p = Process::Start(args, dir_ + "/audit.log");
    int rc = p->Wait(180000);
    std::string out = p->Output();
    std::smatch m;
    *duplicates =
        std::regex_search(out, m, std::regex("\"duplicates\": *([0-9]+)"))
            ? std::stoi(m[1])
            : -1;
    std::ofstream(dir_ + "/audit.log", std::ios::trunc);
    std::cerr << "outbox-audit" << (read_committed ? " --read-committed" : "")
              << ": exit " << rc << " "
              << out.substr(
                     out.rfind('{') == std::string::npos ? 0 : out.rfind('{'))
              << "\n";
    return rc;
  }

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
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  StartWriters(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  // Pause the first instance and take its slot away, as a zombie after
  // wal_sender_timeout; a second instance takes over and fences it.
  std::unique_ptr<Process> first = std::move(relay_);
  first->Signal(SIGSTOP);
  db_->Query(
         "SELECT pg_terminate_backend(active_pid) FROM "
         "pg_replication_slots WHERE slot_name = '" +
         slot_ + "'")
      .status()
      .IgnoreError();
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  first->Signal(SIGCONT);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  std::vector<Event> committed;
  std::vector<std::string> rolled_back;
  Join(&committed, &rolled_back);
  int dups = Audit(committed, rolled_back, committed.size());
  EXPECT_EQ(dups, 0);
  // The resumed instance did not exit: it waits as a standby.
  EXPECT_TRUE(first->Running()) << first->Output();
  std::cerr << "fenced instance's log:\n" << first->Output() << "\n";
}

}  // namespace
}  // namespace outbox::testing
