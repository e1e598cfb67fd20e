// PollerMetrics::FillStatus: the status page's figures for outbox-poller
// come from its metrics, and what does not apply to a poller stays unset.
#include "poller/poller_metrics.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

TEST(PollerMetricsTest, StatusSnapshotHoldsThePollersFigures) {
  prometheus::Registry registry;
  PollerMetrics metrics(registry);
  metrics.delivered.Increment(12);
  metrics.dead_lettered.Increment(2);
  metrics.failures.Increment(3);
  metrics.Unsent("public.outbox_b").Set(5);
  metrics.OldestUnsentAge("public.outbox_b").Set(1.5);
  metrics.Unsent("public.outbox_a").Set(40);
  metrics.OldestUnsentAge("public.outbox_a").Set(9);
  metrics.daemon_status.SetStates("connected", "producing to k:9092");

  StatusSnapshot s;
  metrics.FillStatus(&s);
  EXPECT_EQ(s.events_delivered, 12);
  EXPECT_EQ(s.dead_lettered, 2);
  EXPECT_EQ(s.delivery_errors, 3);
  EXPECT_EQ(s.postgres_state, "connected");
  EXPECT_EQ(s.kafka_state, "producing to k:9092");
  ASSERT_EQ(s.backlog.size(), 2u);
  EXPECT_EQ(s.backlog[0].table, "public.outbox_a");
  EXPECT_EQ(s.backlog[0].unsent_rows, 40);
  EXPECT_EQ(s.backlog[0].oldest_unsent_age_seconds, 9);
  EXPECT_EQ(s.backlog[1].table, "public.outbox_b");
  EXPECT_EQ(s.backlog[1].unsent_rows, 5);
  EXPECT_EQ(s.backlog[1].oldest_unsent_age_seconds, 1.5);
  // A poller has no WAL position, slot, window or latency histogram.
  EXPECT_FALSE(s.confirmed_lsn.has_value());
  EXPECT_FALSE(s.lag_bytes.has_value());
  EXPECT_FALSE(s.slot_wal_status.has_value());
  EXPECT_FALSE(s.inflight_events.has_value());
  EXPECT_FALSE(s.latency_count.has_value());
  EXPECT_FALSE(s.reconnects.has_value());
  EXPECT_FALSE(s.last_error.has_value());
}

}  // namespace
}  // namespace outbox
