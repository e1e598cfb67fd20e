// Router: turns an outbox INSERT into the Kafka Record it stands for.
//
// Built once from the configured outbox tables. For each kInsert Change of a
// mapped table it fills a Record, Debezium Outbox Event Router style:
//   topic     the table's topic template rendered with the row's columns, or
//             outbox.topic_regex/_replacement over the aggregatetype value
//   key       the key column's value (aggregateid by default)
//   value     the payload column (text as is, bytea raw; NULL -> null
//             value); with envelope fields {"payload": ..., name: ...}
//             (Struct{...} text under compatibility debezium); compacted
//             with expand_json_payload; null for a blank payload with
//             tombstone_on_empty_payload
//   headers   under compatibility debezium first Debezium's
//             __debezium.context.* headers (connectorLogicalName, taskId,
//             connectorName, and with outbox.debezium.run_id runId: this
//             process's DebeziumRunId()); then "id" = the event id, the
//             outbox.fields header placements in order, then the
//             column -> header map (a NULL column gives a null header)
//   partition the outbox.fields partition column's value, else -1
//   timestamp outbox.timestamp_column's value, else the commit time or 0
//             (the produce time), per outbox.timestamp
// A row that cannot become a record (unmapped table, missing or NULL id or
// key, missing payload column, topic that renders empty or illegal, a
// partition, timestamp or schema version column that holds no such value)
// is InvalidArgument naming the event id: the caller applies the poison
// policy.
//
// Hot path: Route() reuses the Record's topic and header buffers, so after
// the first row of a table it does not allocate. The Record's views point
// into the Change (see record.h).
//
// Thread safety: immutable after Create(); Route() may run concurrently on
// different Records.
#ifndef OUTBOX_ROUTE_ROUTER_H_
#define OUTBOX_ROUTE_ROUTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/config.h"
#include "outbox/change.h"
#include "outbox/record.h"
#include "route/field_placement.h"
#include "route/topic_regex.h"
#include "route/topic_template.h"

namespace outbox {

// The __debezium.context.runId header's value: a UUIDv7 (common/uuid.h)
// made the first time it is asked for, the same for the rest of the
// process, as Debezium makes one per connector task start.
const std::string& DebeziumRunId();

class Router {
 public:
  // Columns a mapped table must have, for the relay's startup check.
  struct TableColumns {
    std::string schema;
    std::string table;
    std::vector<std::string> columns;  // distinct, mapping order
  };

  // Validates the mapping: topic templates (placeholders must name a mapped
  // column; literal text must be legal in a topic) and, with on_invalid
  // dead_letter, the dead-letter topic name.
  static absl::StatusOr<std::unique_ptr<Router>> Create(
      const OutboxConfig& outbox);
  static absl::StatusOr<std::unique_ptr<Router>> Create(const Config& config) {
    return Create(config.outbox);
  }

  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Fills *out from an insert into a mapped table. On error *out is
  // unspecified.
  // On error out->event_id still names the event when the row has an id.
  absl::Status Route(const Change& change, Record* out) const;

  // The event id of a change to a mapped table (its id column's value), or
  // "" when the table is not mapped or the row lacks it (for logs).
  absl::string_view EventId(const Change& change) const;

  // wal2json "add-tables" entries, one per table: schema.table with '\'
  // before each of  \ , . * and whitespace inside a name. Join with ',' for
  // the option value (which still needs SQL quoting of "'").
  std::vector<std::string> wal2json_add_tables() const;

  std::vector<TableColumns> RequiredColumns() const;

 private:
  // Slots of Mapping::columns with a fixed meaning; header and topic columns
  // follow.
  enum Slot { kIdSlot = 0, kKeySlot = 1, kPayloadSlot = 2 };

  struct Mapping {
    std::string schema;
    std::string table;
    std::vector<std::string> columns;  // distinct names, slots above first
    std::vector<std::pair<std::string, int>> headers;   // header name, slot
    std::vector<std::pair<std::string, int>> envelope;  // field name, slot
    TopicTemplate topic;
    // Slots of optional columns; -1 when not configured.
    int route_by = -1;  // aggregatetype, with outbox.topic_regex
    int partition = -1;
    int timestamp = -1;
    int schema_version = -1;
  };

  // What applies to every table (the Event Router options).
  struct Options {
    bool debezium = false;
    std::vector<Header> context_headers;  // views into the strings below
    std::vector<std::string> context_values;
    bool commit_time = true;  // else the produce time
    bool expand_json_payload = false;
    bool tombstone_on_empty_payload = false;
    std::unique_ptr<TopicRegex> topic_regex;
  };

  Router(std::vector<Mapping> mappings, std::unique_ptr<Options> options)
      : mappings_(std::move(mappings)), options_(std::move(options)) {}

  const Mapping* Find(absl::string_view schema, absl::string_view table) const;
  // The value, partition and timestamp of a routed row.
  absl::Status FillValue(const Mapping& m, const Column* const* slots,
                         const Column* payload, Record* out) const;
  absl::Status FillPlacement(const Mapping& m, const Column* const* slots,
                             int64_t commit_time_us, Record* out) const;

  std::vector<Mapping> mappings_;
  std::unique_ptr<Options> options_;  // stable address: headers view it
};

}  // namespace outbox

#endif  // OUTBOX_ROUTE_ROUTER_H_
