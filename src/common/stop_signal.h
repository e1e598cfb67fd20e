// StopSignal: how a background thread that works on a timer learns that its
// owner wants it to end, without sleeping out the rest of its interval.
//
//   worker:  while (!stop_.stopped()) { Work(); stop_.WaitFor(interval); }
//   owner:   ~Owner() { stop_.Stop(); thread_.join(); }
//
// Threading: Stop() from any thread, once or more; WaitFor() and stopped()
// from any thread. The waits are on the steady clock of the condition
// variable (an interval, never a deadline read from a Clock).
#ifndef OUTBOX_COMMON_STOP_SIGNAL_H_
#define OUTBOX_COMMON_STOP_SIGNAL_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace outbox {

class StopSignal {
 public:
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
  }

  bool stopped() {
    std::lock_guard<std::mutex> lock(mu_);
    return stopped_;
  }

  // Waits `d`, or less when Stop() is called; true when stopped.
  template <typename Rep, typename Period>
  bool WaitFor(std::chrono::duration<Rep, Period> d) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(
        lock, d, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return stopped_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace outbox

#endif  // OUTBOX_COMMON_STOP_SIGNAL_H_
