// RelayMetrics: outbox-relay's Prometheus metrics and health state.
//
// The relay thread updates them (the Relay's PipelineObserver,
// pipeline/observer.h: it calls the On*/Set* methods); the HTTP
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
//   outbox_relay_receive_latency_seconds         histogram: commit -> the
//                                                relay reads the
//                                                transaction (per event)
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
//   outbox_relay_unreplicated_topics             topics the relay depends on
//                                                with replication factor 1
//                                                on 3+ brokers (checked at
//                                                the first session; NaN:
//                                                not yet)
//   outbox_relay_paused                          1 while paused (POST
//                                                /pause), else 0
//   outbox_relay_nontransactional_messages_total non-transactional logical
//                                                messages under the outbox
//                                                prefix, ignored
//   outbox_relay_ignored_updates_total           UPDATEs of outbox rows seen
//                                                under outbox.on_update warn
//                                                or error, not published
//   outbox_relay_heartbeats_emitted_total / _heartbeat_errors_total
//                                                heartbeat messages written,
//                                                and failures to write one
//   outbox_relay_heartbeat_round_trip_seconds    emit -> back through the
//                                                slot, the last heartbeat
//                                                (NaN: none yet)
//   outbox_relay_heartbeat_age_seconds           since the last heartbeat
//                                                came back (NaN: none yet)
//   outbox_relay_ready                           1 while streaming from a
//                                                usable slot, or a healthy
//                                                standby (what /readyz
//                                                says, less the liveness
//                                                part: see the last one)
//   outbox_relay_role{role}                      1 for the instance's role
//                                                (standby, active, draining,
//                                                stopped; http/daemon_role.h)
//   outbox_relay_last_turn_timestamp_seconds     Unix time of the last turn
//                                                of the relay loop or of the
//                                                supervisor between sessions
//                                                (Heartbeat); alert rules
//                                                compare it with time()
//   outbox_relay_config_reload_failures_total    SIGHUP reloads refused
//   outbox_relay_config_last_reload_success_timestamp_seconds
//                                                (http/config_reload_status.h)
//
// Besides the registry it keeps what the status page needs and no metric
// holds (DaemonStatus: connection states, the last error; the slot's name)
// and fills a StatusSnapshot from the same figures (FillStatus).
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
#include "http/config_reload_status.h"
#include "http/daemon_role.h"
#include "http/daemon_status.h"
#include "http/kafka_client_metrics.h"
#include "http/status_snapshot.h"
#include "outbox/clock.h"
#include "outbox/lsn.h"
#include "pg/slot_monitor.h"
#include "pipeline/observer.h"

namespace prometheus {
class Counter;
template <typename T>
class Family;
class Gauge;
class Histogram;
class Registry;
}  // namespace prometheus

namespace outbox {

class RelayMetrics : public PipelineObserver {
 public:
  // `clock` (wall time for the heartbeat timestamp) must outlive this.
  explicit RelayMetrics(std::shared_ptr<prometheus::Registry> registry,
                        const Clock* clock = RealClock());
  ~RelayMetrics();
  RelayMetrics(const RelayMetrics&) = delete;
  RelayMetrics& operator=(const RelayMetrics&) = delete;

  const std::shared_ptr<prometheus::Registry>& registry() const {
    return registry_;
  }

  // Relay thread; buffered until Flush().
  void OnDelivered(absl::string_view topic, int64_t value_bytes) override;
  // `seconds` < 0: unknown commit time, not observed.
  void ObserveLatency(double seconds) override;
  void ObserveReceiveLatency(double seconds) override;
  // Relay thread; immediate.
  void OnDeliveryError() override;
  void OnDeadLettered() override;
  // Relay thread: publishes what OnDelivered/ObserveLatency buffered.
  void Flush() override;
  void SetPosition(Lsn received, Lsn confirmed, int64_t inflight_events,
                   int64_t inflight_bytes, double lag_seconds) override;
  void SetTrackedEvents(int64_t events) override;
  // Supervisor thread.
  void OnReconnect();
  // Supervisor thread (the relay's too): a session ended on a missing
  // Kafka ACL (`authorization`) or topic (else): outbox_relay_kafka_blocked
  // {reason="authorization"|"unknown_topic"} is 1 until a record is
  // delivered to `topic` again (OnDelivered), which the alert waits for,
  // or ClearKafkaBlocked().
  void SetKafkaBlocked(bool authorization, absl::string_view topic);
  // Supervisor thread: nothing blocks this instance any more although no
  // record reached the topic through it: the relay created the missing
  // topic, or the instance is a standby (another instance streams, and
  // reports its own block if it meets one).
  void ClearKafkaBlocked();
  // Slot monitor thread.
  void SetSlot(const SlotStatus& slot);
  void OnSlotMonitorError();
  // The failover readiness check's problem count; nullopt: not checked.
  // Never affects /readyz: the relay works either way.
  void SetFailoverProblems(std::optional<size_t> problems);
  // Supervisor thread: the start-up replication check's count
  // (kafka/topic_replication.h). Never affects /readyz.
  void SetUnreplicatedTopics(size_t topics);
  // Any thread (relay/pause_control.h): paused or not. While paused the
  // heartbeat cannot come back (nothing is read): RelayHealth ignores it.
  void SetPaused(bool paused);
  bool paused() const { return paused_flag_.load(std::memory_order_relaxed); }

  // The tableless outbox: a non-transactional message ignored. Relay
  // thread.
  void OnMessageIgnored() override;
  // outbox.on_update warn|error: an UPDATE of an outbox row, logged and not
  // published. Relay thread.
  void OnUpdateIgnored() override;
  void OnSkippedByOperator() override;
  // The operator's actions not applied yet, for /status.json (any thread).
  void SetOperatorActionsPending(std::vector<std::string> pending);
  // Heartbeats (relay/heartbeat.h); times are monotonic microseconds.
  // Emitter thread:
  void OnHeartbeatEmitted(int64_t now_us);
  void OnHeartbeatError();
  // Relay thread: one of ours came back after `round_trip_s`; and, once
  // per loop turn that read any, the stream delivered XLogData.
  void OnHeartbeatReturned(double round_trip_s, int64_t now_us) override;
  void OnStreamData(int64_t now_us) override {
    last_stream_data_us_.store(now_us, std::memory_order_relaxed);
  }
  // Relay thread, per loop turn: the age gauge.
  void RefreshHeartbeatAge(int64_t now_us) override;
  // Any thread: why the walsender looks stuck, "" when it does not: a
  // heartbeat emitted more than `timeout_us` ago has not come back, and
  // the stream delivered nothing for as long (a backlog being drained
  // delays heartbeats, but delivers). /readyz fails with it.
  std::string heartbeat_problem(int64_t now_us, int64_t timeout_us) const;

  // Health: the loop's last turn (monotonic microseconds; the exported
  // timestamp is the metrics clock's wall time) and whether a session holds
  // the slot with a healthy producer.
  void Heartbeat(int64_t now_us) override;
  void SetStreaming(bool streaming) override;
  // The supervisor is in a bounded call that may outlast the alive window
  // (opening a session: the connect, the Kafka slot marker's read and write,
  // exactly once's init_transactions and checkpoint read): alive until
  // `deadline_us`; 0 when none is under way.
  void BusyUntil(int64_t deadline_us) {
    busy_until_us_.store(deadline_us, std::memory_order_relaxed);
  }
  int64_t busy_until_us() const {
    return busy_until_us_.load(std::memory_order_relaxed);
  }
  int64_t last_turn_us() const {
    return last_turn_us_.load(std::memory_order_relaxed);
  }
  bool streaming() const { return streaming_.load(std::memory_order_relaxed); }
  // Why the slot cannot serve the relay, from the slot monitor's last
  // SetSlot(): its wal_status is 'lost' (invalidated: the server removed
  // WAL it needed). "" while the slot is usable. /readyz fails with it.
  std::string slot_problem() const;
  // Streaming from a slot without a problem: outbox_relay_ready.
  bool ready() const;

  // Connection states and the last error, for the status page. Any thread.
  DaemonStatus& daemon_status() { return daemon_status_; }
  // The supervisor's state (daemon/lifecycle.h sets it). Any thread.
  DaemonRole& role() { return role_; }
  // librdkafka's statistics: the producer's on_statistics (its thread).
  KafkaClientMetrics& kafka_client() { return kafka_client_; }
  const DaemonRole& role() const { return role_; }
  // What the last SIGHUP did (daemon/config_reload.h). Any thread.
  ConfigReloadStatus& config_reload() { return config_reload_; }

  // Any thread: sets `s`'s relay figures (positions, lag, window use, slot,
  // counters, states) from the metrics' current values. Limits and health
  // are the caller's.
  void FillStatus(StatusSnapshot* s) const;

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
  prometheus::Gauge* unreplicated_topics_;
  prometheus::Gauge* paused_;
  std::atomic<bool> paused_flag_{false};
  prometheus::Gauge* kafka_blocked_authorization_;
  prometheus::Gauge* kafka_blocked_unknown_topic_;
  std::string kafka_blocked_topic_;  // relay thread; "" when not blocked
  prometheus::Counter* messages_ignored_;
  prometheus::Counter* updates_ignored_;
  prometheus::Counter* skipped_by_operator_;
  prometheus::Counter* heartbeats_emitted_;
  prometheus::Counter* heartbeat_errors_;
  prometheus::Gauge* heartbeat_round_trip_;
  prometheus::Gauge* heartbeat_age_;
  // Emit time of the oldest heartbeat not seen back (0: none pending);
  // set by the emitter when 0, cleared by the relay when one returns.
  std::atomic<int64_t> heartbeat_pending_since_us_{0};
  std::atomic<int64_t> last_heartbeat_returned_us_{0};
  std::atomic<int64_t> last_stream_data_us_{0};
  prometheus::Gauge* ready_;
  prometheus::Gauge* last_turn_timestamp_;
  const Clock* clock_;
  // A histogram observed per event on the relay thread: a bucket search
  // per observation, published once per turn (Flush).
  struct BufferedHistogram {
    void Init(prometheus::Histogram* h, const std::vector<double>* b);
    void Observe(double seconds);
    void Publish();
    prometheus::Histogram* histogram = nullptr;
    const std::vector<double>* bounds = nullptr;
    std::vector<double> pending;  // per bucket, +Inf last
    double pending_sum = 0;
    bool is_pending = false;
  };
  prometheus::Histogram* latency_;
  prometheus::Family<prometheus::Counter>* events_family_;
  prometheus::Family<prometheus::Counter>* bytes_family_;
  struct WalStatusGauges;
  std::unique_ptr<WalStatusGauges> wal_status_;
  absl::flat_hash_map<std::string, TopicCounters> topics_;
  bool topics_pending_ = false;
  std::vector<double> latency_bounds_;
  BufferedHistogram delivery_latency_, receive_latency_;
  // Copies of figures the registry holds in forms that lose them (LSNs as
  // doubles, the per-topic counters), for FillStatus().
  std::atomic<int64_t> delivered_total_{0};
  std::atomic<uint64_t> received_{0};
  std::atomic<uint64_t> confirmed_{0};
  std::atomic<int64_t> last_turn_us_{0};
  std::atomic<int64_t> busy_until_us_{0};
  std::atomic<bool> streaming_{false};
  // Guards the slot problem and the slot's last status, and orders the ready
  // gauge's updates from the supervisor (SetStreaming) and slot monitor
  // (SetSlot) threads.
  mutable std::mutex health_mu_;
  std::string slot_problem_ ABSL_GUARDED_BY(health_mu_);
  std::optional<SlotStatus> slot_ ABSL_GUARDED_BY(health_mu_);
  std::vector<std::string> operator_pending_ ABSL_GUARDED_BY(health_mu_);
  DaemonStatus daemon_status_;
  DaemonRole role_;
  ConfigReloadStatus config_reload_;
  KafkaClientMetrics kafka_client_;

  void UpdateReadyLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(health_mu_);
};

}  // namespace outbox

#endif  // OUTBOX_RELAY_RELAY_METRICS_H_
