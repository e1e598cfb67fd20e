// InflightWindow: how many bytes the relay may have handed to Kafka and not
// yet seen acknowledged, sized from what the acknowledgements need rather
// than fixed: twice the bandwidth-delay product, the highest recent
// delivery rate times the lowest recent acknowledgement latency plus the
// producer's batching delay (linger.ms), between a floor and the
// configured cap (limits.max_inflight_bytes). The round trip is the
// minimum, as BBR takes it, so a queue that builds up does not grow the
// window that builds it; linger.ms is added because the lowest latency is
// that of a record which filled its batch and went out at once, while the
// others of the batch waited up to linger.ms for it (a window of the
// minimum alone collapsed to its floor: 0.17x the walsender's drain).
//
// Why not the cap itself: in flight, every byte is held by librdkafka (the
// record, its headers, its copy in a request buffer) and the acknowledged
// ones are freed in bulk. A window past what the acknowledgements need
// adds no throughput (Little's law: in flight = rate x latency; more only
// queues) but costs memory and CPU: measured on 200,000 events, a 1 MiB
// window at linger.ms 5 drained at 2.55 us of relay CPU per event and
// 21 MiB peak RSS against 3.65 us and 29 MiB with a fixed 4 MiB window
// (bench/RESULTS.md, issue 26).
//
// While the window binds, the rate measured is the window over the
// latency, so the window doubles every round trip until the latency grows
// (the broker or the relay is the limit: more would only queue) or the cap
// is reached. While something else binds (the walsender), the window stays
// at twice what is in flight.
//
// Latency: one sampled record at a time, from its produce to its report.
// Rate: delivered bytes over intervals of at least kRateIntervalUs and two
// round trips. Owned by InFlight (pipeline/in_flight.h). Both
// forget old values (rate: the max of the last kRateIntervals intervals;
// latency: the min of the last two kLatencyPeriodUs periods), so a slower
// broker or a faster one is followed. One thread; not thread-safe.
#ifndef OUTBOX_CORE_INFLIGHT_WINDOW_H_
#define OUTBOX_CORE_INFLIGHT_WINDOW_H_

#include <array>
#include <cstdint>

namespace outbox {

class InflightWindow {
 public:
  static constexpr int64_t kRateIntervalUs = 10'000;
  static constexpr int kRateIntervals = 16;
  static constexpr int64_t kLatencyPeriodUs = 5'000'000;

  // floor <= cap; the window starts at the floor. `batching_delay_us`:
  // the producer's linger.ms.
  InflightWindow(int64_t floor_bytes, int64_t cap_bytes,
                 int64_t batching_delay_us);

  int64_t bytes() const { return window_; }

  // A record took `ticket` at `now_us`: sampled when no sample is pending.
  // `sampling()` says whether it would be (so the caller reads the clock
  // only then).
  bool sampling() const { return sample_ticket_ == kNone; }
  void OnProduced(uint64_t ticket, int64_t now_us);
  // The report of `ticket` (delivered or not) came at `now_us`; only the
  // sampled ticket's report reads the clock, so `now_us` may be 0 for the
  // rest (see `sampled()`).
  bool sampled(uint64_t ticket) const { return ticket == sample_ticket_; }
  void OnReport(uint64_t ticket, int64_t delivered_bytes, int64_t now_us);
  // Closes a rate interval when one is due, and resizes the window.
  void Update(int64_t now_us);

  int64_t min_latency_us() const;  // -1 before the first sample
  int64_t max_rate_bytes_per_s() const;

 private:
  static constexpr uint64_t kNone = ~uint64_t{0};
  void Resize();

  int64_t floor_, cap_, window_, batching_delay_us_;
  uint64_t sample_ticket_ = kNone;
  int64_t sample_start_us_ = 0;
  // Latency: the min of this period and of the one before.
  int64_t latency_now_ = -1, latency_before_ = -1, period_start_us_ = -1;
  // Rate: bytes in the open interval; the last intervals' rates.
  int64_t interval_start_us_ = -1, interval_bytes_ = 0;
  std::array<int64_t, kRateIntervals> rates_{};
  int next_rate_ = 0;
};

}  // namespace outbox

#endif  // OUTBOX_CORE_INFLIGHT_WINDOW_H_
