#include "pg/pg_connection.h"

#include <libpq-fe.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "outbox/status_macros.h"

namespace outbox {
namespace {

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

// `conninfo` parsed by libpq into *parsed (caller frees), or null for a
// conninfo that is a bare database name (libpq expands dbname only when it
// holds '=' or is a URI).
absl::Status Parse(const std::string& conninfo, absl::string_view what,
                   PQconninfoOption** parsed) {
  *parsed = nullptr;
  if (!absl::StrContains(conninfo, '=') &&
      !absl::StartsWith(conninfo, "postgresql://") &&
      !absl::StartsWith(conninfo, "postgres://")) {
    return absl::OkStatus();
  }
  char* error = nullptr;
  *parsed = PQconninfoParse(conninfo.c_str(), &error);
  if (*parsed != nullptr) return absl::OkStatus();
  absl::Status st = ConninfoParseError(what, error ? error : "out of memory");
  PQfreemem(error);
  return st;
}

// TLS and credential failures no reconnect fixes: a server certificate that
// fails verification or names another host, a client certificate the server
// refuses (a TLS alert) or requires, an unreadable certificate or key file,
// a server without TLS under sslmode=require or stricter, no password.
// "SSL error: unexpected eof" and other SSL errors of a dropped connection
// stay Unavailable.
bool IsTlsOrCredentialRefusal(absl::string_view msg) {
  return absl::StrContains(msg, "certificate") ||
         (absl::StrContains(msg, "SSL error") &&
          absl::StrContains(msg, "alert")) ||
         absl::StrContains(msg, "private key file") ||
         absl::StrContains(msg, "does not support SSL") ||
         absl::StrContains(msg, "no password supplied");
}

}  // namespace

bool IsConninfoParseError(absl::string_view libpq_message) {
  for (absl::string_view m :
       {"in connection info string", "invalid connection option", "invalid URI",
        "in URI", "percent-encoded", "URI query parameter"}) {
    if (absl::StrContains(libpq_message, m)) return true;
  }
  return false;
}

absl::Status ConninfoParseError(absl::string_view what,
                                absl::string_view libpq_message) {
  // libpq quotes the words around the fault, which may be a password's:
  // only the kind of fault is told.
  absl::string_view kind = "see libpq's connection string syntax";
  if (absl::StrContains(libpq_message, "missing \"=\"")) {
    kind =
        "a word with no \"=\" after it: an unquoted value ends at a space, "
        "so quote a value that holds one ('...'); a password belongs in "
        "postgres.password_file or PGPASSWORD";
  } else if (absl::StrContains(libpq_message, "unterminated quoted string")) {
    kind = "a quote that is not closed";
  } else if (absl::StrContains(libpq_message, "invalid connection option")) {
    kind = "a keyword libpq does not know (check each keyword's spelling)";
  } else if (absl::StrContains(libpq_message, "URI")) {
    kind =
        "a URI libpq cannot read (percent-encode reserved characters in the "
        "user name and password)";
  } else if (absl::StrContains(libpq_message, "out of memory")) {
    kind = "out of memory";
  }
  // A conninfo libpq cannot parse never will: no retry.
  return absl::FailedPreconditionError(
      absl::StrCat("invalid ", what, ": libpq cannot parse it: ", kind));
}

void PgResultDeleter::operator()(pg_result* r) const { PQclear(r); }

std::string OneLine(absl::string_view text) {
  absl::string_view v = absl::StripAsciiWhitespace(text);
  absl::ConsumePrefix(&v, "FATAL:  ");
  absl::ConsumePrefix(&v, "ERROR:  ");
  std::string s;
  s.reserve(v.size());
  for (char c : v) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    if (c == ' ' && !s.empty() && s.back() == ' ') continue;
    s.push_back(c);
  }
  return s;
}

absl::Status ClassifyServerError(absl::string_view context,
                                 absl::string_view message) {
  std::string msg = OneLine(message);
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
      absl::StrContains(msg, "must be owner") ||
      absl::StrContains(msg, "pg_hba.conf") ||
      absl::StrContains(msg, "authentication failed") ||
      (absl::StrContains(msg, "database \"") &&
       absl::StrContains(msg, "does not exist")) ||
      (absl::StrContains(msg, "role \"") &&
       absl::StrContains(msg, "does not exist")) ||
      absl::StrContains(msg, "invalid connection option") ||
      IsTlsOrCredentialRefusal(msg) ||
      absl::StrContains(msg, "missing \"=\"") ||
      absl::StrContains(msg, "invalid URI")) {
    return absl::FailedPreconditionError(absl::StrCat(context, ": ", msg));
  }
  return absl::UnavailableError(absl::StrCat(context, ": ", msg));
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>>
PgConnection::ParseConninfo(const std::string& conninfo,
                            absl::string_view what) {
  PQconninfoOption* parsed = nullptr;
  RETURN_IF_ERROR(Parse(conninfo, what, &parsed));
  std::vector<std::pair<std::string, std::string>> out;
  if (parsed == nullptr) {
    if (!conninfo.empty()) out.emplace_back("dbname", conninfo);
    return out;
  }
  for (const PQconninfoOption* o = parsed; o->keyword; ++o) {
    if (o->val != nullptr) out.emplace_back(o->keyword, o->val);
  }
  PQconninfoFree(parsed);
  return out;
}

absl::StatusOr<std::string> PgConnection::MergedOptions(
    const std::string& conninfo, absl::string_view settings) {
  PQconninfoOption* parsed = nullptr;
  RETURN_IF_ERROR(Parse(conninfo, "postgres.conninfo", &parsed));
  std::string user = OptionsValue(parsed);
  PQconninfoFree(parsed);
  if (user.empty()) {
    // Without options in the conninfo libpq uses PGOPTIONS.
    PQconninfoOption* defaults = PQconndefaults();
    user = OptionsValue(defaults);
    PQconninfoFree(defaults);
  }
  if (settings.empty()) return user;
  return absl::StrCat(user, user.empty() ? "" : " ", settings);
}

absl::StatusOr<std::unique_ptr<PgConnection>> PgConnection::Connect(
    const PgConnectOptions& options) {
  ASSIGN_OR_RETURN(std::string server_options,
                   MergedOptions(options.conninfo, options.settings));
  const std::string timeout = std::to_string(options.connect_timeout_s);
  const std::string user_timeout = std::to_string(options.tcp_user_timeout_ms);
  // The conninfo is expanded first; later keys override it. An empty
  // options value would clear PGOPTIONS, so it is passed only when set.
  std::vector<const char*> keys = {
      "dbname",          "fallback_application_name", "connect_timeout",
      "keepalives_idle", "keepalives_interval",       "tcp_user_timeout"};
  std::vector<const char*> values = {options.conninfo.c_str(),
                                     options.application_name.c_str(),
                                     timeout.c_str(),
                                     "10",
                                     "5",
                                     user_timeout.c_str()};
  if (options.replication) {
    keys.push_back("replication");
    values.push_back("database");
  }
  if (!server_options.empty()) {
    keys.push_back("options");
    values.push_back(server_options.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  PGconn* conn =
      PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1);
  if (conn == nullptr) return absl::ResourceExhaustedError("out of memory");
  if (PQstatus(conn) != CONNECTION_OK) {
    const char* message = PQerrorMessage(conn);
    absl::Status st =
        IsConninfoParseError(message)
            ? ConninfoParseError("postgres.conninfo", message)
            : ClassifyServerError("cannot connect to PostgreSQL", message);
    PQfinish(conn);
    return st;
  }
  return std::unique_ptr<PgConnection>(new PgConnection(conn));
}

PgConnection::~PgConnection() { PQfinish(conn_); }

absl::Status PgConnection::ResultError(absl::string_view context,
                                       const pg_result* res) {
  const char* raw = res != nullptr ? PQresultErrorMessage(res) : "";
  if (raw == nullptr || *raw == '\0') raw = PQerrorMessage(conn_);
  absl::Status st = ClassifyServerError(context, raw);
  if (PQstatus(conn_) == CONNECTION_BAD && !absl::IsFailedPrecondition(st)) {
    st = absl::UnavailableError(st.message());
  }
  return st;
}

absl::StatusOr<PgResult> PgConnection::Checked(const std::string& sql,
                                               pg_result* raw) {
  PgResult res(raw);
  ExecStatusType st =
      res != nullptr ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
    return ResultError(absl::StrCat("\"", sql.substr(0, 60), "\" failed"),
                       res.get());
  }
  return res;
}

absl::StatusOr<PgResult> PgConnection::Query(const std::string& sql) {
  return Checked(sql, PQexec(conn_, sql.c_str()));
}

absl::StatusOr<PgResult> PgConnection::QueryParams(
    const std::string& sql, const std::vector<std::string>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const std::string& p : params) values.push_back(p.c_str());
  return Checked(
      sql, PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()),
                        nullptr, values.data(), nullptr, nullptr,
                        /*resultFormat=*/0));
}

std::string PgConnection::Value(const PgResult& res, int row, int col) {
  if (PQgetisnull(res.get(), row, col)) return "";
  return std::string(PQgetvalue(res.get(), row, col),
                     PQgetlength(res.get(), row, col));
}

bool PgConnection::IsNull(const PgResult& res, int row, int col) {
  return PQgetisnull(res.get(), row, col) != 0;
}

int PgConnection::Rows(const PgResult& res) { return PQntuples(res.get()); }

std::string PgConnection::Literal(absl::string_view s) const {
  char* q = PQescapeLiteral(conn_, s.data(), s.size());
  std::string out = q ? q : "''";
  PQfreemem(q);
  return out;
}

std::string PgConnection::Identifier(absl::string_view s) const {
  char* q = PQescapeIdentifier(conn_, s.data(), s.size());
  std::string out = q ? q : "\"\"";
  PQfreemem(q);
  return out;
}

std::string PgConnection::Endpoint() const {
  const char* host = PQhost(conn_);
  const char* port = PQport(conn_);
  return absl::StrCat(host != nullptr ? host : "", ":",
                      port != nullptr ? port : "");
}

std::string PgConnection::ParameterStatus(const char* name) const {
  const char* v = PQparameterStatus(conn_, name);
  return v != nullptr ? v : "";
}

std::string PgConnection::Node() const {
  return absl::StrCat(PQhost(conn_) ? PQhost(conn_) : "", ":",
                      PQport(conn_) ? PQport(conn_) : "");
}

bool PgConnection::connected() const {
  return PQstatus(conn_) == CONNECTION_OK;
}

}  // namespace outbox
