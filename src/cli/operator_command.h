// `outbox-relay skip --event ID` and `outbox-relay advance --to LSN`: an
// operator's decision to drop events, on purpose and on the record
// (docs/operations/skip-and-advance.md).
//
// Each checks that no relay is publishing from the slot: the slot is not
// active (pg_replication_slots.active false: no process holds it), or the
// pair is paused (the pause control record, kafka/control_records.h).
// Otherwise it is refused with one line on stderr and kExitPrecondition
// (3), nothing written. Then it writes the request record
// "<pair>/<slot>/operator/<at>-<uuid>" (core/operator_actions.h) to
// kafka.state_topic and prints what it recorded. The relay applies it when
// its next session starts, before producing anything.
//
// Why the relay applies an advance rather than this command moving the
// slot (pg_replication_slot_advance): the relay sees each event it drops,
// so the record names them (the audit reports them skipped by operator,
// not missing) and the metric counts them; and it works while the relay is
// paused, when the relay holds the slot and the function would fail.
//
// Exit codes: 0 recorded; 2 a bad --to; 3 refused (a running, unpaused
// relay holds the slot; the slot does not exist; an advance to a position
// the slot is already past); 1 PostgreSQL or Kafka could not be read or
// written.
#ifndef OUTBOX_CLI_OPERATOR_COMMAND_H_
#define OUTBOX_CLI_OPERATOR_COMMAND_H_

#include <cstdio>
#include <string>

#include "config/command_line.h"
#include "config/config.h"

namespace outbox {

int RunOperatorCommand(const Config& config, CommandLine::Command command,
                       const CommandLine::OperatorAction& flags, FILE* out,
                       FILE* err);

// $USER@hostname (the default of --by); "unknown" for a part not known.
std::string DefaultOperatorName();

}  // namespace outbox

#endif  // OUTBOX_CLI_OPERATOR_COMMAND_H_
