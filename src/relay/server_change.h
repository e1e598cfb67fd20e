// ServerChanges: what changed about the PostgreSQL server between two
// replication sessions of one relay process, as log lines. With a
// multi-host conninfo (host=a,b target_session_attrs=read-write) a session
// may land on another node than the one before: after a promotion the
// system identifier is the same (a physical standby is a copy) and the
// timeline is higher; a different system identifier is another cluster
// altogether (restored, rebuilt, or not a physical copy), whose slot, if it
// has one, holds another history. The cross-process counterpart for the
// system identifier is the slot marker (StoredSlotMarker::Record() warns).
//
// Pure functions; thread safe.
#ifndef OUTBOX_RELAY_SERVER_CHANGE_H_
#define OUTBOX_RELAY_SERVER_CHANGE_H_

#include <optional>
#include <string>
#include <vector>

namespace outbox {

// What a session learnt about its server (IDENTIFY_SYSTEM, and the
// host:port libpq connected to).
struct ServerIdentity {
  std::string system_id;
  int timeline = 0;
  std::string endpoint;  // host:port
};

// One line per change from `previous` (nullopt: the process's first
// session, nothing to compare) to `current`:
//   "system identifier changed: A -> B on host:port ..." (then the timelines
//   are of different clusters and are not compared), else
//   "promoted: timeline 1 -> 2 on host:port" for a higher timeline, or
//   "timeline went back: 2 -> 1 on host:port ..." for a lower one.
// Empty when the server is the same cluster on the same timeline, whatever
// the endpoint.
std::vector<std::string> ServerChanges(
    const std::optional<ServerIdentity>& previous,
    const ServerIdentity& current);

}  // namespace outbox

#endif  // OUTBOX_RELAY_SERVER_CHANGE_H_
