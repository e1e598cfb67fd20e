// LibpqReplicationStream: the ReplicationStream over a libpq walsender
// connection (replication=database) streaming one OutputPlugin's records
// (plugin/output_plugin.h: wal2json or pgoutput).
//
// Connect() opens the connection and checks every precondition the relay
// needs, turning each failure into one actionable line:
//   FailedPrecondition  wal_level not logical (on 19: not replica or
//                       logical; CheckLogicalDecoding), the plugin not allowed
//                       by output_plugin_libraries or not installed, or its
//                       setup missing (pgoutput's publication), no
//                       REPLICATION privilege, slot missing (create_slot off,
//                       or the SlotMarker refuses to create it anew), slot
//                       made with another plugin or for another database,
//                       slot invalidated (wal_status lost, in the words of
//                       its invalidation_reason), outbox table or
//                       column missing
//   Unavailable         server unreachable, or the slot is held by another
//                       process (a hot standby waits on this and retries)
// On PostgreSQL 17+ (a primary, ReplicationOptions::failover_slot) the
// slot it creates or finds has failover enabled before START_REPLICATION.
// Start() then takes the slot (START_REPLICATION) and, once it holds it,
// records it in the SlotMarker (so a standby, or an instance that lost the
// race for the slot, never writes the marker); a second Start() from the
// same position is a no-op (SessionFactory starts the stream before it
// creates the producer; the Relay starts it again). Read() never blocks. Both
// turn the server's "can no longer get changes from replication slot" and
// "requested WAL segment ... has already been removed" into FailedPrecondition
// naming the slot and its last confirmed LSN: no retry brings that WAL back.
//
// Inspect() (`outbox-relay validate --connect`) runs the same checks with
// ReplicationOptions::read_only, each as its own line, and never takes the
// slot: it creates, alters and records nothing (no slot, no publication, no
// failover, no marker) and reports what Connect() would do about them. A
// missing slot is checked against the slot marker when one is given (its
// CheckCreate(): the refusal Connect() would return).
//
// Threading: one thread owns an instance. Connection plumbing is
// PgConnection's; this is the only file that drives the CopyBoth stream.
#ifndef OUTBOX_PG_LIBPQ_REPLICATION_STREAM_H_
#define OUTBOX_PG_LIBPQ_REPLICATION_STREAM_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "outbox/replication_stream.h"
#include "pg/pg_connection.h"
#include "pg/server_checks.h"
#include "pg/slot_loss.h"
#include "pg/slot_marker.h"
#include "plugin/output_plugin.h"

namespace outbox {

struct ReplicationOptions {
  std::string conninfo;  // libpq conninfo or URI; "" = PG* environment
  std::string slot = "outbox_relay";
  // Create the slot when it is missing, if `slot_marker` (when set) agrees.
  bool create_slot = true;
  // PostgreSQL 17+ on a primary: create the slot with FAILOVER, and enable
  // it (ALTER_REPLICATION_SLOT) on an existing slot without it, so standbys
  // with sync_replication_slots keep a copy that survives promotion.
  // Ignored on 16 and older, and on a standby (which refuses it).
  bool failover_slot = true;
  // Remembers the slot and decides whether a missing one may be created
  // (see slot_marker.h). Not owned; null: create whenever missing.
  SlotMarker* slot_marker = nullptr;
  // Tables to stream, each with the columns that must exist.
  struct Table {
    std::string schema;
    std::string name;
    std::vector<std::string> required_columns;
  };
  std::vector<Table> tables;
  // The output plugin the slot uses and the stream speaks (its checks,
  // START_REPLICATION options and hints). Not owned; required.
  OutputPlugin* plugin = nullptr;
  int connect_timeout_s = 10;  // libpq connect_timeout; 0 waits for ever
  // PgConnectOptions::tcp_user_timeout_ms: with a status update every
  // status_interval_ms, a connection whose path dropped (half-open) fails
  // within about this long, and the relay reconnects.
  int tcp_user_timeout_ms = 60000;
  // application_name shown in pg_stat_replication.
  std::string application_name = "outbox-relay";
  // Inspect() sets it: read only. A missing slot create_slot allows, a
  // slot without failover, an invalidated slot are reported, not created,
  // altered or recorded; a slot in use is not waited for.
  bool read_only = false;
};

struct ServerInfo {
  std::string endpoint;  // host:port of the connection (PgConnection)
  std::string system_id;
  int timeline = 0;
  Lsn xlogpos = kInvalidLsn;
  std::string dbname;
  std::string version;  // server_version
  int version_num = 0;  // server_version_num
  Lsn slot_confirmed_flush = kInvalidLsn;
  Lsn slot_restart = kInvalidLsn;
  bool slot_created = false;
  // Read only (Inspect()): the slot does not exist; Connect() would create
  // it.
  bool slot_missing = false;
  bool in_recovery = false;            // pg_is_in_recovery(): a standby
  bool slot_failover = false;          // the slot has failover (17+)
  bool slot_failover_enabled = false;  // EnsureSlot() turned it on
  // idle_replication_slot_timeout (18+) in seconds; 0: off or none.
  int64_t idle_slot_timeout_s = 0;
};

class LibpqReplicationStream : public ReplicationStream {
 public:
  static absl::StatusOr<std::unique_ptr<LibpqReplicationStream>> Connect(
      const ReplicationOptions& options);
  ~LibpqReplicationStream() override;

  // The start-up checks of Connect(), read only (see the file comment), in
  // order: "postgres" (the replication connection, hence the REPLICATION
  // privilege), "wal_level", "plugin" (allowed, its setup: pgoutput's
  // publication), "tables" (each outbox table and its columns), "slot".
  // After a failed "postgres" nothing else is checked. The plugin's
  // Prepare() runs with PluginOptions::read_only set by the caller.
  static std::vector<StartupCheck> Inspect(ReplicationOptions options);

  const ServerInfo& server() const { return server_; }

  // The content of the history file of the server's timeline
  // (TIMELINE_HISTORY): how it forked from its ancestors. "" on timeline 1,
  // which has none. Before Start() only.
  absl::StatusOr<std::string> TimelineHistory();

  absl::Status Start(Lsn start) override;
  absl::StatusOr<bool> Read(StreamMessage* out) override;
  absl::Status SendStatus(Lsn received, Lsn flushed,
                          bool reply_requested) override;
  int socket() const override;
  absl::Status Stop() override;

  // The server settings of the replication connection, after the user's
  // own options so they win (PgConnectOptions::settings): TimeZone=UTC and
  // DateStyle=ISO fix timestamp text for the decoders, bytea_output=hex
  // keeps bytea intact (wal2json strips two characters assuming "\x";
  // pgoutput sends the text), extra_float_digits=3 makes the walsender's
  // float text the shortest exact form pgoutput_binary formats (at 0 or
  // below it would round, and records would depend on the transfer mode;
  // 3 is also what pgjdbc, hence Debezium, sends), whatever the role or
  // database sets.
  static constexpr char kServerSettings[] =
      "-c TimeZone=UTC -c DateStyle=ISO -c bytea_output=hex "
      "-c extra_float_digits=3";

 private:
  LibpqReplicationStream(std::unique_ptr<PgConnection> conn,
                         ReplicationOptions options)
      : db_(std::move(conn)), conn_(db_->raw()), options_(std::move(options)) {}
  absl::Status CheckServer();
  // IDENTIFY_SYSTEM and the settings CheckServer() decides on.
  absl::Status ReadServer(WalLevelReport* wal);
  // Options from Connect() for the connection.
  static absl::StatusOr<std::unique_ptr<PgConnection>> Open(
      const ReplicationOptions& options);
  absl::Status CheckTables();
  absl::Status EnsureSlot();
  // The slot was found invalidated: records it in the marker unless it is
  // `active` (held by another process).
  absl::Status RecordInvalidated(bool active);
  // Whether the slot should have failover (see failover_slot).
  bool WantsFailover() const;

  PluginServer PluginInfo() const {
    return {server_.version_num, server_.dbname};
  }
  // The plugin (and publication) a slot loss's fix names.
  SlotPlugin SlotPluginOf() const {
    return {options_.plugin->name(), options_.plugin->publication()};
  }
  // A server error, with the plugin's hint where it has one.
  absl::Status ServerError(absl::string_view context,
                           absl::string_view message) const;

  std::unique_ptr<PgConnection> db_;
  pg_conn* conn_;  // db_'s, for the CopyBoth calls
  ReplicationOptions options_;
  ServerInfo server_;
  // A server error during Start() or Read(), rewritten when it says the
  // slot was invalidated.
  absl::Status StreamError(absl::Status st) const;

  char* buffer_ = nullptr;  // last PQgetCopyData buffer, freed on next Read
  bool streaming_ = false;
  Lsn started_at_ = kInvalidLsn;  // Start()'s position once streaming
  Lsn flushed_ = kInvalidLsn;     // highest flush position sent
};

// True for the Unavailable that Connect() or Start() return while another
// process (another relay instance) holds the slot: a standby's wait.
bool IsSlotInUse(const absl::Status& status);

}  // namespace outbox

#endif  // OUTBOX_PG_LIBPQ_REPLICATION_STREAM_H_
