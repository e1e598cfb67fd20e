// Fault-injection suite: the real relay binaries, the real PostgreSQL and
// Kafka of the test fixture, concurrent writers, and a fault; then
// outbox-audit (the product's own audit tool) checks Kafka against the
// database: nothing missing, no rolled-back or unknown events, no per-key
// order violations; duplicates are counted.
//
// Bounded for CI; OUTBOX_FAULT_CYCLES and OUTBOX_FAULT_OUTAGE_S make it
// longer. Each test appends a row to $OUTBOX_FAULT_RESULTS (default
// build/fault-results.md): fault, cycles, events written, missing,
// duplicates, order violations.
#include "fault/fault_harness.h"

namespace outbox::testing {
namespace {

class FaultTest : public FaultHarness {};

TEST_P(FaultTest, SigkillAtRandomMoments) {
  ASSERT_TRUE(Ready(StartRelay())) << Logs();
  Writers writers(table_, aggtype_, 3);
  std::mt19937 rng(7);
  for (int c = 0; c < cycles_ * 3; ++c) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200 + rng() % 1500));
    relays_.back()->Signal(SIGKILL);
    relays_.back()->Wait(10000);
    StartRelay();
  }
  writers.Stop();
  AuditAndRecord("SIGKILL at random moments", cycles_ * 3);
}

TEST_P(FaultTest, PausedLongerThanWalSenderTimeout) {
  db_->Exec("ALTER SYSTEM SET wal_sender_timeout = '2s'");
  db_->Exec("SELECT pg_reload_conf()");
  Process* proc = StartRelay();
  ASSERT_TRUE(Ready(proc)) << Logs();
  Writers writers(table_, aggtype_, 2);
  for (int c = 0; c < cycles_; ++c) {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    proc->Signal(SIGSTOP);
    std::this_thread::sleep_for(std::chrono::seconds(4));
    proc->Signal(SIGCONT);
  }
  writers.Stop();
  db_->Exec("ALTER SYSTEM RESET wal_sender_timeout");
  db_->Exec("SELECT pg_reload_conf()");
  AuditAndRecord("SIGSTOP 4 s > wal_sender_timeout 2 s", cycles_);
  EXPECT_TRUE(proc->Running()) << Logs();
}

TEST_P(FaultTest, KafkaBrokerKilledAndRestarted) {
  ASSERT_TRUE(Ready(StartRelay())) << Logs();
  Writers writers(table_, aggtype_, 2);
  for (int c = 0; c < cycles_; ++c) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    ASSERT_NO_FATAL_FAILURE(KillBroker(writers));
    ExpectOutageNotConfirmed(2000);
    ASSERT_EQ(RunScript("kafka.sh restart " + env_->kafka_dir()), 0);
  }
  writers.Stop();
  AuditAndRecord("Kafka broker SIGKILL + restart", cycles_);
}

// SIGKILL while the system holds events Kafka has not acknowledged (read
// after the broker died, so they exist only in the producer's queue), before
// Kafka comes back; then Kafka and the system restart. A relay that
// confirmed on hand-off to the producer loses them here: its slot moved past
// them and the queue died with the process.
TEST_P(FaultTest, SigkillDuringKafkaOutage) {
  Process* proc = StartRelay();
  ASSERT_TRUE(Ready(proc)) << Logs();
  Writers writers(table_, aggtype_, 2);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_NO_FATAL_FAILURE(KillBroker(writers));
  // Relay: also waits until it has read a transaction committed after the
  // kill, so unacknowledged events are in its producer.
  ExpectOutageNotConfirmed(2000);
  proc->Signal(SIGKILL);
  proc->Wait(10000);
  std::this_thread::sleep_for(std::chrono::seconds(1));  // nobody relays
  ASSERT_EQ(RunScript("kafka.sh restart " + env_->kafka_dir()), 0);
  ASSERT_TRUE(Ready(StartRelay())) << Logs();
  writers.Stop();
  AuditAndRecord("SIGKILL during a Kafka outage", 1);
}

TEST_P(FaultTest, KafkaUnreachableForLong) {
  int outage_s = EnvInt("OUTBOX_FAULT_OUTAGE_S", 20);
  Process* proc = StartRelay();
  ASSERT_TRUE(Ready(proc)) << Logs();
  Writers writers(table_, aggtype_, 2);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_NO_FATAL_FAILURE(KillBroker(writers));
  // The backlog: WAL behind the slot (relay) or unsent rows (poller).
  const std::string backlog_sql =
      relay()
          ? "SELECT pg_current_wal_lsn() - confirmed_flush_lsn FROM "
            "pg_replication_slots WHERE slot_name = '" +
                slot_ + "'"
          : "SELECT count(*) FROM public." + table_ + " WHERE sent_at IS NULL";
  std::string backlog_before = db_->Scalar(backlog_sql);
  ExpectOutageNotConfirmed(outage_s * 1000);
  std::string backlog_during = db_->Scalar(backlog_sql);
  std::string rss = ReadAll("/proc/" + std::to_string(proc->pid()) + "/status");
  ASSERT_EQ(RunScript("kafka.sh restart " + env_->kafka_dir()), 0);
  writers.Stop();
  // The backlog grew while Kafka was away (and the audit shows it drained).
  EXPECT_GT(std::stod(backlog_during), std::stod(backlog_before));
  std::smatch m;
  std::regex_search(rss, m, std::regex("VmHWM:\\s+([0-9]+) kB"));
  std::cerr << SystemName(GetParam()) << " outage " << outage_s
            << " s: backlog " << backlog_before << " -> " << backlog_during
            << (relay() ? " WAL bytes" : " rows") << ", peak RSS " << m[1]
            << " kB\n";
  AuditAndRecord(absl::StrCat("Kafka unreachable ", outage_s, " s"), 1);
  EXPECT_TRUE(proc->Running()) << Logs();
}

TEST_P(FaultTest, PostgresFastAndImmediateRestarts) {
  ASSERT_TRUE(Ready(StartRelay())) << Logs();
  Writers writers(table_, aggtype_, 2);
  for (int c = 0; c < cycles_; ++c) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    ASSERT_EQ(RunScript("pg.sh restart " + env_->pg_dir() +
                        (c % 2 ? " immediate" : " fast")),
              0);
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  writers.Stop();
  Reconnect();
  AuditAndRecord("PostgreSQL restart (fast/immediate)", cycles_);
}

TEST_P(FaultTest, WalsenderTerminatedByTheServer) {
  ASSERT_TRUE(Ready(StartRelay())) << Logs();
  Writers writers(table_, aggtype_, 2);
  for (int c = 0; c < cycles_ * 2; ++c) {
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    TerminateBackend();
  }
  writers.Stop();
  AuditAndRecord(relay() ? "pg_terminate_backend(walsender)"
                         : "pg_terminate_backend(poller backend)",
                 cycles_ * 2);
}

TEST_P(FaultTest, StandbyTakesOverWhenTheActiveInstanceDies) {
  // The pair as the Helm chart runs it: one slot marker for both, in the
  // Kafka state topic (issue 32).
  const std::vector<std::string> kafka_marker = {
      "--set", "postgres.slot_marker=kafka",
      "--set", "postgres.slot_marker_id=fault-" + slot_,
      "--set", "kafka.state_topic=" + slot_ + "_state"};
  Process* active = StartRelay(kafka_marker);
  ASSERT_TRUE(Ready(active)) << Logs();
  Process* standby = StartRelay(kafka_marker);
  Writers writers(table_, aggtype_, 2);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_TRUE(standby->Running()) << "the second instance must not exit\n"
                                  << Logs();
  // The relay's second instance waits for the slot (polled for: with the
  // Kafka marker and exactly once it reaches the slot later than a second
  // after start on a loaded machine); pollers share the work.
  if (relay()) {
    EXPECT_TRUE(WaitUntil(
        [&] { return standby->Output().find("in use") != std::string::npos; },
        60000))
        << Logs();
  }
  auto killed = std::chrono::steady_clock::now();
  active->Signal(SIGKILL);
  active->Wait(10000);
  if (relay()) {
    // It must start streaming on its own.
    ASSERT_TRUE(WaitUntil(
        [&] {
          return standby->Output().find("streaming") != std::string::npos;
        },
        60000))
        << Logs();
    EXPECT_THAT(
        standby->Output(),
        ::testing::HasSubstr("the record keyed fault-" + slot_ + "/" + slot_));
  }
  double takeover =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed)
          .count();
  std::cerr << "standby took over after " << takeover << " s\n";
  std::this_thread::sleep_for(std::chrono::seconds(1));
  writers.Stop();
  AuditAndRecord(
      relay() ? absl::StrCat("standby takeover (",
                             static_cast<int>(takeover * 10) / 10.0, " s)")
              : "second instance, first SIGKILLed",
      1, /*order_guaranteed=*/relay());
}

INSTANTIATE_TEST_SUITE_P(Systems, FaultTest,
                         ::testing::Values(System::kRelay, System::kPoller,
                                           System::kRelayExactlyOnce),
                         [](const auto& param_info) {
                           switch (param_info.param) {
                             case System::kRelay:
                               return std::string("Relay");
                             case System::kPoller:
                               return std::string("Poller");
                             default:
                               return std::string("RelayExactlyOnce");
                           }
                         });

}  // namespace
}  // namespace outbox::testing
