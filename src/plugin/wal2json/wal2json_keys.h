// The keys of a wal2json format-version 2 record, as Wal2JsonDecoder
// (wal2json_decoder.cc) tells them apart, and the per-action facts about
// them: which action letter is which Change::Kind and which keys that
// kind requires. Private to the wal2json decoder.
//
// Pure functions; thread safe.
#ifndef OUTBOX_DECODE_WAL2JSON_KEYS_H_
#define OUTBOX_DECODE_WAL2JSON_KEYS_H_

#include <simdjson.h>

#include <cstdint>
#include <string_view>

#include "absl/strings/string_view.h"
#include "outbox/change.h"

namespace outbox::wal2json {

// Record keys. Each is a bit, so one mask tracks which were seen.
enum Key : uint32_t {
  kUnknownKey = 0,
  kAction = 1u << 0,
  kXid = 1u << 1,
  kTimestamp = 1u << 2,
  kLsnKey = 1u << 3,
  kNextLsn = 1u << 4,
  kSchema = 1u << 5,
  kTable = 1u << 6,
  kColumns = 1u << 7,
  kTransactional = 1u << 8,
  kPrefix = 1u << 9,
  kContent = 1u << 10,
};

// wal2json writes keys without escapes, so raw bytes are compared; a key
// spelled with escapes counts as unknown.
inline Key ClassifyKey(simdjson::ondemand::raw_json_string key) {
  using std::string_view_literals::operator""sv;
  switch (key.raw()[0]) {
    case 'a':
      if (key.unsafe_is_equal("action"sv)) return kAction;
      break;
    case 'x':
      if (key.unsafe_is_equal("xid"sv)) return kXid;
      break;
    case 't':
      if (key.unsafe_is_equal("timestamp"sv)) return kTimestamp;
      if (key.unsafe_is_equal("table"sv)) return kTable;
      if (key.unsafe_is_equal("transactional"sv)) return kTransactional;
      break;
    case 'l':
      if (key.unsafe_is_equal("lsn"sv)) return kLsnKey;
      break;
    case 'n':
      if (key.unsafe_is_equal("nextlsn"sv)) return kNextLsn;
      break;
    case 's':
      if (key.unsafe_is_equal("schema"sv)) return kSchema;
      break;
    case 'c':
      if (key.unsafe_is_equal("columns"sv)) return kColumns;
      if (key.unsafe_is_equal("content"sv)) return kContent;
      break;
    case 'p':
      if (key.unsafe_is_equal("prefix"sv)) return kPrefix;
      break;
    default:
      break;
  }
  return kUnknownKey;  // "identity", "pk", future keys: skipped
}

// The key's name as wal2json writes it, for error messages.
const char* KeyName(Key key);

// Without these keys the Change is of no use to the pipeline.
uint32_t RequiredKeys(Change::Kind kind);

// The Change::Kind of a record's "action" letter; false for an unknown one.
bool ActionKind(absl::string_view action, Change::Kind* kind);

}  // namespace outbox::wal2json

#endif  // OUTBOX_DECODE_WAL2JSON_KEYS_H_
