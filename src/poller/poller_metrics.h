// PollerMetrics: outbox-poller's operator signals, kept in a prometheus-cpp
// registry that MetricsServer serves on /metrics, plus the two flags
// /healthz and /readyz read.
//
//   outbox_poller_events_delivered_total   rows delivered (acknowledged by
//                                          Kafka)
//   outbox_poller_attempts_total           delivery attempts (rows produced)
//   outbox_poller_failures_total           failed attempts (routing, produce
//                                          or delivery errors)
//   outbox_poller_dead_lettered_total      rows moved to the dead-letter state
//   outbox_poller_batches_total            claims that found rows
//   outbox_poller_batches_abandoned_total  batches rolled back because Kafka
//                                          did not acknowledge them within
//                                          poller.batch_timeout_ms
//   outbox_poller_janitor_deleted_total    old sent rows deleted
//   outbox_poller_unsent_rows{table}       rows neither sent nor dead-lettered
//   outbox_poller_oldest_unsent_age_seconds{table}
//   outbox_poller_events_per_second        delivered rows/s over the last
//                                          report interval
//   outbox_poller_connected                1 while connected to PostgreSQL
//   outbox_poller_role{role}               1 for the current role
//                                          (http/daemon_role.h: standby
//                                          while connecting, active while
//                                          polling; every poller of a pair
//                                          is active: SKIP LOCKED shares)
//   outbox_poller_config_reload_failures_total, outbox_poller_config_last_
//   reload_success_timestamp_seconds       SIGHUP reloads
//                                          (http/config_reload_status.h)
//
// For the status page it also keeps the connection states and the last
// error (DaemonStatus) and fills a StatusSnapshot from the same figures.
//
// Lifetime: the registry must outlive this object. Threading: the poller's
// thread writes; prometheus-cpp metrics and the atomics are safe to read
// from the HTTP server's threads.
#ifndef OUTBOX_POLLER_POLLER_METRICS_H_
#define OUTBOX_POLLER_POLLER_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "http/config_reload_status.h"
#include "http/daemon_role.h"
#include "http/daemon_status.h"
#include "http/kafka_client_metrics.h"
#include "http/status_snapshot.h"

namespace outbox {

class PollerMetrics {
 public:
  explicit PollerMetrics(prometheus::Registry& registry);

  PollerMetrics(const PollerMetrics&) = delete;
  PollerMetrics& operator=(const PollerMetrics&) = delete;

  prometheus::Counter& delivered;
  prometheus::Counter& attempts;
  prometheus::Counter& failures;
  prometheus::Counter& dead_lettered;
  prometheus::Counter& batches;
  prometheus::Counter& abandoned;
  prometheus::Counter& janitor_deleted;
  prometheus::Gauge& events_per_second;
  prometheus::Gauge& connected;

  prometheus::Gauge& Unsent(const std::string& table);
  prometheus::Gauge& OldestUnsentAge(const std::string& table);

  // For the health callback: the loop's last turn (monotonic microseconds)
  // and whether it holds a PostgreSQL connection.
  std::atomic<int64_t> last_turn_us{0};
  std::atomic<bool> ready{false};

  // Connection states and the last error. Any thread.
  DaemonStatus daemon_status;
  // The supervisor's state (daemon/lifecycle.h). Any thread.
  DaemonRole role;
  // What the last SIGHUP did (daemon/config_reload.h). Any thread.
  ConfigReloadStatus config_reload;
  // librdkafka's statistics (the producer's on_statistics). Its thread.
  KafkaClientMetrics kafka_client;

  // Any thread: sets `s`'s poller figures (delivered, dead letters,
  // failures, per-table backlog, states). Health is the caller's.
  void FillStatus(StatusSnapshot* s) const;

 private:
  prometheus::Family<prometheus::Gauge>& unsent_;
  prometheus::Family<prometheus::Gauge>& oldest_;
};

}  // namespace outbox

#endif  // OUTBOX_POLLER_POLLER_METRICS_H_
