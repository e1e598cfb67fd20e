#include "core/ack_tracker.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace outbox {
namespace {

constexpr Lsn kStart = 0x100;

// Begin, `records` Track()s, Commit(end): the transaction's tickets.
std::vector<uint64_t> Transaction(AckTracker& tracker, int records, Lsn end,
                                  int64_t commit_time_us = 0) {
  std::vector<uint64_t> tickets;
  EXPECT_TRUE(tracker.Begin(commit_time_us).ok());
  for (int i = 0; i < records; ++i) {
    auto ticket = tracker.Track();
    EXPECT_TRUE(ticket.ok()) << ticket.status();
    tickets.push_back(ticket.ok() ? *ticket : 0);
  }
  EXPECT_TRUE(tracker.Commit(end).ok());
  return tickets;
}

TEST(AckTrackerTest, StartsWhereItIsTold) {
  AckTracker tracker(kStart);
  EXPECT_EQ(tracker.confirmed(), kStart);
  EXPECT_EQ(tracker.received(), kStart);
  EXPECT_EQ(tracker.pending(), 0);
  EXPECT_EQ(tracker.open_entries(), 0u);
  EXPECT_FALSE(tracker.frozen());
  EXPECT_FALSE(tracker.in_transaction());
  EXPECT_EQ(AckTracker().confirmed(), kInvalidLsn);
}

TEST(AckTrackerTest, InOrderDelivery) {
  AckTracker tracker(kStart);
  auto t = Transaction(tracker, 2, 0x200);
  EXPECT_EQ(tracker.pending(), 2);
  EXPECT_EQ(tracker.received(), 0x200u);
  EXPECT_EQ(tracker.confirmed(), kStart);
  ASSERT_TRUE(tracker.Delivered(t[0]).ok());
  EXPECT_EQ(tracker.confirmed(), kStart);
  ASSERT_TRUE(tracker.Delivered(t[1]).ok());
  EXPECT_EQ(tracker.confirmed(), 0x200u);
  EXPECT_EQ(tracker.pending(), 0);
  EXPECT_EQ(tracker.open_entries(), 0u);
}

TEST(AckTrackerTest, OutOfOrderDeliveryWaitsForTheOldestTransaction) {
  AckTracker tracker(kStart);
  auto t1 = Transaction(tracker, 2, 0x200);
  auto t2 = Transaction(tracker, 1, 0x300);
  auto t3 = Transaction(tracker, 1, 0x400);
  ASSERT_TRUE(tracker.Delivered(t2[0]).ok());
  ASSERT_TRUE(tracker.Delivered(t1[1]).ok());
  EXPECT_EQ(tracker.confirmed(), kStart);
  ASSERT_TRUE(tracker.Delivered(t1[0]).ok());
  EXPECT_EQ(tracker.confirmed(), 0x300u);  // t1 and t2, not t3
  ASSERT_TRUE(tracker.Delivered(t3[0]).ok());
  EXPECT_EQ(tracker.confirmed(), 0x400u);
}

TEST(AckTrackerTest, DeliveryBeforeCommitWaitsForTheCommit) {
  AckTracker tracker(kStart);
  ASSERT_TRUE(tracker.Begin().ok());
  auto ticket = tracker.Track();
  ASSERT_TRUE(ticket.ok());
  ASSERT_TRUE(tracker.Delivered(*ticket).ok());
  EXPECT_EQ(tracker.confirmed(), kStart);
  EXPECT_TRUE(tracker.in_transaction());
  ASSERT_TRUE(tracker.Commit(0x200).ok());
  EXPECT_EQ(tracker.confirmed(), 0x200u);
}

TEST(AckTrackerTest, EmptyTransactionsAdvanceAndCoalesce) {
  AckTracker tracker(kStart);
  Transaction(tracker, 0, 0x200);
  EXPECT_EQ(tracker.confirmed(), 0x200u);
  EXPECT_EQ(tracker.open_entries(), 0u);

  auto busy = Transaction(tracker, 1, 0x300);
  for (Lsn end = 0x400; end < 0x400 + 1000; ++end) {
    Transaction(tracker, 0, end);
  }
  // Empty transactions behind one in flight fold into one entry.
  EXPECT_EQ(tracker.open_entries(), 2u);
  EXPECT_EQ(tracker.confirmed(), 0x200u);
  ASSERT_TRUE(tracker.Delivered(busy[0]).ok());
  EXPECT_EQ(tracker.confirmed(), 0x400u + 999);
  EXPECT_EQ(tracker.open_entries(), 0u);
}

TEST(AckTrackerTest, SpanRunsFromTheOldestUnreportedRecord) {
  AckTracker tracker(kStart);
  EXPECT_EQ(tracker.span(), 0);
  auto stuck = Transaction(tracker, 1, 0x200);
  EXPECT_EQ(tracker.span(), 1);
  // Behind the stuck record, later ones are delivered: they leave pending()
  // but stay in the span, since they cannot be confirmed before it.
  Lsn end = 0x300;
  for (int t = 0; t < 100; ++t) {
    for (uint64_t ticket : Transaction(tracker, 1 + t % 3, end += 0x100)) {
      ASSERT_TRUE(tracker.Delivered(ticket).ok());
    }
    Transaction(tracker, 0, end += 0x100);
    tracker.Advance(end += 0x10);
    EXPECT_EQ(tracker.pending(), 1);
    EXPECT_LE(tracker.open_entries(),
              static_cast<size_t>(2 * tracker.span() + 2));
  }
  EXPECT_EQ(tracker.span(), 200);  // the stuck one + sum of (1 + t % 3)
  EXPECT_EQ(tracker.confirmed(), kStart);
  // The report comes: everything is confirmed and the span empties.
  ASSERT_TRUE(tracker.Delivered(stuck[0]).ok());
  EXPECT_EQ(tracker.span(), 0);
  EXPECT_EQ(tracker.open_entries(), 0u);
  EXPECT_EQ(tracker.confirmed(), end);
  // Records delivered in order never widen it beyond the unreported ones.
  auto t = Transaction(tracker, 3, end + 0x100);
  ASSERT_TRUE(tracker.Delivered(t[0]).ok());
  EXPECT_EQ(tracker.span(), 2);
}

TEST(AckTrackerTest, KeepaliveWaitsBehindInFlight) {
  AckTracker tracker(kStart);
  tracker.Advance(0x180);  // nothing in flight: moves at once
  EXPECT_EQ(tracker.confirmed(), 0x180u);

  auto t = Transaction(tracker, 1, 0x200);
  tracker.Advance(0x500);
  tracker.Advance(0x600);
  EXPECT_EQ(tracker.received(), 0x600u);
  EXPECT_EQ(tracker.confirmed(), 0x180u);
  EXPECT_EQ(tracker.open_entries(), 2u);
  ASSERT_TRUE(tracker.Delivered(t[0]).ok());
  EXPECT_EQ(tracker.confirmed(), 0x600u);

  tracker.Advance(0x400);  // not past what is known: ignored
  EXPECT_EQ(tracker.confirmed(), 0x600u);
  EXPECT_EQ(tracker.open_entries(), 0u);
}

TEST(AckTrackerTest, KeepaliveInsideATransactionDoesNotMoveTheWatermark) {
  AckTracker tracker(kStart);
  ASSERT_TRUE(tracker.Begin().ok());
  auto ticket = tracker.Track();
  ASSERT_TRUE(ticket.ok());
  tracker.Advance(0x900);
  EXPECT_EQ(tracker.received(), 0x900u);
  EXPECT_EQ(tracker.open_entries(), 1u);
  ASSERT_TRUE(tracker.Delivered(*ticket).ok());
  EXPECT_EQ(tracker.confirmed(), kStart);
  ASSERT_TRUE(tracker.Commit(0xA00).ok());
  EXPECT_EQ(tracker.confirmed(), 0xA00u);
}

TEST(AckTrackerTest, FailureBlocksItsTransactionForGood) {
  AckTracker tracker(kStart);
  auto t1 = Transaction(tracker, 1, 0x200);
  auto t2 = Transaction(tracker, 2, 0x300);
  auto t3 = Transaction(tracker, 1, 0x400);
  ASSERT_TRUE(tracker.Failed(t2[1]).ok());
  EXPECT_TRUE(tracker.frozen());
  ASSERT_TRUE(tracker.Delivered(t2[0]).ok());
  ASSERT_TRUE(tracker.Delivered(t3[0]).ok());
  EXPECT_EQ(tracker.confirmed(), kStart);
  // Earlier transactions still confirm, up to the failed one.
  ASSERT_TRUE(tracker.Delivered(t1[0]).ok());
  EXPECT_EQ(tracker.confirmed(), 0x200u);
  EXPECT_EQ(tracker.pending(), 0);

  Transaction(tracker, 0, 0x500);
  tracker.Advance(0x600);
  auto t4 = Transaction(tracker, 1, 0x700);
  ASSERT_TRUE(tracker.Delivered(t4[0]).ok());
  EXPECT_EQ(tracker.confirmed(), 0x200u);
  EXPECT_TRUE(tracker.frozen());
}

TEST(AckTrackerTest, ResetDropsEverythingAndRejectsOldTickets) {
  AckTracker tracker(kStart);
  auto t1 = Transaction(tracker, 1, 0x200);
  auto t2 = Transaction(tracker, 1, 0x300);
  ASSERT_TRUE(tracker.Failed(t1[0]).ok());
  ASSERT_TRUE(tracker.Begin().ok());
  tracker.Reset(kStart);
  EXPECT_FALSE(tracker.frozen());
  EXPECT_FALSE(tracker.in_transaction());
  EXPECT_EQ(tracker.confirmed(), kStart);
  EXPECT_EQ(tracker.pending(), 0);
  EXPECT_EQ(tracker.open_entries(), 0u);

  // The stream replays from kStart; a late report for the old t2 must not
  // settle the new ticket that happens to sit at the same place.
  auto r1 = Transaction(tracker, 1, 0x200);
  EXPECT_GT(r1[0], t2[0]);
  EXPECT_EQ(tracker.Delivered(t2[0]).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(tracker.confirmed(), kStart);
  ASSERT_TRUE(tracker.Delivered(r1[0]).ok());
  EXPECT_EQ(tracker.confirmed(), 0x200u);
}

TEST(AckTrackerTest, ConfirmedNeverDecreases) {
  AckTracker tracker(0x500);
  Transaction(tracker, 0, 0x300);  // below the start (e.g. a replay)
  EXPECT_EQ(tracker.confirmed(), 0x500u);
  auto t = Transaction(tracker, 1, 0x400);
  ASSERT_TRUE(tracker.Delivered(t[0]).ok());
  EXPECT_EQ(tracker.confirmed(), 0x500u);
  Transaction(tracker, 0, 0x600);
  EXPECT_EQ(tracker.confirmed(), 0x600u);

  // A lower position queued behind a higher one does not pull it back.
  auto busy = Transaction(tracker, 1, 0x700);
  Transaction(tracker, 0, 0x800);
  Transaction(tracker, 0, 0x750);
  ASSERT_TRUE(tracker.Delivered(busy[0]).ok());
  EXPECT_EQ(tracker.confirmed(), 0x800u);
}

TEST(AckTrackerTest, BeginWhileOpenIsAnErrorAndKeepsTheOpenTransaction) {
  AckTracker tracker(kStart);
  ASSERT_TRUE(tracker.Begin().ok());
  auto ticket = tracker.Track();
  ASSERT_TRUE(ticket.ok());
  EXPECT_EQ(tracker.Begin().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(tracker.open_entries(), 1u);
  ASSERT_TRUE(tracker.Commit(0x200).ok());
  ASSERT_TRUE(tracker.Delivered(*ticket).ok());
  EXPECT_EQ(tracker.confirmed(), 0x200u);
}

TEST(AckTrackerTest, RecordOrCommitOutsideATransactionIsAnError) {
  AckTracker tracker(kStart);
  EXPECT_EQ(tracker.Commit(0x200).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(tracker.Track().status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(tracker.confirmed(), kStart);
  EXPECT_EQ(tracker.received(), kStart);
  EXPECT_EQ(tracker.open_entries(), 0u);

  ASSERT_TRUE(tracker.Begin().ok());
  EXPECT_EQ(tracker.Commit(kInvalidLsn).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(tracker.in_transaction());
}

TEST(AckTrackerTest, UnknownAndDuplicateTicketsChangeNothing) {
  AckTracker tracker(kStart);
  auto t = Transaction(tracker, 2, 0x200);
  EXPECT_EQ(tracker.Delivered(0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tracker.Delivered(t[1] + 1).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tracker.Failed(t[1] + 100).code(),
            absl::StatusCode::kInvalidArgument);

  // The case that matters: a duplicate report must not stand in for the
  // other record of the same transaction.
  ASSERT_TRUE(tracker.Delivered(t[1]).ok());
  EXPECT_EQ(tracker.Delivered(t[1]).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(tracker.Failed(t[1]).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(tracker.confirmed(), kStart);
  EXPECT_EQ(tracker.pending(), 1);
  EXPECT_FALSE(tracker.frozen());

  ASSERT_TRUE(tracker.Delivered(t[0]).ok());
  EXPECT_EQ(tracker.confirmed(), 0x200u);
  EXPECT_EQ(tracker.Delivered(t[0]).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(tracker.pending(), 0);
}

TEST(AckTrackerTest, ReportsTheCommitTimeOfTheNewestConfirmedTransaction) {
  AckTracker tracker(kStart);
  EXPECT_EQ(tracker.confirmed_commit_time_us(), 0);
  auto t1 = Transaction(tracker, 1, 0x200, 1000);
  Transaction(tracker, 0, 0x300, 2000);
  tracker.Advance(0x400);
  EXPECT_EQ(tracker.confirmed_commit_time_us(), 0);
  ASSERT_TRUE(tracker.Delivered(t1[0]).ok());
  EXPECT_EQ(tracker.confirmed(), 0x400u);
  EXPECT_EQ(tracker.confirmed_commit_time_us(), 2000);
  tracker.Advance(0x500);  // a keepalive is no transaction
  EXPECT_EQ(tracker.confirmed_commit_time_us(), 2000);
}

// wal2json emits transactions in commit order, but their rows were written
// whenever each ran: T2 started first, so its row sits below T1's commit.
// Only commit end LSNs may move the watermark.
TEST(AckTrackerTest, InterleavedRowLsnsDoNotMatter) {
  AckTracker tracker(kStart);
  // T1: row at 0x300, commit 0x400..0x410. T2: row at 0x200, commit ..0x510.
  auto t1 = Transaction(tracker, 1, 0x410);
  auto t2 = Transaction(tracker, 1, 0x510);
  // T2's row is delivered first. Whatever its LSN, nothing may be
  // confirmed while T1 is in flight, and afterwards only a commit end.
  ASSERT_TRUE(tracker.Delivered(t2[0]).ok());
  EXPECT_EQ(tracker.confirmed(), kStart);
  ASSERT_TRUE(tracker.Delivered(t1[0]).ok());
  EXPECT_EQ(tracker.confirmed(), 0x510u);
}

// ---------------------------------------------------------------------------
// Property tests: random streams, random delivery order, checked against a
// straightforward model of the watermark after every step.

struct Op {
  enum Kind { kBegin, kTrack, kCommit, kAdvance } kind;
  Lsn lsn = kInvalidLsn;
};

struct ModelEntry {
  Lsn lsn = kInvalidLsn;
  int64_t commit_time_us = 0;
  bool closed = false;
  int outstanding = 0;
  bool failed = false;
  bool settled() const { return closed && outstanding == 0 && !failed; }
};

class RandomStream {
 public:
  RandomStream(uint32_t seed, double failure_rate)
      : rng_(seed), failure_rate_(failure_rate) {}

  void Run() {
    start_ = Chance(0.5) ? kInvalidLsn : Uniform(1, 1 << 20);
    Generate();
    AckTracker tracker(start_);
    expected_confirmed_ = last_confirmed_ = tail_ = start_;
    size_t next_op = 0;
    while (next_op < ops_.size() || !in_flight_.empty()) {
      bool stream_step =
          next_op < ops_.size() && (in_flight_.empty() || Chance(0.5));
      if (stream_step) {
        Apply(tracker, ops_[next_op++]);
      } else {
        Deliver(tracker);
      }
      if (!reported_.empty() && Chance(0.05)) ReportAgain(tracker);
      Check(tracker);
      if (::testing::Test::HasFatalFailure()) return;
    }
    if (!any_failed_) {
      EXPECT_EQ(tracker.confirmed(), end_);
      EXPECT_EQ(tracker.open_entries(), 0u);
    }
    EXPECT_EQ(tracker.frozen(), any_failed_);
    EXPECT_EQ(tracker.pending(), 0);
  }

  int steps() const { return steps_; }

 private:
  bool Chance(double p) {
    return std::uniform_real_distribution<double>(0, 1)(rng_) < p;
  }
  uint64_t Uniform(uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_);
  }

  void Generate() {
    Lsn cur = start_;
    int txns = static_cast<int>(Uniform(0, 40));
    for (int i = 0; i < txns; ++i) {
      if (Chance(0.3)) ops_.push_back({Op::kAdvance, cur += Uniform(1, 100)});
      if (Chance(0.1)) {  // stale or repeated keepalive
        ops_.push_back(
            {Op::kAdvance, cur - Uniform(0, std::min<Lsn>(cur, 50))});
      }
      ops_.push_back({Op::kBegin});
      int records = Chance(0.3) ? 0 : static_cast<int>(Uniform(1, 6));
      for (int r = 0; r < records; ++r) {
        ops_.push_back({Op::kTrack});
        if (Chance(0.1)) {
          ops_.push_back({Op::kAdvance, cur += Uniform(1, 100)});
        }
      }
      ops_.push_back({Op::kCommit, cur += Uniform(1, 1000)});
    }
    if (Chance(0.5)) ops_.push_back({Op::kAdvance, cur += Uniform(1, 100)});
    end_ = cur;
  }

  void Apply(AckTracker& tracker, const Op& op) {
    switch (op.kind) {
      case Op::kBegin: {
        int64_t time = ++clock_;
        ASSERT_TRUE(tracker.Begin(time).ok());
        model_.push_back({kInvalidLsn, time, false, 0, false});
        open_ = true;
        break;
      }
      case Op::kTrack: {
        auto ticket = tracker.Track();
        ASSERT_TRUE(ticket.ok()) << ticket.status();
        ASSERT_GT(*ticket, last_ticket_);  // unique
        last_ticket_ = *ticket;
        ++model_.back().outstanding;
        in_flight_.push_back({*ticket, model_.size() - 1});
        break;
      }
      case Op::kCommit:
        ASSERT_TRUE(tracker.Commit(op.lsn).ok());
        model_.back().lsn = op.lsn;
        model_.back().closed = true;
        tail_ = std::max(tail_, op.lsn);
        open_ = false;
        break;
      case Op::kAdvance:
        tracker.Advance(op.lsn);
        if (!open_ && op.lsn > tail_) {
          model_.push_back({op.lsn, 0, true, 0, false});
          tail_ = op.lsn;
        }
        break;
    }
  }

  void Deliver(AckTracker& tracker) {
    size_t i = Uniform(0, in_flight_.size() - 1);
    auto [ticket, entry] = in_flight_[i];
    in_flight_[i] = in_flight_.back();
    in_flight_.pop_back();
    bool fail = Chance(failure_rate_);
    absl::Status status =
        fail ? tracker.Failed(ticket) : tracker.Delivered(ticket);
    ASSERT_TRUE(status.ok()) << status;
    --model_[entry].outstanding;
    if (fail) model_[entry].failed = any_failed_ = true;
    reported_.push_back(ticket);
  }

  void ReportAgain(AckTracker& tracker) {
    uint64_t ticket = reported_[Uniform(0, reported_.size() - 1)];
    Lsn confirmed = tracker.confirmed();
    int64_t pending = tracker.pending();
    bool frozen = tracker.frozen();
    absl::Status status =
        Chance(0.5) ? tracker.Delivered(ticket) : tracker.Failed(ticket);
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
    EXPECT_EQ(tracker.confirmed(), confirmed);
    EXPECT_EQ(tracker.pending(), pending);
    EXPECT_EQ(tracker.frozen(), frozen);
    EXPECT_EQ(tracker.Delivered(last_ticket_ + 1).code(),
              absl::StatusCode::kInvalidArgument);
  }

  void Check(const AckTracker& tracker) {
    ++steps_;
    while (model_front_ < model_.size() && model_[model_front_].settled()) {
      const ModelEntry& e = model_[model_front_++];
      expected_confirmed_ = std::max(expected_confirmed_, e.lsn);
      if (e.commit_time_us != 0) expected_time_ = e.commit_time_us;
    }
    Lsn confirmed = tracker.confirmed();
    ASSERT_GE(confirmed, last_confirmed_) << "watermark moved back";
    last_confirmed_ = confirmed;
    // Never past a transaction with an undelivered or failed record.
    for (size_t i = model_front_; i < model_.size(); ++i) {
      const ModelEntry& e = model_[i];
      if (e.closed && (e.outstanding > 0 || e.failed)) {
        ASSERT_LT(confirmed, e.lsn) << "passed an undelivered transaction";
      }
    }
    ASSERT_LE(confirmed, tracker.received());  // and so below open ones
    ASSERT_EQ(confirmed, expected_confirmed_);
    ASSERT_EQ(tracker.confirmed_commit_time_us(), expected_time_);
    ASSERT_EQ(tracker.pending(), static_cast<int64_t>(in_flight_.size()));
    ASSERT_EQ(tracker.frozen(), any_failed_);
    ASSERT_EQ(tracker.in_transaction(), open_);
    ASSERT_LE(tracker.open_entries(), model_.size() - model_front_);
  }

  std::mt19937 rng_;
  double failure_rate_;
  Lsn start_ = kInvalidLsn;
  Lsn end_ = kInvalidLsn;
  std::vector<Op> ops_;
  std::vector<ModelEntry> model_;
  size_t model_front_ = 0;
  std::vector<std::pair<uint64_t, size_t>> in_flight_;  // ticket, entry
  std::vector<uint64_t> reported_;
  uint64_t last_ticket_ = 0;
  int64_t clock_ = 0;
  bool open_ = false;
  bool any_failed_ = false;
  Lsn tail_ = kInvalidLsn;
  Lsn expected_confirmed_ = kInvalidLsn;
  Lsn last_confirmed_ = kInvalidLsn;
  int64_t expected_time_ = 0;
  int steps_ = 0;
};

TEST(AckTrackerPropertyTest, AllDeliveredConfirmsTheLastPosition) {
  int steps = 0;
  for (uint32_t seed = 1; seed <= 1000; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    RandomStream stream(seed, /*failure_rate=*/0);
    stream.Run();
    if (HasFailure()) return;
    steps += stream.steps();
  }
  EXPECT_GT(steps, 100000);  // the generator really exercised it
}

TEST(AckTrackerPropertyTest, FailuresNeverLetTheWatermarkPass) {
  int steps = 0;
  for (uint32_t seed = 1; seed <= 1000; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    RandomStream stream(seed * 7919, /*failure_rate=*/0.03);
    stream.Run();
    if (HasFailure()) return;
    steps += stream.steps();
  }
  EXPECT_GT(steps, 100000);
}

}  // namespace
}  // namespace outbox
