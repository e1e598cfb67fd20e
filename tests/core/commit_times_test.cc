// CommitTimes: which commit time a delivery report's ticket belongs to, the
// oldest unconfirmed one, and pruning by the watermark.
#include "core/commit_times.h"

#include "gtest/gtest.h"

namespace outbox {
namespace {

TEST(CommitTimesTest, ATicketBelongsToTheLastTransactionStartingAtOrBeforeIt) {
  CommitTimes t;
  EXPECT_EQ(t.CommitTimeOf(0), -1);
  t.OnFirstEvent(0, 1000);  // tickets 0..2
  t.OnCommit(0x100);
  t.OnFirstEvent(3, 2000);  // tickets 3..
  t.OnCommit(0x200);
  EXPECT_EQ(t.CommitTimeOf(0), 1000);
  EXPECT_EQ(t.CommitTimeOf(2), 1000);
  EXPECT_EQ(t.CommitTimeOf(3), 2000);
  EXPECT_EQ(t.CommitTimeOf(99), 2000);
  EXPECT_EQ(t.size(), 2u);
}

TEST(CommitTimesTest, UnknownCommitTimeIsMinusOne) {
  CommitTimes t;
  t.OnFirstEvent(5, 0);
  EXPECT_EQ(t.CommitTimeOf(5), -1);
  EXPECT_EQ(t.CommitTimeOf(4), -1);  // before any held transaction
}

TEST(CommitTimesTest, PruneDropsWhatTheWatermarkPassedButNeverTheOpenOne) {
  CommitTimes t;
  t.OnFirstEvent(0, 1000);
  t.OnCommit(0x100);
  t.OnFirstEvent(1, 2000);
  t.OnCommit(0x200);
  t.OnFirstEvent(2, 3000);  // open: no commit yet
  EXPECT_EQ(t.OldestCommitTimeUs(-7), 1000);
  t.Prune(0xff);
  EXPECT_EQ(t.size(), 3u);
  t.Prune(0x100);
  EXPECT_EQ(t.OldestCommitTimeUs(-7), 2000);
  t.Prune(0x10000);  // past everything committed; the open one stays
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.OldestCommitTimeUs(-7), 3000);
  t.OnCommit(0x300);
  t.Prune(0x300);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.OldestCommitTimeUs(-7), -7);
}

TEST(CommitTimesTest, ASecondCommitDoesNotMoveTheEndOfTheLastTransaction) {
  CommitTimes t;
  t.OnFirstEvent(0, 1000);
  t.OnCommit(0x100);
  t.OnCommit(0x500);  // a later transaction without events
  t.Prune(0x100);
  EXPECT_EQ(t.size(), 0u);
}

}  // namespace
}  // namespace outbox
