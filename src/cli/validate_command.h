// `outbox-relay validate` and `outbox-poller validate`
// (docs/operations/validate.md): the configuration as the daemon would run
// with it, checked, without starting.
//
// The caller (StartDaemon) has loaded it exactly as `run` does (the file,
// the command-line overrides, ${VAR} expansion, _file secrets, every key's
// check) and refused a bad one with one line and kExitUsage. This adds the
// cross-key rules the daemon applies before it asks any server (the relay's
// PlanRelay(), the poller's PollerRouter()), then prints the effective
// configuration to `out` with every secret masked (Config::Redacted():
// conninfo passwords, secret kafka.properties) and "ok config: ...".
//
// With --connect it then runs the daemon's own start-up checks, read only,
// one line each ("ok <check>: <detail>" or "FAIL <check>: <why>",
// FormatStartupCheck()): the relay's LibpqReplicationStream::Inspect()
// (connection and REPLICATION privilege, wal_level, plugin and publication,
// tables, slot; the slot is neither taken nor created), the poller's
// LibpqOutboxStore::Connect() (tables, poller columns, privileges), and
// Kafka: the brokers answer a metadata request, every literal topic the
// tool writes exists (or the tool creates it), and the replication check
// the relay runs at its first session (a missing topic and an unreplicated
// one are warnings in an "ok" line: the daemon waits for the one and runs
// with the other). Nothing is produced.
//
// Returns the exit code (daemon/exit_code.h): kExitOk when everything
// passed; kExitUsage for a configuration a cross-key rule refuses (one line
// on `err`); kExitPrecondition when a check failed on what a server
// answered (not set up: a missing privilege, table, plugin or publication,
// a refused Kafka login);
// kExitInternal when a server could not be reached and nothing else failed.
#ifndef OUTBOX_CLI_VALIDATE_COMMAND_H_
#define OUTBOX_CLI_VALIDATE_COMMAND_H_

#include <cstdio>
#include <vector>

#include "config/config.h"
#include "config/tool.h"
#include "pg/server_checks.h"

namespace outbox {

int RunValidateCommand(Tool tool, const Config& config, bool connect, FILE* out,
                       FILE* err);

// The exit code for the printed checks (see above); kExitOk when all
// passed.
int ValidateExitCode(const std::vector<StartupCheck>& checks);

}  // namespace outbox

#endif  // OUTBOX_CLI_VALIDATE_COMMAND_H_
