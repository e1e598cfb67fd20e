// Change: one decoded logical-replication record, whatever decoder made it.
//
// Produced by a Decoder (wal2json today, pgoutput later) and consumed by the
// pipeline: Begin/Commit drive the AckTracker, Insert goes to the Router.
// Lifetime: every string_view points into the decoder's buffers and stays
// valid only until that decoder's next Decode() call.
#ifndef OUTBOX_CHANGE_H_
#define OUTBOX_CHANGE_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "outbox/lsn.h"

namespace outbox {

// How a column value was represented by the decoder.
enum class ValueKind : uint8_t {
  kNull,    // SQL NULL
  kText,    // text output of the type (json/jsonb unescaped to JSON text)
  kNumber,  // bare JSON number, kept as its literal text
  kBool,    // "true" / "false"
  kBytes,   // bytea, already decoded from hex to raw bytes
};

struct Column {
  absl::string_view name;
  absl::string_view type;  // PostgreSQL type name, e.g. "jsonb", "uuid"
  ValueKind kind = ValueKind::kNull;
  absl::string_view value;  // empty for kNull
};

struct Change {
  enum class Kind : uint8_t {
    kBegin,    // transaction start
    kCommit,   // transaction end; end_lsn is the position to confirm
    kInsert,   // a row inserted into a decoded table
    kUpdate,   // decoded but ignored by the outbox pipeline
    kDelete,   // decoded but ignored by the outbox pipeline
    kMessage,  // logical decoding message (pg_logical_emit_message)
    kOther,    // truncate and the like: ignored, never an event
  };

  Kind kind = Kind::kOther;
  uint32_t xid = 0;            // 0 when absent
  Lsn lsn = kInvalidLsn;       // record LSN (B/C: the commit record)
  Lsn end_lsn = kInvalidLsn;   // B and C: end of the commit record
  int64_t commit_time_us = 0;  // Unix microseconds; 0 when absent
  absl::string_view schema;    // kInsert/kUpdate/kDelete
  absl::string_view table;
  std::vector<Column> columns;  // kInsert: the new row
  // kMessage only. prefix and content are bytes, not necessarily UTF-8.
  bool transactional = false;
  absl::string_view prefix;
  absl::string_view content;

  // Back to a fresh kOther change; keeps the columns' capacity, so a
  // decoder that clears before each record does not allocate per record.
  void Clear() {
    kind = Kind::kOther;
    xid = 0;
    lsn = kInvalidLsn;
    end_lsn = kInvalidLsn;
    commit_time_us = 0;
    schema = {};
    table = {};
    columns.clear();
    transactional = false;
    prefix = {};
    content = {};
  }

  // Returns the column called `name`, or nullptr.
  const Column* Find(absl::string_view name) const {
    for (const Column& c : columns) {
      if (c.name == name) return &c;
    }
    return nullptr;
  }
};

}  // namespace outbox

#endif  // OUTBOX_CHANGE_H_
