#include "outbox/clock.h"

#include <chrono>

namespace outbox {
namespace {

class SystemClock : public Clock {
 public:
  int64_t NowMicros() const override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  int64_t UnixMicros() const override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace

Clock* RealClock() {
  static SystemClock* clock = new SystemClock;
  return clock;
}

}  // namespace outbox
