// PgConnection: one libpq connection with the plumbing every PostgreSQL
// client in the project shares (the replication stream, the slot monitor,
// the poller's store, the audit): connecting with the project's defaults,
// queries that return Status, quoting, and server errors as one line that
// says what to do.
//
// Connect() expands `conninfo` (keyword string or URI; "" = the PG*
// environment) and then sets: connect_timeout, TCP keepalives and
// tcp_user_timeout (so a dead peer or path fails a query, or a stream that
// sends status updates, instead of hanging it), fallback_application_name,
// replication=database when asked, and `settings` appended to the user's
// own `options` (from the conninfo, else PGOPTIONS), so ours win where both
// set a parameter and the user's others still apply.
//
// Errors (ClassifyServerError): authentication, pg_hba, a missing role or
// database, a missing privilege or the REPLICATION attribute, TLS failures
// (a certificate that fails verification either way, an unreadable key, no
// TLS under sslmode=require), a missing password, and a conninfo libpq
// cannot parse (ConninfoParseError: never libpq's words, which quote the
// conninfo) are FailedPrecondition (an operator must act); anything
// else, a lost connection above all, is Unavailable (retry).
//
// Threading: one thread uses an instance. Only this module and the
// replication stream's CopyData loop include libpq-fe.h in pg/.
#ifndef OUTBOX_PG_PG_CONNECTION_H_
#define OUTBOX_PG_PG_CONNECTION_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

struct pg_conn;
struct pg_result;

namespace outbox {

struct PgConnectOptions {
  std::string conninfo;
  std::string application_name;  // fallback_application_name
  int connect_timeout_s = 10;    // 0 waits for ever
  // libpq tcp_user_timeout (TCP_USER_TIMEOUT): the kernel closes the
  // connection when data it sent stays unacknowledged this long. Keepalives
  // alone never end a half-open connection the client writes to (a dropped
  // path, a peer gone without a FIN): unacknowledged data suspends them, and
  // only tcp_retries2 (about 15 minutes) would. 0: the system's default.
  int tcp_user_timeout_ms = 60000;
  bool replication = false;  // a walsender connection (replication=database)
  // Server settings as "-c name=value" words, after the user's options.
  std::string settings;
};

struct PgResultDeleter {
  void operator()(pg_result* r) const;
};
// An owned query result.
using PgResult = std::unique_ptr<pg_result, PgResultDeleter>;

// A server or libpq message on one line: whitespace runs collapsed, the
// "ERROR:  "/"FATAL:  " prefix dropped.
std::string OneLine(absl::string_view text);

// The Status a server or connection error means (see the header comment),
// as "<context>: <message>".
absl::Status ClassifyServerError(absl::string_view context,
                                 absl::string_view message);

// True for libpq's words on a conninfo it cannot parse ("missing \"=\"
// after ...", "invalid URI ...", "invalid percent-encoded token ...").
bool IsConninfoParseError(absl::string_view libpq_message);

// FailedPrecondition "invalid <what>: libpq cannot parse it: <the kind of
// fault>". Never libpq's own text: it quotes the conninfo around the fault,
// which may be part of a password.
absl::Status ConninfoParseError(absl::string_view what,
                                absl::string_view libpq_message);

class PgConnection {
 public:
  static absl::StatusOr<std::unique_ptr<PgConnection>> Connect(
      const PgConnectOptions& options);
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Runs `sql` with the simple protocol (the only one a walsender takes);
  // OK for rows or a completed command, else the classified error naming
  // the statement's start. A dropped connection is always Unavailable.
  absl::StatusOr<PgResult> Query(const std::string& sql);
  // The same with $1.. text parameters (not on a walsender connection).
  absl::StatusOr<PgResult> QueryParams(const std::string& sql,
                                       const std::vector<std::string>& params);

  // Row `row`, column `col` of `res` as text ("" for NULL), and NULL test.
  static std::string Value(const PgResult& res, int row, int col);
  static bool IsNull(const PgResult& res, int row, int col);
  static int Rows(const PgResult& res);

  std::string Literal(absl::string_view s) const;     // 'quoted'
  std::string Identifier(absl::string_view s) const;  // "quoted"

  // The error a failed result carries, classified, with `context`.
  absl::Status ResultError(absl::string_view context, const pg_result* res);

  // "host:port" libpq connected to: with several hosts in the conninfo,
  // the one it chose (e.g. by target_session_attrs).
  std::string Endpoint() const;
  // A server parameter reported at connect (e.g. "server_version").
  std::string ParameterStatus(const char* name) const;
  // The node this connection reached, "host:port" (the one host of a
  // multi-host conninfo libpq picked).
  std::string Node() const;
  bool connected() const;
  pg_conn* raw() const { return conn_; }

  // The libpq "options" value Connect() uses: the user's own (conninfo or
  // PGOPTIONS) followed by `settings`. FailedPrecondition for a conninfo
  // libpq cannot parse.
  static absl::StatusOr<std::string> MergedOptions(const std::string& conninfo,
                                                   absl::string_view settings);

  // The keywords `conninfo` (keyword string or URI) sets, with their
  // values, in libpq's keyword order; no environment defaults. A bare
  // database name gives {"dbname", name}. FailedPrecondition for a
  // conninfo libpq cannot parse (`what` names it in the message).
  static absl::StatusOr<std::vector<std::pair<std::string, std::string>>>
  ParseConninfo(const std::string& conninfo,
                absl::string_view what = "postgres.conninfo");

 private:
  explicit PgConnection(pg_conn* conn) : conn_(conn) {}
  // Takes `raw`; OK for rows or a completed command, else the error.
  absl::StatusOr<PgResult> Checked(const std::string& sql, pg_result* raw);
  pg_conn* conn_;
};

}  // namespace outbox

#endif  // OUTBOX_PG_PG_CONNECTION_H_
