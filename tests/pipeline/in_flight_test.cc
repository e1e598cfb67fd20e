// InFlight: one owner of what is in flight. The watermark, the commit
// times (pruned whenever the watermark moves), the window and the
// in-flight counters move together.
#include "pipeline/in_flight.h"

#include "gtest/gtest.h"

namespace outbox {
namespace {

InFlight::Limits Small() {
  InFlight::Limits l;
  l.max_events = 3;
  l.max_tracked_events = 5;
  l.min_bytes = 1000;
  l.max_bytes = 4000;
  return l;
}

TEST(InFlightTest, ConfirmsOnlyTheDeliveredPrefixAndPrunesCommitTimes) {
  InFlight f(0x100, Small());
  ASSERT_TRUE(f.Begin(/*commit_time_us=*/111).ok());
  uint64_t a = *f.Track();
  uint64_t b = *f.Track();
  ASSERT_TRUE(f.Commit(0x200).ok());
  ASSERT_TRUE(f.Begin(222).ok());
  uint64_t c = *f.Track();
  ASSERT_TRUE(f.Commit(0x300).ok());
  for (uint64_t t : {a, b, c}) f.OnProduced(t, 10, 0);
  EXPECT_EQ(f.events(), 3);
  EXPECT_EQ(f.bytes(), 30);
  EXPECT_EQ(f.footprint().commit_time_index, 2u);
  EXPECT_EQ(f.CommitTimeOf(c), 222);
  EXPECT_EQ(f.OldestUnconfirmedCommitTimeUs(), 111);

  f.OnReport(c, 10, true, 0);
  ASSERT_TRUE(f.Delivered(c).ok());
  EXPECT_EQ(f.confirmed(), 0x100u);  // a and b are not delivered
  EXPECT_EQ(f.footprint().commit_time_index, 2u);
  f.OnReport(a, 10, true, 0);
  ASSERT_TRUE(f.Delivered(a).ok());
  f.OnReport(b, 10, true, 0);
  ASSERT_TRUE(f.Delivered(b).ok());
  EXPECT_EQ(f.confirmed(), 0x300u);
  EXPECT_EQ(f.events(), 0);
  EXPECT_EQ(f.bytes(), 0);
  // Pruned as the watermark passed, with no other call.
  EXPECT_EQ(f.footprint().commit_time_index, 0u);
  EXPECT_EQ(f.OldestUnconfirmedCommitTimeUs(), 0);
}

TEST(InFlightTest, AFailedTicketHoldsTheWatermark) {
  InFlight f(0x100, Small());
  ASSERT_TRUE(f.Begin(0).ok());
  uint64_t a = *f.Track();
  ASSERT_TRUE(f.Commit(0x200).ok());
  f.OnProduced(a, 10, 0);
  f.OnReport(a, 10, false, 0);
  f.Failed(a);
  f.Failed(a);  // errors ignored
  f.Advance(0x400);
  EXPECT_EQ(f.confirmed(), 0x100u);
  EXPECT_EQ(f.events(), 0);
}

TEST(InFlightTest, BackpressuredAtEachLimit) {
  InFlight events(0x100, Small());
  ASSERT_TRUE(events.Begin(0).ok());
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(events.Backpressured());
    events.OnProduced(*events.Track(), 1, 0);
  }
  EXPECT_TRUE(events.Backpressured());  // max_events

  InFlight bytes(0x100, Small());
  ASSERT_TRUE(bytes.Begin(0).ok());
  bytes.OnProduced(*bytes.Track(), 999, 0);
  EXPECT_FALSE(bytes.Backpressured());
  bytes.OnProduced(*bytes.Track(), 1, 0);
  EXPECT_TRUE(bytes.Backpressured());  // the window's floor

  InFlight tracked(0x100, Small());
  ASSERT_TRUE(tracked.Begin(0).ok());
  uint64_t first = *tracked.Track();
  tracked.OnProduced(first, 1, 0);
  for (int i = 0; i < 4; ++i) {
    uint64_t t = *tracked.Track();
    tracked.OnProduced(t, 1, 0);
    tracked.OnReport(t, 1, true, 0);
    ASSERT_TRUE(tracked.Delivered(t).ok());
  }
  EXPECT_EQ(tracked.events(), 1);
  EXPECT_EQ(tracked.span(), 5);
  EXPECT_TRUE(tracked.Backpressured());  // max_tracked_events
}

}  // namespace
}  // namespace outbox
