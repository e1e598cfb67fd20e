// LibpqOutboxStore: the OutboxStore over one plain libpq connection.
//
// Connect() opens the session with TimeZone=UTC and DateStyle=ISO (so
// timestamp text equals what outbox-relay's wal2json session prints), checks
// every table: it exists, has the mapped columns and the poller columns of
// sql/outbox.sql (seq, created_at, sent_at, attempts, next_attempt_at,
// last_error, dead_lettered_at), and the role may SELECT and UPDATE it (and
// DELETE it when it will delete rows); then prepares the statements and,
// with notify, LISTENs on the channel.
//
// Errors: Unavailable when the server cannot be reached or the connection
// drops; FailedPrecondition (one line naming the fix) for a missing table,
// column or privilege. Threading: one thread.
#ifndef OUTBOX_POLLER_LIBPQ_OUTBOX_STORE_H_
#define OUTBOX_POLLER_LIBPQ_OUTBOX_STORE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pg/pg_connection.h"
#include "poller/outbox_store.h"

namespace outbox {

struct StoreOptions {
  std::string conninfo;
  int connect_timeout_s = 10;
  std::string application_name = "outbox-poller";
  struct Table {
    std::string schema, name;
    std::vector<std::string> columns;  // mapped columns (Router order)
  };
  std::vector<Table> tables;
  bool needs_delete = false;   // mode delete or a janitor
  std::string notify_channel;  // empty: no LISTEN
};

class LibpqOutboxStore : public OutboxStore {
 public:
  static absl::StatusOr<std::unique_ptr<LibpqOutboxStore>> Connect(
      const StoreOptions& options);
  ~LibpqOutboxStore() override;

  const std::vector<TableShape>& tables() const override { return shapes_; }
  absl::Status Claim(size_t table, int limit,
                     std::vector<OutboxRow>* rows) override;
  absl::Status Settle(size_t table, PollerMode mode,
                      absl::Span<const int64_t> delivered,
                      absl::Span<const RowFailure> failed) override;
  void Abandon() override;
  absl::StatusOr<int64_t> DeleteSent(size_t table, int64_t older_than_s,
                                     int limit) override;
  absl::StatusOr<Backlog> ReadBacklog(size_t table) override;
  absl::StatusOr<bool> WaitForNotify(int timeout_ms) override;

  std::string server_version() const { return server_version_; }

 private:
  explicit LibpqOutboxStore(std::unique_ptr<PgConnection> db)
      : db_(std::move(db)), conn_(db_->raw()) {}
  absl::Status CheckAndPrepare(const StoreOptions& options);
  absl::Status Exec(const char* sql);
  bool DrainNotifications();

  std::unique_ptr<PgConnection> db_;
  pg_conn* conn_;  // db_'s, for prepared statements and notifications
  std::vector<TableShape> shapes_;
  bool in_transaction_ = false;
  std::string server_version_;
};

}  // namespace outbox

#endif  // OUTBOX_POLLER_LIBPQ_OUTBOX_STORE_H_
