// Config: every setting of outbox-relay and outbox-poller, as loaded.
//
// A Config is a plain value. LoadConfig() builds one from the YAML file named
// on the command line, then applies the command-line overrides in order, then
// validates the result; what comes out is complete: every table entry has its
// inherited columns, topic, key and headers filled in, and kafka.properties
// holds our producer defaults merged with the user's.
//
// The keys, their defaults and their descriptions live in one table
// (config_keys.h); the YAML reader, --set, --help and Redacted() all walk it,
// so they cannot drift apart. Errors are one line, InvalidArgument, naming the
// key path and where it came from: `relay.yaml: unknown key
// "outbox.tables[0].colums"`. A missing or unreadable file is NotFound.
//
// Thread safety: values; no shared state.
#ifndef OUTBOX_CONFIG_CONFIG_H_
#define OUTBOX_CONFIG_CONFIG_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace outbox {

struct CommandLine;

// What to do with an outbox row that cannot become a Kafka record.
enum class OnInvalid { kHalt, kDeadLetter };
enum class LogFormat { kText, kJson };
enum class LogLevel { kDebug, kInfo, kWarn, kError };
// What the polling relay does with a delivered row.
enum class PollerMode { kMark, kDelete };
// Whose record format to follow (see OutboxConfig::compatibility).
enum class Compatibility { kNative, kDebezium };
// Where a record's Kafka timestamp comes from when no timestamp column gives
// one: kAuto is kCommit, or kProduce under Compatibility::kDebezium.
enum class TimestampSource { kAuto, kCommit, kProduce };
// What the CDC relay does on an UPDATE of an outbox row (Debezium's
// table.op.invalid.behavior): the row is never published again either way.
enum class OnUpdate { kIgnore, kWarn, kError, kHalt };
// Where outbox-relay keeps the slot marker (relay/stored_slot_marker.h): a file
// in postgres.state_dir, or a compacted Kafka topic (kafka.state_topic), so
// instances need no disk of their own.
enum class SlotMarkerBackend { kFile, kKafka };
// pgoutput's binary transfer (PostgreSQL 14+): auto uses it where the server
// and every outbox column's type allow, on insists (refusing where they do
// not), off streams text.
enum class PgOutputBinary { kAuto, kOn, kOff };

inline constexpr char kDefaultTopicTemplate[] = "outbox.event.{aggregatetype}";

struct PostgresConfig {
  std::string conninfo;  // empty: libpq's PG* environment variables
  // A file holding the password of conninfo (config/secrets.h); read at
  // load, its content becomes conninfo's password. Empty: none.
  std::string password_file;
  std::string slot = "outbox_relay";
  // The logical decoding output plugin: "wal2json" or "pgoutput"
  // (plugin/output_plugin.h); checked when the relay starts.
  std::string plugin = "wal2json";
  // pgoutput only: the publication to stream, and whether the relay may
  // create it (FOR TABLE <outbox tables> WITH (publish = 'insert')).
  std::string publication = "outbox_relay";
  bool create_publication = true;
  // pgoutput only: column values in their binary send format
  // (plugin/pgoutput/pgoutput_binary.h).
  PgOutputBinary pgoutput_binary = PgOutputBinary::kAuto;
  bool create_slot = true;
  // PostgreSQL 17+: the slot has failover enabled (created with it, or
  // altered), and the relay checks what a failover needs
  // (pg/failover_readiness.h). No effect on 16 and older.
  bool failover_slot = true;
  // Standbys to check for failover readiness besides the other hosts of a
  // multi-host conninfo: a libpq conninfo, several hosts allowed. Empty:
  // none.
  std::string standby_conninfo;
  // Like password_file, for standby_conninfo.
  std::string standby_password_file;
  // Where the slot marker lives (relay/stored_slot_marker.h).
  SlotMarkerBackend slot_marker = SlotMarkerBackend::kFile;
  // slot_marker kafka: this relay's identity, unique among the relays
  // sharing kafka.state_topic; the marker's key is "<slot_marker_id>/<slot>"
  // (kafka/state_topic.h). Required under slot_marker kafka.
  std::string slot_marker_id;
  // slot_marker file: its directory; empty: the default,
  // $XDG_STATE_HOME/outbox-relay or ~/.local/state/outbox-relay.
  std::string state_dir;
  // The LSN a refusal to recreate a lost slot named: lets the relay create
  // the slot anew (then `outbox-relay republish` closes the gap). Empty:
  // none.
  std::string acknowledge_slot_loss;
  int64_t status_interval_ms = 1000;
  int64_t read_coalesce_us = 1000;
  int64_t connect_timeout_s = 10;
  // The replication connection's TCP_USER_TIMEOUT (ReplicationOptions).
  int64_t tcp_user_timeout_ms = 60000;
  int64_t reconnect_backoff_initial_ms = 500;
  int64_t reconnect_backoff_max_ms = 30000;
  // A standby (the slot is held by another instance) tries it this often,
  // not with the reconnect backoff: the takeover delay after the active
  // instance dies (daemon/lifecycle.h).
  int64_t standby_retry_ms = 1000;
  // The relay's own logical message every this many seconds over a normal
  // connection, timed as it comes back through the slot (relay/heartbeat.h);
  // 0: none. /readyz fails when one has not come back within
  // heartbeat_timeout_s and nothing else arrived from the stream either.
  int64_t heartbeat_interval_s = 0;
  int64_t heartbeat_timeout_s = 60;
  // The longest the relay may be down (both instances of a pair) without
  // losing its slot: the start-up checks warn when PostgreSQL 18's
  // idle_replication_slot_timeout would invalidate it sooner. 0: no check.
  int64_t expected_outage_s = 86400;
};

// Column names of an outbox table; Debezium's Outbox Event Router defaults.
struct OutboxColumns {
  std::string id = "id";
  std::string aggregatetype = "aggregatetype";
  std::string aggregateid = "aggregateid";
  std::string type = "type";
  std::string payload = "payload";
  // Read by `outbox-relay republish` and outbox-audit only, to select rows
  // (--since/--until, --seq-from/--seq-to) and order them; either may be
  // absent from a table (sql/outbox.sql has both).
  std::string time = "created_at";  // timestamptz, timestamp or epoch ms
  std::string seq = "seq";          // an integer in creation order
};

// One outbox table with its mapping fully resolved.
struct OutboxTable {
  std::string schema = "public";
  std::string name = "outbox";
  OutboxColumns columns;
  std::string topic = kDefaultTopicTemplate;   // "{column}" placeholders
  std::string key = "aggregateid";             // column whose value is the key
  std::map<std::string, std::string> headers;  // column -> header name

  std::string QualifiedName() const { return schema + "." + name; }
};

// The tableless outbox: transactional logical decoding messages
// (pg_logical_emit_message) under `prefix` whose content is an event in the
// documented JSON format become records (route/message_router.h).
struct OutboxMessagesConfig {
  bool enabled = false;
  std::string prefix = "outbox";
  std::string topic = kDefaultTopicTemplate;  // placeholders: content fields
};

// The values of the context headers Debezium adds to every record
// (__debezium.context.*), for Compatibility::kDebezium. The defaults are
// what bench/debezium.sh's connector gives (topic.prefix=dbz).
struct DebeziumHeaders {
  std::string connector_logical_name = "dbz";  // Debezium's topic.prefix
  std::string task_id = "0";
  std::string connector_name = "postgresql";  // the connector's plugin name
  // A fourth header, runId, after connectorName: a UUIDv7 made once per
  // process start, as Debezium 3.4 and later write (once per task start).
  // false: the three headers of Debezium 3.3 and older.
  bool run_id = true;
};

struct OutboxConfig {
  // Defaults every table inherits unless it sets its own.
  OutboxColumns columns;
  std::string topic = kDefaultTopicTemplate;
  std::string key;  // empty: the aggregateid column
  std::map<std::string, std::string> headers;

  std::vector<OutboxTable> tables = {OutboxTable{}};
  OnInvalid on_invalid = OnInvalid::kHalt;
  std::string dead_letter_topic = "outbox.dead_letter";
  OutboxMessagesConfig messages;

  // Debezium Outbox Event Router counterparts (route/router.h applies them,
  // route/field_placement.h parses the placements; docs/migration/debezium.md).
  Compatibility compatibility = Compatibility::kNative;
  DebeziumHeaders debezium;
  TimestampSource timestamp = TimestampSource::kAuto;
  std::string timestamp_column;  // empty: none (table.field.event.timestamp)
  // table.fields.additional.placement: "column:header|envelope|partition
  // [:alias]", comma-separated, in order.
  std::string fields;
  bool expand_json_payload = false;
  bool tombstone_on_empty_payload = false;
  OnUpdate on_update = OnUpdate::kIgnore;
  std::string topic_regex;  // empty: the topic template routes
  std::string topic_replacement;
  std::string schema_version_column;  // table.field.event.schema.version
};

struct KafkaConfig {
  std::string brokers = "127.0.0.1:9092";
  // librdkafka properties, passed through verbatim. Starts with our defaults;
  // the user's entries override or add to them. An entry NAME_file names a
  // file whose content becomes property NAME at load (config/secrets.h).
  std::map<std::string, std::string> properties = {
      {"enable.idempotence", "true"},    {"acks", "all"},
      {"partitioner", "murmur2_random"}, {"linger.ms", "20"},
      {"compression.type", "none"},
  };
  int64_t flush_timeout_ms = 30000;
  bool send_when_idle = true;
  // Accept properties that weaken the delivery guarantees
  // (config/kafka_safety.h), logging each as a warning, instead of refusing
  // the configuration.
  bool allow_unsafe = false;
  // Exactly once (src/README.md, "Exactly once into Kafka"): a transactional
  // producer, a checkpoint per Kafka transaction, confirm only after commit.
  bool exactly_once = false;
  // Empty: outbox-relay-<system identifier>-<slot>.
  std::string transactional_id;
  std::string checkpoint_topic = "outbox.relay.checkpoints";
  // postgres.slot_marker kafka: the compacted topic of the slot markers,
  // one record per postgres.slot_marker_id and slot.
  std::string state_topic = "outbox.relay.state";
  int64_t transaction_max_ms = 100;
  int64_t transaction_max_events = 10000;
  int64_t transaction_backlog_ms = 1000;
  int64_t transaction_split_events = 1000000;
  // Creating missing event topics (docs/operations/topics.md), like
  // Debezium's topic.creation.default.*; off: a missing topic is waited for.
  struct TopicCreation {
    bool enable = false;
    int64_t partitions = -1;          // -1: the broker's num.partitions
    int64_t replication_factor = -1;  // -1: default.replication.factor
    std::map<std::string, std::string> configs;  // topic configs
  } topic_creation;
  // The topics the relay creates for itself (checkpoint_topic, state_topic,
  // and the dead-letter topic when kafka.topic_creation creates it):
  // replication settings of a created topic; an existing topic is never
  // altered. -1: the cluster's default.replication.factor and
  // min.insync.replicas.
  struct InternalTopics {
    int64_t replication_factor = -1;
    int64_t min_insync_replicas = -1;
  } internal_topics;
};

struct LimitsConfig {
  int64_t max_inflight_events = 10000;
  int64_t max_inflight_bytes = 2 << 20;
  int64_t min_inflight_bytes = 256 << 10;
  int64_t max_tracked_events = 100000;
};

struct HttpConfig {
  std::string listen = "127.0.0.1:9187";  // empty: no HTTP server
  // outbox-relay: POST /pause and /resume (docs/operations/pause.md).
  bool control_enabled = false;
  std::string control_token_file;  // required when control_enabled
  // The token read from control_token_file at load (secrets.h); no key:
  // never printed.
  std::string control_token;
};

struct LogConfig {
  LogFormat format = LogFormat::kText;
  LogLevel level = LogLevel::kInfo;
  int64_t progress_interval_s = 10;  // 0: no progress lines
};

struct PollerConfig {
  int64_t interval_ms = 500;
  int64_t batch_size = 500;
  int64_t max_attempts = 10;
  int64_t backoff_initial_ms = 1000;
  int64_t backoff_max_ms = 300000;
  int64_t batch_timeout_ms = 30000;
  int64_t retention_s = 86400;
  PollerMode mode = PollerMode::kMark;
  bool notify = false;
  std::string notify_channel = "outbox_relay";
};

struct Config {
  PostgresConfig postgres;
  OutboxConfig outbox;
  KafkaConfig kafka;
  LimitsConfig limits;
  HttpConfig http;
  LogConfig log;
  PollerConfig poller;

  // The effective configuration, one `key.path: value` per line, for the
  // startup log. Passwords in postgres.conninfo and secret-looking
  // kafka.properties (password, secret, sasl.jaas, oauthbearer, private keys)
  // are replaced by "****".
  std::string Redacted() const;
  // The same as (key path, value) pairs, in the key table's order.
  std::vector<std::pair<std::string, std::string>> RedactedEntries() const;
  // The same with the secrets in clear, to compare two configurations
  // (daemon/config_reload.h): never log it.
  std::vector<std::pair<std::string, std::string>> Entries() const;

 private:
  static std::vector<std::pair<std::string, std::string>> EntriesOf(
      const Config& config, bool redact);
};

// Parses YAML text on top of the defaults and validates. `source` names the
// text in error messages (normally the file name).
absl::StatusOr<Config> ParseConfigYaml(absl::string_view yaml,
                                       absl::string_view source);

// Reads command_line.config_path (if set), applies the command-line
// overrides in order, resolves table inheritance and validates.
absl::StatusOr<Config> LoadConfig(const CommandLine& command_line);

// OK when outbox.tables lists a table; otherwise InvalidArgument saying
// that `what` (e.g. "outbox-audit compares the outbox tables with Kafka")
// needs one: the tableless outbox alone leaves no row to read.
absl::Status RequireOutboxTables(const Config& config, absl::string_view what);

// Names used in YAML, --set and logs ("halt", "json", "warn", "mark").
absl::string_view EnumName(OnInvalid v);
absl::string_view EnumName(LogFormat v);
absl::string_view EnumName(LogLevel v);
absl::string_view EnumName(PollerMode v);
absl::string_view EnumName(Compatibility v);
absl::string_view EnumName(TimestampSource v);
absl::string_view EnumName(OnUpdate v);
absl::string_view EnumName(SlotMarkerBackend v);
absl::string_view EnumName(PgOutputBinary v);

}  // namespace outbox

#endif  // OUTBOX_CONFIG_CONFIG_H_
