// RelayHealth: what outbox-relay's probes answer (http/metrics_server.h),
// from its metrics and role (docs/operations/high-availability.md):
//
//   alive   the relay loop, or the supervisor between sessions, turned
//           within RelayAliveWindowUs(): long enough for the longest call
//           that blocks the loop on purpose (a connect, the final flush,
//           an exactly-once Kafka commit, which waits up to the transaction
//           timeout while Kafka is away), so a liveness probe restarts only
//           a wedged process, never one waiting out an outage; or the
//           supervisor is opening a session within SessionOpenBoundUs()
//   ready   alive and healthy in its role: active and streaming from a
//           usable slot (and the heartbeat, when on, comes back; not
//           asked while paused: nothing is read), or a standby whose last
//           attempt found the slot held by another instance. A paused
//           relay (POST /pause) is ready and active: it holds the slot
//   active  alive, active and streaming from a usable slot
//
// Threading: any thread (reads atomics and locked state).
#ifndef OUTBOX_RELAY_RELAY_HEALTH_H_
#define OUTBOX_RELAY_RELAY_HEALTH_H_

#include <cstdint>

#include "config/config.h"
#include "http/metrics_server.h"
#include "relay/relay_metrics.h"

namespace outbox {

// How long the loop may go without a turn before /healthz fails.
int64_t RelayAliveWindowUs(const Config& config);

// How long opening a session (SessionFactory::Open) may take, each of its
// calls bounded: the connect, the Kafka slot marker's read (topic check and
// read) and write, the producer (exactly once: init_transactions) and the
// checkpoint read. The supervisor is alive for that long after it starts one
// (RelayMetrics::BusyUntil), however long the loop window is.
int64_t SessionOpenBoundUs(const Config& config);

// `now_us`: monotonic microseconds (RealClock()->NowMicros()).
HealthState RelayHealth(const RelayMetrics& metrics, const Config& config,
                        int64_t now_us);

}  // namespace outbox

#endif  // OUTBOX_RELAY_RELAY_HEALTH_H_
