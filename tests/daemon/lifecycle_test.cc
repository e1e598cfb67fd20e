// Lifecycle's waits (daemon/lifecycle.h), timed by a fake Clock that the
// turn callback advances: how long each retry waits, in turns.
#include "daemon/lifecycle.h"

#include <atomic>
#include <functional>

#include "daemon/exit_code.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

class LifecycleTest : public ::testing::Test {
 protected:
  LifecycleTest() {
    postgres_.reconnect_backoff_initial_ms = 100;
    postgres_.reconnect_backoff_max_ms = 400;
    postgres_.standby_retry_ms = 1000;
  }

  // How long RetryAfter() waited, in fake milliseconds.
  int64_t WaitedMs(Lifecycle& lifecycle, bool held_elsewhere) {
    const int64_t before = clock_.NowMicros();
    lifecycle.RetryAfter("PostgreSQL", absl::UnavailableError("down"),
                         held_elsewhere);
    return (clock_.NowMicros() - before) / 1000;
  }

  PostgresConfig postgres_;
  std::atomic<bool> stop_{false};
  FakeClock clock_;
  // Each turn (every 50 ms of real time) moves the clock 100 ms.
  std::function<void()> turn_ = [this] { clock_.Advance(100'000); };
};

TEST_F(LifecycleTest, BackoffDoublesUpToItsMaximum) {
  Lifecycle lifecycle(postgres_, stop_, nullptr, nullptr, turn_, &clock_);
  EXPECT_EQ(WaitedMs(lifecycle, false), 100);
  EXPECT_EQ(WaitedMs(lifecycle, false), 200);
  EXPECT_EQ(WaitedMs(lifecycle, false), 400);
  EXPECT_EQ(WaitedMs(lifecycle, false), 400);
  lifecycle.Progressed();
  EXPECT_EQ(WaitedMs(lifecycle, false), 100);
  EXPECT_EQ(lifecycle.role(), Role::kStandby);
}

TEST_F(LifecycleTest, AHeldSlotIsRetriedEveryStandbyInterval) {
  Lifecycle lifecycle(postgres_, stop_, nullptr, nullptr, turn_, &clock_);
  EXPECT_EQ(WaitedMs(lifecycle, true), 1000);
  EXPECT_EQ(WaitedMs(lifecycle, true), 1000);
  EXPECT_EQ(WaitedMs(lifecycle, false), 100);  // the backoff did not grow
}

TEST_F(LifecycleTest, AStopEndsTheWait) {
  Lifecycle lifecycle(postgres_, stop_, nullptr, nullptr, turn_, &clock_);
  stop_ = true;
  EXPECT_EQ(WaitedMs(lifecycle, true), 0);
  EXPECT_EQ(lifecycle.Stop(kExitOk), kExitOk);
  EXPECT_EQ(lifecycle.role(), Role::kStopped);
}

// A SIGHUP or a SessionRestart (daemon/session_restart.h) ends a standby's
// wait at the next turn instead of after the backoff.
TEST_F(LifecycleTest, AWakeEndsTheWait) {
  Lifecycle lifecycle(postgres_, stop_, nullptr, nullptr, turn_, &clock_);
  bool wake = false;
  lifecycle.WakeWhen([&wake] { return wake; });
  EXPECT_EQ(WaitedMs(lifecycle, true), 1000);
  wake = true;
  EXPECT_EQ(WaitedMs(lifecycle, true), 0);
}

}  // namespace
}  // namespace outbox
