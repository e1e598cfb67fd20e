#include "poller/libpq_outbox_store.h"

#include <libpq-fe.h>
#include <poll.h>

#include <cstdlib>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "outbox/status_macros.h"
#include "pg/pg_connection.h"
#include "poller/outbox_row_sql.h"

namespace outbox {
namespace {

using Result = PgResult;

// The poller's own columns (sql/outbox.sql).
constexpr const char* kPollerColumns[] = {
    "seq",        "created_at",      "sent_at", "attempts", "next_attempt_at",
    "last_error", "dead_lettered_at"};

// Keeps last_error readable and bounded.
constexpr size_t kMaxErrorText = 1000;

// What a failed command means: a dropped connection is Unavailable (the
// supervisor reconnects); class 42 (undefined table or column, missing
// privilege) needs the operator; anything else is retried like an outage.
absl::Status CommandError(pg_conn* conn, const PGresult* res,
                          absl::string_view what) {
  std::string message = OneLine(res != nullptr ? PQresultErrorMessage(res)
                                               : PQerrorMessage(conn));
  if (message.empty()) message = OneLine(PQerrorMessage(conn));
  std::string text = absl::StrCat(what, ": ", message);
  if (PQstatus(conn) == CONNECTION_BAD) return absl::UnavailableError(text);
  const char* state =
      res != nullptr ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  if (state != nullptr && state[0] == '4' && state[1] == '2') {
    return absl::FailedPreconditionError(text);
  }
  return absl::UnavailableError(text);
}

absl::StatusOr<Result> Run(pg_conn* conn, PGresult* raw,
                           absl::string_view what) {
  Result res(raw);
  ExecStatusType st = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    return CommandError(conn, res.get(), what);
  }
  return res;
}

std::string StmtName(absl::string_view kind, size_t table) {
  return absl::StrCat(kind, "_", table);
}

// '{1,2,3}': a bigint[] literal.
std::string ArrayLiteral(absl::Span<const int64_t> values) {
  return absl::StrCat("{", absl::StrJoin(values, ","), "}");
}

}  // namespace

absl::StatusOr<std::unique_ptr<LibpqOutboxStore>> LibpqOutboxStore::Connect(
    const StoreOptions& options) {
  if (options.tables.empty()) {
    return absl::InvalidArgumentError("no outbox tables configured");
  }
  PgConnectOptions connect;
  connect.conninfo = options.conninfo;
  connect.application_name = options.application_name;
  connect.connect_timeout_s = options.connect_timeout_s;
  // Timestamps as the record contract's text, after the user's options.
  connect.settings = kOutboxRowSettings;
  absl::StatusOr<std::unique_ptr<PgConnection>> conn =
      PgConnection::Connect(connect);
  if (!conn.ok()) {
    // A bad conninfo or missing role needs the operator; anything else is
    // retried.
    if (absl::IsFailedPrecondition(conn.status())) return conn.status();
    return absl::UnavailableError(conn.status().message());
  }
  std::unique_ptr<LibpqOutboxStore> store(
      new LibpqOutboxStore(std::move(*conn)));
  store->server_version_ = store->db_->ParameterStatus("server_version");
  RETURN_IF_ERROR(store->CheckAndPrepare(options));
  return store;
}

LibpqOutboxStore::~LibpqOutboxStore() = default;

absl::Status LibpqOutboxStore::Exec(const char* sql) {
  return Run(conn_, PQexec(conn_, sql), sql).status();
}

absl::Status LibpqOutboxStore::CheckAndPrepare(const StoreOptions& options) {
  for (size_t t = 0; t < options.tables.size(); ++t) {
    const StoreOptions::Table& table = options.tables[t];
    std::string qualified = absl::StrCat(table.schema, ".", table.name);
    const char* params[] = {table.schema.c_str(), table.name.c_str()};
    ASSIGN_OR_RETURN(
        Result res, Run(conn_,
                        PQexecParams(conn_, kColumnTypesSql, 2, nullptr, params,
                                     nullptr, nullptr, 0),
                        "reading the outbox table's columns"));
    std::map<std::string, std::string> types;
    for (int i = 0; i < PQntuples(res.get()); ++i) {
      types[PQgetvalue(res.get(), i, 0)] = PQgetvalue(res.get(), i, 1);
    }
    ASSIGN_OR_RETURN(TableShape shape,
                     ShapeOf(table.schema, table.name, table.columns, types));
    for (const char* c : kPollerColumns) {
      if (types.count(c) == 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            "outbox table ", qualified, " lacks the poller column \"", c,
            "\": add the poller columns of sql/outbox.sql"));
      }
    }
    std::vector<const char*> privileges = {"SELECT", "UPDATE"};
    if (options.needs_delete) privileges.push_back("DELETE");
    for (const char* privilege : privileges) {
      const char* p[] = {table.schema.c_str(), table.name.c_str(), privilege};
      ASSIGN_OR_RETURN(
          Result ok,
          Run(conn_,
              PQexecParams(
                  conn_,
                  "SELECT has_table_privilege(format('%I.%I', $1::text, "
                  "$2::text), $3::text)",
                  3, nullptr, p, nullptr, nullptr, 0),
              "checking privileges"));
      if (std::string(PQgetvalue(ok.get(), 0, 0)) != "t") {
        return absl::FailedPreconditionError(absl::StrCat(
            "this role lacks ", privilege, " on ", qualified, ": run GRANT ",
            privilege, " ON ", qualified, " TO <poller role> (sql/roles.sql)"));
      }
    }

    // The statements, prepared once per session.
    std::string rel = absl::StrCat(db_->Identifier(table.schema), ".",
                                   db_->Identifier(table.name));
    const std::string select =
        absl::StrCat("seq, attempts, ", MappedColumnsSelectList(*db_, shape));
    // Repeated in the UPDATE/DELETE by seq (true for rows we hold locked)
    // so they can use the partial index on unsent rows: seq has no other
    // index, and without it each settle scanned the whole table.
    constexpr char kUnsent[] = "sent_at IS NULL AND dead_lettered_at IS NULL";
    const std::pair<std::string, std::string> statements[] = {
        {StmtName("claim", t),
         absl::StrCat("SELECT ", select, " FROM ", rel, " WHERE ", kUnsent,
                      " AND (next_attempt_at IS NULL OR next_attempt_at <= "
                      "now()) ORDER BY seq LIMIT $1::int "
                      "FOR UPDATE SKIP LOCKED")},
        {StmtName("mark", t),
         absl::StrCat("UPDATE ", rel,
                      " SET sent_at = now() WHERE seq = ANY($1::bigint[]) AND ",
                      kUnsent)},
        {StmtName("delete", t),
         absl::StrCat("DELETE FROM ", rel,
                      " WHERE seq = ANY($1::bigint[]) AND ", kUnsent)},
        {StmtName("fail", t),
         absl::StrCat(
             "UPDATE ", rel,
             " SET attempts = $2::int, last_error = $3::text, "
             "next_attempt_at = CASE WHEN $5::bool THEN NULL ELSE "
             "clock_timestamp() + $4::bigint * interval '1 millisecond' END, "
             "dead_lettered_at = CASE WHEN $5::bool THEN clock_timestamp() "
             "END WHERE seq = $1::bigint AND ",
             kUnsent)},
        {StmtName("purge", t),
         absl::StrCat("DELETE FROM ", rel,
                      " WHERE ctid = ANY(ARRAY(SELECT ctid FROM ", rel,
                      " WHERE sent_at < clock_timestamp() - $1::bigint * "
                      "interval '1 second' LIMIT $2::int))")},
        {StmtName("backlog", t),
         absl::StrCat("SELECT count(*), COALESCE(EXTRACT(epoch FROM "
                      "clock_timestamp() - min(created_at)), 0)::float8 FROM ",
                      rel, " WHERE ", kUnsent)},
    };
    for (const auto& [name, sql] : statements) {
      RETURN_IF_ERROR(
          Run(conn_, PQprepare(conn_, name.c_str(), sql.c_str(), 0, nullptr),
              absl::StrCat("preparing ", name, " on ", qualified))
              .status());
    }
    shapes_.push_back(std::move(shape));
  }
  if (!options.notify_channel.empty()) {
    std::string listen =
        absl::StrCat("LISTEN ", db_->Identifier(options.notify_channel));
    RETURN_IF_ERROR(Exec(listen.c_str()));
  }
  return absl::OkStatus();
}

absl::Status LibpqOutboxStore::Claim(size_t table, int limit,
                                     std::vector<OutboxRow>* rows) {
  rows->clear();
  RETURN_IF_ERROR(Exec("BEGIN"));
  in_transaction_ = true;
  const TableShape& shape = shapes_.at(table);
  std::string n = std::to_string(limit);
  const char* params[] = {n.c_str()};
  std::string name = StmtName("claim", table);
  auto res =
      Run(conn_,
          PQexecPrepared(conn_, name.c_str(), 1, params, nullptr, nullptr, 0),
          absl::StrCat("claiming rows of ", shape.QualifiedName()));
  if (!res.ok()) {
    Abandon();
    return res.status();
  }
  PGresult* r = res->get();
  const int count = PQntuples(r);
  rows->resize(count);
  for (int i = 0; i < count; ++i) {
    OutboxRow& row = (*rows)[i];
    row.seq = std::strtoll(PQgetvalue(r, i, 0), nullptr, 10);
    row.attempts =
        static_cast<int32_t>(std::strtol(PQgetvalue(r, i, 1), nullptr, 10));
    absl::Status s = DecodeMappedColumns(shape, r, i, 2, &row);
    if (!s.ok()) {
      Abandon();
      return absl::InternalError(absl::StrCat(shape.QualifiedName(), " seq ",
                                              row.seq, ": ", s.message()));
    }
  }
  if (count == 0) {
    in_transaction_ = false;
    return Exec("COMMIT");
  }
  return absl::OkStatus();
}

absl::Status LibpqOutboxStore::Settle(size_t table, PollerMode mode,
                                      absl::Span<const int64_t> delivered,
                                      absl::Span<const RowFailure> failed) {
  const std::string& qualified = shapes_.at(table).QualifiedName();
  absl::Status s = [&]() -> absl::Status {
    if (!delivered.empty()) {
      std::string seqs = ArrayLiteral(delivered);
      const char* params[] = {seqs.c_str()};
      std::string name =
          StmtName(mode == PollerMode::kDelete ? "delete" : "mark", table);
      RETURN_IF_ERROR(Run(conn_,
                          PQexecPrepared(conn_, name.c_str(), 1, params,
                                         nullptr, nullptr, 0),
                          absl::StrCat("marking delivered rows of ", qualified))
                          .status());
    }
    std::string name = StmtName("fail", table);
    for (const RowFailure& f : failed) {
      std::string seq = std::to_string(f.seq);
      std::string attempts = std::to_string(f.attempts);
      std::string error = f.error.substr(0, kMaxErrorText);
      std::string delay = std::to_string(f.retry_delay_ms);
      const char* params[] = {seq.c_str(), attempts.c_str(), error.c_str(),
                              delay.c_str(), f.dead ? "t" : "f"};
      RETURN_IF_ERROR(
          Run(conn_,
              PQexecPrepared(conn_, name.c_str(), 5, params, nullptr, nullptr,
                             0),
              absl::StrCat("recording a failed delivery in ", qualified))
              .status());
    }
    return Exec("COMMIT");
  }();
  if (!s.ok()) Abandon();
  in_transaction_ = false;
  return s;
}

void LibpqOutboxStore::Abandon() {
  if (!in_transaction_) return;
  in_transaction_ = false;
  if (PQstatus(conn_) == CONNECTION_OK) {
    Result res(PQexec(conn_, "ROLLBACK"));
  }
}

absl::StatusOr<int64_t> LibpqOutboxStore::DeleteSent(size_t table,
                                                     int64_t older_than_s,
                                                     int limit) {
  std::string age = std::to_string(older_than_s);
  std::string n = std::to_string(limit);
  const char* params[] = {age.c_str(), n.c_str()};
  std::string name = StmtName("purge", table);
  ASSIGN_OR_RETURN(
      Result res,
      Run(conn_,
          PQexecPrepared(conn_, name.c_str(), 2, params, nullptr, nullptr, 0),
          absl::StrCat("deleting old sent rows of ",
                       shapes_.at(table).QualifiedName())));
  return std::strtoll(PQcmdTuples(res.get()), nullptr, 10);
}

absl::StatusOr<Backlog> LibpqOutboxStore::ReadBacklog(size_t table) {
  std::string name = StmtName("backlog", table);
  ASSIGN_OR_RETURN(
      Result res,
      Run(conn_,
          PQexecPrepared(conn_, name.c_str(), 0, nullptr, nullptr, nullptr, 0),
          absl::StrCat("reading the backlog of ",
                       shapes_.at(table).QualifiedName())));
  Backlog b;
  b.unsent = std::strtoll(PQgetvalue(res.get(), 0, 0), nullptr, 10);
  b.oldest_unsent_age_s = std::strtod(PQgetvalue(res.get(), 0, 1), nullptr);
  return b;
}

bool LibpqOutboxStore::DrainNotifications() {
  bool any = false;
  while (PGnotify* n = PQnotifies(conn_)) {
    any = true;
    PQfreemem(n);
  }
  return any;
}

absl::StatusOr<bool> LibpqOutboxStore::WaitForNotify(int timeout_ms) {
  // Notifications that came in with earlier command results.
  if (DrainNotifications()) return true;
  int fd = PQsocket(conn_);
  if (fd < 0) return absl::UnavailableError("PostgreSQL connection lost");
  pollfd p = {fd, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) <= 0) return false;
  // Readable: a notification, or the server closing the connection.
  if (PQconsumeInput(conn_) == 0 || PQstatus(conn_) == CONNECTION_BAD) {
    return absl::UnavailableError(absl::StrCat("PostgreSQL connection lost: ",
                                               OneLine(PQerrorMessage(conn_))));
  }
  return DrainNotifications();
}

}  // namespace outbox
