// The postgres.* keys of the configuration key table (see
// config_key_table.h).
#include "config/config_key_table.h"
#include "config/config_keys.h"

namespace outbox::config_key_table {

void AddPostgresKeys(KeyAppender add) {
  add(Global("postgres.conninfo", G(postgres.conninfo),
             "libpq conninfo string or URI of the database holding the outbox; "
             "empty uses libpq's PG* environment variables")
          .Secret());
  add(Global("postgres.password_file", G(postgres.password_file),
             "file holding the password for postgres.conninfo (a mounted "
             "secret), read at start; trailing newlines are dropped; "
             "postgres.conninfo must not hold a password itself"));
  add(Global("postgres.slot", G(postgres.slot),
             "logical replication slot name (lowercase letters, digits, "
             "underscore)")
          .For(kRelayOnly));
  add(Global("postgres.plugin", G(postgres.plugin),
             "logical decoding output plugin: wal2json (an extension the "
             "server must have) | pgoutput (built into PostgreSQL; needs "
             "postgres.publication)")
          .For(kRelayOnly));
  add(Global("postgres.publication", G(postgres.publication),
             "pgoutput only: the publication to stream; it must publish "
             "inserts and cover every outbox table")
          .For(kRelayOnly));
  add(Global("postgres.create_publication", G(postgres.create_publication),
             "pgoutput only: create a missing publication (FOR TABLE <outbox "
             "tables> WITH (publish = 'insert'), needs ownership of the "
             "tables); false: refuse with the SQL to run")
          .For(kRelayOnly));
  add(Global("postgres.pgoutput_binary", G(postgres.pgoutput_binary),
             "pgoutput only: stream column values in their binary send format "
             "(PostgreSQL 14+), which moves text formatting from the "
             "walsender to the relay; the records are the same. auto: where "
             "the server is 14+ and every column of the outbox tables has a "
             "type the relay can format (bool, integers, oid, numeric, "
             "float4/8, text types, json, jsonb, bytea, uuid, date, "
             "timestamp[tz]); a column of another type met later (ALTER "
             "TABLE) restarts the session in text, logged once | on: refuse "
             "to start where that is not so | off: text")
          .For(kRelayOnly));
  add(Global("postgres.create_slot", G(postgres.create_slot),
             "create the slot (with postgres.plugin) when it does not exist, "
             "on a first "
             "run only: a slot the relay has streamed from before (see "
             "postgres.state_dir) is never created anew; false: never create")
          .For(kRelayOnly));
  add(Global("postgres.failover_slot", G(postgres.failover_slot),
             "PostgreSQL 17+: create the slot with failover enabled (and "
             "enable it on an existing slot), and check at start and every "
             "minute that a failover would keep it (primary's "
             "synchronized_standby_slots; each standby's "
             "sync_replication_slots, hot_standby_feedback, "
             "primary_slot_name, dbname in primary_conninfo, the synced "
             "slot): one warning per unsafe setting; no effect on 16 and "
             "older")
          .For(kRelayOnly));
  add(Global("postgres.standby_conninfo", G(postgres.standby_conninfo),
             "standbys to check for failover readiness besides the other "
             "hosts of a multi-host postgres.conninfo: a libpq conninfo "
             "(host=a,b port=p,q for several); empty: none")
          .Secret()
          .For(kRelayOnly));
  add(Global("postgres.slot_marker", G(postgres.slot_marker),
             "where the slot marker lives: file (in postgres.state_dir) or "
             "kafka (the compacted topic kafka.state_topic, so instances "
             "need no disk of their own, e.g. Kubernetes pods)")
          .For(kRelayOnly));
  add(Global("postgres.standby_password_file",
             G(postgres.standby_password_file),
             "file holding the password for postgres.standby_conninfo, read "
             "at start, as postgres.password_file")
          .For(kRelayOnly));
  add(Global("postgres.state_dir", G(postgres.state_dir),
             "directory for the slot marker, which records the slot the relay "
             "streamed from so a dropped slot is not silently created anew; "
             "must outlive the relay (a volume in a container); empty: "
             "$XDG_STATE_HOME/outbox-relay or ~/.local/state/outbox-relay")
          .For(kRelayOnly));
  add(Global("postgres.acknowledge_slot_loss",
             G(postgres.acknowledge_slot_loss),
             "after the relay refused to create a lost slot anew: the LSN the "
             "refusal named; lets the relay create the slot (only for that "
             "loss). Then re-publish the events committed after it: "
             "outbox-relay republish --since <a time before the loss>")
          .For(kRelayOnly));
  add(Global("postgres.status_interval_ms", G(postgres.status_interval_ms),
             "interval between standby status updates sent to the server")
          .Min(1)
          .For(kRelayOnly));
  add(Global("postgres.read_coalesce_us", G(postgres.read_coalesce_us),
             "under load, wait this long between reads of the stream so one "
             "wake-up serves a batch of messages (less CPU per event, at most "
             "this much added latency); 0 reads each message as it arrives")
          .Min(0)
          .For(kRelayOnly));
  add(Global(
      "postgres.connect_timeout_s", G(postgres.connect_timeout_s),
      "libpq connect_timeout for each connection attempt; 0 waits forever"));
  add(Global("postgres.reconnect_backoff_initial_ms",
             G(postgres.reconnect_backoff_initial_ms),
             "first delay before reconnecting after a lost connection")
          .Min(1)
          .For(kDaemons));
  add(Global("postgres.reconnect_backoff_max_ms",
             G(postgres.reconnect_backoff_max_ms),
             "cap of the doubling reconnect delay")
          .Min(1)
          .For(kDaemons));
  add(Global("postgres.standby_retry_ms", G(postgres.standby_retry_ms),
             "a standby (another instance holds the slot) tries the slot "
             "this often: the delay of a takeover when the active instance "
             "dies")
          .Min(1)
          .For(kRelayOnly));
  add(Global("postgres.heartbeat_interval_s", G(postgres.heartbeat_interval_s),
             "emit a logical message of the relay's own (prefix "
             "outbox-relay-heartbeat) this often over a normal connection and "
             "time its way back through the slot; it also moves the slot on an "
             "idle database. 0: no heartbeat")
          .Min(0)
          .For(kRelayOnly));
  add(Global("postgres.heartbeat_timeout_s", G(postgres.heartbeat_timeout_s),
             "with heartbeats: /readyz fails when one has not come back for "
             "this long and nothing else arrived from the stream either (the "
             "walsender stopped delivering)")
          .Min(1)
          .For(kRelayOnly));
}

}  // namespace outbox::config_key_table
