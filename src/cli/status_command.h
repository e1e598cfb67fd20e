// `outbox-relay status`: prints the slot's position, lag and WAL retention
// for an operator, over a normal libpq connection (SlotMonitor), so it works
// while a relay streams from the slot and never takes it.
//
//   slot                 outbox_relay
//   database             app
//   plugin               wal2json
//   active               true (pid 4242)
//   confirmed_flush_lsn  0/1A2B3C8
//   restart_lsn          0/1A2B390
//   current_wal_lsn      0/1A2C000
//   lag_bytes            3128 (3.1 KiB)
//   retained_wal_bytes   3184 (3.1 KiB)
//   wal_status           reserved
//   safe_wal_size        unlimited
//   failover             true
//   standby              10.0.0.2:5432 slot synced=true failover=true
//   failover_ready       true
//
// The failover lines (PostgreSQL 17+ failover slots) come from
// pg/failover_readiness.h: one "standby" line per standby found (the other
// hosts of a multi-host postgres.conninfo, and postgres.standby_conninfo),
// then "failover_ready" and one "problem" line per unsafe setting.
// Returns the process exit code: 0, kExitPrecondition (3) with one line on
// stderr when the slot does not exist, kExitInternal (1) when PostgreSQL
// cannot be reached or queried.
#ifndef OUTBOX_CLI_STATUS_COMMAND_H_
#define OUTBOX_CLI_STATUS_COMMAND_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "config/config.h"
#include "pg/failover_readiness.h"
#include "pg/slot_monitor.h"

namespace outbox {

int RunStatusCommand(const Config& config, FILE* out, FILE* err);

// The report above for one slot (exposed for tests).
std::string FormatSlotStatus(const SlotStatus& slot);

// The failover lines above from a readiness check (exposed for tests).
std::string FormatFailoverReport(const FailoverReport& report);

// 3184 -> "3184 (3.1 KiB)".
std::string HumanBytes(int64_t bytes);

}  // namespace outbox

#endif  // OUTBOX_CLI_STATUS_COMMAND_H_
