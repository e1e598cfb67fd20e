// ConfigReloadStatus: what the last SIGHUP reload of the configuration did
// (daemon/config_reload.h), as every reader sees it:
//   <prefix>_config_reload_failures_total                 reloads refused
//       (an invalid configuration, or a key that needs a restart)
//   <prefix>_config_last_reload_success_timestamp_seconds the Unix time of
//       the last reload that was read without error (applied or unchanged);
//       the process start until then
//   <prefix>_config_last_reload_successful               1, or 0 while the
//       last SIGHUP's configuration was refused
// and "config_reload" in /status.json ({"ok", "result", "error",
// "at_unix_ms"}), absent until the first SIGHUP.
//
// Threading: safe for concurrent use; the supervisor records, the HTTP
// server's threads read.
#ifndef OUTBOX_HTTP_CONFIG_RELOAD_STATUS_H_
#define OUTBOX_HTTP_CONFIG_RELOAD_STATUS_H_

#include <mutex>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "http/status_snapshot.h"
#include "outbox/clock.h"

namespace prometheus {
class Counter;
class Gauge;
class Registry;
}  // namespace prometheus

namespace outbox {

class ConfigReloadStatus {
 public:
  // Registers the two metrics in `registry` (e.g. prefix "outbox_relay").
  // `clock` (not owned) dates the reloads.
  ConfigReloadStatus(prometheus::Registry& registry,
                     const std::string& metric_prefix,
                     const Clock* clock = RealClock());

  // A reload that read a valid configuration: `result` "applied" or
  // "unchanged".
  void Succeeded(absl::string_view result);
  // A refused reload: `result` "invalid" or "needs restart"; `error` is the
  // one line the log says.
  void Failed(absl::string_view result, absl::string_view error);

  // Sets snapshot->config_reload once a reload was tried.
  void Fill(StatusSnapshot* snapshot) const;

 private:
  const Clock* const clock_;
  prometheus::Counter* failures_;
  prometheus::Gauge* last_success_;
  prometheus::Gauge* last_successful_;
  mutable std::mutex mu_;
  std::optional<StatusSnapshot::ConfigReload> last_ ABSL_GUARDED_BY(mu_);
};

}  // namespace outbox

#endif  // OUTBOX_HTTP_CONFIG_RELOAD_STATUS_H_
