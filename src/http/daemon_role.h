// DaemonRole: which of the session states a daemon is in, as every reader
// sees it: the gauge <prefix>_role{role} (1 for the current role, 0 for the
// others), "role" in /status.json, and the health callbacks (/readyz,
// /activez). The supervisor moves it (daemon/lifecycle.h); nothing else
// does.
//
// The roles are daemon/role.h's.
//
// A standby is healthy when its last attempt found the slot held by another
// instance and nothing else wrong (slot_held_elsewhere()): that is what the
// pair's second instance does all day, and /readyz is 200 for it.
//
// Threading: safe for concurrent use; the supervisor sets, the HTTP
// server's threads read.
#ifndef OUTBOX_HTTP_DAEMON_ROLE_H_
#define OUTBOX_HTTP_DAEMON_ROLE_H_

#include <atomic>
#include <functional>
#include <string>

#include "absl/strings/string_view.h"
#include "daemon/role.h"

namespace prometheus {
class Gauge;
class Registry;
}  // namespace prometheus

namespace outbox {

class DaemonRole {
 public:
  // Registers <metric_prefix>_role in `registry` (e.g. "outbox_relay").
  // Starts as standby.
  DaemonRole(prometheus::Registry& registry, const std::string& metric_prefix);

  void Set(Role role, bool slot_held_elsewhere = false);
  // Called after each Set(), on the setting thread (e.g. to update a gauge
  // that depends on the role). Set it before the first Set() from another
  // thread.
  void OnChange(std::function<void()> listener) {
    listener_ = std::move(listener);
  }
  Role role() const { return role_.load(std::memory_order_relaxed); }
  // Standby because another instance holds the slot (a healthy standby).
  bool slot_held_elsewhere() const {
    return held_elsewhere_.load(std::memory_order_relaxed);
  }

 private:
  prometheus::Gauge* gauges_[std::size(kRoles)];
  std::atomic<Role> role_{Role::kStandby};
  std::atomic<bool> held_elsewhere_{false};
  std::function<void()> listener_;
};

}  // namespace outbox

#endif  // OUTBOX_HTTP_DAEMON_ROLE_H_
