// Clock: the only way pipeline code reads time, so tests can fake it.
#ifndef OUTBOX_CLOCK_H_
#define OUTBOX_CLOCK_H_

#include <cstdint>

namespace outbox {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic microseconds, arbitrary origin.
  virtual int64_t NowMicros() const = 0;
  // Wall clock, Unix microseconds.
  virtual int64_t UnixMicros() const = 0;
};

// The process-wide real clock. Never null, never deleted.
Clock* RealClock();

// A clock that moves only when told. Not thread safe.
class FakeClock : public Clock {
 public:
  int64_t NowMicros() const override { return now_; }
  int64_t UnixMicros() const override { return unix_ + now_; }
  void Advance(int64_t micros) { now_ += micros; }
  void SetUnix(int64_t unix_micros) { unix_ = unix_micros; }

 private:
  int64_t now_ = 1'000'000;
  int64_t unix_ = 1'700'000'000'000'000;
};

}  // namespace outbox

#endif  // OUTBOX_CLOCK_H_
