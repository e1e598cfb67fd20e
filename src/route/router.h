// Router: turns an outbox INSERT into the Kafka Record it stands for.
//
// Built once from the configured outbox tables. For each kInsert Change of a
// mapped table it fills a Record, Debezium Outbox Event Router style:
//   topic   the table's topic template rendered with the row's columns
//   key     the key column's value (aggregateid by default)
//   value   the payload column (text as is, bytea raw; NULL -> null value)
//   headers "id" = the event id, then the configured column -> header map
//           (a NULL column gives a header with is_null)
// A row that cannot become a record (unmapped table, missing or NULL id or
// key, missing payload column, topic that renders empty or illegal) is
// InvalidArgument naming the event id: the caller applies the poison policy.
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
#include "route/topic_template.h"

namespace outbox {

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
    std::vector<std::pair<std::string, int>> headers;  // header name, slot
    TopicTemplate topic;
  };

  explicit Router(std::vector<Mapping> mappings)
      : mappings_(std::move(mappings)) {}

  const Mapping* Find(absl::string_view schema, absl::string_view table) const;

  std::vector<Mapping> mappings_;
};

}  // namespace outbox

#endif  // OUTBOX_ROUTE_ROUTER_H_
