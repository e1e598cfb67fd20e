// SessionRestart: "end this session cleanly and start a new one", the one
// way every control asks a supervisor (outbox-relay's, outbox-poller's) to
// do it, optionally with a new configuration.
//
// A request is served at the supervisor's next turn: an active instance
// drains its session as a clean stop does (every event in flight delivered
// and its LSN confirmed; the relay ends at a transaction boundary,
// RelayOptions::end_session) and starts the next session; a standby simply
// makes its next attempt. RunSessions() is the loop around a supervisor
// that does so: each supervisor runs over one Config, and a restart builds
// the next one over the new Config (the producer, the exactly-once
// checkpoint, the router: everything a start-up builds, but the process,
// its HTTP endpoint and its metrics).
//
// SIGHUP is the first user (daemon/config_reload.h); a request with no
// Config restarts the session with the same one.
//
// Threading: Request() and pending() from any thread; Take() from the
// supervisor's.
#ifndef OUTBOX_DAEMON_SESSION_RESTART_H_
#define OUTBOX_DAEMON_SESSION_RESTART_H_

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "config/config.h"

namespace outbox {

class ConfigReloader;

class SessionRestart {
 public:
  struct Pending {
    std::string why;             // logged: "configuration reload"
    std::optional<Config> next;  // nullopt: the same configuration
  };

  // Asks for a restart; a newer request replaces a pending one (its Config
  // included).
  void Request(absl::string_view why, std::optional<Config> next = {});
  bool pending() const { return pending_.load(); }
  // The pending request, cleared; nullopt when none.
  std::optional<Pending> Take();

 private:
  std::atomic<bool> pending_{false};
  mutable std::mutex mu_;
  std::optional<Pending> request_ ABSL_GUARDED_BY(mu_);
};

// Runs `supervise` over `config` until it returns an exit code; each time it
// returns nullopt instead (it ended its session for a pending request in
// `restart`), takes the request and runs it again, over the request's
// Config when it has one (then `reload`, when given, records it applied).
// `supervise` must check `restart` each turn (see the supervisors).
int RunSessions(
    const Config& config, SessionRestart* restart, ConfigReloader* reload,
    const std::function<std::optional<int>(const Config&)>& supervise);

}  // namespace outbox

#endif  // OUTBOX_DAEMON_SESSION_RESTART_H_
