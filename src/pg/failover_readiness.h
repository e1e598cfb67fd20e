// Failover readiness: whether a PostgreSQL 17+ failover would keep the
// relay's logical slot (failover slots, synchronized to physical standbys).
//
// What a failover needs, and what CheckFailoverReadiness() reads:
//   primary   the relay's slot has failover; synchronized_standby_slots
//             names physical slots that exist and are active (a logical
//             walsender then waits for those standbys, so the slot never
//             gets ahead of them)
//   standby   sync_replication_slots = on, hot_standby_feedback = on,
//             primary_slot_name set and named in the primary's
//             synchronized_standby_slots, dbname in primary_conninfo, and
//             the relay's slot there with failover and synced true
// The standbys are every host of a multi-host `conninfo` (libpq
// host=a,b port=p,q) other than the one a normal connection reaches, plus
// every host of `standby_conninfo`, each reached with a normal connection.
//
// FailoverProblems() turns the facts into one line per unsafe setting,
// naming the setting, the node and the fix; it is pure (unit-tested). A
// standby that cannot be reached is a problem line, never an error.
//
// Threading: free functions; the check opens its own connections.
#ifndef OUTBOX_PG_FAILOVER_READINESS_H_
#define OUTBOX_PG_FAILOVER_READINESS_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace outbox {

// One host of a multi-host conninfo: "host:port" and a conninfo reaching
// only that host (target_session_attrs and load_balance_hosts dropped).
struct HostConninfo {
  std::string node;
  std::string conninfo;
};

// Splits `conninfo` per host (host or hostaddr lists, with one port for
// all or one per host). A conninfo without hosts gives one entry with the
// conninfo unchanged and node "". InvalidArgument when the port list does
// not match, FailedPrecondition naming `what` when libpq cannot parse it.
absl::StatusOr<std::vector<HostConninfo>> SplitHosts(
    const std::string& conninfo, absl::string_view what = "postgres.conninfo");

// Whether a conninfo (a standby's primary_conninfo) sets dbname.
bool ConninfoHasDbname(const std::string& conninfo);

struct PrimaryFacts {
  std::string node;
  bool in_recovery = false;
  std::string synchronized_standby_slots;      // the setting, as is
  std::map<std::string, bool> physical_slots;  // name -> active
  std::optional<bool> slot_failover;  // nullopt: the relay's slot is missing
};

struct StandbyFacts {
  std::string node;
  std::string error;  // not empty: not reached or not readable
  bool in_recovery = true;
  // nullopt: the setting does not exist (before 17) or cannot be read.
  std::optional<std::string> sync_replication_slots;
  std::optional<std::string> hot_standby_feedback;
  std::optional<std::string> primary_slot_name;
  // nullopt: unreadable (needs pg_read_all_settings).
  std::optional<bool> primary_conninfo_has_dbname;
  bool slot_exists = false;
  bool slot_failover = false;
  bool slot_synced = false;
};

struct FailoverReport {
  bool supported = false;  // the primary is PostgreSQL 17+
  int version_num = 0;
  PrimaryFacts primary;
  std::vector<StandbyFacts> standbys;
  std::vector<std::string> problems;  // FailoverProblems(); empty: ready
};

// One line per unsafe setting (see the header comment); no standby at all
// is one line too.
std::vector<std::string> FailoverProblems(
    const std::string& slot, const PrimaryFacts& primary,
    const std::vector<StandbyFacts>& standbys);

struct FailoverCheckOptions {
  std::string conninfo;          // postgres.conninfo
  std::string standby_conninfo;  // postgres.standby_conninfo
  std::string slot;
  int connect_timeout_s = 10;
};

// Reads the facts and fills the problems. Unavailable when the node
// `conninfo` reaches cannot be queried; on PostgreSQL 16 and older only
// `supported` = false and the version.
absl::StatusOr<FailoverReport> CheckFailoverReadiness(
    const FailoverCheckOptions& options);

}  // namespace outbox

#endif  // OUTBOX_PG_FAILOVER_READINESS_H_
