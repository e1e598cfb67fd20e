// LibpqReplicationStream: the ReplicationStream over a libpq walsender
// connection (replication=database) streaming wal2json format-version 2.
//
// Connect() opens the connection and checks every precondition the relay
// needs, turning each failure into one actionable line:
//   FailedPrecondition  wal_level not logical, wal2json not allowed by
//                       output_plugin_libraries or not installed, no
//                       REPLICATION privilege, slot missing (create_slot off,
//                       or the SlotHistory refuses to create it anew), slot
//                       made with another plugin or for another database,
//                       slot invalidated (wal_status lost), outbox table or
//                       column missing
//   Unavailable         server unreachable, or the slot is held by another
//                       process (a hot standby waits on this and retries)
// Start() then streams from the slot; Read() never blocks. Both turn the
// server's "can no longer get changes from replication slot" and "requested
// WAL segment ... has already been removed" into FailedPrecondition naming
// the slot and its last confirmed LSN: no retry brings that WAL back.
//
// Threading: one thread owns an instance. The only file in the project that
// includes libpq-fe.h for replication.
#ifndef OUTBOX_PG_LIBPQ_REPLICATION_STREAM_H_
#define OUTBOX_PG_LIBPQ_REPLICATION_STREAM_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "outbox/replication_stream.h"
#include "pg/slot_history.h"

struct pg_conn;

namespace outbox {

// The logical message prefix wal2json is asked to keep when the relay wants
// none: wal2json has no other way to drop them all. Reserved for the relay.
inline constexpr char kReservedMessagePrefix[] = "outbox-relay.reserved";

struct ReplicationOptions {
  std::string conninfo;  // libpq conninfo or URI; "" = PG* environment
  std::string slot = "outbox_relay";
  // Create the slot when it is missing, if `history` (when set) agrees.
  bool create_slot = true;
  // Remembers the slot and decides whether a missing one may be created
  // (see slot_history.h). Not owned; null: create whenever missing.
  SlotHistory* history = nullptr;
  // Tables to stream, each with the columns that must exist.
  struct Table {
    std::string schema;
    std::string name;
    std::vector<std::string> required_columns;
  };
  std::vector<Table> tables;
  // Logical decoding messages (pg_logical_emit_message) to decode, by exact
  // prefix; empty decodes none (kReservedMessagePrefix excepted). Each is
  // non-empty, without ',', '\\' or whitespace (wal2json's list syntax).
  // The plugin drops every other message, so a message from any session
  // cannot reach, or stop, the relay.
  std::vector<std::string> message_prefixes;
  int connect_timeout_s = 10;  // libpq connect_timeout; 0 waits for ever
  // application_name shown in pg_stat_replication.
  std::string application_name = "outbox-relay";
};

struct ServerInfo {
  std::string system_id;
  int timeline = 0;
  Lsn xlogpos = kInvalidLsn;
  std::string dbname;
  std::string version;  // server_version
  Lsn slot_confirmed_flush = kInvalidLsn;
  Lsn slot_restart = kInvalidLsn;
  bool slot_created = false;
};

class LibpqReplicationStream : public ReplicationStream {
 public:
  static absl::StatusOr<std::unique_ptr<LibpqReplicationStream>> Connect(
      const ReplicationOptions& options);
  ~LibpqReplicationStream() override;

  const ServerInfo& server() const { return server_; }

  absl::Status Start(Lsn start) override;
  absl::StatusOr<bool> Read(StreamMessage* out) override;
  absl::Status SendStatus(Lsn received, Lsn flushed,
                          bool reply_requested) override;
  int socket() const override;
  absl::Status Stop() override;

  // The wal2json options START_REPLICATION passes (for logs and tests).
  static std::string PluginOptions(const ReplicationOptions& options);

  // The libpq "options" (server settings) of the replication connection:
  // the user's own, from `conninfo` (keyword string or URI) or else from
  // PGOPTIONS, followed by ours, which win where both set a parameter:
  // TimeZone=UTC, DateStyle=ISO and bytea_output=hex (whatever the role or
  // database sets). FailedPrecondition for a conninfo libpq cannot parse.
  static absl::StatusOr<std::string> ConnectionOptions(
      const std::string& conninfo);

 private:
  LibpqReplicationStream(pg_conn* conn, ReplicationOptions options)
      : conn_(conn), options_(std::move(options)) {}
  absl::Status CheckServer();
  absl::Status CheckTables();
  absl::Status EnsureSlot();

  pg_conn* conn_;
  ReplicationOptions options_;
  ServerInfo server_;
  // A server error during Start() or Read(), rewritten when it says the
  // slot was invalidated.
  absl::Status StreamError(absl::Status st) const;

  char* buffer_ = nullptr;  // last PQgetCopyData buffer, freed on next Read
  bool streaming_ = false;
  Lsn flushed_ = kInvalidLsn;  // highest flush position sent
};

}  // namespace outbox

#endif  // OUTBOX_PG_LIBPQ_REPLICATION_STREAM_H_
