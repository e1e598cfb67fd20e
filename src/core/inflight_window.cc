#include "core/inflight_window.h"

#include <algorithm>

namespace outbox {

InflightWindow::InflightWindow(int64_t floor_bytes, int64_t cap_bytes,
                               int64_t batching_delay_us)
    : floor_(std::min(floor_bytes, cap_bytes)),
      cap_(cap_bytes),
      window_(floor_),
      batching_delay_us_(std::max<int64_t>(0, batching_delay_us)) {}

void InflightWindow::OnProduced(uint64_t ticket, int64_t now_us) {
  if (sample_ticket_ != kNone) return;
  sample_ticket_ = ticket;
  sample_start_us_ = now_us;
}

void InflightWindow::OnReport(uint64_t ticket, int64_t delivered_bytes,
                              int64_t now_us) {
  interval_bytes_ += delivered_bytes;
  if (ticket != sample_ticket_) return;
  sample_ticket_ = kNone;
  if (delivered_bytes <= 0) return;  // a failed report says nothing of Kafka
  const int64_t latency = std::max<int64_t>(1, now_us - sample_start_us_);
  if (period_start_us_ < 0) period_start_us_ = now_us;
  if (now_us - period_start_us_ >= kLatencyPeriodUs) {
    latency_before_ = latency_now_;
    latency_now_ = -1;
    period_start_us_ = now_us;
  }
  if (latency_now_ < 0 || latency < latency_now_) latency_now_ = latency;
}

void InflightWindow::Update(int64_t now_us) {
  if (interval_start_us_ < 0) {
    interval_start_us_ = now_us;
    interval_bytes_ = 0;
    return;
  }
  // Acknowledgements come a batch per round trip: an interval shorter than
  // two of them would read the bursts as the rate.
  const int64_t elapsed = now_us - interval_start_us_;
  if (elapsed < std::max(kRateIntervalUs, 2 * min_latency_us())) return;
  rates_[next_rate_] = interval_bytes_ * 1'000'000 / elapsed;
  next_rate_ = (next_rate_ + 1) % kRateIntervals;
  interval_start_us_ = now_us;
  interval_bytes_ = 0;
  Resize();
}

int64_t InflightWindow::min_latency_us() const {
  if (latency_now_ < 0) return latency_before_;
  if (latency_before_ < 0) return latency_now_;
  return std::min(latency_now_, latency_before_);
}

int64_t InflightWindow::max_rate_bytes_per_s() const {
  return *std::max_element(rates_.begin(), rates_.end());
}

void InflightWindow::Resize() {
  const int64_t latency = min_latency_us();
  if (latency < 0) return;  // no sample yet: stay where we are
  // 2 x rate x latency, in bytes; the product fits: rates are bytes/s of
  // one process (< 2^40), latencies microseconds (< 2^24 in practice).
  const int64_t bdp =
      max_rate_bytes_per_s() / 1000 * (latency + batching_delay_us_) / 1000;
  window_ = std::clamp<int64_t>(2 * bdp, floor_, cap_);
}

}  // namespace outbox
