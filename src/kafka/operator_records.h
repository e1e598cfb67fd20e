// The operator's skip and advance records (core/operator_actions.h) read
// and written through the pair's ControlRecords (kafka/control_records.h):
// the one place the relay, `outbox-relay skip|advance` and outbox-audit
// reach them.
//
// Threading: as ControlRecords (one caller at a time per instance).
#ifndef OUTBOX_KAFKA_OPERATOR_RECORDS_H_
#define OUTBOX_KAFKA_OPERATOR_RECORDS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/operator_actions.h"
#include "kafka/control_records.h"

namespace outbox {

// Every skip and advance asked for this pair and slot, applied or not, in
// the order they were asked. Malformed records are logged (one warning
// each) and left out. Unavailable when Kafka cannot be read.
absl::StatusOr<std::vector<OperatorAction>> ReadOperatorActions(
    ControlRecords* records);

// Writes a request; fills a->id ("<at>-<uuid>") and a->at (now) when empty.
absl::Status WriteOperatorRequest(ControlRecords* records, OperatorAction* a);

// Writes a full page of the ids an action dropped.
absl::Status WriteOperatorIds(ControlRecords* records,
                              const OperatorIdPage& page);

// Writes the applied record of `a` (its events and ids), applied_at now.
absl::Status WriteOperatorApplied(ControlRecords* records, OperatorAction a);

}  // namespace outbox

#endif  // OUTBOX_KAFKA_OPERATOR_RECORDS_H_
