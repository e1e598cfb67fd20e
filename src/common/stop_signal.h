// StopSignal: how a background thread that works on a timer learns that its
// owner wants it to end, without sleeping out the rest of its interval.
//
//   worker:  while (!stop.stopped()) { Work(); stop.WaitFor(interval); }
//   owner:   a StoppableThread member, declared last, running the worker;
//            destroying it stops and joins the worker first
//
// Threading: Stop() from any thread, once or more; WaitFor() and stopped()
// from any thread. The waits are on the steady clock of the condition
// variable (an interval, never a deadline read from a Clock).
#ifndef OUTBOX_COMMON_STOP_SIGNAL_H_
#define OUTBOX_COMMON_STOP_SIGNAL_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

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

// A thread that runs `body` with its StopSignal; the destructor stops it and
// joins it. Declare it after everything `body` uses, so that it starts last
// and is destroyed first.
class StoppableThread {
 public:
  explicit StoppableThread(std::function<void(StopSignal&)> body)
      : thread_([this, body = std::move(body)] { body(stop_); }) {}
  ~StoppableThread() {
    stop_.Stop();
    thread_.join();
  }

  StoppableThread(const StoppableThread&) = delete;
  StoppableThread& operator=(const StoppableThread&) = delete;

 private:
  StopSignal stop_;
  std::thread thread_;  // last: starts after stop_
};

}  // namespace outbox

#endif  // OUTBOX_COMMON_STOP_SIGNAL_H_
