// OutboxRow: one claimed outbox row, and its conversion to the Change the
// Router takes, so outbox-poller builds records exactly as outbox-relay does.
//
// The store selects every mapped column as PostgreSQL's text output (the same
// text wal2json puts in its "value" fields, under the same TimeZone=UTC and
// DateStyle=ISO session settings) and bytea as its hex output. DecodeValue()
// then gives each value the ValueKind the wal2json decoder would give it:
//   NULL                         kNull
//   bytea                        kBytes, the raw bytes (hex decoded)
//   boolean                      kBool, "true" / "false"
//   int2/4/8, oid, float4/8, numeric  kNumber, the literal text
//   everything else (json, jsonb, text, uuid, timestamptz...)  kText as is
// So a jsonb payload's value bytes are its text output, byte for byte what
// outbox-relay produces.
//
// Lifetime: the Change that ToChange() fills points into the OutboxRow and
// the TableShape; both must outlive it (and the Record routed from it).
#ifndef OUTBOX_POLLER_OUTBOX_ROW_H_
#define OUTBOX_POLLER_OUTBOX_ROW_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "outbox/change.h"

namespace outbox {

// A mapped column of an outbox table and its type as format_type() names it.
struct ColumnShape {
  std::string name;
  std::string type;  // "jsonb", "bytea", "text", "uuid", ...
};

// An outbox table as the poller reads it: the columns the Router needs, in
// the order the store selects them.
struct TableShape {
  std::string schema;
  std::string name;
  std::vector<ColumnShape> columns;
  std::string QualifiedName() const { return schema + "." + name; }
};

struct OutboxRow {
  int64_t seq = 0;       // creation order (identity, assigned at INSERT)
  int32_t attempts = 0;  // failed deliveries so far
  // Parallel to TableShape::columns.
  std::vector<ValueKind> kinds;
  std::vector<std::string> values;  // empty for kNull
};

// The ValueKind wal2json gives a non-NULL value of PostgreSQL type `type`.
ValueKind KindForType(absl::string_view type);

// Converts one column's text output into the row's value. `is_null` is SQL
// NULL. bytea text is "\x" + hex. InvalidArgument on malformed bytea hex.
absl::Status DecodeValue(absl::string_view type, bool is_null,
                         absl::string_view text, ValueKind* kind,
                         std::string* value);

// Fills *out as the insert the wal2json decoder would emit for this row
// (kind kInsert, schema, table, one Column per mapped column). Reuses
// out->columns' capacity.
void ToChange(const TableShape& table, const OutboxRow& row, Change* out);

}  // namespace outbox

#endif  // OUTBOX_POLLER_OUTBOX_ROW_H_
