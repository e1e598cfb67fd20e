#include "config/debezium_connector.h"

#include <map>
#include <optional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/logging.h"
#include "config/connector_properties.h"
#include "config/debezium_mapping.h"

namespace outbox {
namespace {

using debezium::ConninfoValue;
using debezium::IgnoredKeys;
using debezium::PlainTableName;
using debezium::Quote;
using debezium::TopicTemplate;
using debezium::WritesRunId;

constexpr absl::string_view kPostgresConnector =
    "io.debezium.connector.postgresql.PostgresConnector";
constexpr absl::string_view kEventRouter =
    "io.debezium.transforms.outbox.EventRouter";
constexpr absl::string_view kStringConverter =
    "org.apache.kafka.connect.storage.StringConverter";
constexpr absl::string_view kDefaultRegex = "(?<routedByValue>.*)";

using Properties = ConnectorProperties;

class Translator {
 public:
  Translator(Properties p, std::string debezium_version)
      : props_(std::move(p)), debezium_version_(std::move(debezium_version)) {}

  absl::StatusOr<DebeziumTranslation> Run();

 private:
  std::optional<std::string> Take(const std::string& key) {
    auto it = props_.find(key);
    if (it == props_.end()) return std::nullopt;
    std::string v = it->second;
    props_.erase(it);
    return v;
  }
  std::string TakeOr(const std::string& key, absl::string_view otherwise) {
    return Take(key).value_or(std::string(otherwise));
  }
  void Line(absl::string_view text, absl::string_view from = "") {
    std::string line(text);
    if (!from.empty()) absl::StrAppend(&line, "  # ", from);
    lines_.push_back(std::move(line));
  }
  void Note(std::string note) { notes_.push_back(std::move(note)); }
  void Error(std::string error) { errors_.push_back(std::move(error)); }

  void Connection();
  void TopicCreation();
  void Tables();
  void Router(const std::string& t);

  void RunId();

  Properties props_;
  std::string debezium_version_;  // empty: the newest
  std::vector<std::string> lines_, notes_, errors_;
  std::vector<std::string> tables_;
};

void Translator::Connection() {
  std::vector<std::string> conninfo;
  for (const auto& [key, name] :
       std::vector<std::pair<std::string, std::string>>{
           {"database.hostname", "host"},
           {"database.port", "port"},
           {"database.user", "user"},
           {"database.dbname", "dbname"},
           {"database.sslmode", "sslmode"},
           {"database.sslrootcert", "sslrootcert"},
           {"database.sslcert", "sslcert"},
           {"database.sslkey", "sslkey"}}) {
    if (auto v = Take(key)) {
      conninfo.push_back(absl::StrCat(name, "=", ConninfoValue(*v)));
    }
  }
  for (const char* secret : {"database.password", "database.sslpassword"}) {
    if (Take(secret)) {
      Note(absl::StrCat(secret,
                        " is not copied: give it as PGPASSWORD or in "
                        "~/.pgpass (or add it to postgres.conninfo)"));
    }
  }
  std::string plugin = TakeOr("plugin.name", "decoderbufs");
  std::string slot = TakeOr("slot.name", "debezium");
  std::string publication = TakeOr("publication.name", "dbz_publication");
  std::string mode = TakeOr("publication.autocreate.mode", "all_tables");
  Line("postgres:");
  Line(absl::StrCat("  conninfo: ", Quote(absl::StrJoin(conninfo, " "))),
       "database.*");
  Line("  plugin: pgoutput", absl::StrCat("plugin.name=", plugin));
  if (plugin == "pgoutput") {
    Line(absl::StrCat("  slot: ", Quote(slot)), "slot.name");
  } else {
    Note(absl::StrCat(
        "plugin.name ", plugin,
        ": the relay reads pgoutput (or wal2json), and a slot keeps its "
        "plugin: it uses a slot of its own, outbox_relay (docs/migration/"
        "debezium.md#a-new-slot-with-an-overlap)"));
    Line("  slot: outbox_relay", "a new slot: see the notes");
  }
  if (mode == "filtered" || mode == "disabled") {
    Line(absl::StrCat("  publication: ", Quote(publication)),
         "publication.name");
    Line(absl::StrCat("  create_publication: ",
                      mode == "filtered" ? "true" : "false"),
         absl::StrCat("publication.autocreate.mode=", mode));
  } else if (mode == "all_tables") {
    Note(absl::StrCat(
        "publication.autocreate.mode all_tables (Debezium's default): ",
        publication,
        " publishes every table, which the relay refuses (their rows are not "
        "outbox events); it uses a publication of the outbox tables, "
        "outbox_relay, and creates it. When reusing Debezium's slot, create "
        "it while Debezium still runs (CREATE PUBLICATION outbox_relay FOR "
        "TABLE ",
        absl::StrJoin(tables_, ", "),
        " WITH (publish = 'insert')), so that the WAL the relay reads is "
        "newer than the publication"));
    Line("  publication: outbox_relay", "not all_tables: see the notes");
  } else {
    Error(absl::StrCat("publication.autocreate.mode ", mode,
                       " is not filtered, disabled or all_tables"));
  }
  if (auto v = Take("status.update.interval.ms")) {
    Line(absl::StrCat("  status_interval_ms: ", *v),
         "status.update.interval.ms");
  }
  for (const char* key : {"slot.drop.on.stop", "slot.stream.params"}) {
    if (auto v = Take(key)) {
      Error(absl::StrCat(key, "=", *v, " has no counterpart"));
    }
  }
}

// outbox.debezium.run_id: the context headers of the Debezium that ran.
void Translator::RunId() {
  if (debezium_version_.empty()) {
    Line("    run_id: true", "the newest Debezium's headers: see the notes");
    Note(
        "outbox.debezium.run_id: true gives the context headers of Debezium "
        "3.4 and later (a fourth, __debezium.context.runId, a UUIDv7 per "
        "start); if the connector runs Debezium 3.3 or older, translate with "
        "--debezium-version VERSION or set it to false to keep its three "
        "headers (docs/migration/debezium-versions.md)");
    return;
  }
  absl::StatusOr<bool> run_id = WritesRunId(debezium_version_);
  if (!run_id.ok()) return;  // checked before the translation
  Line(absl::StrCat("    run_id: ", *run_id ? "true" : "false"),
       absl::StrCat("Debezium ", debezium_version_,
                    *run_id ? ": header runId (3.4 and later)"
                            : ": no runId header (3.3 and older)"));
}

void Translator::Tables() {
  std::optional<std::string> list = Take("table.include.list");
  if (!list.has_value()) {
    Error("table.include.list is missing: name the outbox tables");
    return;
  }
  for (absl::string_view entry :
       absl::StrSplit(*list, ',', absl::SkipWhitespace())) {
    entry = absl::StripAsciiWhitespace(entry);
    std::optional<std::string> name = PlainTableName(entry);
    if (!name.has_value()) {
      Error(absl::StrCat("table.include.list entry \"", entry,
                         "\" is a pattern: list each outbox table by name"));
      continue;
    }
    tables_.push_back(*name);
  }
}

void Translator::Router(const std::string& t) {
  const std::string id = TakeOr(t + "table.field.event.id", "id");
  const std::string key = TakeOr(t + "table.field.event.key", "aggregateid");
  const std::string payload =
      TakeOr(t + "table.field.event.payload", "payload");
  const std::string by = TakeOr(t + "route.by.field", "aggregatetype");
  const std::string regex = TakeOr(t + "route.topic.regex", kDefaultRegex);
  const std::string replacement =
      TakeOr(t + "route.topic.replacement", "outbox.event.${routedByValue}");
  Line(absl::StrCat("  columns: {id: ", Quote(id), ", aggregatetype: ",
                    Quote(by), ", payload: ", Quote(payload), "}"),
       "table.field.event.id, route.by.field, table.field.event.payload");
  Line(absl::StrCat("  key: ", Quote(key)), "table.field.event.key");
  std::optional<std::string> topic =
      regex == kDefaultRegex ? TopicTemplate(replacement, by) : std::nullopt;
  if (topic.has_value()) {
    Line(absl::StrCat("  topic: ", Quote(*topic)), "route.topic.replacement");
  } else {
    Line(absl::StrCat("  topic_regex: ", Quote(regex)), "route.topic.regex");
    Line(absl::StrCat("  topic_replacement: ", Quote(replacement)),
         "route.topic.replacement");
  }
  if (auto v = Take(t + "table.field.event.timestamp")) {
    Line(absl::StrCat("  timestamp_column: ", Quote(*v)),
         "table.field.event.timestamp");
  }
  if (auto v = Take(t + "table.field.event.schema.version")) {
    Line(absl::StrCat("  schema_version_column: ", Quote(*v)),
         "table.field.event.schema.version");
  }
  if (auto v = Take(t + "table.fields.additional.placement")) {
    Line(absl::StrCat("  fields: ", Quote(*v)),
         "table.fields.additional.placement");
  }
  if (TakeOr(t + "table.expand.json.payload", "false") == "true") {
    Line("  expand_json_payload: true", "table.expand.json.payload");
    Note(
        "table.expand.json.payload: the relay compacts the payload's JSON; "
        "Debezium's bytes differ with a JsonConverter (docs/migration/"
        "debezium-mapping.md#what-is-not-identical)");
  }
  if (TakeOr(t + "route.tombstone.on.empty.payload", "false") == "true") {
    Line("  tombstone_on_empty_payload: true",
         "route.tombstone.on.empty.payload");
  }
  std::optional<std::string> invalid = Take(t + "table.op.invalid.behavior");
  if (!invalid.has_value()) invalid = Take(t + "debezium.op.invalid.behavior");
  if (!invalid.has_value()) {
    Note(
        "table.op.invalid.behavior is not set (Debezium: warn): the relay's "
        "on_update ignore does not decode UPDATEs at all; set "
        "outbox.on_update: warn to log them as Debezium did");
  } else if (*invalid == "warn" || *invalid == "error") {
    Line(absl::StrCat("  on_update: ", *invalid), "table.op.invalid.behavior");
  } else if (*invalid == "fatal") {
    Line("  on_update: halt", "table.op.invalid.behavior=fatal");
  } else {
    Error(absl::StrCat("table.op.invalid.behavior ", *invalid,
                       " is not warn, error or fatal"));
  }
  if (TakeOr(t + "table.fields.additional.error.on.missing", "true") !=
      "true") {
    Error(
        "table.fields.additional.error.on.missing=false has no counterpart: a "
        "placed column missing from a row is a poison event");
  }
  if (TakeOr(t + "table.json.payload.null.behavior", "ignore") != "ignore") {
    Error("table.json.payload.null.behavior has no counterpart but ignore");
  }
}

// Kafka Connect's topic.creation.default.* (KIP-158): Connect creates a
// missing topic once both partitions and replication.factor are set; every
// other key under it is a topic config. Groups (per-topic regexes) have no
// counterpart: the relay creates every topic alike.
void Translator::TopicCreation() {
  const std::string prefix = "topic.creation.";
  const std::string def = prefix + "default.";
  std::optional<std::string> enable = Take(prefix + "enable");
  std::optional<std::string> groups = Take(prefix + "groups");
  if (groups.has_value() && !absl::StripAsciiWhitespace(*groups).empty()) {
    Error(absl::StrCat("topic.creation.groups=", *groups,
                       " has no counterpart: the relay creates every topic "
                       "with topic.creation.default.*"));
  }
  std::optional<std::string> partitions = Take(def + "partitions");
  std::optional<std::string> replication = Take(def + "replication.factor");
  std::vector<std::pair<std::string, std::string>> configs;
  for (auto it = props_.begin(); it != props_.end();) {
    // A group's keys stay: refused as unknown, by name.
    if (absl::StartsWith(it->first, def)) {
      configs.emplace_back(it->first.substr(def.size()), it->second);
      it = props_.erase(it);
    } else {
      ++it;
    }
  }
  if (!partitions.has_value() && !replication.has_value() && configs.empty()) {
    return;
  }
  const bool on = partitions.has_value() && replication.has_value() &&
                  absl::AsciiStrToLower(enable.value_or("true")) != "false";
  Line("  topic_creation:");
  Line(absl::StrCat("    enable: ", on ? "true" : "false"),
       on ? "topic.creation.default.partitions and .replication.factor"
          : "Connect creates topics only with both default.partitions and "
            "default.replication.factor (and topic.creation.enable not "
            "false)");
  if (partitions.has_value()) {
    Line(absl::StrCat("    partitions: ", Quote(*partitions)),
         "topic.creation.default.partitions");
  }
  if (replication.has_value()) {
    Line(absl::StrCat("    replication_factor: ", Quote(*replication)),
         "topic.creation.default.replication.factor");
  }
  if (!configs.empty()) {
    Line("    configs:");
    for (const auto& [name, value] : configs) {
      Line(absl::StrCat("      ", Quote(name), ": ", Quote(value)),
           absl::StrCat(def, name));
    }
  }
}

absl::StatusOr<DebeziumTranslation> Translator::Run() {
  std::string connector = TakeOr("connector.class", "");
  if (connector != kPostgresConnector) {
    return absl::InvalidArgumentError(absl::StrCat(
        "connector.class is \"", connector, "\", not ", kPostgresConnector));
  }
  const std::string name = TakeOr("name", "");
  Tables();
  std::vector<std::string> routers;
  for (absl::string_view t :
       absl::StrSplit(TakeOr("transforms", ""), ',', absl::SkipWhitespace())) {
    t = absl::StripAsciiWhitespace(t);
    std::string type = TakeOr(absl::StrCat("transforms.", t, ".type"), "");
    if (type == kEventRouter) {
      routers.emplace_back(t);
    } else {
      Error(absl::StrCat("transform ", t, " (", type,
                         ") has no counterpart: the relay applies the Event "
                         "Router only"));
    }
  }
  if (routers.size() != 1) {
    Error(absl::StrCat("want one ", kEventRouter, " transform, found ",
                       routers.size()));
  }
  Line(
      absl::StrCat("# outbox-relay configuration translated from the "
                   "Debezium connector",
                   name.empty() ? "" : absl::StrCat(" ", Quote(name)),
                   " by outbox-relay from-debezium."));
  Line("# Each line names the Debezium key it comes from; notes at the end.");
  Connection();
  Line("kafka:");
  Line("  brokers: \"127.0.0.1:9092\"",
       "the Connect worker's bootstrap.servers (not in a connector config)");
  TopicCreation();
  Line("outbox:");
  Line("  compatibility: debezium");
  Line("  debezium:");
  Line(absl::StrCat("    connector_logical_name: ",
                    Quote(TakeOr("topic.prefix", "dbz"))),
       "topic.prefix");
  RunId();
  Line(absl::StrCat("  tables: [",
                    absl::StrJoin(tables_, ", ",
                                  [](std::string* out, const std::string& s) {
                                    absl::StrAppend(out, Quote(s));
                                  }),
                    "]"),
       "table.include.list");
  if (routers.size() == 1) Router(absl::StrCat("transforms.", routers[0], "."));

  std::string snapshot = TakeOr("snapshot.mode", "initial");
  if (snapshot != "no_data" && snapshot != "never") {
    Note(absl::StrCat(
        "snapshot.mode ", snapshot,
        ": the relay takes no snapshot; rows in the outbox tables before its "
        "slot was created are not published (outbox-relay republish --all "
        "re-publishes them)"));
  }
  bool converters_noted = false;
  for (const char* key : {"key.converter", "value.converter"}) {
    std::optional<std::string> v = Take(key);
    if (v.has_value() && *v != kStringConverter) {
      Error(absl::StrCat(key, " ", *v,
                         ": the relay writes what Debezium's StringConverter "
                         "writes, other bytes than this converter's"));
      converters_noted = true;
    }
  }
  if (!converters_noted) {
    Note(
        "converters: the relay's keys and values are the bytes Debezium "
        "writes with a StringConverter (a worker that used JsonConverter "
        "wrote other bytes)");
  }
  std::vector<std::string> unknown;
  for (const auto& [key, value] : props_) {
    auto ignored = IgnoredKeys().find(key);
    if (ignored != IgnoredKeys().end()) {
      Note(absl::StrCat(key, "=", value,
                        " is not translated: ", ignored->second));
    } else if (absl::StartsWith(key, "errors.") ||
               absl::StartsWith(key, "signal.") ||
               absl::StartsWith(key, "notification.") ||
               absl::StartsWith(key, "offset.")) {
      Note(absl::StrCat(key,
                        " is not translated (Kafka Connect or Debezium "
                        "operations, no effect on records)"));
    } else {
      unknown.push_back(key);
    }
  }
  if (!unknown.empty()) {
    Error(absl::StrCat("no counterpart for ", absl::StrJoin(unknown, ", ")));
  }
  if (!errors_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot translate: ", absl::StrJoin(errors_, "; "),
                     " (docs/migration/debezium.md)"));
  }
  DebeziumTranslation out;
  out.yaml = absl::StrJoin(lines_, "\n");
  out.yaml += "\n";
  if (!notes_.empty()) out.yaml += "# Notes:\n";
  for (const std::string& note : notes_) {
    // A value quoted in a note may hold a line break: the comment may not.
    absl::StrAppend(&out.yaml, "# - ",
                    absl::StrReplaceAll(note, {{"\n", "\\n"}, {"\r", "\\r"}}),
                    "\n");
  }
  out.notes = std::move(notes_);
  return out;
}

}  // namespace

absl::StatusOr<DebeziumTranslation> TranslateDebeziumConnector(
    absl::string_view text, absl::string_view debezium_version) {
  if (!debezium_version.empty()) {
    if (absl::Status s = WritesRunId(debezium_version).status(); !s.ok()) {
      return s;
    }
  }
  absl::StatusOr<ConnectorProperties> props = ParseConnectorProperties(text);
  if (!props.ok()) return props.status();
  return Translator(std::move(*props), std::string(debezium_version)).Run();
}

}  // namespace outbox
