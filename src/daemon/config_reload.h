// ConfigReloader: SIGHUP's re-reading of the configuration, for
// outbox-relay and outbox-poller alike.
//
// The signal handler only sets a flag (Request(), async-signal-safe); the
// work is the supervisor's, on its own thread: Check() re-reads the
// configuration exactly as start-up did (the same --config file, the same
// --set overrides in order, ${VAR} and `_file` secrets read again) and
// compares it with the running one:
//   invalid         one line "configuration reload refused: <why>"; the
//                   process keeps running on the old configuration
//   unchanged       one line "configuration reload: unchanged"; nothing else
//   a key in RestartOnlyKeys() changed
//                   refused like an invalid one, naming the keys
//   changed         "configuration reload: changed" with the changed keys
//                   and their new values (redacted); Check() returns the new
//                   Config and the supervisor ends the session cleanly and
//                   starts the next one with it (relay/supervisor.h,
//                   poller/supervisor.h), then calls Applied()
// Every outcome is recorded in the ConfigReloadStatus (status page,
// metrics). log.level applies at once (Applied()).
//
// Threading: Request() from a signal handler; current() from any thread;
// the rest from the supervisor's thread.
#ifndef OUTBOX_DAEMON_CONFIG_RELOAD_H_
#define OUTBOX_DAEMON_CONFIG_RELOAD_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "config/command_line.h"
#include "config/config.h"
#include "http/config_reload_status.h"

namespace outbox {

// The keys a reload refuses (docs/operations/reload.md): what the process
// sets up once (http.listen, log.format) and what names the state a pair of
// instances shares (the slot, its plugin and marker, the exactly-once
// checkpoint and transactional.id): changing those is a migration, done
// with the pair stopped, never by one instance alone.
const std::vector<std::string>& RestartOnlyKeys();

class ConfigReloader {
 public:
  // `command_line` as StartDaemon() parsed it; `config` the configuration
  // it loaded; `requested` the flag the SIGHUP handler sets (StartDaemon's
  // `reload`); `status` may be null.
  ConfigReloader(CommandLine command_line, Config config,
                 std::atomic<bool>* requested, ConfigReloadStatus* status);

  // A SIGHUP came and Check() has not handled it yet (cheap: one load).
  bool requested() const { return requested_->load(); }
  const std::atomic<bool>& requested_flag() const { return *requested_; }

  // When requested: re-reads and compares with `running`, logs and records
  // the outcome; returns the new configuration only when it changed in keys
  // a reload may change. nullopt when not requested.
  // `validate`, when set, checks what LoadConfig() does not (e.g. that the
  // routes compile); its error refuses the reload like an invalid file.
  std::optional<Config> Check(
      const Config& running,
      const std::function<absl::Status(const Config&)>& validate = nullptr);
  // The supervisor started its next session with `config`.
  void Applied(const Config& config);

  // The configuration in force (start-up's, then each applied one).
  std::shared_ptr<const Config> current() const;

 private:
  void Refuse(const std::string& result, const std::string& why);

  const CommandLine command_line_;
  std::atomic<bool>* const requested_;
  ConfigReloadStatus* const status_;
  mutable std::mutex mu_;
  std::shared_ptr<const Config> current_ ABSL_GUARDED_BY(mu_);
};

}  // namespace outbox

#endif  // OUTBOX_DAEMON_CONFIG_RELOAD_H_
