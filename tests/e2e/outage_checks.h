// Checks for the Kafka-outage tests: what was committed while the broker
// was down must not be confirmed to PostgreSQL before Kafka acknowledges it.
//
// PostgreSQL resumes a slot at confirmed_flush_lsn and skips every
// transaction whose commit record starts below it (DESIGN.md section 2). So
// a transaction T committed after the broker died is safe exactly while
// confirmed_flush_lsn <= the start of T's commit record, and a relay that
// confirmed T (it sends T's end LSN, the end of that record) breaks it.
// That start is the strictest bound a correct relay never passes: the end of
// a transaction committed just before T may equal it. The positions a test
// can read around T's COMMIT are not exact: pg_current_wal_lsn() after it
// can lie past later commits (too weak), pg_current_wal_insert_lsn() inside
// T can lie below an unrelated commit that may rightly be confirmed
// (wrong). So the commit record is looked up in the WAL with pg_walinspect.
//
// When the outage began: pg_current_wal_flush_lsn() read after the broker
// died. The walsender sends only flushed WAL, so a transaction whose commit
// record starts past that position reached the relay after the broker was
// gone, and cannot be in Kafka before it is back.
#ifndef OUTBOX_TESTS_E2E_OUTAGE_CHECKS_H_
#define OUTBOX_TESTS_E2E_OUTAGE_CHECKS_H_

#include <chrono>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "e2e/test_env.h"
#include "gtest/gtest.h"

namespace outbox::testing {

// A commit record's WAL positions, as pg_lsn text.
struct CommitRecord {
  std::string start;  // where the record begins (wal2json C "lsn")
  std::string end;    // where it ends (C "nextlsn", what a relay confirms)
};

// The commit record of the first transaction that committed rows into
// public.`table` at or after `since` (the flush position when the outage
// began, see above), or nullopt if none has yet. Installs pg_walinspect when
// missing.
inline std::optional<CommitRecord> FirstCommitInto(PgConn& db,
                                                   const std::string& table,
                                                   const std::string& since) {
  if (db.Scalar("SELECT count(*) FROM pg_extension WHERE extname = "
                "'pg_walinspect'") == "0" &&
      !db.Query("CREATE EXTENSION IF NOT EXISTS pg_walinspect").ok()) {
    // Another test created it at the same moment: now it exists.
    db.Exec("CREATE EXTENSION IF NOT EXISTS pg_walinspect");
  }
  // A row's xmin is the transaction that inserted it; rolled-back rows are
  // not visible, and their transactions end with ABORT records anyway.
  auto rows = db.Query(
      "SELECT r.start_lsn, r.end_lsn FROM pg_get_wal_records_info('" + since +
      "', pg_current_wal_flush_lsn()) r WHERE r.resource_manager = "
      "'Transaction' AND r.record_type = 'COMMIT' AND r.xid IN (SELECT xmin "
      "FROM public." +
      table + ") ORDER BY r.start_lsn LIMIT 1");
  // PostgreSQL 15's pg_walinspect may refuse a start it sees as past its
  // own idea of the flush position (seen here right after reading
  // pg_current_wal_flush_lsn()): not yet, ask again.
  if (!rows.ok() && absl::StrContains(rows.status().message(),
                                      "cannot accept future start LSN")) {
    return std::nullopt;
  }
  EXPECT_TRUE(rows.ok()) << rows.status();
  if (!rows.ok() || rows->empty()) return std::nullopt;
  return CommitRecord{(*rows)[0][0], (*rows)[0][1]};
}

// Samples `slot` every 100 ms for `watch_ms` while `txn` cannot have been
// delivered: fails as soon as confirmed_flush_lsn passes the start of its
// commit record, and at the end unless the relay reported receiving it
// (pg_stat_replication.write_lsn >= its end), so the check is not passed by
// a relay that never read it. A relay that has not reported it yet when
// `watch_ms` is over is watched on until it does, up to kReceiveWaitMs (a
// loaded machine: the relay reads and reports a second late), the slot
// checked all along. `require_received` false drops that last condition,
// for a relay that by design stops reading during the outage
// (kafka.exactly_once: its loop waits in the Kafka commit).
inline constexpr int kReceiveWaitMs = 60000;
inline ::testing::AssertionResult SlotHoldsBefore(
    PgConn& db, const std::string& slot, const CommitRecord& txn, int watch_ms,
    bool require_received = true) {
  const std::string sql =
      "SELECT s.confirmed_flush_lsn, s.confirmed_flush_lsn <= '" + txn.start +
      "'::pg_lsn, coalesce(r.write_lsn >= '" + txn.end +
      "'::pg_lsn, false) FROM pg_replication_slots s LEFT JOIN "
      "pg_stat_replication r ON r.pid = s.active_pid WHERE s.slot_name = '" +
      slot + "'";
  bool received = false;
  const auto start = std::chrono::steady_clock::now();
  auto deadline = start + std::chrono::milliseconds(watch_ms);
  do {
    auto rows = db.Query(sql);
    if (!rows.ok() || rows->size() != 1) {
      return ::testing::AssertionFailure()
             << "slot " << slot << " not found: " << rows.status();
    }
    const auto& row = (*rows)[0];
    if (row[1] != "t") {
      return ::testing::AssertionFailure()
             << "confirmed_flush_lsn " << row[0]
             << " passed the start of the commit record at " << txn.start
             << " (end " << txn.end
             << ") of a transaction committed during the Kafka outage";
    }
    if (!received && row[2] == "t") {
      received = true;
      std::cerr << "SlotHoldsBefore: the relay reported receiving the "
                   "transaction after "
                << std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now() - start)
                       .count()
                << " ms\n";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } while (std::chrono::steady_clock::now() < deadline ||
           (require_received && !received &&
            std::chrono::steady_clock::now() <
                deadline + std::chrono::milliseconds(kReceiveWaitMs)));
  if (!received && require_received) {
    return ::testing::AssertionFailure()
           << "the relay never reported receiving the transaction ending at "
           << txn.end << " during the outage (watched " << watch_ms << " ms + "
           << kReceiveWaitMs << " ms): the check proves nothing";
  }
  return ::testing::AssertionSuccess()
         << "confirmed_flush_lsn stayed <= " << txn.start;
}

}  // namespace outbox::testing

#endif  // OUTBOX_TESTS_E2E_OUTAGE_CHECKS_H_
