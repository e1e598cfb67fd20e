// InflightWindow: the in-flight byte window from the delivery rate and the
// acknowledgement latency, between its floor and cap.

#include "core/inflight_window.h"

#include "gtest/gtest.h"

namespace outbox {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;

// Delivers `bytes_per_interval` every `step_us` until `until_us`, with one
// latency sample of `latency_us` per step; returns the time reached.
int64_t Drive(InflightWindow* w, uint64_t* ticket, int64_t now_us,
              int64_t until_us, int64_t step_us, int64_t bytes_per_step,
              int64_t latency_us) {
  for (; now_us < until_us; now_us += step_us) {
    const uint64_t t = (*ticket)++;
    if (w->sampling()) w->OnProduced(t, now_us - latency_us);
    w->OnReport(t, bytes_per_step, w->sampled(t) ? now_us : 0);
    w->Update(now_us);
  }
  return now_us;
}

TEST(InflightWindowTest, StartsAtItsFloorAndStaysThereWithoutASample) {
  InflightWindow w(256 * kKiB, 4 * kMiB, 5000);
  EXPECT_EQ(w.bytes(), 256 * kKiB);
  for (int64_t now = 0; now < 1'000'000; now += 10'000) {
    w.OnReport(1, 100 * kKiB, 0);  // never the sampled ticket
    w.Update(now);
  }
  EXPECT_EQ(w.min_latency_us(), -1);
  EXPECT_EQ(w.bytes(), 256 * kKiB);
}

TEST(InflightWindowTest, TwiceTheRateTimesLatencyPlusLinger) {
  // 100 KiB every 10 ms = 10,240,000 bytes/s; round trip 1 ms + linger
  // 5 ms: 2 x 10,240,000 x 0.006 = 122,880 bytes.
  InflightWindow w(64 * kKiB, 4 * kMiB, 5000);
  uint64_t ticket = 0;
  Drive(&w, &ticket, 0, 2'000'000, 10'000, 100 * kKiB, 1000);
  EXPECT_EQ(w.min_latency_us(), 1000);
  EXPECT_EQ(w.max_rate_bytes_per_s(), 100 * kKiB * 100);
  EXPECT_EQ(w.bytes(), 2 * (100 * kKiB * 100 / 1000) * 6000 / 1000);
}

TEST(InflightWindowTest, AQueueThatBuildsUpDoesNotGrowTheWindow) {
  InflightWindow w(64 * kKiB, 64 * kMiB, 0);
  uint64_t ticket = 0;
  int64_t now = Drive(&w, &ticket, 0, 1'000'000, 10'000, 100 * kKiB, 2000);
  const int64_t settled = w.bytes();
  // Same rate, latency growing tenfold (records queue): the minimum holds.
  Drive(&w, &ticket, now, now + 1'000'000, 10'000, 100 * kKiB, 20'000);
  EXPECT_EQ(w.min_latency_us(), 2000);
  EXPECT_EQ(w.bytes(), settled);
}

TEST(InflightWindowTest, OldLatenciesAreForgotten) {
  InflightWindow w(1, 64 * kMiB, 0);
  uint64_t ticket = 0;
  int64_t now = Drive(&w, &ticket, 0, 1'000'000, 10'000, 100 * kKiB, 1000);
  // A slower broker from now on: after two latency periods its round trip
  // is the minimum, and the window follows it up.
  Drive(&w, &ticket, now, now + 3 * InflightWindow::kLatencyPeriodUs, 10'000,
        100 * kKiB, 8000);
  EXPECT_EQ(w.min_latency_us(), 8000);
  EXPECT_EQ(w.bytes(), 2 * (100 * kKiB * 100 / 1000) * 8000 / 1000);
}

TEST(InflightWindowTest, ClampedToFloorAndCap) {
  InflightWindow small(256 * kKiB, 4 * kMiB, 0);
  uint64_t ticket = 0;
  Drive(&small, &ticket, 0, 1'000'000, 10'000, 1 * kKiB, 100);
  EXPECT_EQ(small.bytes(), 256 * kKiB);
  InflightWindow big(256 * kKiB, 4 * kMiB, 20'000);
  ticket = 0;
  Drive(&big, &ticket, 0, 1'000'000, 10'000, 10 * kMiB, 5000);
  EXPECT_EQ(big.bytes(), 4 * kMiB);
  // A floor above the cap is the cap.
  EXPECT_EQ(InflightWindow(8 * kMiB, 1 * kMiB, 0).bytes(), 1 * kMiB);
}

TEST(InflightWindowTest, AFailedReportIsNoLatencySample) {
  InflightWindow w(64 * kKiB, 4 * kMiB, 0);
  w.OnProduced(7, 0);
  ASSERT_TRUE(w.sampled(7));
  w.OnReport(7, 0, 50);  // failed: 0 bytes delivered
  EXPECT_EQ(w.min_latency_us(), -1);
  EXPECT_TRUE(w.sampling());  // the next record is sampled instead
}

}  // namespace
}  // namespace outbox
