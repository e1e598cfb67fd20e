// RelayMetrics: outbox-relay's Prometheus metrics and health state.
//
// The relay thread updates them (Relay calls the On*/Set* methods); the HTTP
// server's threads read the registry and the health state. prometheus-cpp
// metrics are thread safe; the health fields are atomics or guarded.
//
//   outbox_relay_events_delivered_total{topic}   events Kafka acknowledged
//   outbox_relay_bytes_delivered_total{topic}    their value bytes
//   outbox_relay_delivery_errors_total           failed delivery reports
//   outbox_relay_dead_lettered_total             events delivered to the DLQ
//   outbox_relay_inflight_events / _bytes        produced, not yet reported
//   outbox_relay_tracked_events                  from the oldest event not
//                                                yet reported to the newest
//                                                read (the relay's memory;
//                                                limits.max_tracked_events)
//   outbox_relay_received_lsn / _confirmed_lsn   positions as numbers
//   outbox_relay_lag_bytes                       received - confirmed
//   outbox_relay_lag_seconds                     age of the oldest unconfirmed
//                                                event: now - commit time of
//                                                the oldest unconfirmed
//                                                transaction with events; 0
//                                                when none is pending
//   outbox_relay_delivery_latency_seconds        histogram: commit -> report
//   outbox_relay_reconnects_total                sessions restarted
//   outbox_relay_slot_retained_wal_bytes         pg_current_wal_lsn() -
//                                                restart_lsn (SlotMonitor)
//   outbox_relay_slot_lag_bytes                  pg_current_wal_lsn() -
//                                                confirmed_flush_lsn
//   outbox_relay_slot_safe_wal_size_bytes        NaN when unlimited
//   outbox_relay_slot_wal_status{status}         1 for the current status
//   outbox_relay_slot_active                     1 while some process holds it
//   outbox_relay_slot_monitor_errors_total       failed slot queries
//   outbox_relay_failover_ready                  1: a PostgreSQL 17+
//                                                failover would keep the
//                                                slot (every check passed,
//                                                a standby checked); 0: not;
//                                                NaN: not checked (16 and
//                                                older, failover_slot off)
//   outbox_relay_failover_problems               unsafe settings found
//                                                (pg/failover_readiness.h)
//
// Cost: per delivery the relay thread only adds to plain counters (a hash
// lookup in its per-topic map, a bucket search for the latency); Flush(),
// once per loop turn, moves the sums into the Prometheus metrics. So a
// scrape lags the relay by at most one loop turn (<= 100 ms).
#ifndef OUTBOX_RELAY_RELAY_METRICS_H_
#define OUTBOX_RELAY_RELAY_METRICS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "outbox/lsn.h"
#include "pg/slot_monitor.h"

namespace prometheus {
class Counter;
template <typename T>
class Family;
class Gauge;
class Histogram;
class Registry;
}  // namespace prometheus

namespace outbox {

class RelayMetrics {
 public:
  explicit RelayMetrics(std::shared_ptr<prometheus::Registry> registry);
  ~RelayMetrics();
  RelayMetrics(const RelayMetrics&) = delete;
  RelayMetrics& operator=(const RelayMetrics&) = delete;

  const std::shared_ptr<prometheus::Registry>& registry() const {
    return registry_;
  }

  // Relay thread; buffered until Flush().
  void OnDelivered(absl::string_view topic, int64_t value_bytes);
  // `seconds` < 0: unknown commit time, not observed.
  void ObserveLatency(double seconds);
  // Relay thread; immediate.
  void OnDeliveryError();
  void OnDeadLettered();
  // Relay thread: publishes what OnDelivered/ObserveLatency buffered.
  void Flush();
  void SetPosition(Lsn received, Lsn confirmed, int64_t inflight_events,
                   int64_t inflight_bytes, double lag_seconds);
  void SetTrackedEvents(int64_t events);
  // Supervisor thread.
  void OnReconnect();
  // Slot monitor thread.
  void SetSlot(const SlotStatus& slot);
  void OnSlotMonitorError();
  // The failover readiness check's problem count; nullopt: not checked.
  // Never affects /readyz: the relay works either way.
  void SetFailoverProblems(std::optional<size_t> problems);

  // Health: the loop's last turn (monotonic microseconds) and whether a
  // session holds the slot with a healthy producer.
  void Heartbeat(int64_t now_us) {
    last_turn_us_.store(now_us, std::memory_order_relaxed);
  }
  void SetStreaming(bool streaming) {
    streaming_.store(streaming, std::memory_order_relaxed);
  }
  int64_t last_turn_us() const {
    return last_turn_us_.load(std::memory_order_relaxed);
  }
  bool streaming() const { return streaming_.load(std::memory_order_relaxed); }
  // Why the slot cannot serve the relay, from the slot monitor's last
  // SetSlot(): its wal_status is 'lost' (invalidated: the server removed
  // WAL it needed). "" while the slot is usable. /readyz fails with it.
  std::string slot_problem() const;

 private:
  struct TopicCounters {
    prometheus::Counter* events;
    prometheus::Counter* bytes;
    int64_t pending_events = 0;
    int64_t pending_bytes = 0;
  };

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Counter* delivery_errors_;
  prometheus::Counter* dead_lettered_;
  prometheus::Counter* reconnects_;
  prometheus::Counter* slot_monitor_errors_;
  prometheus::Gauge* inflight_events_;
  prometheus::Gauge* inflight_bytes_;
  prometheus::Gauge* tracked_events_;
  prometheus::Gauge* received_lsn_;
  prometheus::Gauge* confirmed_lsn_;
  prometheus::Gauge* lag_bytes_;
  prometheus::Gauge* lag_seconds_;
  prometheus::Gauge* slot_retained_;
  prometheus::Gauge* slot_lag_;
  prometheus::Gauge* slot_safe_wal_size_;
  prometheus::Gauge* slot_active_;
  prometheus::Gauge* failover_ready_;
  prometheus::Gauge* failover_problems_;
  prometheus::Histogram* latency_;
  prometheus::Family<prometheus::Counter>* events_family_;
  prometheus::Family<prometheus::Counter>* bytes_family_;
  struct WalStatusGauges;
  std::unique_ptr<WalStatusGauges> wal_status_;
  absl::flat_hash_map<std::string, TopicCounters> topics_;
  bool topics_pending_ = false;
  std::vector<double> latency_bounds_;
  std::vector<double> latency_pending_;  // per bucket, +Inf last
  double latency_pending_sum_ = 0;
  bool latency_is_pending_ = false;
  std::atomic<int64_t> last_turn_us_{0};
  std::atomic<bool> streaming_{false};
  mutable std::mutex slot_problem_mu_;
  std::string slot_problem_ ABSL_GUARDED_BY(slot_problem_mu_);
};

}  // namespace outbox

#endif  // OUTBOX_RELAY_RELAY_METRICS_H_
