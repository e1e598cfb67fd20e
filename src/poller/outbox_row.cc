#include "poller/outbox_row.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "plugin/wal2json/wal2json_text.h"

namespace outbox {

ValueKind KindForType(absl::string_view type) {
  // format_type() spells these with their SQL names; wal2json prints the
  // same types as bare JSON numbers and booleans.
  if (type == "bytea") return ValueKind::kBytes;
  if (type == "boolean") return ValueKind::kBool;
  if (type == "smallint" || type == "integer" || type == "bigint" ||
      type == "oid" || type == "real" || type == "double precision" ||
      type == "numeric" || absl::StartsWith(type, "numeric(")) {
    return ValueKind::kNumber;
  }
  return ValueKind::kText;
}

absl::Status DecodeValue(absl::string_view type, bool is_null,
                         absl::string_view text, ValueKind* kind,
                         std::string* value) {
  value->clear();
  if (is_null) {
    *kind = ValueKind::kNull;
    return absl::OkStatus();
  }
  *kind = KindForType(type);
  if (*kind == ValueKind::kNumber &&
      (text == "NaN" || text == "Infinity" || text == "-Infinity")) {
    // Not JSON numbers: wal2json quotes them.
    *kind = ValueKind::kText;
  }
  if (*kind != ValueKind::kBytes) {
    value->assign(text.data(), text.size());
    return absl::OkStatus();
  }
  absl::string_view hex = text;
  absl::ConsumePrefix(&hex, "\\x");
  value->resize(hex.size() / 2);
  if (hex.size() % 2 != 0 || !wal2json::DecodeHex(hex, value->data())) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad bytea hex text of length ", text.size()));
  }
  return absl::OkStatus();
}

void ToChange(const TableShape& table, const OutboxRow& row, Change* out) {
  out->kind = Change::Kind::kInsert;
  out->xid = 0;
  out->lsn = kInvalidLsn;
  out->end_lsn = kInvalidLsn;
  out->commit_time_us = 0;
  out->schema = table.schema;
  out->table = table.name;
  out->columns.resize(table.columns.size());
  for (size_t i = 0; i < table.columns.size(); ++i) {
    Column& c = out->columns[i];
    c.name = table.columns[i].name;
    c.type = table.columns[i].type;
    c.kind = row.kinds[i];
    c.value = row.values[i];
  }
}

}  // namespace outbox
