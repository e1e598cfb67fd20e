// Roles of a pair of outbox-relay instances sharing one slot (issue 32,
// items 3, 5 and 6), against the fixture's PostgreSQL and Kafka:
//   - only the slot's holder writes the shared (Kafka) slot marker: a
//     standby, or a stream whose START_REPLICATION failed, writes nothing
//     there; a standby writes its own file marker;
//   - exactly once, the slot is taken before init_transactions, so an
//     instance that loses the race for the slot never fences the winner;
//   - a SIGTERM while a standby takes over ends it within the grace period,
//     confirming nothing;
//   - pause and resume: pause_e2e_test.cc, in the same binary.
#include <librdkafka/rdkafka.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "e2e/relay/roles_e2e_fixture.h"
#include "outbox/lsn.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Counts what the stream asks of the marker.
class CountingSlotMarker final : public SlotMarker {
 public:
  absl::Status CheckCreate(const ServerInfo&) override {
    ++checks;
    return absl::OkStatus();
  }
  absl::Status Record(const ServerInfo&) override {
    ++records;
    return absl::OkStatus();
  }
  absl::Status Seen(const ServerInfo&) override {
    ++seen;
    return absl::OkStatus();
  }
  int checks = 0;
  int records = 0;
  int seen = 0;
};

// Item 3: a stream records the slot in its marker only once its
// START_REPLICATION succeeded. On main, Connect() recorded it before the
// slot-in-use check, so every standby attempt and every loser of the race
// wrote the (shared) marker.
TEST_F(RolesE2ETest, OnlyTheStreamHoldingTheSlotRecordsTheMarker) {
  std::unique_ptr<OutputPlugin> plugin = Plugin();
  ASSERT_NE(plugin, nullptr);
  CountingSlotMarker first_marker, second_marker, standby_marker;
  // The first stream creates the slot (the marker's guard runs first) but
  // records nothing until it streams.
  auto first = LibpqReplicationStream::Connect(
      StreamOptions(plugin.get(), &first_marker));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first_marker.checks, 1);
  EXPECT_EQ(first_marker.records, 0);
  // The second finds the slot free too.
  auto second = LibpqReplicationStream::Connect(
      StreamOptions(plugin.get(), &second_marker));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second_marker.records, 0);
  ASSERT_TRUE((*first)->Start((*first)->server().slot_confirmed_flush).ok());
  EXPECT_EQ(first_marker.records, 1);
  // Starting again from the same position is a no-op (the Relay does).
  ASSERT_TRUE((*first)->Start((*first)->server().slot_confirmed_flush).ok());
  EXPECT_EQ(first_marker.records, 1);
  // The second loses the race: its failed Start() writes nothing.
  absl::Status lost =
      (*second)->Start((*second)->server().slot_confirmed_flush);
  EXPECT_TRUE(IsSlotInUse(lost)) << lost;
  EXPECT_EQ(second_marker.records, 0);
  EXPECT_EQ(second_marker.seen, 1);  // remembered, not written
  // A standby's attempt while the slot is held writes nothing either.
  auto standby = LibpqReplicationStream::Connect(
      StreamOptions(plugin.get(), &standby_marker));
  EXPECT_TRUE(IsSlotInUse(standby.status())) << standby.status();
  EXPECT_EQ(standby_marker.records, 0);
  EXPECT_EQ(standby_marker.checks, 0);
  EXPECT_EQ(standby_marker.seen, 1);
}

// Item 3, the binary, with a file marker per instance (the chart's
// StatefulSet: a volume per pod). The shared Kafka marker is the holder's
// alone (OnlyTheStreamHoldingTheSlotRecordsTheMarker, and the store's own
// test); a standby's file marker is its own, and it writes what it saw
// there, so that restarted without ever holding the slot it still refuses
// to create the slot anew (found running the StatefulSet:
// kube_play_test.sh statefulset). It records the slot once it takes over.
TEST_F(RolesE2ETest, AStandbyWritesItsOwnFileMarker) {
  const std::string standby_state = dir_ + "/standby-state";
  std::unique_ptr<Process> active = StartInstance("active");
  ASSERT_TRUE(WaitActive()) << active->Output();
  const std::string active_marker = StateDir() + "/" + slot_ + ".slot";
  ASSERT_TRUE(
      WaitUntil([&] { return std::filesystem::exists(active_marker); }, 30000))
      << active->Output();
  std::unique_ptr<Process> standby = StartInstance(
      "standby", {"--set", "postgres.state_dir=" + standby_state});
  const std::string standby_marker = standby_state + "/" + slot_ + ".slot";
  ASSERT_TRUE(
      WaitUntil([&] { return Count(standby->Output(), "in use") > 0; }, 30000))
      << standby->Output();
  ASSERT_TRUE(
      WaitUntil([&] { return std::filesystem::exists(standby_marker); }, 30000))
      << "the standby wrote no marker of its own:\n"
      << standby->Output();
  EXPECT_THAT(ReadFile(standby_marker), HasSubstr("slot=" + slot_));
  EXPECT_TRUE(standby->Running()) << standby->Output();
  active->Signal(SIGKILL);
  active->Wait(10000);
  ASSERT_TRUE(WaitUntil(
      [&] { return RelayMetric(*standby, "outbox_relay_slot_active") == 1; },
      60000))
      << standby->Output();
  // The first instance, back as a standby, moves its own marker to the
  // slot's position when it sees the slot held (its old session's position
  // would name events as lost that were delivered since).
  const std::string recorded = ConfirmedFlush();
  std::vector<Event> committed;
  std::vector<std::string> rolled_back;
  Write(1, 5, 2, 0, &committed, &rolled_back);
  ASSERT_TRUE(WaitUntil([&] { return ConfirmedFlush() != recorded; }, 30000))
      << standby->Output();
  const Lsn moved = *ParseLsn(ConfirmedFlush());
  std::unique_ptr<Process> again = StartInstance("again");
  ASSERT_TRUE(
      WaitUntil([&] { return Count(again->Output(), "in use") > 0; }, 30000))
      << again->Output();
  auto marker_lsn = [&] {
    const std::string text = ReadFile(active_marker);
    const size_t at = text.find("confirmed_lsn=");
    if (at == std::string::npos) return kInvalidLsn;
    absl::StatusOr<Lsn> lsn = ParseLsn(
        absl::string_view(text).substr(at + 14, text.find('\n', at) - at - 14));
    return lsn.ok() ? *lsn : kInvalidLsn;
  };
  EXPECT_TRUE(WaitUntil(
      [&] { return marker_lsn() != kInvalidLsn && marker_lsn() >= moved; },
      30000))
      << "want confirmed_lsn at or past " << FormatLsn(moved) << " in:\n"
      << ReadFile(active_marker);
}

class ExactlyOnceRolesE2ETest : public RolesE2ETest {
 protected:
  void SetUp() override {
    RolesE2ETest::SetUp();
    if (HasFatalFailure()) return;
    checkpoint_topic_ = UniqueName("cp");
    extra_relay_args_ = {"--set", "kafka.exactly_once=true", "--set",
                         "kafka.checkpoint_topic=" + checkpoint_topic_};
  }
  std::string checkpoint_topic_;
};

// Item 5: two exactly-once instances started together race for the free
// slot, while a writer commits; then the active one is SIGKILLed and the
// other takes over; then both are SIGKILLed and started together again, for
// several rounds. On main init_transactions ran before START_REPLICATION:
// both instances initialised their producers, the loser of the slot race
// fenced the winner, which went back to standby, and the roles ping-ponged.
// Now the loser never creates a producer: no instance is ever fenced, each
// round has exactly two takeovers, and read_committed consumers see every
// event once.
TEST_F(ExactlyOnceRolesE2ETest, InstancesRacingForTheSlotNeverFenceEachOther) {
  std::atomic<bool> stop{false};
  std::vector<Event> committed;
  std::vector<std::string> rolled_back;
  // Started once the slot exists (events committed before it are in no
  // slot); joined on every way out (an ASSERT too).
  std::thread writer;
  struct Joiner {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~Joiner() {
      stop = true;
      if (thread.joinable()) thread.join();
    }
  } joiner{stop, writer};
  constexpr int kRounds = 4;
  std::string logs;
  int fenced = 0, takeovers = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::unique_ptr<Process> a = StartInstance(absl::StrCat("a", round));
    std::unique_ptr<Process> b = StartInstance(absl::StrCat("b", round));
    // One is active, the other a standby refused the slot, and the active
    // one committed a transaction after that.
    Process* active = nullptr;
    ASSERT_TRUE(WaitUntil(
        [&] {
          if (Active(*a) && Count(b->Output(), " in use ") > 0)
            active = a.get();
          if (Active(*b) && Count(a->Output(), " in use ") > 0)
            active = b.get();
          return active != nullptr;
        },
        60000))
        << a->Output() << b->Output();
    Process* standby = active == a.get() ? b.get() : a.get();
    if (round == 0) {
      writer = std::thread(
          [&] { Write(1, 100000, 4, 0, &committed, &rolled_back, &stop); });
    }
    const std::string confirmed = ConfirmedFlush();
    EXPECT_TRUE(WaitUntil([&] { return ConfirmedFlush() != confirmed; }, 30000))
        << active->Output();
    // The active one dies; the standby takes over and commits.
    const std::string pid = ActivePid();
    active->Signal(SIGKILL);
    active->Wait(10000);
    ASSERT_TRUE(WaitUntil(
        [&] {
          const std::string now = ActivePid();
          return !now.empty() && now != pid && Active(*standby);
        },
        60000))
        << standby->Output();
    const std::string taken = ConfirmedFlush();
    EXPECT_TRUE(WaitUntil([&] { return ConfirmedFlush() != taken; }, 30000))
        << standby->Output();
    standby->Signal(SIGKILL);
    standby->Wait(10000);
    const std::string out = a->Output() + b->Output();
    fenced += Count(out, "fenced by another instance");
    takeovers += Takeovers(*a) + Takeovers(*b);
    logs += out;
    EXPECT_TRUE(WaitUntil([&] { return ActivePid().empty(); }, 30000));
  }
  // The last round's events: one more instance publishes them.
  stop = true;
  writer.join();
  std::unique_ptr<Process> last = StartInstance("last");
  ASSERT_TRUE(WaitActive()) << last->Output();
  ASSERT_GT(committed.size(), 0u);
  EXPECT_EQ(Audit(committed, rolled_back, committed.size()), 0)
      << last->Output();
  // No instance was fenced; every round made two takeovers (the winner of
  // the race, the standby after the SIGKILL).
  EXPECT_EQ(fenced, 0) << logs;
  EXPECT_EQ(takeovers, 2 * kRounds) << logs;
  std::cerr << "exactly-once pair, " << kRounds << " rounds: " << takeovers
            << " takeovers, " << fenced << " fenced\n";
  std::string out;
  EXPECT_EQ(RunOutboxAudit({"--json", "--read-committed"}, &out), 0) << out;
  EXPECT_EQ(AuditReportCount(out, "duplicates"), 0) << out;
  EXPECT_EQ(AuditReportCount(out, "missing"), 0) << out;
}

// Item 6: a standby stopped (SIGTERM) while it takes over. Its Kafka is a
// port nothing listens on, so once it holds the slot its init_transactions
// waits (up to 30 s): a known step of the takeover. It must give the slot
// up and exit 0 well within the grace period, activating nothing and
// confirming nothing. On main it never took the slot at all (it waited in
// init_transactions first, and again after every timeout).
TEST_F(ExactlyOnceRolesE2ETest, SigtermWhileTakingOverExitsPromptly) {
  std::unique_ptr<Process> active = StartInstance("active");
  ASSERT_TRUE(WaitActive()) << active->Output();
  std::unique_ptr<Process> standby = StartInstance(
      "standby", {"--kafka", "127.0.0.1:" + std::to_string(FreeLoopbackPort()),
                  "--set", "postgres.state_dir=" + dir_ + "/standby-state"});
  ASSERT_TRUE(
      WaitUntil([&] { return Count(standby->Output(), "in use") > 0; }, 30000))
      << standby->Output();
  const std::string pid = ActivePid();
  active->Signal(SIGKILL);
  active->Wait(10000);
  const std::string confirmed = ConfirmedFlush();
  // The standby takes the slot, and waits for Kafka.
  ASSERT_TRUE(WaitUntil(
      [&] {
        const std::string now = ActivePid();
        return !now.empty() && now != pid;
      },
      60000))
      << standby->Output();
  const auto sent = std::chrono::steady_clock::now();
  standby->Signal(SIGTERM);
  const int code = standby->Wait(20000);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - sent)
          .count();
  EXPECT_EQ(code, 0) << standby->Output();
  EXPECT_LT(took, 20.0) << standby->Output();
  std::cerr << "standby stopped during its takeover in " << took << " s\n";
  EXPECT_THAT(standby->Output(), Not(HasSubstr(" INFO streaming host=")));
  EXPECT_EQ(ConfirmedFlush(), confirmed);
  EXPECT_TRUE(WaitUntil([&] { return ActivePid().empty(); }, 30000));
}

}  // namespace
}  // namespace outbox::testing
