// Wal2JsonDecoder: one wal2json format-version-2 record -> one Change.
//
// Input is the plugin's output for one record, exactly as a walsender
// XLogData message carries it (one JSON object, no newline needed) or as
// pg_logical_slot_get_changes() returns it in one row. Record kinds:
//   B, C     -> kBegin, kCommit: xid, timestamp, lsn -> Change::lsn,
//               nextlsn -> Change::end_lsn (both required)
//   I, U, D  -> kInsert, kUpdate, kDelete: schema and table required,
//               columns required for I (optional for U/D); "identity" and
//               "pk" are skipped
//   M        -> kMessage: transactional, prefix, content required; xid and
//               timestamp may be null (non-transactional messages); prefix
//               and content may hold any bytes (see Errors)
//   T        -> kOther (truncate)
// "xid" and "timestamp" are optional everywhere (0 when absent or null), so
// include-xids / include-timestamp may be off. Keys may come in any order;
// unknown keys are ignored.
//
// Column values: null -> kNull; a bare number -> kNumber holding its literal
// text; true/false -> kBool ("true"/"false"); a string -> kText, unescaped
// (a json/jsonb value becomes its JSON text byte for byte); a string in a
// column of type "bytea" -> kBytes, hex-decoded (wal2json prints no "\x";
// one is tolerated).
//
// Timestamps are PostgreSQL timestamptz text in DateStyle ISO, e.g.
// "2026-11-22 04:54:35.123456+00"; any UTC offset (+HH, -HH:MM, +HH:MM:SS)
// and 0-6 fractional digits are accepted. The scalar codecs live in
// wal2json_text.h.
//
// Errors: InvalidArgument with a short description (no LSN: the caller adds
// it) for malformed JSON, trailing garbage, an unknown or missing action, a
// missing required key, a duplicated key, a value of the wrong type, bad
// hex or a bad timestamp/LSN. A record must be valid UTF-8 (database
// encoding UTF8), except an M record: pg_logical_emit_message() takes bytes,
// and wal2json copies them into "prefix" and "content" unchanged, so those
// two views hold whatever bytes the message had (wal2json stops a content at
// its first NUL byte). Any other record that is not valid UTF-8 is
// InvalidArgument.
//
// Lifetime: the Change's string_views point into buffers owned by this
// decoder and stay valid until its next Decode() call or its destruction.
// Not thread safe: one decoder per stream. Besides growing out->columns,
// Decode() allocates only for a record larger than any before it, or to
// build an error.
#ifndef OUTBOX_DECODE_WAL2JSON_DECODER_H_
#define OUTBOX_DECODE_WAL2JSON_DECODER_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "outbox/change.h"
#include "outbox/decoder.h"

namespace outbox {

class Wal2JsonDecoder final : public Decoder {
 public:
  Wal2JsonDecoder();
  ~Wal2JsonDecoder() override;
  Wal2JsonDecoder(const Wal2JsonDecoder&) = delete;
  Wal2JsonDecoder& operator=(const Wal2JsonDecoder&) = delete;

  absl::Status Decode(absl::string_view data, Change* out) override;

 private:
  struct State;  // simdjson parser and buffers; keeps simdjson.h private
  std::unique_ptr<State> state_;
};

}  // namespace outbox

#endif  // OUTBOX_DECODE_WAL2JSON_DECODER_H_
