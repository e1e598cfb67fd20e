#include "pg/slot_monitor.h"

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
    "coalesce(wal_status, ''), safe_wal_size, "
    // NULL before 17, which has no failover column.
    "to_jsonb(s) ->> 'failover' "
    "FROM pg_replication_slots s WHERE slot_name = $1";

absl::StatusOr<Lsn> LsnField(const PgResult& res, int col) {
  if (PgConnection::IsNull(res, 0, col)) return kInvalidLsn;
  return ParseLsn(PgConnection::Value(res, 0, col));
}

int64_t IntField(const PgResult& res, int col) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(PgConnection::Value(res, 0, col), &v)) return 0;
  return v;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SlotMonitor>> SlotMonitor::Connect(
    const std::string& conninfo, int connect_timeout_s) {
  PgConnectOptions options;
  options.conninfo = conninfo;
  options.application_name = "outbox-relay-monitor";
  options.connect_timeout_s = connect_timeout_s;
  absl::StatusOr<std::unique_ptr<PgConnection>> conn =
      PgConnection::Connect(options);
  if (!conn.ok()) {
    // The relay's own connection reports what an operator must fix; here
    // every failure is a retry.
    return absl::UnavailableError(conn.status().message());
  }
  return std::unique_ptr<SlotMonitor>(new SlotMonitor(std::move(*conn)));
}

SlotMonitor::~SlotMonitor() = default;

absl::StatusOr<SlotStatus> SlotMonitor::Query(const std::string& slot) {
  absl::StatusOr<PgResult> got = conn_->QueryParams(kQuery, {slot});
  if (!got.ok()) {
    if (!conn_->connected()) {
      return absl::UnavailableError(absl::StrCat(
          "lost the PostgreSQL connection: ", got.status().message()));
    }
    return absl::InternalError(absl::StrCat(
        "querying pg_replication_slots failed: ", got.status().message()));
  }
  const PgResult& res = *got;
  if (PgConnection::Rows(res) == 0) {
    return absl::NotFoundError(
        absl::StrCat("replication slot \"", slot, "\" does not exist"));
  }
  SlotStatus s;
  s.slot_name = PgConnection::Value(res, 0, 0);
  s.plugin = PgConnection::Value(res, 0, 1);
  s.slot_type = PgConnection::Value(res, 0, 2);
  s.database = PgConnection::Value(res, 0, 3);
  s.active = PgConnection::Value(res, 0, 4) == "t";
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
  s.wal_status = PgConnection::Value(res, 0, 11);
  if (!PgConnection::IsNull(res, 0, 12)) s.safe_wal_size = IntField(res, 12);
  if (!PgConnection::IsNull(res, 0, 13)) {
    s.failover = PgConnection::Value(res, 0, 13) == "true";
  }
  return s;
}

}  // namespace outbox
