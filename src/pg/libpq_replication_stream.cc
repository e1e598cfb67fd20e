#include "pg/libpq_replication_stream.h"

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "outbox/clock.h"
#include "outbox/status_macros.h"
#include "pg/slot_loss.h"
#include "pg/wal_protocol.h"

namespace outbox {
namespace {

// Settings the relay's output depends on, after the user's own options so
// they win: TimeZone and DateStyle fix wal2json's timestamp text for the
// decoder, and wal2json strips two characters ("\\x") from bytea text, so
// bytea_output=escape would turn a payload into wrong bytes.
constexpr absl::string_view kServerOptions =
    "-c TimeZone=UTC -c DateStyle=ISO -c bytea_output=hex";

constexpr absl::string_view kPluginAllowFix =
    "ALTER SYSTEM SET output_plugin_libraries = pgoutput, test_decoding, "
    "wal2json; SELECT pg_reload_conf();";

std::string OneLine(absl::string_view text) {
  absl::string_view v = absl::StripAsciiWhitespace(text);
  absl::ConsumePrefix(&v, "FATAL:  ");
  absl::ConsumePrefix(&v, "ERROR:  ");
  std::string s(v);
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

// Maps a server or connection error to the Status the supervisor acts on.
absl::Status ServerError(absl::string_view context, absl::string_view raw) {
  std::string msg = OneLine(raw);
  if (absl::StrContains(msg, "may not be used as an output plugin")) {
    return absl::FailedPreconditionError(
        absl::StrCat("wal2json is not allowed by the server setting "
                     "output_plugin_libraries: run ",
                     kPluginAllowFix, " (server said: ", msg, ")"));
  }
  if (absl::StrContains(msg, "could not access file \"wal2json\"")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the wal2json plugin is not installed on the PostgreSQL server "
        "(Debian: apt-get install postgresql-15-wal2json); server said: ",
        msg));
  }
  if (absl::StrContains(msg, "replication role") ||
      absl::StrContains(msg, "permission denied to start WAL sender") ||
      absl::StrContains(msg, "must have replication") ||
      absl::StrContains(msg, "REPLICATION attribute")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the relay's role lacks the REPLICATION attribute: run ALTER ROLE "
        "<role> REPLICATION (server said: ",
        msg, ")"));
  }
  if (absl::StrContains(msg, "permission denied") ||
      absl::StrContains(msg, "must be superuser") ||
      absl::StrContains(msg, "pg_hba.conf") ||
      absl::StrContains(msg, "authentication failed") ||
      (absl::StrContains(msg, "database \"") &&
       absl::StrContains(msg, "does not exist")) ||
      (absl::StrContains(msg, "role \"") &&
       absl::StrContains(msg, "does not exist")) ||
      absl::StrContains(msg, "invalid connection option") ||
      absl::StrContains(msg, "missing \"=\"") ||
      absl::StrContains(msg, "invalid URI")) {
    return absl::FailedPreconditionError(absl::StrCat(context, ": ", msg));
  }
  return absl::UnavailableError(absl::StrCat(context, ": ", msg));
}

// Runs a simple-protocol query (the only kind a walsender accepts).
absl::StatusOr<PGresult*> Exec(PGconn* conn, const std::string& sql,
                               ExecStatusType want) {
  PGresult* res = PQexec(conn, sql.c_str());
  if (PQresultStatus(res) != want) {
    absl::Status st =
        ServerError(absl::StrCat("\"", sql.substr(0, 60), "\" failed"),
                    res ? PQresultErrorMessage(res) : PQerrorMessage(conn));
    if (PQstatus(conn) == CONNECTION_BAD && !absl::IsFailedPrecondition(st)) {
      st = absl::UnavailableError(st.message());
    }
    PQclear(res);
    return st;
  }
  return res;
}

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

absl::StatusOr<Result> Query(PGconn* conn, const std::string& sql) {
  ASSIGN_OR_RETURN(PGresult * res, Exec(conn, sql, PGRES_TUPLES_OK));
  return Result(res);
}

std::string Literal(PGconn* conn, absl::string_view s) {
  char* q = PQescapeLiteral(conn, s.data(), s.size());
  std::string out = q ? q : "''";
  PQfreemem(q);
  return out;
}

// wal2json add-tables syntax: schema.table, with ',', '.', '*', '\' and
// whitespace inside names escaped by '\' (wal2json splits on blanks and
// treats '*' as a wildcard).
std::string Wal2JsonName(absl::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == ',' || c == '.' || c == '*' || c == '\\' ||
        absl::ascii_isspace(static_cast<unsigned char>(c))) {
      out.push_back('\\');
    }
    out.push_back(c);
  }
  return out;
}

// The "options" entry of a parsed conninfo (or of its defaults), trimmed;
// "" when unset.
std::string OptionsValue(const PQconninfoOption* list) {
  for (const PQconninfoOption* o = list; o != nullptr && o->keyword; ++o) {
    if (absl::string_view(o->keyword) == "options" && o->val != nullptr) {
      return std::string(absl::StripAsciiWhitespace(o->val));
    }
  }
  return "";
}

// A string literal for a START_REPLICATION option value.
std::string OptionValue(absl::string_view value) {
  std::string quoted = "'";
  for (char c : value) {
    if (c == '\'') quoted.push_back('\'');
    quoted.push_back(c);
  }
  quoted.push_back('\'');
  return quoted;
}

// wal2json splits add-msg-prefixes on ',' and blanks and keeps a '\\'
// escape in the name, so a prefix holding one of them cannot be listed.
bool ValidMessagePrefix(absl::string_view prefix) {
  if (prefix.empty()) return false;
  for (char c : prefix) {
    if (c == ',' || c == '\\' ||
        absl::ascii_isspace(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return true;
}

bool ValidSlotName(absl::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '_')) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string LibpqReplicationStream::PluginOptions(
    const ReplicationOptions& options) {
  std::vector<std::string> tables;
  for (const auto& t : options.tables) {
    tables.push_back(
        absl::StrCat(Wal2JsonName(t.schema), ".", Wal2JsonName(t.name)));
  }
  // wal2json hands on every logical decoding message, whatever add-tables
  // and actions say; add-msg-prefixes keeps only the listed prefixes. An
  // empty list keeps them all, so "none" is a prefix reserved for the relay.
  std::vector<std::string> prefixes = options.message_prefixes;
  if (prefixes.empty()) prefixes.push_back(kReservedMessagePrefix);
  return absl::StrCat(
      "\"format-version\" '2', \"include-transaction\" 'true', "
      "\"include-lsn\" 'true', \"include-xids\" 'true', "
      "\"include-timestamp\" 'true', \"include-type-oids\" 'false', "
      "\"add-tables\" ",
      OptionValue(absl::StrJoin(tables, ",")),
      ", \"actions\" 'insert', \"add-msg-prefixes\" ",
      OptionValue(absl::StrJoin(prefixes, ",")));
}

absl::StatusOr<std::string> LibpqReplicationStream::ConnectionOptions(
    const std::string& conninfo) {
  // A conninfo without '=' that is no URI is a bare database name (libpq
  // expands dbname only when it holds '=' or is a URI).
  PQconninfoOption* parsed = nullptr;
  if (absl::StrContains(conninfo, '=') ||
      absl::StartsWith(conninfo, "postgresql://") ||
      absl::StartsWith(conninfo, "postgres://")) {
    char* error = nullptr;
    parsed = PQconninfoParse(conninfo.c_str(), &error);
    if (parsed == nullptr) {
      // A conninfo libpq cannot parse never will: no retry.
      absl::Status st = absl::FailedPreconditionError(
          absl::StrCat("invalid postgres.conninfo: ",
                       OneLine(error ? error : "out of memory")));
      PQfreemem(error);
      return st;
    }
  }
  std::string user = OptionsValue(parsed);
  PQconninfoFree(parsed);
  if (user.empty()) {
    // Without options in the conninfo libpq uses PGOPTIONS.
    PQconninfoOption* defaults = PQconndefaults();
    user = OptionsValue(defaults);
    PQconninfoFree(defaults);
  }
  return absl::StrCat(user, user.empty() ? "" : " ", kServerOptions);
}

absl::StatusOr<std::unique_ptr<LibpqReplicationStream>>
LibpqReplicationStream::Connect(const ReplicationOptions& options) {
  if (!ValidSlotName(options.slot)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid slot name \"", options.slot,
                     "\": use lower case letters, digits and '_' (max 63)"));
  }
  if (options.tables.empty()) {
    return absl::InvalidArgumentError("no outbox tables configured");
  }
  for (const std::string& prefix : options.message_prefixes) {
    if (!ValidMessagePrefix(prefix)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "invalid logical message prefix \"", prefix,
          "\": it must be non-empty, without ',', '\\' or whitespace"));
    }
  }
  ASSIGN_OR_RETURN(std::string server_options,
                   ConnectionOptions(options.conninfo));
  // The conninfo is expanded first; later keys override it.
  const char* keys[] = {"dbname",
                        "replication",
                        "options",
                        "fallback_application_name",
                        "connect_timeout",
                        "keepalives_idle",
                        "keepalives_interval",
                        nullptr};
  const std::string timeout = std::to_string(options.connect_timeout_s);
  const char* values[] = {options.conninfo.c_str(),
                          "database",
                          server_options.c_str(),
                          options.application_name.c_str(),
                          timeout.c_str(),
                          "10",
                          "5",
                          nullptr};
  PGconn* conn = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn == nullptr) return absl::ResourceExhaustedError("out of memory");
  if (PQstatus(conn) != CONNECTION_OK) {
    absl::Status st =
        ServerError("cannot connect to PostgreSQL", PQerrorMessage(conn));
    PQfinish(conn);
    return st;
  }
  std::unique_ptr<LibpqReplicationStream> stream(
      new LibpqReplicationStream(conn, options));
  RETURN_IF_ERROR(stream->CheckServer());
  RETURN_IF_ERROR(stream->CheckTables());
  RETURN_IF_ERROR(stream->EnsureSlot());
  return stream;
}

LibpqReplicationStream::~LibpqReplicationStream() {
  if (buffer_ != nullptr) PQfreemem(buffer_);
  PQfinish(conn_);
}

absl::Status LibpqReplicationStream::CheckServer() {
  {
    ASSIGN_OR_RETURN(Result res, Query(conn_, "IDENTIFY_SYSTEM"));
    if (PQntuples(res.get()) != 1 || PQnfields(res.get()) < 4) {
      return absl::InternalError("unexpected IDENTIFY_SYSTEM reply");
    }
    server_.system_id = PQgetvalue(res.get(), 0, 0);
    server_.timeline = atoi(PQgetvalue(res.get(), 0, 1));
    ASSIGN_OR_RETURN(server_.xlogpos, ParseLsn(PQgetvalue(res.get(), 0, 2)));
    server_.dbname = PQgetvalue(res.get(), 0, 3);
  }
  ASSIGN_OR_RETURN(
      Result res,
      Query(conn_,
            // pg_settings omits what this role may not read (Debian's
            // output_plugin_libraries needs pg_read_all_settings): then
            // the slot commands report the same problem.
            "SELECT current_setting('wal_level'), (SELECT setting FROM "
            "pg_catalog.pg_settings WHERE name = 'output_plugin_libraries'), "
            "current_setting('server_version')"));
  std::string wal_level = PQgetvalue(res.get(), 0, 0);
  server_.version = PQgetvalue(res.get(), 0, 2);
  if (wal_level != "logical") {
    return absl::FailedPreconditionError(absl::StrCat(
        "wal_level is '", wal_level,
        "' but logical decoding needs wal_level = logical: run ALTER SYSTEM "
        "SET wal_level = logical; and restart PostgreSQL"));
  }
  if (!PQgetisnull(res.get(), 0, 1)) {
    bool allowed = false;
    for (absl::string_view lib :
         absl::StrSplit(PQgetvalue(res.get(), 0, 1), ',')) {
      lib = absl::StripAsciiWhitespace(lib);
      absl::ConsumePrefix(&lib, "\"");
      if (absl::EndsWith(lib, "\"")) lib.remove_suffix(1);
      if (lib == "wal2json") allowed = true;
    }
    if (!allowed) {
      return absl::FailedPreconditionError(absl::StrCat(
          "wal2json is not allowed by the server setting "
          "output_plugin_libraries (now '",
          PQgetvalue(res.get(), 0, 1), "'): run ", kPluginAllowFix));
    }
  }
  return absl::OkStatus();
}

absl::Status LibpqReplicationStream::CheckTables() {
  for (const auto& t : options_.tables) {
    std::string qualified =
        absl::StrCat(Literal(conn_, t.schema), ", ", Literal(conn_, t.name));
    ASSIGN_OR_RETURN(
        Result res,
        Query(conn_, absl::StrCat("SELECT a.attname FROM pg_catalog.pg_class c "
                                  "JOIN pg_catalog.pg_namespace n ON n.oid = "
                                  "c.relnamespace LEFT JOIN "
                                  "pg_catalog.pg_attribute a ON a.attrelid = "
                                  "c.oid AND a.attnum > 0 AND NOT "
                                  "a.attisdropped WHERE (n.nspname, c.relname) "
                                  "= (",
                                  qualified, ")")));
    if (PQntuples(res.get()) == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("outbox table ", t.schema, ".", t.name,
                       " does not exist in database ", server_.dbname));
    }
    std::vector<std::string> have;
    for (int i = 0; i < PQntuples(res.get()); ++i) {
      have.emplace_back(PQgetvalue(res.get(), i, 0));
    }
    for (const auto& col : t.required_columns) {
      if (std::find(have.begin(), have.end(), col) == have.end()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "outbox table ", t.schema, ".", t.name, " has no column \"", col,
            "\" (columns: ", absl::StrJoin(have, ", "),
            "); fix the table or outbox.columns in the config"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status LibpqReplicationStream::EnsureSlot() {
  ASSIGN_OR_RETURN(
      Result res,
      Query(conn_,
            absl::StrCat("SELECT plugin, slot_type, database, active_pid, "
                         "confirmed_flush_lsn, restart_lsn, wal_status FROM "
                         "pg_catalog.pg_replication_slots WHERE slot_name = ",
                         Literal(conn_, options_.slot))));
  if (PQntuples(res.get()) == 0) {
    if (!options_.create_slot) {
      return absl::FailedPreconditionError(
          absl::StrCat("replication slot \"", options_.slot,
                       "\" does not exist and postgres.create_slot is false"));
    }
    if (options_.history != nullptr) {
      RETURN_IF_ERROR(options_.history->CheckCreate(server_));
    }
    ASSIGN_OR_RETURN(
        Result created,
        Query(conn_, absl::StrCat("CREATE_REPLICATION_SLOT \"", options_.slot,
                                  "\" LOGICAL wal2json "
                                  "(SNAPSHOT 'nothing')")));
    ASSIGN_OR_RETURN(server_.slot_confirmed_flush,
                     ParseLsn(PQgetvalue(created.get(), 0, 1)));
    server_.slot_restart = server_.slot_confirmed_flush;
    server_.slot_created = true;
    if (options_.history != nullptr) {
      RETURN_IF_ERROR(options_.history->Record(server_));
    }
    return absl::OkStatus();
  }
  std::string plugin = PQgetvalue(res.get(), 0, 0);
  std::string type = PQgetvalue(res.get(), 0, 1);
  std::string database = PQgetvalue(res.get(), 0, 2);
  if (type != "logical" || plugin != "wal2json") {
    return absl::FailedPreconditionError(absl::StrCat(
        "replication slot \"", options_.slot, "\" is a ", type,
        " slot with plugin '", plugin,
        "', not wal2json: drop it (SELECT pg_drop_replication_slot('",
        options_.slot, "')) or configure another postgres.slot"));
  }
  if (database != server_.dbname) {
    return absl::FailedPreconditionError(absl::StrCat(
        "replication slot \"", options_.slot, "\" belongs to database ",
        database, " but the relay is connected to ", server_.dbname));
  }
  if (!PQgetisnull(res.get(), 0, 4)) {
    ASSIGN_OR_RETURN(server_.slot_confirmed_flush,
                     ParseLsn(PQgetvalue(res.get(), 0, 4)));
  }
  if (!PQgetisnull(res.get(), 0, 5)) {
    ASSIGN_OR_RETURN(server_.slot_restart,
                     ParseLsn(PQgetvalue(res.get(), 0, 5)));
  }
  flushed_ = server_.slot_confirmed_flush;
  if (options_.history != nullptr) {
    RETURN_IF_ERROR(options_.history->Record(server_));
  }
  if (absl::string_view(PQgetvalue(res.get(), 0, 6)) == "lost") {
    return absl::FailedPreconditionError(SlotInvalidatedMessage(
        options_.slot, server_.slot_confirmed_flush, options_.create_slot,
        "pg_replication_slots.wal_status is 'lost'"));
  }
  if (!PQgetisnull(res.get(), 0, 3)) {
    return absl::UnavailableError(
        absl::StrCat("replication slot \"", options_.slot,
                     "\" is in use by process ", PQgetvalue(res.get(), 0, 3),
                     " (another relay instance?); waiting for it"));
  }
  return absl::OkStatus();
}

absl::Status LibpqReplicationStream::StreamError(absl::Status st) const {
  if (!IsSlotInvalidatedError(st.message())) return st;
  return absl::FailedPreconditionError(
      SlotInvalidatedMessage(options_.slot, flushed_, options_.create_slot,
                             absl::StrCat("server said: ", st.message())));
}

absl::Status LibpqReplicationStream::Start(Lsn start) {
  std::string cmd =
      absl::StrCat("START_REPLICATION SLOT \"", options_.slot, "\" LOGICAL ",
                   FormatLsn(start), " (", PluginOptions(options_), ")");
  PGresult* res = PQexec(conn_, cmd.c_str());
  if (PQresultStatus(res) != PGRES_COPY_BOTH) {
    absl::Status st =
        ServerError("START_REPLICATION failed",
                    res ? PQresultErrorMessage(res) : PQerrorMessage(conn_));
    if (absl::StrContains(st.message(), "is active for PID")) {
      st = absl::UnavailableError(st.message());
    }
    PQclear(res);
    return StreamError(st);
  }
  PQclear(res);
  streaming_ = true;
  return absl::OkStatus();
}

absl::StatusOr<bool> LibpqReplicationStream::Read(StreamMessage* out) {
  if (buffer_ != nullptr) {
    PQfreemem(buffer_);
    buffer_ = nullptr;
  }
  int n = PQgetCopyData(conn_, &buffer_, /*async=*/1);
  if (n == 0) {
    if (!PQconsumeInput(conn_)) {
      return StreamError(
          ServerError("replication connection lost", PQerrorMessage(conn_)));
    }
    n = PQgetCopyData(conn_, &buffer_, 1);
    if (n == 0) return false;
  }
  if (n == -1) {
    streaming_ = false;
    std::string msg = "server ended the replication stream";
    while (PGresult* res = PQgetResult(conn_)) {
      if (PQresultStatus(res) == PGRES_FATAL_ERROR) {
        msg = absl::StrCat(msg, ": ", OneLine(PQresultErrorMessage(res)));
      }
      PQclear(res);
    }
    return StreamError(absl::UnavailableError(msg));
  }
  if (n < 0) {
    return StreamError(
        ServerError("replication connection lost", PQerrorMessage(conn_)));
  }
  ASSIGN_OR_RETURN(*out, ParseCopyData(absl::string_view(buffer_, n)));
  return true;
}

absl::Status LibpqReplicationStream::SendStatus(Lsn received, Lsn flushed,
                                                bool reply_requested) {
  flushed_ = std::max(flushed_, flushed);
  std::string msg = EncodeStandbyStatus(
      received, flushed, flushed, RealClock()->UnixMicros(), reply_requested);
  if (PQputCopyData(conn_, msg.data(), static_cast<int>(msg.size())) != 1 ||
      PQflush(conn_) != 0) {
    return ServerError("could not send status update", PQerrorMessage(conn_));
  }
  return absl::OkStatus();
}

int LibpqReplicationStream::socket() const { return PQsocket(conn_); }

absl::Status LibpqReplicationStream::Stop() {
  if (!streaming_) return absl::OkStatus();
  streaming_ = false;
  if (PQputCopyEnd(conn_, nullptr) != 1 || PQflush(conn_) != 0) {
    return ServerError("could not end the stream", PQerrorMessage(conn_));
  }
  // Drain until the server's CopyDone, bounded: the walsender may still be
  // sending data queued before it saw ours.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    if (buffer_ != nullptr) {
      PQfreemem(buffer_);
      buffer_ = nullptr;
    }
    int n = PQgetCopyData(conn_, &buffer_, 1);
    if (n > 0) continue;
    if (n < 0) break;
    pollfd pfd{PQsocket(conn_), POLLIN, 0};
    poll(&pfd, 1, 100);
    if (!PQconsumeInput(conn_)) break;
  }
  while (PGresult* res = PQgetResult(conn_)) PQclear(res);
  return absl::OkStatus();
}

}  // namespace outbox
