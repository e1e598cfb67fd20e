#include "pg/slot_monitor.h"

#include <libpq-fe.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace outbox {
namespace {

constexpr char kQuery[] =
    "SELECT slot_name, coalesce(plugin, ''), slot_type, "
    "coalesce(database, ''), active, coalesce(active_pid, 0), "
    "restart_lsn, confirmed_flush_lsn, pg_current_wal_lsn(), "
    "coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn), 0)::bigint, "
    "coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn), "
    "0)::bigint, "
    "coalesce(wal_status, ''), safe_wal_size "
    "FROM pg_replication_slots WHERE slot_name = $1";

std::string OneLine(const char* text) {
  std::string s;
  for (const char* p = text ? text : ""; *p != '\0'; ++p) {
    char c = (*p == '\n' || *p == '\t') ? ' ' : *p;
    if (c == ' ' && (s.empty() || s.back() == ' ')) continue;
    s.push_back(c);
  }
  return std::string(absl::StripTrailingAsciiWhitespace(s));
}

absl::StatusOr<Lsn> LsnField(PGresult* res, int col) {
  if (PQgetisnull(res, 0, col)) return kInvalidLsn;
  return ParseLsn(PQgetvalue(res, 0, col));
}

int64_t IntField(PGresult* res, int col) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(PQgetvalue(res, 0, col), &v)) return 0;
  return v;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SlotMonitor>> SlotMonitor::Connect(
    const std::string& conninfo, int connect_timeout_s) {
  const std::string timeout = std::to_string(connect_timeout_s);
  // Keepalives as on the replication connection, so a dead peer fails a
  // query instead of hanging it.
  const char* keys[] = {
      "dbname",          "fallback_application_name", "connect_timeout",
      "keepalives_idle", "keepalives_interval",       nullptr};
  const char* values[] = {
      conninfo.c_str(), "outbox-relay-monitor", timeout.c_str(), "10", "5",
      nullptr};
  PGconn* conn = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn == nullptr) return absl::ResourceExhaustedError("out of memory");
  if (PQstatus(conn) != CONNECTION_OK) {
    absl::Status st = absl::UnavailableError(absl::StrCat(
        "cannot connect to PostgreSQL: ", OneLine(PQerrorMessage(conn))));
    PQfinish(conn);
    return st;
  }
  return std::unique_ptr<SlotMonitor>(new SlotMonitor(conn));
}

SlotMonitor::~SlotMonitor() { PQfinish(conn_); }

absl::StatusOr<SlotStatus> SlotMonitor::Query(const std::string& slot) {
  const char* params[] = {slot.c_str()};
  PGresult* res = PQexecParams(conn_, kQuery, 1, nullptr, params, nullptr,
                               nullptr, /*resultFormat=*/0);
  std::unique_ptr<PGresult, void (*)(PGresult*)> guard(res, PQclear);
  if (res == nullptr || PQresultStatus(res) != PGRES_TUPLES_OK) {
    std::string why = OneLine(PQerrorMessage(conn_));
    if (PQstatus(conn_) != CONNECTION_OK) {
      return absl::UnavailableError(
          absl::StrCat("lost the PostgreSQL connection: ", why));
    }
    return absl::InternalError(
        absl::StrCat("querying pg_replication_slots failed: ", why));
  }
  if (PQntuples(res) == 0) {
    return absl::NotFoundError(
        absl::StrCat("replication slot \"", slot, "\" does not exist"));
  }
  if (PQnfields(res) != 13) {
    return absl::InternalError("unexpected pg_replication_slots reply");
  }
  SlotStatus s;
  s.slot_name = PQgetvalue(res, 0, 0);
  s.plugin = PQgetvalue(res, 0, 1);
  s.slot_type = PQgetvalue(res, 0, 2);
  s.database = PQgetvalue(res, 0, 3);
  s.active = std::string(PQgetvalue(res, 0, 4)) == "t";
  s.active_pid = IntField(res, 5);
  absl::StatusOr<Lsn> restart = LsnField(res, 6);
  absl::StatusOr<Lsn> confirmed = LsnField(res, 7);
  absl::StatusOr<Lsn> current = LsnField(res, 8);
  if (!restart.ok() || !confirmed.ok() || !current.ok()) {
    return absl::InternalError("unreadable LSN in pg_replication_slots");
  }
  s.restart_lsn = *restart;
  s.confirmed_flush_lsn = *confirmed;
  s.current_wal_lsn = *current;
  s.retained_bytes = IntField(res, 9);
  s.lag_bytes = IntField(res, 10);
  s.wal_status = PQgetvalue(res, 0, 11);
  if (!PQgetisnull(res, 0, 12)) s.safe_wal_size = IntField(res, 12);
  return s;
}

}  // namespace outbox
