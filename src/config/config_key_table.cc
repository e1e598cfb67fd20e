// BuildKeys: every configuration key of config_keys.h, in the order the
// reference lists them (docs/reference/configuration.md is generated from
// it): its path, field accessor, default and description, and which tools
// read it. The rest of config_keys.h (lookup, parsing, rendering) is
// config_keys.cc.
#include "config/config_key_table.h"

#include <optional>

#include "config/config_keys.h"

namespace outbox {
namespace {

template <typename T>
T* Touch(std::optional<T>& o) {
  if (!o.has_value()) o.emplace();
  return &*o;
}

// Accessor shorthands: G(expr) for a Config field, T(expr) for a table one.
#define G(expr) [](Config& c) -> FieldRef { return &c.expr; }
#define T(expr) [](TableDraft& t) -> FieldRef { return Touch(t.expr); }

ConfigKey Global(absl::string_view path, FieldRef (*global)(Config&),
                 absl::string_view description) {
  ConfigKey k;
  k.path = path;
  k.description = description;
  k.global = global;
  return k;
}

ConfigKey Table(absl::string_view path, FieldRef (*table)(TableDraft&),
                absl::string_view default_text, absl::string_view description) {
  ConfigKey k;
  k.path = path;
  k.description = description;
  k.table = table;
  k.default_text = default_text;
  return k;
}

ConfigKey List(absl::string_view path, absl::string_view default_text,
               absl::string_view description) {
  ConfigKey k;
  k.path = path;
  k.description = description;
  k.default_text = default_text;
  return k;
}

}  // namespace

std::vector<ConfigKey> BuildKeys() {
  std::vector<ConfigKey> k;
  auto add = [&k](ConfigKey key) { k.push_back(key); };
  // postgres
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
             "walsender to the relay; the records, dead letters included, are "
             "the same (the replication connection pins extra_float_digits=3 "
             "so floats do not depend on it). auto: where "
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
  add(Global("postgres.slot_marker_id", G(postgres.slot_marker_id),
             "slot_marker kafka (required there): this relay's name, unique "
             "among the relays sharing kafka.state_topic and kept for its "
             "life (the Helm chart uses <namespace>/<release>/<database "
             "entry>); the marker's key is <slot_marker_id>/<slot>, so a "
             "server with a new system identifier (pg_upgrade, a restore) "
             "finds the marker and is refused, and relays of other clusters "
             "never read it. A marker an older relay wrote under <system "
             "identifier>/<slot> is read when this key has none")
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
  add(Global("postgres.tcp_user_timeout_ms", G(postgres.tcp_user_timeout_ms),
             "the replication connection's libpq tcp_user_timeout: a "
             "connection whose packets are dropped (half-open: a network "
             "partition, a host gone without closing it) fails after this "
             "long without acknowledgement and the relay reconnects, where "
             "keepalives alone would wait for tcp_retries2 (about 15 min); "
             "0 is the system's default")
          .Min(0)
          .For(kRelayOnly));
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
  add(Global("postgres.expected_outage_s", G(postgres.expected_outage_s),
             "the longest outage of the relay (every instance down) the slot "
             "must survive: at start the relay warns when PostgreSQL 18's "
             "idle_replication_slot_timeout is set and shorter, since the "
             "server then invalidates a slot nobody streams from for that "
             "long; 0: no check")
          .Min(0)
          .For(kRelayOnly));
  add(Global("postgres.heartbeat_timeout_s", G(postgres.heartbeat_timeout_s),
             "with heartbeats: /readyz fails when one has not come back for "
             "this long and nothing else arrived from the stream either (the "
             "walsender stopped delivering)")
          .Min(1)
          .For(kRelayOnly));
  // outbox defaults
  add(Global("outbox.columns.id", G(outbox.columns.id),
             "event id column, sent in header \"id\" (inherited by tables)"));
  add(Global("outbox.columns.aggregatetype", G(outbox.columns.aggregatetype),
             "aggregate type column (inherited by tables)"));
  add(Global("outbox.columns.aggregateid", G(outbox.columns.aggregateid),
             "aggregate id column, the default key (inherited by tables)"));
  add(Global("outbox.columns.type", G(outbox.columns.type),
             "event type column (inherited by tables)"));
  add(Global("outbox.columns.payload", G(outbox.columns.payload),
             "payload column, the record value (inherited by tables)"));
  add(Global("outbox.columns.time", G(outbox.columns.time),
             "the event's creation time, which --since and --until compare "
             "(re-publishing and auditing): timestamptz, "
             "timestamp (read as UTC) or an integer of Unix milliseconds; a "
             "table without it takes the other selectors (inherited by "
             "tables)")
          .For(kRelayOnly | ToolBit(Tool::kAudit)));
  add(Global("outbox.columns.seq", G(outbox.columns.seq),
             "an integer column in creation order (an identity or serial), "
             "which --seq-from and --seq-to compare and which orders the "
             "events (re-publishing and auditing); a table "
             "without it is ordered by the time column (inherited by tables)")
          .For(kRelayOnly | ToolBit(Tool::kAudit)));
  add(Global("outbox.topic", G(outbox.topic),
             "topic template: {column} is replaced by that column's value, {{ "
             "and }} are literal braces (inherited by tables)"));
  add(Global("outbox.key", G(outbox.key),
             "column whose value is the record key; empty means the "
             "aggregateid column (inherited by tables)"));
  add(Global("outbox.headers", G(outbox.headers),
             "map of column -> header name added to every record (inherited by "
             "tables); the event id is always header \"id\"")
          .For(kDaemons));
  add(Global("outbox.on_invalid", G(outbox.on_invalid),
             "what to do with a row that cannot become a record: halt | "
             "dead_letter")
          .For(kDaemons));
  add(Global("outbox.dead_letter_topic", G(outbox.dead_letter_topic),
             "topic for invalid rows when on_invalid is dead_letter")
          .For(kDaemons));
  add(Global("outbox.messages.enabled", G(outbox.messages.enabled),
             "the tableless outbox: transactional logical decoding messages "
             "(pg_logical_emit_message) under outbox.messages.prefix are "
             "events, content as sql/outbox_emit.sql writes it; "
             "non-transactional ones are ignored and counted")
          .For(kRelayOnly));
  add(Global("outbox.messages.prefix", G(outbox.messages.prefix),
             "the logical message prefix whose messages are events (no ',', "
             "'\\' or whitespace)")
          .For(kRelayOnly));
  add(Global("outbox.messages.topic", G(outbox.messages.topic),
             "topic template for message events: {field} is that content "
             "field (id, aggregatetype, aggregateid, type)")
          .For(kRelayOnly));
  add(Global("outbox.compatibility", G(outbox.compatibility),
             "native | debezium: records byte-identical to Debezium's "
             "PostgreSQL connector with the Outbox Event Router and string "
             "converters (its __debezium.context.* headers before \"id\", "
             "see outbox.debezium.run_id; the processing time as timestamp, "
             "envelope fields as "
             "Struct{...} text)")
          .For(kDaemons));
  add(Global("outbox.debezium.connector_logical_name",
             G(outbox.debezium.connector_logical_name),
             "compatibility debezium: header "
             "__debezium.context.connectorLogicalName (Debezium's "
             "topic.prefix)")
          .For(kDaemons));
  add(Global("outbox.debezium.task_id", G(outbox.debezium.task_id),
             "compatibility debezium: header __debezium.context.taskId")
          .For(kDaemons));
  add(Global("outbox.debezium.connector_name",
             G(outbox.debezium.connector_name),
             "compatibility debezium: header __debezium.context.connectorName "
             "(the connector plugin's name)")
          .For(kDaemons));
  add(Global("outbox.debezium.run_id", G(outbox.debezium.run_id),
             "compatibility debezium: header __debezium.context.runId after "
             "connectorName, a UUIDv7 made once per process start, as "
             "Debezium 3.4 and later write; false: the three context headers "
             "of Debezium 3.3 and older (3.2)")
          .For(kDaemons));
  add(Global("outbox.timestamp", G(outbox.timestamp),
             "record timestamp: commit (the transaction's commit time) | "
             "produce (when the relay hands the record to Kafka) | auto "
             "(commit; produce under compatibility debezium); "
             "outbox.timestamp_column takes precedence")
          .For(kDaemons));
  add(Global("outbox.timestamp_column", G(outbox.timestamp_column),
             "column whose value is the record timestamp (timestamp, "
             "timestamptz, or integer Unix milliseconds); a NULL falls back to "
             "outbox.timestamp; empty: none")
          .For(kDaemons));
  add(Global("outbox.fields", G(outbox.fields),
             "extra columns placed in order, each column:header[:name], "
             "column:envelope[:name] (the value becomes {\"payload\": ..., "
             "name: ...}) or column:partition (an integer column picks the "
             "partition); a list or comma-separated")
          .List()
          .For(kDaemons));
  add(Global(
          "outbox.expand_json_payload", G(outbox.expand_json_payload),
          "publish a JSON object or array payload compacted (no "
          "whitespace outside strings); Debezium's expanded payload "
          "differs (docs/migration/debezium-mapping.md#what-is-not-identical)")
          .For(kDaemons));
  add(Global("outbox.tombstone_on_empty_payload",
             G(outbox.tombstone_on_empty_payload),
             "a NULL, empty or blank payload becomes a tombstone (null value) "
             "even when fields are placed in the envelope")
          .For(kDaemons));
  add(Global("outbox.on_update", G(outbox.on_update),
             "outbox-relay, an UPDATE of an outbox row: ignore | warn | error "
             "(log it, publish nothing) | halt (exit 4); anything but ignore "
             "decodes updates (pgoutput: the publication must publish them)")
          .For(kRelayOnly));
  add(Global("outbox.topic_regex", G(outbox.topic_regex),
             "route by regular expression instead of outbox.topic: a topic "
             "is the aggregatetype value, and when it matches this whole "
             "(ECMAScript syntax, (?<name>...) groups allowed) it becomes "
             "outbox.topic_replacement; empty: outbox.topic routes")
          .For(kDaemons));
  add(Global("outbox.topic_replacement", G(outbox.topic_replacement),
             "with outbox.topic_regex: the topic, where $1 or ${name} stands "
             "for a group of the match")
          .For(kDaemons));
  add(Global("outbox.schema_version_column", G(outbox.schema_version_column),
             "integer column Debezium puts in the value schema's version; "
             "records carry no schema, so it is checked to be an integer and "
             "changes no byte (as Debezium with a StringConverter); empty: "
             "none")
          .For(kDaemons));
  add(List(
      kTablesPath, "[public.outbox]",
      "outbox tables; each entry is a table name or a map of the keys below; "
      "empty only with outbox.messages.enabled (messages alone)"));
  add(Table(
      "outbox.tables[].table",
      [](TableDraft& t) -> FieldRef { return &t.table; }, "(required)",
      "table name, schema-qualified (schema defaults to public); required"));
  add(Table("outbox.tables[].columns.id", T(id), "(inherits outbox.columns.id)",
            "this table's event id column"));
  add(Table("outbox.tables[].columns.aggregatetype", T(aggregatetype),
            "(inherits outbox.columns.aggregatetype)",
            "this table's aggregate type column"));
  add(Table("outbox.tables[].columns.aggregateid", T(aggregateid),
            "(inherits outbox.columns.aggregateid)",
            "this table's aggregate id column"));
  add(Table("outbox.tables[].columns.type", T(type),
            "(inherits outbox.columns.type)",
            "this table's event type column"));
  add(Table("outbox.tables[].columns.payload", T(payload),
            "(inherits outbox.columns.payload)",
            "this table's payload column"));
  add(Table("outbox.tables[].columns.time", T(time),
            "(inherits outbox.columns.time)",
            "this table's creation time column")
          .For(kRelayOnly | ToolBit(Tool::kAudit)));
  add(Table("outbox.tables[].columns.seq", T(seq),
            "(inherits outbox.columns.seq)", "this table's sequence column")
          .For(kRelayOnly | ToolBit(Tool::kAudit)));
  add(Table("outbox.tables[].topic", T(topic), "(inherits outbox.topic)",
            "this table's topic template"));
  add(Table("outbox.tables[].key", T(key), "(inherits outbox.key)",
            "this table's key column"));
  add(Table(
          "outbox.tables[].headers", T(headers), "(inherits outbox.headers)",
          "this table's column -> header map; replaces outbox.headers entirely")
          .For(kDaemons));
  // kafka
  add(Global("kafka.brokers", G(kafka.brokers),
             "bootstrap brokers, host:port[,host:port...]"));
  add(Global("kafka.properties", G(kafka.properties),
             "librdkafka producer properties passed through verbatim "
             "(security.protocol, sasl.*, ssl.*, linger.ms, ...); entries "
             "merge with the defaults shown, an empty value removes one; "
             "NAME_file: a file whose content is property NAME, read at "
             "start (sasl.password_file, ssl.key.password_file, ...)"));
  add(Global("kafka.send_when_idle", G(kafka.send_when_idle),
             "once everything readable is produced, or the in-flight window "
             "is full, send what the producer holds at once instead of "
             "waiting out linger.ms: low latency at low rates, linger.ms "
             "batching under load")
          .For(kRelayOnly));
  add(Global("kafka.flush_timeout_ms", G(kafka.flush_timeout_ms),
             "how long shutdown waits for outstanding deliveries")
          .For(kDaemons));
  add(Global("kafka.allow_unsafe", G(kafka.allow_unsafe),
             "accept kafka.properties that weaken the delivery guarantees "
             "(acks below all, enable.idempotence=false, max.in.flight above "
             "5, a finite message.timeout.ms or retries, ...), each logged as "
             "a warning; false refuses them at start")
          .For(kDaemons));
  add(Global("kafka.exactly_once", G(kafka.exactly_once),
             "publish in Kafka transactions with a checkpoint record and "
             "confirm the slot only after commit: read_committed consumers "
             "see every event once, at the cost of up to "
             "kafka.transaction.max_ms more latency")
          .For(kRelayOnly));
  add(Global("kafka.transactional_id", G(kafka.transactional_id),
             "exactly_once: the producer's transactional.id; empty derives "
             "outbox-relay-<system identifier>-<slot>, so a standby fences a "
             "stale instance of the same slot")
          .For(kRelayOnly));
  add(Global("kafka.state_topic", G(kafka.state_topic),
             "postgres.slot_marker kafka: the compacted topic holding one "
             "slot marker per postgres.slot_marker_id and slot (created "
             "compacted when missing)")
          .For(kRelayOnly));
  add(Global("kafka.checkpoint_topic", G(kafka.checkpoint_topic),
             "exactly_once: the compacted topic holding one checkpoint per "
             "database and slot (created compacted when missing)")
          .For(kRelayOnly));
  add(Global("kafka.transaction.max_ms", G(kafka.transaction_max_ms),
             "exactly_once: commit the Kafka transaction at the first "
             "PostgreSQL commit after it has been open this long")
          .Min(1)
          .For(kRelayOnly));
  add(Global("kafka.transaction.backlog_ms", G(kafka.transaction_backlog_ms),
             "exactly_once: while the relay reads transactions committed "
             "this long ago or longer (a backlog), keep the Kafka "
             "transaction open up to this long instead of max_ms, and "
             "max_events grows by as much, up to half of split_events "
             "(fewer commits, each of which stops reading for its flush "
             "and round trip); <= max_ms: never")
          .Min(0)
          .For(kRelayOnly));
  add(Global("kafka.transaction.max_events", G(kafka.transaction_max_events),
             "exactly_once: or once it holds this many events")
          .Min(1)
          .For(kRelayOnly));
  add(Global("kafka.transaction.split_events",
             G(kafka.transaction_split_events),
             "exactly_once: split a PostgreSQL transaction (not atomic for "
             "consumers, still once) past this many events in one Kafka "
             "transaction")
          .Min(1)
          .For(kRelayOnly));
  add(Global("kafka.topic_creation.enable", G(kafka.topic_creation.enable),
             "create a topic the relay produces to (events, dead letters) "
             "when Kafka says it does not exist, with the settings below; "
             "false: the relay waits until someone creates it")
          .For(kDaemons));
  add(Global("kafka.topic_creation.partitions",
             G(kafka.topic_creation.partitions),
             "topic_creation: partitions of a created topic; -1 is the "
             "broker's num.partitions")
          .Min(-1)
          .For(kDaemons));
  add(Global("kafka.topic_creation.replication_factor",
             G(kafka.topic_creation.replication_factor),
             "topic_creation: replication factor of a created topic; -1 is "
             "the broker's default.replication.factor")
          .Min(-1)
          .For(kDaemons));
  add(Global("kafka.topic_creation.configs", G(kafka.topic_creation.configs),
             "topic_creation: topic configs of a created topic "
             "(cleanup.policy, retention.ms, min.insync.replicas, ...)")
          .For(kDaemons));
  add(Global("kafka.internal_topics.replication_factor",
             G(kafka.internal_topics.replication_factor),
             "replication factor of the topics the relay creates for itself "
             "when missing: kafka.checkpoint_topic, kafka.state_topic, and "
             "outbox.dead_letter_topic (created under kafka.topic_creation, "
             "whose settings apply to it otherwise); -1 is the cluster's "
             "default.replication.factor (for the dead-letter topic, "
             "kafka.topic_creation.replication_factor); an existing topic is "
             "never altered. At start a topic the relay depends on with "
             "replication factor 1 on a cluster of 3 or more brokers is "
             "logged as a warning (outbox_relay_unreplicated_topics)")
          .Min(-1)
          .For(kRelayOnly));
  add(Global("kafka.internal_topics.min_insync_replicas",
             G(kafka.internal_topics.min_insync_replicas),
             "min.insync.replicas of the topics "
             "kafka.internal_topics.replication_factor applies to, when the "
             "relay creates them; -1 is the cluster's min.insync.replicas "
             "(for the dead-letter topic, kafka.topic_creation.configs')")
          .Min(-1)
          .For(kRelayOnly));
  // limits
  add(Global("limits.max_inflight_events", G(limits.max_inflight_events),
             "events handed to Kafka but not yet acknowledged before reading "
             "pauses")
          .Min(1)
          .For(kRelayOnly));
  add(Global("limits.max_inflight_bytes", G(limits.max_inflight_bytes),
             "bytes handed to Kafka but not yet acknowledged before reading "
             "pauses: keys and values, plus 512 per record for what "
             "librdkafka and the relay hold beside them (KiB/MiB/GiB "
             "suffixes allowed)")
          .Min(1)
          .Bytes()
          .For(kRelayOnly));
  add(Global("limits.min_inflight_bytes", G(limits.min_inflight_bytes),
             "the floor of the in-flight byte window, which follows twice "
             "the delivery rate times the acknowledgement time up to "
             "limits.max_inflight_bytes; equal to it, a fixed window "
             "(KiB/MiB/GiB suffixes allowed)")
          .Min(1)
          .Bytes()
          .For(kRelayOnly));
  add(Global("limits.max_tracked_events", G(limits.max_tracked_events),
             "events read from the oldest one Kafka has not acknowledged on, "
             "acknowledged ones behind it included, before reading pauses: "
             "bounds memory when one event is stuck while later ones are "
             "delivered")
          .Min(1)
          .For(kRelayOnly));
  // http
  add(Global("http.listen", G(http.listen),
             "host:port for the status page (/), /status.json, /metrics, "
             "/healthz, /readyz and /activez; empty disables")
          .For(kDaemons));
  // POST /pause and /resume (docs/operations/pause.md).
  add(Global("http.control.enabled", G(http.control_enabled),
             "serve POST /pause and /resume on http.listen; false: 404")
          .For(kRelayOnly));
  add(Global("http.control.token_file", G(http.control_token_file),
             "file holding the bearer token POST /pause and /resume require "
             "(a mounted secret), read at start without trailing newlines; "
             "required when http.control.enabled")
          .For(kRelayOnly));
  // log
  add(Global("log.format", G(log.format), "text | json").For(kDaemons));
  add(Global("log.level", G(log.level), "debug | info | warn | error")
          .For(kDaemons));
  add(Global("log.progress_interval_s", G(log.progress_interval_s),
             "interval between progress lines; 0 disables")
          .For(kDaemons));
  // poller
  add(Global(
          "poller.interval_ms", G(poller.interval_ms),
          "outbox-poller: delay between polls when the last one found nothing")
          .Min(1)
          .For(ToolBit(Tool::kPoller)));
  add(Global("poller.batch_size", G(poller.batch_size),
             "outbox-poller: rows claimed per transaction")
          .Min(1)
          .For(ToolBit(Tool::kPoller)));
  add(Global("poller.max_attempts", G(poller.max_attempts),
             "outbox-poller: failed deliveries before a row is dead-lettered")
          .Min(1)
          .For(ToolBit(Tool::kPoller)));
  add(Global("poller.backoff_initial_ms", G(poller.backoff_initial_ms),
             "outbox-poller: first retry delay of a failed row")
          .Min(1)
          .For(ToolBit(Tool::kPoller)));
  add(Global("poller.backoff_max_ms", G(poller.backoff_max_ms),
             "outbox-poller: cap of the doubling retry delay")
          .Min(1)
          .For(ToolBit(Tool::kPoller)));
  add(Global("poller.batch_timeout_ms", G(poller.batch_timeout_ms),
             "outbox-poller: how long a claimed batch may wait for Kafka "
             "before it is rolled back")
          .Min(1)
          .For(ToolBit(Tool::kPoller)));
  add(Global("poller.retention_s", G(poller.retention_s),
             "outbox-poller: age after which sent rows are deleted (mode "
             "mark); 0 keeps them")
          .For(ToolBit(Tool::kPoller)));
  add(Global("poller.mode", G(poller.mode),
             "outbox-poller: mark | delete delivered rows")
          .For(ToolBit(Tool::kPoller)));
  add(Global("poller.notify", G(poller.notify),
             "outbox-poller: also wake on LISTEN/NOTIFY")
          .For(ToolBit(Tool::kPoller)));
  add(Global("poller.notify_channel", G(poller.notify_channel),
             "outbox-poller: LISTEN channel name")
          .For(ToolBit(Tool::kPoller)));
  return k;
}

#undef G
#undef T

}  // namespace outbox
