// OutboxStore: the SQL the polling relay runs, behind an interface so the
// Poller's decisions are unit-tested with a fake (tests/poller/fake_store.h).
// LibpqOutboxStore is the real one.
//
// The claim protocol, per table (t is the table's index in tables()):
//   Claim(t)   BEGIN; lock up to `limit` eligible rows in creation order:
//              sent_at IS NULL AND dead_lettered_at IS NULL AND
//              (next_attempt_at IS NULL OR next_attempt_at <= now())
//              ORDER BY seq LIMIT n FOR UPDATE SKIP LOCKED.
//              With no rows the transaction is already over.
//   Settle(t)  applies the batch's outcome and COMMITs: delivered rows are
//              marked sent (mode mark) or deleted (mode delete); failed rows
//              get attempts + 1, last_error, next_attempt_at and, when dead,
//              dead_lettered_at.
//   Abandon()  ROLLBACK: the rows return to the pool untouched.
// Between Claim and Settle/Abandon the rows stay locked, so other pollers
// skip them; if the process dies the server ends the transaction and the
// rows return to the pool.
//
// Errors: Unavailable for connection problems (reconnect with backoff),
// FailedPrecondition for what the operator must fix (missing table or
// column, missing privilege). Threading: one thread.
#ifndef OUTBOX_POLLER_OUTBOX_STORE_H_
#define OUTBOX_POLLER_OUTBOX_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "config/config.h"
#include "poller/outbox_row.h"

namespace outbox {

// A failed delivery to record (see RetryPolicy).
struct RowFailure {
  int64_t seq = 0;
  int32_t attempts = 0;  // the new count
  std::string error;
  int64_t retry_delay_ms = 0;
  bool dead = false;
};

// Operator signals from the table itself.
struct Backlog {
  int64_t unsent = 0;              // not sent, not dead-lettered
  double oldest_unsent_age_s = 0;  // 0 when none
};

class OutboxStore {
 public:
  virtual ~OutboxStore() = default;

  // The outbox tables, in configuration order, with the mapped columns.
  virtual const std::vector<TableShape>& tables() const = 0;

  // Opens a transaction and fills *rows (cleared first) with the claimed
  // rows in seq order. Ends the transaction itself when it claims none.
  virtual absl::Status Claim(size_t table, int limit,
                             std::vector<OutboxRow>* rows) = 0;

  // Records the outcome of the claimed batch and commits.
  virtual absl::Status Settle(size_t table, PollerMode mode,
                              absl::Span<const int64_t> delivered,
                              absl::Span<const RowFailure> failed) = 0;

  // Rolls the open transaction back, if any. Best effort.
  virtual void Abandon() = 0;

  // Janitor: deletes up to `limit` rows sent more than `older_than_s` ago,
  // in its own transaction. Returns how many it deleted.
  virtual absl::StatusOr<int64_t> DeleteSent(size_t table, int64_t older_than_s,
                                             int limit) = 0;

  virtual absl::StatusOr<Backlog> ReadBacklog(size_t table) = 0;

  // Waits up to timeout_ms for a NOTIFY on the configured channel (never
  // returns true when not listening). Unavailable if the connection died.
  virtual absl::StatusOr<bool> WaitForNotify(int timeout_ms) = 0;
};

}  // namespace outbox

#endif  // OUTBOX_POLLER_OUTBOX_STORE_H_
