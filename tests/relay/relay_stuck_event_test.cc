// The Relay loop behind one event whose delivery report never comes (its
// partition has no leader) while every later event is acknowledged: the
// in-flight window stays nearly empty, so only limits.max_tracked_events
// bounds what the session keeps (relay_fixture.h).
#include <algorithm>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "relay/relay_fixture.h"

namespace outbox::testing {
namespace {

TEST_F(RelayMetricsTest, OneStuckEventStopsReadingAtTheTrackedLimit) {
  constexpr int kLimit = 20;
  constexpr int kStuckPolls = 60;  // 600 ms of fake time, 12 status periods
  options_.max_tracked_events = kLimit;
  std::vector<std::string> stuck = script_.Txn(1);
  // Events in transactions of one and two, with empty transactions and
  // keepalives between them: every kind of tracker entry.
  for (int t = 0; t < 60; ++t) {
    script_.Txn(1 + t % 2);
    if (t % 3 == 0) script_.Txn(0);
    if (t % 5 == 0) script_.Keepalive();
  }
  flush_delivers_ = false;
  RelayFootprint peak;
  int stuck_polls = 0;
  int reads_at_limit = 0;
  size_t statuses_at_limit = 0;
  bool released = false;
  ASSERT_TRUE(
      Run(
          [&] {
            if (released) {
              DeliverAll();
              return;
            }
            // Kafka acknowledges everything but the first event.
            for (size_t i = 1; i < sink_.produced().size(); ++i) Deliver(i);
            RelayFootprint now = relay_->footprint();
            peak.tracked_events =
                std::max(peak.tracked_events, now.tracked_events);
            peak.tracker_entries =
                std::max(peak.tracker_entries, now.tracker_entries);
            peak.commit_time_index =
                std::max(peak.commit_time_index, now.commit_time_index);
            if (now.tracked_events < kLimit) return;
            if (++stuck_polls == 1) {
              reads_at_limit = stream_.reads();
              statuses_at_limit = stream_.statuses().size();
              return;
            }
            // Nothing more is read while the event is stuck...
            EXPECT_EQ(stream_.reads(), reads_at_limit);
            if (stuck_polls < kStuckPolls) return;
            EXPECT_EQ(sink_.produced().size(), static_cast<size_t>(kLimit));
            EXPECT_GT(stream_.remaining(), 0u);
            EXPECT_TRUE(relay_->stats().backpressured);
            EXPECT_EQ(Get("outbox_relay_tracked_events"), kLimit);
            EXPECT_EQ(Get("outbox_relay_inflight_events"), 1);
            // ...status updates go on, never confirming past it (the
            // fixture checks every update against every undelivered event).
            EXPECT_GE(stream_.statuses().size(), statuses_at_limit + 10);
            EXPECT_LE(stream_.last_flushed(), script_.commit_of(stuck[0]));
            // Kafka comes back for its partition.
            released = true;
            Deliver(0);
          },
          /*max_polls=*/400)
          .ok());
  EXPECT_TRUE(released) << "the tracked events never reached the limit";
  // The tracker and the commit-time index stopped growing at the bound.
  EXPECT_EQ(peak.tracked_events, kLimit);
  EXPECT_LE(peak.tracker_entries, static_cast<size_t>(2 * kLimit + 2));
  EXPECT_LE(peak.commit_time_index, static_cast<size_t>(kLimit));
  // Released, everything flows and is confirmed.
  EXPECT_TRUE(stream_.done());
  EXPECT_EQ(sink_.produced().size(), script_.events().size());
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
  EXPECT_EQ(Get("outbox_relay_tracked_events"), 0);
}

}  // namespace
}  // namespace outbox::testing
