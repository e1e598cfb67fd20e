// The Relay loop's metrics (RelayMetrics) against fakes: per-topic counters,
// delivery latency from commit time, in-flight and lag gauges.

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "relay/relay_fixture.h"

namespace outbox::testing {
namespace {

TEST_F(RelayMetricsTest, CountsDeliveriesPerTopicAndDeadLetters) {
  options_.dead_letter = true;
  script_.Txn(3, /*null_key=*/1);  // one poison row -> dead letter
  script_.Txn(2);
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());
  EXPECT_EQ(Get("outbox_relay_events_delivered_total",
                {{"topic", "outbox.event.order"}}),
            4);
  EXPECT_EQ(Get("outbox_relay_events_delivered_total",
                {{"topic", "outbox.dead_letter"}}),
            1);
  // Value bytes: payloads {"n": i} are 8 bytes each.
  EXPECT_EQ(Get("outbox_relay_bytes_delivered_total",
                {{"topic", "outbox.event.order"}}),
            4 * 8);
  EXPECT_EQ(Get("outbox_relay_dead_lettered_total"), 1);
  EXPECT_EQ(Get("outbox_relay_delivery_errors_total"), 0);
  EXPECT_EQ(Get("outbox_relay_inflight_events"), 0);
  EXPECT_EQ(Get("outbox_relay_confirmed_lsn"),
            static_cast<double>(script_.last_end()));
  EXPECT_EQ(Get("outbox_relay_lag_bytes"), 0);
  EXPECT_EQ(Get("outbox_relay_lag_seconds"), 0);
  EXPECT_FALSE(metrics_->streaming());
  EXPECT_EQ(metrics_->last_turn_us(), clock_.NowMicros());
}

TEST_F(RelayMetricsTest, LatencyIsCommitTimeToDeliveryReport) {
  // The relay's wall clock reads 1.5 s after the commit when it starts.
  clock_.SetUnix(kCommitUs + 1'500'000 - clock_.NowMicros());
  script_.Txn(2);
  script_.Txn(1);
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());
  EXPECT_EQ(
      Sample(*registry_, "outbox_relay_delivery_latency_seconds", {}, "_count"),
      3);
  // Delivered within the first few 10 ms polls: all between 1.5 and 2.5 s.
  EXPECT_EQ(Sample(*registry_, "outbox_relay_delivery_latency_seconds", {},
                   "_bucket", 1.0),
            0);
  EXPECT_EQ(Sample(*registry_, "outbox_relay_delivery_latency_seconds", {},
                   "_bucket", 2.5),
            3);
  double sum =
      Sample(*registry_, "outbox_relay_delivery_latency_seconds", {}, "_sum");
  EXPECT_GE(sum, 3 * 1.5);
  EXPECT_LT(sum, 3 * 2.5);
}

TEST_F(RelayMetricsTest, ReceiveLatencyIsCommitTimeToReadingTheTransaction) {
  // Read 0.3 s after the commit, delivered much later: the receive
  // histogram has each event (2 + 1) at 0.3 s, before any delivery.
  clock_.SetUnix(kCommitUs + 300'000 - clock_.NowMicros());
  script_.Txn(2);
  script_.Txn(1);
  double count_before_delivery = -1, delivered_before = -1;
  ASSERT_TRUE(Run([&] {
                if (sink_.produced().size() == 3 && count_before_delivery < 0) {
                  metrics_->Flush();
                  count_before_delivery =
                      Sample(*registry_, "outbox_relay_receive_latency_seconds",
                             {}, "_count");
                  delivered_before = Sample(
                      *registry_, "outbox_relay_delivery_latency_seconds", {},
                      "_count");
                  clock_.Advance(5'000'000);
                  return;  // delivered from the next poll on
                }
                if (count_before_delivery >= 0) DeliverAll();
              }).ok());
  EXPECT_EQ(count_before_delivery, 3);
  EXPECT_EQ(delivered_before, 0);
  const char* kReceive = "outbox_relay_receive_latency_seconds";
  EXPECT_EQ(Sample(*registry_, kReceive, {}, "_bucket", 0.25), 0);
  EXPECT_EQ(Sample(*registry_, kReceive, {}, "_bucket", 0.5), 3);
  EXPECT_NEAR(Sample(*registry_, kReceive, {}, "_sum"), 3 * 0.3, 0.1);
  // The delivery reports came over 5 s later.
  EXPECT_EQ(Sample(*registry_, "outbox_relay_delivery_latency_seconds", {},
                   "_bucket", 5.0),
            0);
}

TEST_F(RelayMetricsTest, GaugesShowPendingEventsAndLag) {
  clock_.SetUnix(kCommitUs + 4'000'000 - clock_.NowMicros());
  script_.Txn(1);
  script_.Txn(2);
  bool checked = false;
  ASSERT_TRUE(Run([&] {
                // Everything was read in the first turn; from the second
                // poll on the gauges show it pending.
                if (sink_.polls() < 3) return;
                if (!checked) {
                  checked = true;
                  EXPECT_TRUE(metrics_->streaming());
                  EXPECT_EQ(Get("outbox_relay_inflight_events"), 3);
                  // key "agg-i", value {"n": i}, and each record's share
                  EXPECT_EQ(Get("outbox_relay_inflight_bytes"),
                            3 * (5 + 8 + Relay::kRecordOverheadBytes));
                  EXPECT_EQ(Get("outbox_relay_received_lsn"),
                            static_cast<double>(script_.last_end()));
                  EXPECT_EQ(Get("outbox_relay_confirmed_lsn"),
                            static_cast<double>(start_));
                  EXPECT_EQ(Get("outbox_relay_lag_bytes"),
                            static_cast<double>(script_.last_end() - start_));
                  double lag = Get("outbox_relay_lag_seconds");
                  EXPECT_GE(lag, 4.0);
                  EXPECT_LT(lag, 5.0);
                }
                DeliverAll();
              }).ok());
  EXPECT_TRUE(checked);
  EXPECT_EQ(Get("outbox_relay_inflight_events"), 0);
  EXPECT_EQ(Get("outbox_relay_lag_seconds"), 0);
  EXPECT_EQ(Get("outbox_relay_lag_bytes"), 0);
}

TEST_F(RelayMetricsTest, CountsFailedDeliveries) {
  script_.Txn(1);
  flush_delivers_ = false;
  absl::Status s = Run([&] {
    if (!sink_.produced().empty()) {
      Deliver(0, absl::UnavailableError("Local: Message timed out"));
    }
  });
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_EQ(Get("outbox_relay_delivery_errors_total"), 1);
  EXPECT_EQ(Get("outbox_relay_events_delivered_total",
                {{"topic", "outbox.event.order"}}),
            -1);  // never delivered: no series for the topic
  EXPECT_FALSE(metrics_->streaming());
}

TEST_F(RelayMetricsTest, ALostSlotIsASlotProblemWhileItLasts) {
  SlotStatus slot;
  slot.slot_name = "outbox_relay";
  slot.confirmed_flush_lsn = 0x16B3748;
  slot.wal_status = "reserved";
  metrics_->SetSlot(slot);
  EXPECT_EQ(metrics_->slot_problem(), "");
  slot.wal_status = "lost";
  metrics_->SetSlot(slot);
  EXPECT_THAT(metrics_->slot_problem(),
              ::testing::AllOf(
                  ::testing::HasSubstr("\"outbox_relay\" is invalidated"),
                  ::testing::HasSubstr("events committed after 0/16B3748")));
  EXPECT_EQ(Get("outbox_relay_slot_wal_status", {{"status", "lost"}}), 1);
  slot.wal_status = "unreserved";  // still usable, if barely
  metrics_->SetSlot(slot);
  EXPECT_EQ(metrics_->slot_problem(), "");
}

TEST_F(RelayMetricsTest, FailoverReadinessGaugeNeverTouchesReadiness) {
  EXPECT_TRUE(std::isnan(Get("outbox_relay_failover_ready")));  // unchecked
  metrics_->SetFailoverProblems(2);
  EXPECT_EQ(Get("outbox_relay_failover_ready"), 0);
  EXPECT_EQ(Get("outbox_relay_failover_problems"), 2);
  EXPECT_EQ(metrics_->slot_problem(), "");  // /readyz stays up
  metrics_->SetFailoverProblems(0);
  EXPECT_EQ(Get("outbox_relay_failover_ready"), 1);
  EXPECT_EQ(Get("outbox_relay_failover_problems"), 0);
}

// The status page's snapshot carries the same figures as the registry.
TEST_F(RelayMetricsTest, StatusSnapshotHoldsTheRegistrysFigures) {
  StatusSnapshot before;
  metrics_->FillStatus(&before);
  EXPECT_EQ(before.events_delivered, 0);
  // No session has turned yet: no position, no window, no slot.
  EXPECT_FALSE(before.confirmed_lsn.has_value());
  EXPECT_FALSE(before.inflight_events.has_value());
  EXPECT_FALSE(before.slot_wal_status.has_value());
  EXPECT_FALSE(before.last_error.has_value());

  options_.dead_letter = true;
  script_.Txn(3, /*null_key=*/1);  // one poison row -> dead letter
  script_.Txn(2);
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());
  SlotStatus slot;
  slot.slot_name = "outbox_relay";
  slot.wal_status = "extended";
  slot.retained_bytes = 123456;
  slot.active = true;
  metrics_->SetSlot(slot);
  metrics_->OnReconnect();
  metrics_->daemon_status().SetStates("streaming", "producing to k:9092");
  metrics_->daemon_status().SetLastError("session ended",
                                         absl::UnavailableError("gone"));

  StatusSnapshot s;
  metrics_->FillStatus(&s);
  EXPECT_EQ(s.events_delivered, 5);  // dead letter included, as the counter
  EXPECT_EQ(s.dead_lettered, Get("outbox_relay_dead_lettered_total"));
  EXPECT_EQ(s.dead_lettered, 1);
  EXPECT_EQ(s.latency_count, 5);
  EXPECT_EQ(s.confirmed_lsn, FormatLsn(script_.last_end()));
  EXPECT_EQ(s.lag_bytes, 0);
  EXPECT_EQ(s.inflight_events, 0);
  EXPECT_EQ(s.slot_name, "outbox_relay");
  EXPECT_EQ(s.slot_wal_status, "extended");
  EXPECT_EQ(s.slot_retained_wal_bytes, 123456);
  EXPECT_EQ(s.slot_active, true);
  EXPECT_FALSE(s.slot_safe_wal_size_bytes.has_value());  // unlimited
  EXPECT_EQ(s.reconnects, 1);
  EXPECT_EQ(s.postgres_state, "streaming");
  EXPECT_EQ(s.kafka_state, "producing to k:9092");
  EXPECT_EQ(s.last_error, "session ended: gone");
  EXPECT_TRUE(s.backlog.empty());  // a poller figure
}

TEST_F(RelayMetricsTest, ReadyWhileStreamingFromAUsableSlot) {
  EXPECT_EQ(Get("outbox_relay_ready"), 0);  // not started yet
  double ready_while_running = -1;
  script_.Txn(1);
  ASSERT_TRUE(Run([&] {
                DeliverAll();
                ready_while_running = Get("outbox_relay_ready");
              }).ok());
  EXPECT_EQ(ready_while_running, 1);
  EXPECT_EQ(Get("outbox_relay_ready"), 0);  // the session ended
  metrics_->SetStreaming(true);
  EXPECT_EQ(Get("outbox_relay_ready"), 1);
  SlotStatus slot;
  slot.slot_name = "outbox_relay";
  slot.wal_status = "lost";
  metrics_->SetSlot(slot);
  EXPECT_EQ(Get("outbox_relay_ready"), 0);
  EXPECT_FALSE(metrics_->ready());
  slot.wal_status = "unreserved";
  metrics_->SetSlot(slot);
  EXPECT_EQ(Get("outbox_relay_ready"), 1);
  EXPECT_TRUE(metrics_->ready());
}

TEST_F(RelayMetricsTest, HeartbeatExportsTheWallClockOfTheLastTurn) {
  EXPECT_EQ(Get("outbox_relay_last_turn_timestamp_seconds"), 0);
  script_.Txn(1);
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());
  // The loop's turns moved it: some wall time during the run.
  EXPECT_GT(Get("outbox_relay_last_turn_timestamp_seconds"), 1.7e9);
  EXPECT_LE(Get("outbox_relay_last_turn_timestamp_seconds"),
            static_cast<double>(clock_.UnixMicros()) / 1e6);
  clock_.Advance(7'000'000);
  metrics_->Heartbeat(clock_.NowMicros());
  EXPECT_EQ(metrics_->last_turn_us(), clock_.NowMicros());
  EXPECT_EQ(Get("outbox_relay_last_turn_timestamp_seconds"),
            static_cast<double>(clock_.UnixMicros()) / 1e6);
}

}  // namespace
}  // namespace outbox::testing
