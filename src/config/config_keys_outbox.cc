// The outbox.* keys of the configuration key table (see config_key_table.h):
// the defaults every outbox table inherits, and the outbox.tables[] entries.
#include "config/config_key_table.h"
#include "config/config_keys.h"

namespace outbox::config_key_table {

void AddOutboxKeys(KeyAppender add) {
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
  add(Table("outbox.tables[].topic", T(topic), "(inherits outbox.topic)",
            "this table's topic template"));
  add(Table("outbox.tables[].key", T(key), "(inherits outbox.key)",
            "this table's key column"));
  add(Table(
          "outbox.tables[].headers", T(headers), "(inherits outbox.headers)",
          "this table's column -> header map; replaces outbox.headers entirely")
          .For(kDaemons));
}

}  // namespace outbox::config_key_table
