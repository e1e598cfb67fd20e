// SlotMonitor: reads a replication slot's position and WAL retention over a
// NORMAL (non-replication) libpq connection, so it never takes the slot and
// works while another process streams from it.
//
//   auto monitor = SlotMonitor::Connect(conninfo, /*connect_timeout_s=*/10);
//   absl::StatusOr<SlotStatus> s = (*monitor)->Query("outbox_relay");
//
// One query: pg_replication_slots joined with pg_current_wal_lsn(). Needs no
// privilege beyond CONNECT (both are readable by PUBLIC); on a standby
// pg_current_wal_lsn() fails and Query() returns that error.
//
// Errors: Connect() is Unavailable when the server cannot be reached.
// Query() is NotFound when the slot does not exist, Unavailable when the
// connection broke (Connect() again), Internal for an unexpected reply.
// Threading: one thread owns an instance.
#ifndef OUTBOX_PG_SLOT_MONITOR_H_
#define OUTBOX_PG_SLOT_MONITOR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "outbox/lsn.h"
#include "pg/pg_connection.h"

namespace outbox {

struct SlotStatus {
  std::string slot_name;
  std::string plugin;     // "wal2json"
  std::string slot_type;  // "logical"
  std::string database;
  bool active = false;
  int64_t active_pid = 0;  // 0 when not active
  Lsn restart_lsn = kInvalidLsn;
  Lsn confirmed_flush_lsn = kInvalidLsn;
  Lsn current_wal_lsn = kInvalidLsn;  // pg_current_wal_lsn()
  int64_t retained_bytes = 0;         // current_wal_lsn - restart_lsn
  int64_t lag_bytes = 0;              // current_wal_lsn - confirmed_flush_lsn
  // reserved | extended | unreserved | lost; "" when the server has none.
  std::string wal_status;
  // Bytes that can still be written before the slot is in danger of losing
  // WAL; nullopt when max_slot_wal_keep_size = -1 (unlimited).
  std::optional<int64_t> safe_wal_size;
  // The slot is synchronized to standbys (PostgreSQL 17+ failover slots);
  // nullopt before 17.
  std::optional<bool> failover;
};

class SlotMonitor {
 public:
  static absl::StatusOr<std::unique_ptr<SlotMonitor>> Connect(
      const std::string& conninfo, int connect_timeout_s);
  ~SlotMonitor();
  SlotMonitor(const SlotMonitor&) = delete;
  SlotMonitor& operator=(const SlotMonitor&) = delete;

  absl::StatusOr<SlotStatus> Query(const std::string& slot);

 private:
  explicit SlotMonitor(std::unique_ptr<PgConnection> conn)
      : conn_(std::move(conn)) {}
  std::unique_ptr<PgConnection> conn_;
};

}  // namespace outbox

#endif  // OUTBOX_PG_SLOT_MONITOR_H_
