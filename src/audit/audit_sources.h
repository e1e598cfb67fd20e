// Where outbox-audit reads from: the outbox tables (what was committed) and
// Kafka (what was published). Both read-only; neither takes the slot or
// commits consumer offsets. `outbox-relay republish` reads the same way: the
// rows an operator selects (RowSelection: a range of the time column, event
// ids, a range of the sequence column, or every row; the columns are
// outbox.columns.time and .seq, per table) and the tables' retention
// (RowsKept: a table that deletes its rows cannot give back the events it
// deleted, and both tools say so instead of counting nothing).
#ifndef OUTBOX_AUDIT_AUDIT_SOURCES_H_
#define OUTBOX_AUDIT_AUDIT_SOURCES_H_

#include <cstdio>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "audit/audit.h"
#include "config/command_line.h"
#include "config/config.h"
#include "pg/pg_connection.h"

namespace outbox {

// The rows CommandLine::Rows selects, read against the server: times as
// PostgreSQL reads them (UTC text), the ids of --ids and --ids-file.
struct RowSelection {
  enum class Kind { kAll, kTime, kIds, kSeq };
  Kind kind = Kind::kAll;
  std::string since, until;       // kTime; until empty: no upper bound
  std::vector<std::string> ids;   // kIds, without repeats, in order
  int64_t seq_from = 0;           // kSeq, inclusive
  std::optional<int64_t> seq_to;  // kSeq, inclusive; none: no upper bound

  // "occurred_at >= 2024-05-01 09:50:00+00 and < ...", "3 ids",
  // "seq >= 10 and <= 20", "every row"; the column names are those of the
  // first table (the configured key when the tables differ).
  std::string Describe(const Config& config) const;
};

// Reads `rows` on `db`: InvalidArgument naming the flag for a time the
// server cannot read or an --ids-file that cannot be read, or that lists no
// id.
absl::StatusOr<RowSelection> ResolveRows(PgConnection* db,
                                         const CommandLine::Rows& rows);

// The SQL that reads one outbox table's selected rows: append it to a select
// list ("SELECT a, b" + from_where + order_by) and pass `params`.
struct TableRowsSql {
  std::string from_where;    // " FROM s.t WHERE ..." (no WHERE for kAll)
  std::string order_by;      // " ORDER BY seq", else the time column, else ""
  std::string order_column;  // the quoted column of order_by, or ""
  std::vector<std::string> params;
};

// `types`: the table's columns and types (kColumnTypesSql). FailedPrecondition
// in one line naming the table and the column when the selection's column
// (outbox.columns.time for kTime, .seq for kSeq) is missing or of a type it
// cannot compare (time: timestamptz, timestamp read as UTC, or an integer of
// Unix milliseconds; seq: an integer).
absl::StatusOr<TableRowsSql> SelectRows(
    const PgConnection& db, const OutboxTable& table,
    const std::map<std::string, std::string>& types,
    const RowSelection& selection);

using ColumnTypeMap = std::map<std::string, std::string>;

// A table's columns and their format_type() names (kColumnTypesSql); none
// when the table does not exist or this role cannot see it.
absl::StatusOr<std::map<std::string, std::string>> ColumnTypes(
    PgConnection* db, const OutboxTable& table);

// What the selection covers that the outbox tables no longer hold, one line
// each (empty: nothing). `types`: each table's ColumnTypes, in
// config.outbox.tables' order; `found`: the ids the selection read.
// - A table that has deleted rows (pg_stat_user_tables.n_tup_del > 0) and
//   holds none, or none before the selection's start (kTime, kSeq), or
//   lacks named ids (kIds): the line says the table deletes its rows, that
//   nothing reads deleted rows back (logical decoding cannot re-read a
//   transaction before the slot's confirmed position), what postgres.slot
//   still holds (the events committed after its confirmed position: the
//   relay delivers them; those before it exist only in Kafka), and where
//   the retention window to keep instead is documented.
// - kIds: the ids no table holds ("2 of the 3 named ids are in no outbox
//   table (first: ...)").
absl::StatusOr<std::vector<std::string>> NotKept(
    PgConnection* db, const Config& config,
    const std::vector<std::map<std::string, std::string>>& types,
    const RowSelection& selection, const std::set<std::string>& found);

// The selected rows of the configured outbox tables (every row by default):
// id, key column, and creation order (outbox.columns.seq, else .time, else
// none: seq 0 for all, which disables the order check). A table that no
// longer holds rows the selection covers (RowsKept), and the ids of
// selection.ids no table holds (IdsNotFound), each add one line to
// *not_kept; the events the tables do hold are still returned.
absl::StatusOr<std::vector<CommittedEvent>> ReadCommittedEvents(
    const Config& config, const CommandLine::Rows& rows,
    std::vector<std::string>* not_kept, std::string* described = nullptr);

// A regex matching every topic a table's template can render
// ("outbox.event.{aggregatetype}" -> "^outbox\.event\..+$").
std::string TopicPattern(absl::string_view topic_template);

// Every topic the configured routing can have put the outbox tables' events
// in, as regexes for ReadPublishedRecords: each table's template pattern
// (TopicPattern), or under outbox.topic_regex the exact topic
// (TopicRegex::Apply) of each distinct aggregatetype value the tables hold
// now (read over a connection named application_name). The one answer to
// "which topics does this configuration route to", for outbox-audit and
// `outbox-relay republish`; call it after reading the events, so each of
// their topics is covered. FailedPrecondition when a table cannot be read.
absl::StatusOr<std::vector<std::string>> RoutedTopicPatterns(
    const Config& config, absl::string_view application_name);

// Reads every record of the topics matching any pattern, from the beginning
// up to the end offsets seen at the start, in partition order.
// read_committed: only records of committed Kafka transactions (what an
// exactly-once relay's consumers see); otherwise read_uncommitted: every
// record written, aborted transactions included (the same for a
// non-transactional producer). When `progress` is not null (a terminal),
// draws a progress meter on it.
absl::StatusOr<std::vector<PublishedRecord>> ReadPublishedRecords(
    const Config& config, const std::vector<std::string>& patterns,
    int timeout_s, bool read_committed = false, FILE* progress = nullptr);

}  // namespace outbox

#endif  // OUTBOX_AUDIT_AUDIT_SOURCES_H_
