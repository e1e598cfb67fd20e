// ReadOperatorSkips: the events operators dropped on purpose (`outbox-relay
// skip` and `advance`, applied by the relay: core/operator_actions.h), read
// from the pair's control records in kafka.state_topic, for outbox-audit to
// report as skipped by operator rather than missing.
//
// The pair is postgres.slot_marker_id, else the system identifier of the
// server postgres.conninfo reaches. Only applied actions count: a skip
// whose event never came names nothing yet. An advance names the ids its
// applied record and its pages list (every one it dropped).
#ifndef OUTBOX_AUDIT_OPERATOR_SKIPS_H_
#define OUTBOX_AUDIT_OPERATOR_SKIPS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "audit/audit.h"
#include "config/config.h"
#include "kafka/control_records.h"
#include "pg/pg_connection.h"

namespace outbox {

absl::StatusOr<OperatorSkips> ReadOperatorSkips(const Config& config);

// What ReadOperatorSkips() and `outbox-relay skip|advance` share: a
// connection to postgres.conninfo named `application_name`, and the pair's
// control records (`system_id` names the pair without
// postgres.slot_marker_id).
absl::StatusOr<std::unique_ptr<PgConnection>> ConnectPostgres(
    const Config& config, const std::string& application_name);
std::unique_ptr<ControlRecords> OpenControlRecords(
    const Config& config, const std::string& system_id);

}  // namespace outbox

#endif  // OUTBOX_AUDIT_OPERATOR_SKIPS_H_
