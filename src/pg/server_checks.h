// The start-up checks on what the server reports, as pure functions of its
// answers, so that each server's answer (PostgreSQL 14 to 19) is tested
// without that server:
//
//   CheckLogicalDecoding()    wal_level, and PostgreSQL 19's
//                             effective_wal_level: 19 turns logical decoding
//                             on by itself once a logical slot exists, so
//                             wal_level = replica is enough there.
//   IdleSlotTimeoutWarning()  PostgreSQL 18's idle_replication_slot_timeout
//                             against postgres.expected_outage_s: a slot
//                             nobody streams from for that long is
//                             invalidated at the next checkpoint.
//
// StartupCheck is one of those checks' outcome as `validate --connect`
// prints it (LibpqReplicationStream::Inspect(), the poller's and Kafka's):
// one line, "ok <check>: <detail>" or "FAIL <check>: <why>".
//
// Thread safe.
#ifndef OUTBOX_PG_SERVER_CHECKS_H_
#define OUTBOX_PG_SERVER_CHECKS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace outbox {

// What the server says about its WAL level.
struct WalLevelReport {
  std::string wal_level;  // current_setting('wal_level')
  // current_setting('effective_wal_level', true): nullopt where the server
  // has no such setting (18 and older).
  std::optional<std::string> effective_wal_level;
  bool in_recovery = false;  // pg_is_in_recovery(): a standby
};

// OK when the relay can decode there, else FailedPrecondition naming the
// setting to change. Before 19: wal_level must be logical. 19: logical, or
// replica (creating the relay's slot turns logical decoding on) except on
// a standby whose effective_wal_level is not logical (its primary decides).
absl::Status CheckLogicalDecoding(const WalLevelReport& report);

// The warning when `idle_timeout_s` (idle_replication_slot_timeout in
// seconds; 0: off or no such setting) is set and shorter than
// `expected_outage_s` (postgres.expected_outage_s; 0: no check), else
// nullopt.
std::optional<std::string> IdleSlotTimeoutWarning(int64_t idle_timeout_s,
                                                  int64_t expected_outage_s);

struct StartupCheck {
  std::string check;    // "postgres", "wal_level", "slot", "kafka", ...
  absl::Status status;  // OK, or why it failed (its code: the exit code's)
  std::string detail;   // what was found, when OK
};

// "ok <check>: <detail>" or "FAIL <check>: <status message>", one line.
std::string FormatStartupCheck(const StartupCheck& check);

}  // namespace outbox

#endif  // OUTBOX_PG_SERVER_CHECKS_H_
