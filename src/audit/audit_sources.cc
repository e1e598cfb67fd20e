// audit_sources.h's outbox-table half: the rows a selection covers
// (ResolveRows, SelectRows), the tables' retention (NotKept) and what they
// hold (ReadCommittedEvents). The Kafka half is audit_kafka_sources.cc.
#include "audit/audit_sources.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "outbox/status_macros.h"
#include "pg/pg_connection.h"
#include "poller/outbox_row_sql.h"

namespace outbox {

namespace {

constexpr char kRetentionDoc[] =
    "docs/operations/republish.md#insert-then-delete-outboxes";

bool IsInteger(const std::string& type) {
  return type == "bigint" || type == "integer" || type == "smallint";
}

// The first table's name of a column, or the configured key's when the
// tables name it differently.
std::string ColumnName(const Config& config, std::string OutboxColumns::*column,
                       absl::string_view key) {
  std::set<std::string> names;
  for (const OutboxTable& t : config.outbox.tables) {
    names.insert(t.columns.*column);
  }
  if (names.size() == 1) return *names.begin();
  return std::string(key);
}

// A PostgreSQL text[] literal of `values`.
std::string TextArray(const std::vector<std::string>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += '"';
    for (char c : values[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

// The server's reading of a --since/--until value, as text in UTC;
// InvalidArgument naming the flag when it cannot read it.
absl::StatusOr<std::string> ServerTime(PgConnection* db, const char* flag,
                                       const std::string& text) {
  absl::StatusOr<PgResult> res = db->QueryParams(
      "SELECT ($1::timestamptz AT TIME ZONE 'UTC')::text || '+00'", {text});
  if (!res.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " \"", text, "\": ", res.status().message()));
  }
  return PgConnection::Value(*res, 0, 0);
}

// `column` (quoted) compared with the time parameter $n, for its type.
absl::StatusOr<std::string> TimeBound(const std::string& column,
                                      const std::string& type,
                                      absl::string_view op, int n) {
  if (type == "timestamp with time zone") {
    return absl::StrCat(column, " ", op, " $", n, "::timestamptz");
  }
  if (type == "timestamp without time zone") {
    return absl::StrCat(column, " ", op, " ($", n,
                        "::timestamptz AT TIME ZONE 'UTC')");
  }
  if (IsInteger(type)) {
    return absl::StrCat(column, " ", op, " (extract(epoch FROM $", n,
                        "::timestamptz) * 1000)::bigint");
  }
  return absl::FailedPreconditionError("");
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> ColumnTypes(
    PgConnection* db, const OutboxTable& t) {
  ASSIGN_OR_RETURN(PgResult cols,
                   db->QueryParams(kColumnTypesSql, {t.schema, t.name}));
  std::map<std::string, std::string> types;
  for (int i = 0; i < PgConnection::Rows(cols); ++i) {
    types[PgConnection::Value(cols, i, 0)] = PgConnection::Value(cols, i, 1);
  }
  return types;
}

std::string RowSelection::Describe(const Config& config) const {
  switch (kind) {
    case Kind::kAll:
      return "every row";
    case Kind::kTime:
      return absl::StrCat(
          ColumnName(config, &OutboxColumns::time, "outbox.columns.time"),
          " >= ", since, until.empty() ? "" : absl::StrCat(" and < ", until));
    case Kind::kIds:
      return absl::StrCat(
          ids.size(), ids.size() == 1 ? " id" : " ids", " (",
          ColumnName(config, &OutboxColumns::id, "outbox.columns.id"), ")");
    case Kind::kSeq:
      return absl::StrCat(
          ColumnName(config, &OutboxColumns::seq, "outbox.columns.seq"),
          " >= ", seq_from,
          seq_to ? absl::StrCat(" and <= ", *seq_to) : std::string());
  }
  return "";
}

absl::StatusOr<RowSelection> ResolveRows(PgConnection* db,
                                         const CommandLine::Rows& rows) {
  RowSelection out;
  if (!rows.since.empty()) {
    out.kind = RowSelection::Kind::kTime;
    ASSIGN_OR_RETURN(out.since, ServerTime(db, "--since", rows.since));
    if (!rows.until.empty()) {
      ASSIGN_OR_RETURN(out.until, ServerTime(db, "--until", rows.until));
    }
  } else if (rows.seq_from) {
    out.kind = RowSelection::Kind::kSeq;
    out.seq_from = *rows.seq_from;
    out.seq_to = rows.seq_to;
  } else if (!rows.ids.empty() || !rows.ids_file.empty()) {
    out.kind = RowSelection::Kind::kIds;
    std::vector<std::string> ids = rows.ids;
    if (!rows.ids_file.empty()) {
      std::stringstream text;
      if (rows.ids_file == "-") {
        text << std::cin.rdbuf();
      } else {
        std::ifstream file(rows.ids_file, std::ios::binary);
        if (!file) {
          return absl::InvalidArgumentError(
              absl::StrCat("--ids-file ", rows.ids_file,
                           ": cannot read it: ", std::strerror(errno)));
        }
        text << file.rdbuf();
      }
      for (absl::string_view line : absl::StrSplit(text.str(), '\n')) {
        line = absl::StripAsciiWhitespace(line);
        if (!line.empty() && line[0] != '#') ids.emplace_back(line);
      }
      if (ids.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--ids-file ", rows.ids_file, " lists no event id"));
      }
    }
    std::set<std::string> seen;
    for (std::string& id : ids) {
      if (seen.insert(id).second) out.ids.push_back(std::move(id));
    }
  }
  return out;
}

absl::StatusOr<TableRowsSql> SelectRows(
    const PgConnection& db, const OutboxTable& table,
    const std::map<std::string, std::string>& types,
    const RowSelection& selection) {
  TableRowsSql out;
  const OutboxColumns& c = table.columns;
  auto type_of = [&](const std::string& column) {
    auto it = types.find(column);
    return it == types.end() ? std::string() : it->second;
  };
  // The column a selector needs: present, and of a type it compares.
  auto need = [&](const std::string& column, absl::string_view key,
                  absl::string_view flags,
                  absl::string_view kinds) -> absl::Status {
    const std::string type = type_of(column);
    if (type.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("outbox table ", table.QualifiedName(),
                       " has no column \"", column, "\" (", key, ") to select ",
                       flags, " on; name its column with --set ", key,
                       "=COLUMN, or select by --ids or --seq-from/--seq-to"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("column \"", column, "\" (", key, ") of outbox table ",
                     table.QualifiedName(), " is ", type, ", not ", kinds));
  };
  std::vector<std::string> conditions;
  switch (selection.kind) {
    case RowSelection::Kind::kAll:
      break;
    case RowSelection::Kind::kTime: {
      const std::string column = db.Identifier(c.time);
      const std::string type = type_of(c.time);
      absl::StatusOr<std::string> lower = TimeBound(column, type, ">=", 1);
      if (!lower.ok()) {
        return need(c.time, "outbox.columns.time", "--since/--until",
                    "timestamptz, timestamp or an integer (Unix "
                    "milliseconds)");
      }
      conditions.push_back(*lower);
      out.params.push_back(selection.since);
      if (!selection.until.empty()) {
        conditions.push_back(*TimeBound(column, type, "<", 2));
        out.params.push_back(selection.until);
      }
      break;
    }
    case RowSelection::Kind::kSeq: {
      if (!IsInteger(type_of(c.seq))) {
        return need(c.seq, "outbox.columns.seq", "--seq-from/--seq-to",
                    "an integer");
      }
      const std::string column = db.Identifier(c.seq);
      conditions.push_back(absl::StrCat(column, " >= $1::bigint"));
      out.params.push_back(absl::StrCat(selection.seq_from));
      if (selection.seq_to) {
        conditions.push_back(absl::StrCat(column, " <= $2::bigint"));
        out.params.push_back(absl::StrCat(*selection.seq_to));
      }
      break;
    }
    case RowSelection::Kind::kIds:
      conditions.push_back(
          absl::StrCat(db.Identifier(c.id), "::text = ANY($1::text[])"));
      out.params.push_back(TextArray(selection.ids));
      break;
  }
  out.from_where = absl::StrCat(
      " FROM ", db.Identifier(table.schema), ".", db.Identifier(table.name),
      conditions.empty() ? "" : " WHERE ", absl::StrJoin(conditions, " AND "));
  // Creation order: the sequence, else the creation time.
  if (IsInteger(type_of(c.seq))) {
    out.order_column = db.Identifier(c.seq);
  } else if (!type_of(c.time).empty()) {
    out.order_column = db.Identifier(c.time);
  }
  if (!out.order_column.empty()) {
    out.order_by = absl::StrCat(" ORDER BY ", out.order_column);
  }
  return out;
}

namespace {

// Whether `table` still holds every row `selection` covers (NotKept).
absl::Status RowsKept(PgConnection* db, const OutboxTable& table,
                      const std::map<std::string, std::string>& types,
                      const RowSelection& selection, size_t ids_not_found,
                      const std::string& slot) {
  ASSIGN_OR_RETURN(
      PgResult stats,
      db->QueryParams("SELECT coalesce(sum(n_tup_del), 0)::text FROM "
                      "pg_stat_user_tables WHERE relid = "
                      "to_regclass(format('%I.%I', $1::text, $2::text))",
                      {table.schema, table.name}));
  const std::string deleted = PgConnection::Value(stats, 0, 0);
  if (deleted == "0" || deleted.empty()) return absl::OkStatus();
  const std::string name = absl::StrCat(db->Identifier(table.schema), ".",
                                        db->Identifier(table.name));
  ASSIGN_OR_RETURN(PgResult count,
                   db->Query(absl::StrCat("SELECT count(*) FROM ", name)));
  std::string what;
  if (PgConnection::Value(count, 0, 0) == "0") {
    what = "it holds no row";
  } else if (selection.kind == RowSelection::Kind::kIds && ids_not_found > 0) {
    what = absl::StrCat(ids_not_found, " of the named ids are not in it");
  } else if (selection.kind == RowSelection::Kind::kTime ||
             selection.kind == RowSelection::Kind::kSeq) {
    // A row at or before the selection's start: the rows it covers are
    // still there (the table deletes older ones only).
    const bool by_time = selection.kind == RowSelection::Kind::kTime;
    const std::string& column =
        by_time ? table.columns.time : table.columns.seq;
    auto type = types.find(column);
    if (type == types.end()) return absl::OkStatus();  // SelectRows said it
    std::string at_or_before =
        absl::StrCat(db->Identifier(column), " <= $1::bigint");
    if (by_time) {
      ASSIGN_OR_RETURN(at_or_before, TimeBound(db->Identifier(column),
                                               type->second, "<=", 1));
    }
    ASSIGN_OR_RETURN(
        PgResult older,
        db->QueryParams(
            absl::StrCat("SELECT EXISTS (SELECT 1 FROM ", name, " WHERE ",
                         at_or_before, ")"),
            {by_time ? selection.since : absl::StrCat(selection.seq_from)}));
    if (PgConnection::Value(older, 0, 0) == "t") return absl::OkStatus();
    ASSIGN_OR_RETURN(PgResult first, db->Query(absl::StrCat(
                                         "SELECT min(", db->Identifier(column),
                                         ")::text FROM ", name)));
    what = absl::StrCat("it holds no row at or before ",
                        selection.kind == RowSelection::Kind::kTime
                            ? selection.since
                            : absl::StrCat(selection.seq_from),
                        ", where the selection starts (its oldest has ", column,
                        " ", PgConnection::Value(first, 0, 0), ")");
  } else {
    return absl::OkStatus();
  }
  // What the slot still holds.
  std::string in_slot = absl::StrCat(
      "there is no replication slot \"", slot,
      "\" here (postgres.slot), so the deleted rows' events exist only in "
      "Kafka, if there");
  absl::StatusOr<PgResult> position = db->QueryParams(
      "SELECT coalesce(confirmed_flush_lsn::text, '') FROM "
      "pg_replication_slots WHERE slot_name = $1 AND database = "
      "current_database()",
      {slot});
  if (position.ok() && PgConnection::Rows(*position) > 0) {
    in_slot = absl::StrCat(
        "the events committed after slot \"", slot, "\"'s confirmed position ",
        PgConnection::Value(*position, 0, 0),
        " are still in the slot and the relay delivers them; those before it "
        "exist only in Kafka");
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "outbox table ", table.QualifiedName(), " deletes its rows (", deleted,
      " deleted, pg_stat_user_tables.n_tup_del) and ", what,
      ": nothing can read deleted rows back (logical decoding cannot re-read "
      "a transaction before the slot's confirmed position); ",
      in_slot, ". Keep a retention window before deleting: ", kRetentionDoc));
}

}  // namespace

absl::StatusOr<std::vector<std::string>> NotKept(
    PgConnection* db, const Config& config,
    const std::vector<std::map<std::string, std::string>>& types,
    const RowSelection& selection, const std::set<std::string>& found) {
  std::vector<std::string> not_found;
  for (const std::string& id : selection.ids) {
    if (found.count(id) == 0) not_found.push_back(id);
  }
  std::vector<std::string> lines;
  for (size_t t = 0; t < config.outbox.tables.size(); ++t) {
    absl::Status kept =
        RowsKept(db, config.outbox.tables[t], types.at(t), selection,
                 not_found.size(), config.postgres.slot);
    if (absl::IsFailedPrecondition(kept)) {
      lines.emplace_back(kept.message());
    } else if (!kept.ok()) {
      return kept;
    }
  }
  if (!not_found.empty()) {
    lines.push_back(absl::StrCat(
        not_found.size(), " of the ", selection.ids.size(),
        " named ids are in no outbox table (first: ", not_found.front(), ")"));
  }
  return lines;
}

absl::StatusOr<std::vector<CommittedEvent>> ReadCommittedEvents(
    const Config& config, const CommandLine::Rows& rows,
    std::vector<std::string>* not_kept, std::string* described) {
  PgConnectOptions options;
  options.conninfo = config.postgres.conninfo;
  options.application_name = "outbox-audit";
  options.connect_timeout_s =
      static_cast<int>(config.postgres.connect_timeout_s);
  ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> conn,
                   PgConnection::Connect(options));
  ASSIGN_OR_RETURN(RowSelection selection, ResolveRows(conn.get(), rows));
  if (described != nullptr) *described = selection.Describe(config);
  std::vector<CommittedEvent> out;
  std::set<std::string> found;
  std::vector<std::map<std::string, std::string>> all_types;
  for (const OutboxTable& t : config.outbox.tables) {
    ASSIGN_OR_RETURN(ColumnTypeMap types, ColumnTypes(conn.get(), t));
    if (types.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("outbox table ", t.QualifiedName(),
                       " does not exist or this role cannot read it"));
    }
    ASSIGN_OR_RETURN(TableRowsSql sql, SelectRows(*conn, t, types, selection));
    const std::string query = absl::StrCat(
        "SELECT ", conn->Identifier(t.columns.id), "::text, ",
        conn->Identifier(t.key), "::text, ",
        sql.order_column.empty() ? "0"
                                 : absl::StrCat("row_number() OVER (ORDER BY ",
                                                sql.order_column, ")"),
        sql.from_where);
    absl::StatusOr<PgResult> res = conn->QueryParams(query, sql.params);
    if (!res.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "outbox table ", t.QualifiedName(), ": ", res.status().message()));
    }
    for (int i = 0; i < PgConnection::Rows(*res); ++i) {
      out.push_back({PgConnection::Value(*res, i, 0),
                     PgConnection::Value(*res, i, 1),
                     std::atoll(PgConnection::Value(*res, i, 2).c_str())});
      found.insert(out.back().id);
    }
    all_types.push_back(std::move(types));
  }
  ASSIGN_OR_RETURN(*not_kept,
                   NotKept(conn.get(), config, all_types, selection, found));
  return out;
}

}  // namespace outbox
