#include "poller/outbox_row_sql.h"

#include <libpq-fe.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace outbox {

absl::StatusOr<TableShape> ShapeOf(
    const std::string& schema, const std::string& name,
    const std::vector<std::string>& columns,
    const std::map<std::string, std::string>& types) {
  TableShape shape{schema, name, {}};
  if (types.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "outbox table ", shape.QualifiedName(),
        " does not exist (or this role cannot see it): create it with "
        "sql/outbox.sql or fix outbox.tables"));
  }
  for (const std::string& c : columns) {
    auto it = types.find(c);
    if (it == types.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "outbox table ", shape.QualifiedName(), " has no column \"", c,
          "\": fix outbox.columns or the table"));
    }
    shape.columns.push_back({c, it->second});
  }
  return shape;
}

std::string MappedColumnsSelectList(const PgConnection& db,
                                    const TableShape& shape) {
  std::vector<std::string> select;
  for (const ColumnShape& c : shape.columns) {
    select.push_back(c.type == "bytea" ? db.Identifier(c.name)
                                       : db.Identifier(c.name) + "::text");
  }
  return absl::StrJoin(select, ", ");
}

absl::Status DecodeMappedColumns(const TableShape& shape, const pg_result* res,
                                 int row, int first_field, OutboxRow* out) {
  out->kinds.resize(shape.columns.size());
  out->values.resize(shape.columns.size());
  for (size_t c = 0; c < shape.columns.size(); ++c) {
    int field = static_cast<int>(c) + first_field;
    absl::string_view text(PQgetvalue(res, row, field),
                           PQgetlength(res, row, field));
    absl::Status s =
        DecodeValue(shape.columns[c].type, PQgetisnull(res, row, field), text,
                    &out->kinds[c], &out->values[c]);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace outbox
