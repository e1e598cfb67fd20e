// FieldPlacement: where an extra outbox column goes in a record, parsed from
// outbox.fields, the counterpart of Debezium's
// table.fields.additional.placement ("column:placement[:alias]", comma
// separated, in order):
//   type:header:eventType   a header named eventType (default: the column)
//   type:envelope:eventType the value becomes an envelope holding the
//                           payload and this field (default name: column)
//   shard:partition         an integer column picks the partition
// Pure functions; thread safe.
#ifndef OUTBOX_ROUTE_FIELD_PLACEMENT_H_
#define OUTBOX_ROUTE_FIELD_PLACEMENT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace outbox {

struct FieldPlacement {
  enum class Where { kHeader, kEnvelope, kPartition };
  std::string column;
  Where where = Where::kHeader;
  std::string name;  // header or envelope field name; empty for kPartition
};

// Parses the outbox.fields list. InvalidArgument naming the entry for an
// empty column, an unknown placement, a partition with an alias, more than
// one partition column, an envelope field called "payload", or a header
// called "id" (the event id's).
absl::StatusOr<std::vector<FieldPlacement>> ParseFieldPlacements(
    absl::string_view spec);

}  // namespace outbox

#endif  // OUTBOX_ROUTE_FIELD_PLACEMENT_H_
