// The SQL side of OutboxRow: how a reader of outbox rows asks PostgreSQL for
// them so that ToChange() gives the Router what the wal2json decoder would.
// Shared by LibpqOutboxStore (outbox-poller's claims) and `outbox-relay
// republish` (cli/republish_command.h), so both read a row the same way.
//
// A reading session needs kOutboxRowSettings (timestamps as the record
// contract's text). Pure functions over the server's answers; thread safe.
#ifndef OUTBOX_POLLER_OUTBOX_ROW_SQL_H_
#define OUTBOX_POLLER_OUTBOX_ROW_SQL_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pg/pg_connection.h"
#include "poller/outbox_row.h"

namespace outbox {

// PgConnectOptions::settings of a session that reads outbox rows: the text
// outbox-relay's replication session prints for timestamps and floats
// (extra_float_digits=3: the shortest exact form, whatever the role or
// database sets).
inline constexpr char kOutboxRowSettings[] =
    "-c TimeZone=UTC -c DateStyle=ISO -c extra_float_digits=3";

// Every column of a table with its format_type() name; parameters $1 schema,
// $2 table. No rows: the table does not exist or this role cannot see it.
inline constexpr char kColumnTypesSql[] =
    "SELECT a.attname::text, format_type(a.atttypid, NULL) "
    "FROM pg_catalog.pg_attribute a "
    "WHERE a.attrelid = to_regclass(format('%I.%I', $1::text, $2::text)) "
    "AND a.attnum > 0 AND NOT a.attisdropped";

// The TableShape of schema.name with `columns` (the Router's, in its order),
// from the table's column types (column -> type, as kColumnTypesSql gives
// them). FailedPrecondition naming the fix when the table or a column is
// missing.
absl::StatusOr<TableShape> ShapeOf(
    const std::string& schema, const std::string& name,
    const std::vector<std::string>& columns,
    const std::map<std::string, std::string>& types);

// The select-list expressions of the shape's columns, comma-separated:
// bytea as its hex output (decoded client side), every other type as its
// text output, which is what wal2json prints.
std::string MappedColumnsSelectList(const PgConnection& db,
                                    const TableShape& shape);

// Fills out->kinds and out->values from row `row` of `res`, whose fields
// first_field.. are MappedColumnsSelectList(shape). InvalidArgument on
// malformed bytea hex.
absl::Status DecodeMappedColumns(const TableShape& shape, const pg_result* res,
                                 int row, int first_field, OutboxRow* out);

}  // namespace outbox

#endif  // OUTBOX_POLLER_OUTBOX_ROW_SQL_H_
