#include "kafka/operator_records.h"

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/uuid.h"

namespace outbox {

absl::StatusOr<std::vector<OperatorAction>> ReadOperatorActions(
    ControlRecords* records) {
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> read =
      records->Read(OperatorRequestSuffix(""));
  if (!read.ok()) return read.status();
  std::vector<std::string> malformed;
  std::vector<OperatorAction> actions = ParseOperatorRecords(*read, &malformed);
  for (const std::string& m : malformed) {
    Log(Severity::kWarn, "ignoring a malformed operator record",
        {{"record", m}, {"topic", records->topic()}});
  }
  return actions;
}

absl::Status WriteOperatorRequest(ControlRecords* records, OperatorAction* a) {
  if (a->at.empty()) a->at = Rfc3339Now();
  // Sorted by time as text: the key order is the order they were asked.
  if (a->id.empty()) a->id = absl::StrCat(a->at, "-", NewUuidV7());
  return records->Write(OperatorRequestSuffix(a->id),
                        FormatOperatorRequest(*a));
}

absl::Status WriteOperatorIds(ControlRecords* records,
                              const OperatorIdPage& page) {
  return records->Write(OperatorIdsSuffix(page.action_id, page.first),
                        FormatOperatorIds(page));
}

absl::Status WriteOperatorApplied(ControlRecords* records, OperatorAction a) {
  a.applied_at = Rfc3339Now();
  return records->Write(OperatorAppliedSuffix(a.id), FormatOperatorApplied(a));
}

}  // namespace outbox
