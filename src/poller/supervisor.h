// Supervisor: runs outbox-poller sessions and decides what each error means
// (STYLE.md rule 5), with the exit codes of outbox-relay (relay/supervisor.h):
//   Unavailable / Internal / others   reconnect with exponential backoff
//                     (postgres.reconnect_backoff_*): PostgreSQL down or
//                     restarting, a dropped connection, a fatal producer
//                     error. A session gets a fresh connection and producer;
//                     an unsettled batch was rolled back by the server.
//   FailedPrecondition  exit kExitPrecondition (missing table, column or
//                     privilege) with the one-line reason
//   bad configuration   exit kExitUsage
// Ending a session on purpose (daemon/session_restart.h): before each round
// of batches and in the wait between attempts the supervisor handles a
// SIGHUP (`reload`: the configuration re-read and checked, routes
// included; a changed one becomes a SessionRestart request) and any other
// request in `restart`; the session then ends between batches (each one
// settled), and RunPoller() starts the next with a fresh connection and
// producer over the new configuration (RunSessions()).
// Threading: RunPoller() runs on the calling thread; `stop` may be set from
// a signal handler. `metrics`, `reload` and `restart` may be null.
#ifndef OUTBOX_POLLER_SUPERVISOR_H_
#define OUTBOX_POLLER_SUPERVISOR_H_

#include <atomic>
#include <memory>

#include "absl/status/statusor.h"
#include "config/config.h"
#include "daemon/config_reload.h"
#include "daemon/session_restart.h"
#include "poller/libpq_outbox_store.h"
#include "poller/poller_metrics.h"
#include "route/router.h"

namespace outbox {

int RunPoller(const Config& config, PollerMetrics* metrics,
              const std::atomic<bool>& stop, ConfigReloader* reload = nullptr,
              SessionRestart* restart = nullptr);

// What RunPoller() builds before it asks a server, shared with
// `outbox-poller validate`: the router (InvalidArgument, one line, when the
// configuration cannot work: no outbox table, a bad mapping) and the
// store's options over it.
absl::StatusOr<std::unique_ptr<Router>> PollerRouter(const Config& config);
StoreOptions MakeStoreOptions(const Config& config, const Router& router);

}  // namespace outbox

#endif  // OUTBOX_POLLER_SUPERVISOR_H_
