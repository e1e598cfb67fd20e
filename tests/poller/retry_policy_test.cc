#include "poller/retry_policy.h"

#include <algorithm>
#include <vector>

#include "gtest/gtest.h"

namespace outbox {
namespace {

TEST(RetryPolicyTest, CapDoublesFromInitialAndSaturatesAtMax) {
  RetryPolicy p(10, 100, 1000, 1);
  EXPECT_EQ(p.CapMs(1), 100);
  EXPECT_EQ(p.CapMs(2), 200);
  EXPECT_EQ(p.CapMs(3), 400);
  EXPECT_EQ(p.CapMs(4), 800);
  EXPECT_EQ(p.CapMs(5), 1000);
  EXPECT_EQ(p.CapMs(1'000'000), 1000);  // no overflow on huge counts
}

TEST(RetryPolicyTest, FullJitterStaysWithinTheCapAndSpansIt) {
  RetryPolicy p(1000, 100, 100000, 42);
  int64_t lo = 1 << 30, hi = -1;
  for (int i = 0; i < 10000; ++i) {
    RetryPolicy::Decision d = p.OnFailure(2);  // third attempt: cap 400
    ASSERT_FALSE(d.dead);
    ASSERT_EQ(d.attempts, 3);
    ASSERT_GE(d.retry_delay_ms, 0);
    ASSERT_LE(d.retry_delay_ms, 400);
    lo = std::min(lo, d.retry_delay_ms);
    hi = std::max(hi, d.retry_delay_ms);
  }
  // Full jitter: the whole [0, cap] range is used, not just its top.
  EXPECT_LT(lo, 20);
  EXPECT_GT(hi, 380);
}

TEST(RetryPolicyTest, SameSeedGivesTheSameDelays) {
  RetryPolicy a(10, 100, 5000, 7), b(10, 100, 5000, 7), c(10, 100, 5000, 8);
  std::vector<int64_t> da, db, dc;
  for (int i = 0; i < 8; ++i) {
    da.push_back(a.OnFailure(i % 5).retry_delay_ms);
    db.push_back(b.OnFailure(i % 5).retry_delay_ms);
    dc.push_back(c.OnFailure(i % 5).retry_delay_ms);
  }
  EXPECT_EQ(da, db);
  EXPECT_NE(da, dc);
}

TEST(RetryPolicyTest, DeadAfterMaxAttempts) {
  RetryPolicy p(3, 100, 1000, 1);
  RetryPolicy::Decision d = p.OnFailure(0);
  EXPECT_EQ(d.attempts, 1);
  EXPECT_FALSE(d.dead);
  d = p.OnFailure(1);
  EXPECT_EQ(d.attempts, 2);
  EXPECT_FALSE(d.dead);
  d = p.OnFailure(2);
  EXPECT_EQ(d.attempts, 3);
  EXPECT_TRUE(d.dead);
  EXPECT_EQ(d.retry_delay_ms, 0);
}

TEST(RetryPolicyTest, OneAttemptMeansTheFirstFailureIsFinal) {
  RetryPolicy p(1, 100, 1000, 1);
  EXPECT_TRUE(p.OnFailure(0).dead);
}

}  // namespace
}  // namespace outbox
