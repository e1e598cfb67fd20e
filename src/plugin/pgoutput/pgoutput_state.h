// PgOutputDecoder::State: what a PgOutputDecoder keeps between messages
// (the Relation and Type caches, the open transaction) and the buffers of
// the message being decoded, with the reading of Relation, Type and
// TupleData messages (pgoutput_state.cc). PgOutputDecoder::Decode()
// (pgoutput_decoder.cc) reads the message framing and calls into it.
// Private to those two files.
//
// Not thread safe, like the decoder that owns it.
#ifndef OUTBOX_DECODE_PGOUTPUT_STATE_H_
#define OUTBOX_DECODE_PGOUTPUT_STATE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "plugin/pgoutput/pgoutput_decoder.h"
#include "plugin/pgoutput/pgoutput_reader.h"
#include "plugin/pgoutput/pgoutput_types.h"

namespace outbox {
namespace pgoutput {

// InvalidArgument "pgoutput: <what>", the decoder's every error.
absl::Status Invalid(absl::string_view what);

struct RelationColumn {
  std::string name;
  std::string type;  // for Column::type
  uint32_t type_oid = 0;
  int32_t typmod = -1;
  uint8_t flags = 0;  // 1: part of the replica identity key
  ValueClass value_class = ValueClass::kText;
};

struct Relation {
  std::string schema;
  std::string name;
  char replica_identity = 'd';
  std::vector<RelationColumn> columns;
};

}  // namespace pgoutput

struct PgOutputDecoder::State {
  // The message being decoded. Text values are views of it.
  std::unique_ptr<char[]> input;
  size_t input_capacity = 0;
  // Decoded bytea values, one after another (at most half the message).
  std::unique_ptr<char[]> bytes;
  char* bytes_next = nullptr;
  // Text of the message's binary values, one after another; the Columns'
  // views are set once the tuple is read (`patches`), as it may move.
  std::string formatted;
  struct Patch {
    size_t column;  // index in the tuple's Columns
    size_t offset;  // in `formatted`
    size_t size;
  };
  std::vector<Patch> patches;

  // binary 'true' was requested: Relations must be formattable.
  bool binary = false;
  PgOutputDecoder::Unformattable* unformattable = nullptr;

  // PgOutputDecoder::DeadLetterForm's result.
  std::string dead_letter;

  absl::flat_hash_map<uint32_t, std::unique_ptr<pgoutput::Relation>> relations;
  absl::flat_hash_map<uint32_t, std::string> type_names;  // from Y messages

  // The open transaction, from its Begin (0 outside one).
  uint32_t xid = 0;
  int64_t commit_time_us = 0;

  absl::string_view CopyInput(absl::string_view data);
  absl::Status ReadRelation(pgoutput::Reader& r);
  absl::Status ReadType(pgoutput::Reader& r);
  absl::StatusOr<const pgoutput::Relation*> ReadRelationId(pgoutput::Reader& r);
  // Reads one TupleData. With `out`, appends its columns; without, only
  // checks it.
  absl::Status ReadTuple(pgoutput::Reader& r, const pgoutput::Relation& rel,
                         bool allow_unchanged, std::vector<Column>* out);
  // Reads one TupleData and appends it to *out as text mode sends it (see
  // PgOutputDecoder::DeadLetterForm).
  absl::Status AppendTextTuple(pgoutput::Reader& r,
                               const pgoutput::Relation& rel, std::string* out);
  // A value's Int32 length and bytes.
  absl::Status ReadBytes(pgoutput::Reader& r,
                         const pgoutput::RelationColumn& col,
                         absl::string_view* value);
  absl::Status ReadValue(pgoutput::Reader& r,
                         const pgoutput::RelationColumn& col, Column* out);
  // A 'b' value; `index` is its Column's in the tuple.
  absl::Status ReadBinaryValue(pgoutput::Reader& r,
                               const pgoutput::RelationColumn& col,
                               size_t index, Column* out);
  // Sets out's kind and value from a value's text, as text mode gives it.
  absl::Status Classify(const pgoutput::RelationColumn& col,
                        absl::string_view text, Column* out);
  std::string TypeName(uint32_t oid, int32_t typmod) const;
};

}  // namespace outbox

#endif  // OUTBOX_DECODE_PGOUTPUT_STATE_H_
