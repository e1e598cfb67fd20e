#include "pg/libpq_replication_stream.h"

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/strings.h"
#include "outbox/clock.h"
#include "outbox/status_macros.h"
#include "pg/server_checks.h"
#include "pg/slot_loss.h"
#include "pg/wal_protocol.h"

namespace outbox {
namespace {

constexpr char kSlotInUsePayload[] = "outbox.dev/slot-in-use";

absl::Status SlotInUse(absl::string_view message) {
  absl::Status s = absl::UnavailableError(message);
  s.SetPayload(kSlotInUsePayload, absl::Cord("1"));
  return s;
}

}  // namespace

absl::Status LibpqReplicationStream::ServerError(
    absl::string_view context, absl::string_view message) const {
  return options_.plugin->Explain(ClassifyServerError(context, message));
}

absl::StatusOr<std::unique_ptr<PgConnection>> LibpqReplicationStream::Open(
    const ReplicationOptions& options) {
  if (!IsValidSlotName(options.slot)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid slot name \"", options.slot,
                     "\": use lower case letters, digits and '_' (max 63)"));
  }
  if (options.plugin == nullptr) {
    return absl::InvalidArgumentError("no output plugin configured");
  }
  PgConnectOptions connect;
  connect.conninfo = options.conninfo;
  connect.application_name = options.application_name;
  connect.connect_timeout_s = options.connect_timeout_s;
  connect.tcp_user_timeout_ms = options.tcp_user_timeout_ms;
  connect.replication = true;
  connect.settings = kServerSettings;
  absl::StatusOr<std::unique_ptr<PgConnection>> conn =
      PgConnection::Connect(connect);
  if (!conn.ok()) return options.plugin->Explain(conn.status());
  return conn;
}

absl::StatusOr<std::unique_ptr<LibpqReplicationStream>>
LibpqReplicationStream::Connect(const ReplicationOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> conn, Open(options));
  std::unique_ptr<LibpqReplicationStream> stream(
      new LibpqReplicationStream(std::move(conn), options));
  RETURN_IF_ERROR(stream->CheckServer());
  RETURN_IF_ERROR(stream->CheckTables());
  RETURN_IF_ERROR(stream->EnsureSlot());
  return stream;
}

std::vector<StartupCheck> LibpqReplicationStream::Inspect(
    ReplicationOptions options) {
  options.read_only = true;
  // options.slot_marker, when set, is asked CheckCreate() for a missing
  // slot (as Connect() asks it); Record() is Start()'s, never reached here.
  std::vector<StartupCheck> out;
  absl::StatusOr<std::unique_ptr<PgConnection>> conn = Open(options);
  if (!conn.ok()) {
    out.push_back({"postgres", conn.status(), ""});
    return out;
  }
  std::unique_ptr<LibpqReplicationStream> stream(
      new LibpqReplicationStream(std::move(*conn), options));
  const ServerInfo& server = stream->server_;
  WalLevelReport wal;
  absl::Status read = stream->ReadServer(&wal);
  out.push_back(
      {"postgres", read,
       absl::StrCat("replication connection to ", server.endpoint,
                    ", PostgreSQL ", server.version, ", database ",
                    server.dbname, ", system identifier ", server.system_id,
                    server.in_recovery ? " (a standby)" : "")});
  if (!read.ok()) return out;
  out.push_back({"wal_level", CheckLogicalDecoding(wal),
                 absl::StrCat("wal_level is ", wal.wal_level,
                              wal.effective_wal_level.has_value()
                                  ? absl::StrCat(" (effective ",
                                                 *wal.effective_wal_level, ")")
                                  : "")});
  // Read only, the plugin answers NotFound for the setup Connect() would
  // make (pgoutput's publication): not a failure, what will happen.
  absl::Status plugin =
      options.plugin->Prepare(*stream->db_, stream->PluginInfo());
  if (absl::IsNotFound(plugin)) {
    out.push_back(
        {"plugin", absl::OkStatus(),
         absl::StrCat(options.plugin->name(), ": ", plugin.message())});
  } else {
    const absl::string_view pub = options.plugin->publication();
    out.push_back(
        {"plugin", plugin,
         absl::StrCat(options.plugin->name(), " is allowed",
                      pub.empty()
                          ? ""
                          : absl::StrCat("; publication \"", pub,
                                         "\" publishes the outbox "
                                         "tables as the relay needs"))});
  }
  std::vector<std::string> tables;
  for (const auto& t : options.tables) {
    tables.push_back(absl::StrCat(t.schema, ".", t.name));
  }
  out.push_back({"tables", stream->CheckTables(),
                 tables.empty()
                     ? "none configured (the tableless outbox)"
                     : absl::StrCat(absl::StrJoin(tables, ", "),
                                    " exist with the mapped columns")});
  absl::Status slot = stream->EnsureSlot();
  std::string slot_detail;
  if (IsSlotInUse(slot)) {
    slot_detail = absl::StrCat(slot.message(),
                               " (this instance would wait as a standby)");
    slot = absl::OkStatus();
  } else if (!slot.ok()) {
  } else if (server.slot_missing) {
    slot_detail = absl::StrCat("\"", options.slot,
                               "\" does not exist; the relay creates it at "
                               "its first start (plugin ",
                               options.plugin->name(), ")");
  } else {
    slot_detail = absl::StrCat(
        "\"", options.slot, "\" exists (", options.plugin->name(),
        ", database ", server.dbname, "), free, confirmed_flush_lsn ",
        FormatLsn(server.slot_confirmed_flush),
        stream->WantsFailover() && !server.slot_failover
            ? "; the relay enables failover on it at start"
            : "");
  }
  out.push_back({"slot", slot, slot_detail});
  return out;
}

LibpqReplicationStream::~LibpqReplicationStream() {
  if (buffer_ != nullptr) PQfreemem(buffer_);
}

absl::StatusOr<std::string> LibpqReplicationStream::TimelineHistory() {
  if (server_.timeline <= 1) return std::string();
  ASSIGN_OR_RETURN(PgResult res, db_->Query(absl::StrCat("TIMELINE_HISTORY ",
                                                         server_.timeline)));
  if (PgConnection::Rows(res) != 1 || PQnfields(res.get()) < 2) {
    return absl::InternalError("unexpected TIMELINE_HISTORY reply");
  }
  return PgConnection::Value(res, 0, 1);
}

absl::Status LibpqReplicationStream::ReadServer(WalLevelReport* wal_out) {
  server_.endpoint = db_->Endpoint();
  {
    ASSIGN_OR_RETURN(PgResult res, db_->Query("IDENTIFY_SYSTEM"));
    if (PgConnection::Rows(res) != 1 || PQnfields(res.get()) < 4) {
      return absl::InternalError("unexpected IDENTIFY_SYSTEM reply");
    }
    server_.system_id = PgConnection::Value(res, 0, 0);
    server_.timeline = atoi(PgConnection::Value(res, 0, 1).c_str());
    ASSIGN_OR_RETURN(server_.xlogpos, ParseLsn(PgConnection::Value(res, 0, 2)));
    server_.dbname = PgConnection::Value(res, 0, 3);
  }
  // effective_wal_level: PostgreSQL 19; idle_replication_slot_timeout: 18.
  // NULL where the server has no such setting.
  ASSIGN_OR_RETURN(
      PgResult res,
      db_->Query("SELECT current_setting('wal_level'), "
                 "current_setting('server_version'), "
                 "current_setting('server_version_num')::int, "
                 "pg_is_in_recovery(), "
                 "current_setting('effective_wal_level', true), "
                 "extract(epoch FROM current_setting("
                 "'idle_replication_slot_timeout', true)::interval)::bigint"));
  WalLevelReport wal;
  wal.wal_level = PgConnection::Value(res, 0, 0);
  server_.version = PgConnection::Value(res, 0, 1);
  server_.version_num = atoi(PgConnection::Value(res, 0, 2).c_str());
  server_.in_recovery = PgConnection::Value(res, 0, 3) == "t";
  wal.in_recovery = server_.in_recovery;
  if (!PgConnection::IsNull(res, 0, 4)) {
    wal.effective_wal_level = PgConnection::Value(res, 0, 4);
  }
  if (!PgConnection::IsNull(res, 0, 5)) {
    server_.idle_slot_timeout_s = atoll(PgConnection::Value(res, 0, 5).c_str());
  }
  *wal_out = std::move(wal);
  return absl::OkStatus();
}

absl::Status LibpqReplicationStream::CheckServer() {
  WalLevelReport wal;
  RETURN_IF_ERROR(ReadServer(&wal));
  RETURN_IF_ERROR(CheckLogicalDecoding(wal));
  return options_.plugin->Prepare(*db_, PluginInfo());
}

absl::Status LibpqReplicationStream::CheckTables() {
  for (const auto& t : options_.tables) {
    std::string qualified =
        absl::StrCat(db_->Literal(t.schema), ", ", db_->Literal(t.name));
    ASSIGN_OR_RETURN(
        PgResult res,
        db_->Query(absl::StrCat("SELECT a.attname FROM pg_catalog.pg_class c "
                                "JOIN pg_catalog.pg_namespace n ON n.oid = "
                                "c.relnamespace LEFT JOIN "
                                "pg_catalog.pg_attribute a ON a.attrelid = "
                                "c.oid AND a.attnum > 0 AND NOT "
                                "a.attisdropped WHERE (n.nspname, c.relname) "
                                "= (",
                                qualified, ")")));
    if (PgConnection::Rows(res) == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("outbox table ", t.schema, ".", t.name,
                       " does not exist in database ", server_.dbname));
    }
    std::vector<std::string> have;
    for (int i = 0; i < PgConnection::Rows(res); ++i) {
      have.push_back(PgConnection::Value(res, i, 0));
    }
    for (const auto& col : t.required_columns) {
      if (std::find(have.begin(), have.end(), col) == have.end()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "outbox table ", t.schema, ".", t.name, " has no column \"", col,
            "\" (columns: ", absl::StrJoin(have, ", "),
            "); fix the table or outbox.columns in the config"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status LibpqReplicationStream::EnsureSlot() {
  ASSIGN_OR_RETURN(PgResult res,
                   db_->Query(absl::StrCat(
                       "SELECT plugin, slot_type, database, active_pid, "
                       "confirmed_flush_lsn, restart_lsn, wal_status, "
                       // NULL before 17, which has no failover column.
                       "to_jsonb(s) ->> 'failover', "
                       // NULL before 17, which has no invalidation_reason.
                       "to_jsonb(s) ->> 'invalidation_reason' FROM "
                       "pg_catalog.pg_replication_slots s WHERE slot_name = ",
                       db_->Literal(options_.slot))));
  if (PgConnection::Rows(res) == 0) {
    if (!options_.create_slot) {
      return absl::FailedPreconditionError(absl::StrCat(
          "replication slot \"", options_.slot, "\" does not exist: create it ",
          CreateSlotByHand(options_.slot, SlotPluginOf())));
    }
    if (options_.slot_marker != nullptr) {
      RETURN_IF_ERROR(options_.slot_marker->CheckCreate(server_));
    }
    if (options_.read_only) {
      server_.slot_missing = true;  // Inspect() says so
      return absl::OkStatus();
    }
    // PostgreSQL 15 added the parenthesised options; 14 has only the old
    // keyword syntax; 17 the FAILOVER option.
    const bool failover = WantsFailover();
    absl::StatusOr<PgResult> created = db_->Query(
        absl::StrCat("CREATE_REPLICATION_SLOT \"", options_.slot, "\" LOGICAL ",
                     options_.plugin->name(),
                     failover ? " (FAILOVER true, SNAPSHOT 'nothing')"
                     : server_.version_num >= 150000 ? " (SNAPSHOT 'nothing')"
                                                     : " NOEXPORT_SNAPSHOT"));
    if (!created.ok()) return options_.plugin->Explain(created.status());
    server_.slot_failover = failover;
    ASSIGN_OR_RETURN(server_.slot_confirmed_flush,
                     ParseLsn(PgConnection::Value(*created, 0, 1)));
    server_.slot_restart = server_.slot_confirmed_flush;
    server_.slot_created = true;
    // Recorded by Start(), once this connection holds the slot.
    return absl::OkStatus();
  }
  std::string plugin = PgConnection::Value(res, 0, 0);
  std::string type = PgConnection::Value(res, 0, 1);
  std::string database = PgConnection::Value(res, 0, 2);
  if (type != "logical" || plugin != options_.plugin->name()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "replication slot \"", options_.slot, "\" is a ", type,
        " slot with plugin '", plugin, "', not ", options_.plugin->name(),
        " as postgres.plugin says: set postgres.plugin: ", plugin,
        ", or drop the slot (SELECT pg_drop_replication_slot('", options_.slot,
        "')) or configure another postgres.slot"));
  }
  if (database != server_.dbname) {
    return absl::FailedPreconditionError(absl::StrCat(
        "replication slot \"", options_.slot, "\" belongs to database ",
        database, " but the relay is connected to ", server_.dbname));
  }
  if (!PgConnection::IsNull(res, 0, 4)) {
    ASSIGN_OR_RETURN(server_.slot_confirmed_flush,
                     ParseLsn(PgConnection::Value(res, 0, 4)));
  }
  if (!PgConnection::IsNull(res, 0, 5)) {
    ASSIGN_OR_RETURN(server_.slot_restart,
                     ParseLsn(PgConnection::Value(res, 0, 5)));
  }
  flushed_ = server_.slot_confirmed_flush;
  if (PgConnection::Value(res, 0, 6) == "lost") {
    RETURN_IF_ERROR(RecordInvalidated(!PgConnection::IsNull(res, 0, 3)));
    return absl::FailedPreconditionError(SlotInvalidatedMessage(
        options_.slot, SlotPluginOf(), server_.slot_confirmed_flush,
        options_.create_slot, "pg_replication_slots.wal_status is 'lost'",
        PgConnection::Value(res, 0, 8)));
  }
  if (!PgConnection::IsNull(res, 0, 3)) {
    if (options_.slot_marker != nullptr && !options_.read_only) {
      RETURN_IF_ERROR(options_.slot_marker->Seen(server_));
    }
    return SlotInUse(
        absl::StrCat("replication slot \"", options_.slot,
                     "\" is in use by process ", PgConnection::Value(res, 0, 3),
                     " (another relay instance?); waiting for it"));
  }
  server_.slot_failover = PgConnection::Value(res, 0, 7) == "true";
  if (WantsFailover() && !server_.slot_failover && !options_.read_only) {
    // Free (checked above), so the walsender can take it to alter it.
    absl::StatusOr<PgResult> altered = db_->Query(absl::StrCat(
        "ALTER_REPLICATION_SLOT \"", options_.slot, "\" (FAILOVER true)"));
    if (!altered.ok()) {
      return ServerError(absl::StrCat("cannot enable failover on replication "
                                      "slot \"",
                                      options_.slot,
                                      "\" (set postgres.failover_slot: false "
                                      "to leave it off)"),
                         altered.status().message());
    }
    server_.slot_failover = server_.slot_failover_enabled = true;
  }
  return absl::OkStatus();
}

absl::Status LibpqReplicationStream::RecordInvalidated(bool active) {
  // Nobody streams an invalidated slot, so no holder records it: the
  // instance that finds it (free) records the position its refusal names,
  // so that postgres.acknowledge_slot_loss=<that LSN> matches the marker
  // once the slot is dropped.
  if (options_.slot_marker == nullptr || active || options_.read_only) {
    return absl::OkStatus();  // (read only: Inspect() writes nothing)
  }
  return options_.slot_marker->Record(server_);
}

bool LibpqReplicationStream::WantsFailover() const {
  // A standby refuses failover on its own slots (PostgreSQL syncs only
  // the primary's).
  return options_.failover_slot && server_.version_num >= 170000 &&
         !server_.in_recovery;
}

absl::Status LibpqReplicationStream::StreamError(absl::Status st) const {
  if (!IsSlotInvalidatedError(st.message())) return st;
  return absl::FailedPreconditionError(SlotInvalidatedMessage(
      options_.slot, SlotPluginOf(), flushed_, options_.create_slot,
      absl::StrCat("server said: ", st.message())));
}

absl::Status LibpqReplicationStream::Start(Lsn start) {
  if (streaming_) {
    if (start == started_at_) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat("the replication stream already started at ",
                     FormatLsn(started_at_), ", not ", FormatLsn(start)));
  }
  std::string cmd = absl::StrCat(
      "START_REPLICATION SLOT \"", options_.slot, "\" LOGICAL ",
      FormatLsn(start), " (", options_.plugin->StartOptions(PluginInfo()), ")");
  PGresult* res = PQexec(conn_, cmd.c_str());
  if (PQresultStatus(res) != PGRES_COPY_BOTH) {
    absl::Status st =
        ServerError("START_REPLICATION failed",
                    res ? PQresultErrorMessage(res) : PQerrorMessage(conn_));
    if (absl::StrContains(st.message(), "is active for PID")) {
      absl::Status seen = options_.slot_marker != nullptr
                              ? options_.slot_marker->Seen(server_)
                              : absl::OkStatus();
      st = seen.ok() ? SlotInUse(st.message()) : seen;
    }
    PQclear(res);
    const bool invalidated = IsSlotInvalidatedError(st.message());
    st = StreamError(st);
    if (invalidated) RETURN_IF_ERROR(RecordInvalidated(false));
    return st;
  }
  PQclear(res);
  streaming_ = true;
  started_at_ = start;
  // Only the slot's holder writes the marker (a standby, or an instance that
  // lost the race to START_REPLICATION, never does): what it records is the
  // position this session streams from.
  if (options_.slot_marker != nullptr) {
    RETURN_IF_ERROR(options_.slot_marker->Record(server_));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> LibpqReplicationStream::Read(StreamMessage* out) {
  if (buffer_ != nullptr) {
    PQfreemem(buffer_);
    buffer_ = nullptr;
  }
  int n = PQgetCopyData(conn_, &buffer_, /*async=*/1);
  if (n == 0) {
    if (!PQconsumeInput(conn_)) {
      return StreamError(
          ServerError("replication connection lost", PQerrorMessage(conn_)));
    }
    n = PQgetCopyData(conn_, &buffer_, 1);
    if (n == 0) return false;
  }
  if (n == -1) {
    streaming_ = false;
    std::string msg = "server ended the replication stream";
    while (PGresult* res = PQgetResult(conn_)) {
      if (PQresultStatus(res) == PGRES_FATAL_ERROR) {
        msg = absl::StrCat(msg, ": ", OneLine(PQresultErrorMessage(res)));
      }
      PQclear(res);
    }
    return StreamError(absl::UnavailableError(msg));
  }
  if (n < 0) {
    return StreamError(
        ServerError("replication connection lost", PQerrorMessage(conn_)));
  }
  ASSIGN_OR_RETURN(*out, ParseCopyData(absl::string_view(buffer_, n)));
  return true;
}

absl::Status LibpqReplicationStream::SendStatus(Lsn received, Lsn flushed,
                                                bool reply_requested) {
  flushed_ = std::max(flushed_, flushed);
  std::string msg = EncodeStandbyStatus(
      received, flushed, flushed, RealClock()->UnixMicros(), reply_requested);
  if (PQputCopyData(conn_, msg.data(), static_cast<int>(msg.size())) != 1 ||
      PQflush(conn_) != 0) {
    return ServerError("could not send status update", PQerrorMessage(conn_));
  }
  return absl::OkStatus();
}

int LibpqReplicationStream::socket() const { return PQsocket(conn_); }

absl::Status LibpqReplicationStream::Stop() {
  if (!streaming_) return absl::OkStatus();
  streaming_ = false;
  if (PQputCopyEnd(conn_, nullptr) != 1 || PQflush(conn_) != 0) {
    return ServerError("could not end the stream", PQerrorMessage(conn_));
  }
  // Drain until the server's CopyDone, bounded: the walsender may still be
  // sending data queued before it saw ours.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    if (buffer_ != nullptr) {
      PQfreemem(buffer_);
      buffer_ = nullptr;
    }
    int n = PQgetCopyData(conn_, &buffer_, 1);
    if (n > 0) continue;
    if (n < 0) break;
    pollfd pfd{PQsocket(conn_), POLLIN, 0};
    poll(&pfd, 1, 100);
    if (!PQconsumeInput(conn_)) break;
  }
  while (PGresult* res = PQgetResult(conn_)) PQclear(res);
  return absl::OkStatus();
}

bool IsSlotInUse(const absl::Status& status) {
  return absl::IsUnavailable(status) &&
         status.GetPayload(kSlotInUsePayload).has_value();
}

}  // namespace outbox
