// StatusSnapshot: what the status page shows, as plain values, and its JSON.
//
// The daemon that owns the HTTP endpoint fills one on each request to
// /status.json (outbox-relay from RelayMetrics, outbox-poller from
// PollerMetrics) out of the same figures its Prometheus metrics hold. Every
// figure is optional: a field the daemon does not have (the poller has no
// LSN, no slot, no in-flight window) is left unset, and ToJson() leaves it
// out rather than writing a zero, so the page shows only what applies.
//
// Counters are totals since the process started; the page derives rates
// (events/s, mean delivery latency per interval) from successive snapshots.
#ifndef OUTBOX_HTTP_STATUS_SNAPSHOT_H_
#define OUTBOX_HTTP_STATUS_SNAPSHOT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace outbox {

struct StatusSnapshot {
  std::string service;  // "outbox-relay", "outbox-poller"
  std::string version;
  int64_t unix_ms = 0;  // when the snapshot was taken (wall clock)
  // /healthz and /readyz, with the same detail text (MetricsServer sets
  // them from its health callback).
  bool alive = false;
  bool ready = false;
  std::string health_detail;
  // http/daemon_role.h: "standby", "active", "draining", "stopped"; and
  // /activez (active and streaming).
  std::optional<std::string> role;
  std::optional<bool> active;
  // outbox-relay with http.control.enabled (relay/pause_control.h): paused,
  // and by whom, since when (RFC 3339 UTC) and why when paused.
  std::optional<bool> paused;
  std::optional<std::string> paused_by;
  std::optional<std::string> paused_since;
  std::optional<std::string> paused_reason;

  std::optional<int64_t> events_delivered;  // acknowledged by Kafka
  // The delivery latency histogram's count and sum (commit -> report).
  std::optional<int64_t> latency_count;
  std::optional<double> latency_sum_seconds;
  std::optional<std::string> received_lsn;  // "0/16B3748"
  std::optional<std::string> confirmed_lsn;
  std::optional<int64_t> lag_bytes;
  std::optional<double> lag_seconds;  // age of the oldest undelivered event
  std::optional<int64_t> inflight_events;
  std::optional<int64_t> max_inflight_events;
  std::optional<int64_t> inflight_bytes;
  std::optional<int64_t> max_inflight_bytes;
  std::optional<int64_t> tracked_events;
  std::optional<int64_t> max_tracked_events;
  std::optional<std::string> slot_name;
  std::optional<std::string> slot_wal_status;  // reserved, ..., lost
  std::optional<int64_t> slot_retained_wal_bytes;
  std::optional<int64_t> slot_safe_wal_size_bytes;  // unset: unlimited
  std::optional<bool> slot_active;
  std::optional<int64_t> dead_lettered;
  // outbox-relay: events dropped on an operator's skip or advance, and the
  // actions not applied yet ("skip event X (by, at)"; a skip whose event
  // never came stays here).
  std::optional<int64_t> skipped_by_operator;
  std::vector<std::string> operator_actions_pending;
  std::optional<int64_t> delivery_errors;
  std::optional<int64_t> reconnects;
  std::optional<std::string> postgres_state;
  std::optional<std::string> kafka_state;
  std::optional<std::string> last_error;
  std::optional<int64_t> last_error_unix_ms;
  // The last SIGHUP reload (daemon/config_reload.h); unset before the first.
  struct ConfigReload {
    bool ok = false;
    std::string result;  // "applied", "unchanged", "invalid", "needs restart"
    std::string error;   // the one line, when not ok
    int64_t at_unix_ms = 0;
  };
  std::optional<ConfigReload> config_reload;

  // outbox-poller: rows not yet delivered, per outbox table.
  struct TableBacklog {
    std::string table;
    int64_t unsent_rows = 0;
    double oldest_unsent_age_seconds = 0;
  };
  std::vector<TableBacklog> backlog;
};

// One JSON object; unset fields are absent, "backlog" and
// "operator_actions_pending" only when non-empty.
std::string ToJson(const StatusSnapshot& s);

}  // namespace outbox

#endif  // OUTBOX_HTTP_STATUS_SNAPSHOT_H_
