// Supervisor: runs replication sessions for outbox-relay as a small state
// machine (daemon/lifecycle.h): standby (trying to take the slot), active
// (a session streams), draining (the session ends: final flush and status),
// stopped; the role it is in is what the metrics, probes and status page
// report.
//
// Each session is opened by a SessionFactory (relay/session_factory.h:
// stream, producer, exactly-once checkpoint) over the configuration derived
// once (relay/relay_config.h), and streamed by a Relay. What its end means
// (exit with a code, retry and after what wait, restart at once, create a
// missing topic) is decided by Dispose() (daemon/disposition.h, STYLE.md
// rule 5); the supervisor acts on it: it logs, sets the status page's
// states and last error, counts reconnects, and while a missing ACL or
// topic blocks Kafka sets outbox_relay_kafka_blocked and says so once.
//
// With a RelayMetrics, each session's Relay updates it, the supervisor keeps
// the health heartbeat turning between sessions, and a SlotMonitorThread
// (relay/slot_monitor_thread.h) queries the slot's WAL retention; the same
// thread moves the slot marker's confirmed position while this instance
// holds the slot (a standby never writes the marker).
//
// A stop (SIGTERM) is checked after every step of a takeover (connect,
// START_REPLICATION, the producer, the checkpoint: SessionFactory::Open()):
// a standby stopped while it takes over gives the slot up without
// activating or streaming, and exits 0.
//
// Ending a session on purpose (daemon/session_restart.h): every turn of the
// Relay loop and of the standby's wait asks EndSessionRequested(): a SIGHUP
// re-reads the configuration there (daemon/config_reload.h; the routes,
// plugin and derived settings are checked too) and a changed one becomes a
// SessionRestart request; any other control asks through `restart`
// (SessionRestart::Request(), any thread). An active session then ends as a
// stop ends it, at a transaction boundary (RelayOptions::end_session): every
// event in flight delivered, its LSN confirmed, the slot marker moved; the
// slot is released as between any two sessions. A standby ends its wait.
// RunRelay() then builds the next supervisor over the new configuration
// (RunSessions()): a new producer (exactly once: init_transactions fences
// the old transactional.id, the checkpoint is read again), router, slot
// monitor and heartbeat; the process, HTTP endpoint and metrics stay.
//
// Threading: RunRelay() runs on the calling thread (plus the slot monitor
// thread it starts and joins); `stop` may be set from a signal handler.
#ifndef OUTBOX_RELAY_SUPERVISOR_H_
#define OUTBOX_RELAY_SUPERVISOR_H_

#include <atomic>

#include "config/config.h"
#include "daemon/config_reload.h"
#include "daemon/exit_code.h"
#include "daemon/session_restart.h"
#include "outbox/clock.h"
#include "relay/pause_control.h"
#include "relay/relay_config.h"
#include "relay/relay_metrics.h"

namespace outbox {

// `metrics` may be null (no metrics, no slot monitor). Time is read from
// `clock`. `reload` (SIGHUP) and `restart` may be null. `pause`
// (http.control.enabled; may be null: never paused) is given the producer
// options, read at every session start (a session that cannot read it ends
// unstreamed and is retried: a takeover never streams while the pair may be
// paused) and followed by each session's loop.
int RunRelay(const Config& config, const std::atomic<bool>& stop,
             RelayMetrics* metrics = nullptr, Clock* clock = RealClock(),
             ConfigReloader* reload = nullptr,
             SessionRestart* restart = nullptr, PauseControl* pause = nullptr);

}  // namespace outbox

#endif  // OUTBOX_RELAY_SUPERVISOR_H_
