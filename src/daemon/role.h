// Role: which of the session states a daemon is in (daemon/lifecycle.h
// moves it; DaemonRole, http/daemon_role.h, publishes it):
//
//   standby   waiting: for the slot another instance holds (outbox-relay),
//             or to (re)connect
//   active    holds the slot (outbox-relay) or its connection (outbox-poller)
//             and streams
//   draining  ending a session: flushing Kafka, the final status update
//   stopped   the supervisor returned; the process is exiting
//
// Plain values; safe anywhere.
#ifndef OUTBOX_DAEMON_ROLE_H_
#define OUTBOX_DAEMON_ROLE_H_

#include "absl/strings/string_view.h"

namespace outbox {

enum class Role { kStandby, kActive, kDraining, kStopped };
inline constexpr Role kRoles[] = {Role::kStandby, Role::kActive,
                                  Role::kDraining, Role::kStopped};

// "standby", "active", "draining", "stopped".
constexpr absl::string_view RoleName(Role role) {
  switch (role) {
    case Role::kStandby:
      return "standby";
    case Role::kActive:
      return "active";
    case Role::kDraining:
      return "draining";
    case Role::kStopped:
      return "stopped";
  }
  return "unknown";
}

}  // namespace outbox

#endif  // OUTBOX_DAEMON_ROLE_H_
