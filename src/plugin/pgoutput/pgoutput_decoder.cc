#include "plugin/pgoutput/pgoutput_decoder.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "plugin/pgoutput/pgoutput_binary.h"
#include "plugin/pgoutput/pgoutput_reader.h"
#include "plugin/pgoutput/pgoutput_types.h"
#include "plugin/wal2json/wal2json_text.h"

namespace outbox {
namespace {

using pgoutput::Reader;
using pgoutput::ValueClass;

// Microseconds from the Unix epoch to PostgreSQL's (2000-01-01 UTC).
constexpr int64_t kPostgresEpochUnixMicros = 946684800LL * 1000000;

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("pgoutput: ", what));
}

const char* MessageName(char type) {
  switch (type) {
    case 'B':
      return "Begin";
    case 'C':
      return "Commit";
    case 'O':
      return "Origin";
    case 'R':
      return "Relation";
    case 'Y':
      return "Type";
    case 'I':
      return "Insert";
    case 'U':
      return "Update";
    case 'D':
      return "Delete";
    case 'T':
      return "Truncate";
    case 'M':
      return "Message";
    default:
      return nullptr;
  }
}

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

bool IsNonFinite(absl::string_view text) {
  return text == "NaN" || text == "Infinity" || text == "-Infinity";
}

// A PostgreSQL timestamp (microseconds since 2000-01-01 UTC) as Unix
// microseconds.
absl::Status UnixMicros(uint64_t pg_micros, int64_t* unix_micros) {
  if (__builtin_add_overflow(static_cast<int64_t>(pg_micros),
                             kPostgresEpochUnixMicros, unix_micros)) {
    return Invalid("timestamp out of range");
  }
  return absl::OkStatus();
}

}  // namespace

// ---------------------------------------------------------------------------

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

  absl::flat_hash_map<uint32_t, std::unique_ptr<Relation>> relations;
  absl::flat_hash_map<uint32_t, std::string> type_names;  // from Y messages

  // The open transaction, from its Begin (0 outside one).
  uint32_t xid = 0;
  int64_t commit_time_us = 0;

  absl::string_view CopyInput(absl::string_view data);
  absl::Status ReadRelation(Reader& r);
  absl::Status ReadType(Reader& r);
  absl::StatusOr<const Relation*> ReadRelationId(Reader& r);
  // Reads one TupleData. With `out`, appends its columns; without, only
  // checks it.
  absl::Status ReadTuple(Reader& r, const Relation& rel, bool allow_unchanged,
                         std::vector<Column>* out);
  // A value's Int32 length and bytes.
  absl::Status ReadBytes(Reader& r, const RelationColumn& col,
                         absl::string_view* value);
  absl::Status ReadValue(Reader& r, const RelationColumn& col, Column* out);
  // A 'b' value; `index` is its Column's in the tuple.
  absl::Status ReadBinaryValue(Reader& r, const RelationColumn& col,
                               size_t index, Column* out);
  // Sets out's kind and value from a value's text, as text mode gives it.
  absl::Status Classify(const RelationColumn& col, absl::string_view text,
                        Column* out);
  std::string TypeName(uint32_t oid, int32_t typmod) const;
};

absl::string_view PgOutputDecoder::State::CopyInput(absl::string_view data) {
  if (data.size() > input_capacity) {
    input_capacity = std::max(data.size(), 2 * input_capacity);
    input = std::make_unique_for_overwrite<char[]>(input_capacity);
    bytes = std::make_unique_for_overwrite<char[]>(input_capacity / 2 + 1);
  }
  if (!data.empty()) std::memcpy(input.get(), data.data(), data.size());
  bytes_next = bytes.get();
  formatted.clear();
  return absl::string_view(input.get(), data.size());
}

std::string PgOutputDecoder::State::TypeName(uint32_t oid,
                                             int32_t typmod) const {
  std::string name = pgoutput::BuiltinTypeName(oid, typmod);
  if (!name.empty()) return name;
  auto it = type_names.find(oid);
  if (it != type_names.end()) return it->second;
  return absl::StrCat(oid);  // a built-in type newer than this table
}

absl::Status PgOutputDecoder::State::ReadType(Reader& r) {
  uint32_t oid;
  absl::string_view schema, name;
  if (!r.U32(&oid) || !r.CString(&schema) || !r.CString(&name)) {
    return Invalid("truncated Type message");
  }
  if (!r.AtEnd()) return Invalid("bytes after the end of a Type message");
  // pgoutput sends pg_catalog as "".
  type_names[oid] = schema.empty() || schema == "public"
                        ? std::string(name)
                        : absl::StrCat(schema, ".", name);
  return absl::OkStatus();
}

absl::Status PgOutputDecoder::State::ReadRelation(Reader& r) {
  auto rel = std::make_unique<Relation>();
  uint32_t oid;
  absl::string_view schema, name;
  uint8_t identity;
  uint16_t natts;
  if (!r.U32(&oid) || !r.CString(&schema) || !r.CString(&name) ||
      !r.U8(&identity) || !r.U16(&natts)) {
    return Invalid("truncated Relation message");
  }
  if (natts > 1664) {  // MaxTupleAttributeNumber; a negative Int16 too
    return Invalid(absl::StrCat("Relation with ", natts, " columns"));
  }
  rel->schema.assign(schema.data(), schema.size());
  rel->name.assign(name.data(), name.size());
  rel->replica_identity = static_cast<char>(identity);
  rel->columns.resize(natts);
  for (RelationColumn& col : rel->columns) {
    absl::string_view col_name;
    uint32_t typmod;
    if (!r.U8(&col.flags) || !r.CString(&col_name) || !r.U32(&col.type_oid) ||
        !r.U32(&typmod)) {
      return Invalid("truncated Relation message");
    }
    col.name.assign(col_name.data(), col_name.size());
    col.typmod = static_cast<int32_t>(typmod);
    col.type = TypeName(col.type_oid, col.typmod);
    col.value_class = pgoutput::ClassOf(col.type_oid);
    if (binary && !pgoutput::HasBinaryFormat(col.type_oid)) {
      if (unformattable != nullptr) {
        *unformattable = {absl::StrCat(rel->schema, ".", rel->name), col.name,
                          col.type};
      }
      return Invalid(absl::StrCat("column \"", col.name, "\" of ", rel->schema,
                                  ".", rel->name, " has type ", col.type,
                                  ", whose binary format the relay cannot "
                                  "read (postgres.pgoutput_binary)"));
    }
  }
  if (!r.AtEnd()) return Invalid("bytes after the end of a Relation message");
  relations[oid] = std::move(rel);
  return absl::OkStatus();
}

absl::StatusOr<const Relation*> PgOutputDecoder::State::ReadRelationId(
    Reader& r) {
  uint32_t oid;
  if (!r.U32(&oid)) return Invalid("truncated relation OID");
  auto it = relations.find(oid);
  if (it == relations.end()) {
    return Invalid(absl::StrCat("change to relation ", oid,
                                " before its Relation message"));
  }
  return it->second.get();
}

absl::Status PgOutputDecoder::State::ReadBytes(Reader& r,
                                               const RelationColumn& col,
                                               absl::string_view* value) {
  uint32_t len;
  if (!r.U32(&len) || len > INT32_MAX || !r.Bytes(len, value)) {
    return Invalid(
        absl::StrCat("truncated value of column \"", col.name, "\""));
  }
  return absl::OkStatus();
}

absl::Status PgOutputDecoder::State::ReadValue(Reader& r,
                                               const RelationColumn& col,
                                               Column* out) {
  absl::string_view text;
  if (absl::Status s = ReadBytes(r, col, &text); !s.ok()) return s;
  return Classify(col, text, out);
}

absl::Status PgOutputDecoder::State::ReadBinaryValue(Reader& r,
                                                     const RelationColumn& col,
                                                     size_t index,
                                                     Column* out) {
  absl::string_view raw;
  if (absl::Status s = ReadBytes(r, col, &raw); !s.ok()) return s;
  if (col.value_class == ValueClass::kBytes) {  // bytea_send: the bytes
    out->kind = ValueKind::kBytes;
    out->value = raw;
    return absl::OkStatus();
  }
  absl::string_view text;
  bool appended = false;
  if (!pgoutput::FormatBinary(col.type_oid, raw, &formatted, &text,
                              &appended)) {
    return Invalid(absl::StrCat("bad binary ", col.type, " value in column \"",
                                col.name, "\""));
  }
  if (absl::Status s = Classify(col, text, out); !s.ok()) return s;
  if (appended && out->value.data() == text.data()) {
    patches.push_back({index,
                       static_cast<size_t>(text.data() - formatted.data()),
                       text.size()});
  }
  return absl::OkStatus();
}

absl::Status PgOutputDecoder::State::Classify(const RelationColumn& col,
                                              absl::string_view text,
                                              Column* out) {
  out->value = text;
  switch (col.value_class) {
    case ValueClass::kText:
      out->kind = ValueKind::kText;
      return absl::OkStatus();
    case ValueClass::kNumber:
      if (IsNonFinite(text)) {  // not JSON numbers: wal2json prints null
        out->kind = ValueKind::kNull;
        out->value = {};
        return absl::OkStatus();
      }
      if (!wal2json::IsJsonNumber(text)) break;
      out->kind = ValueKind::kNumber;
      return absl::OkStatus();
    case ValueClass::kBool:
      if (text != "t" && text != "f") break;
      out->kind = ValueKind::kBool;
      out->value = text == "t" ? "true" : "false";
      return absl::OkStatus();
    case ValueClass::kBytes: {
      if (text.size() < 2 || text[0] != '\\' || text[1] != 'x') {
        return Invalid(absl::StrCat("bytea column \"", col.name,
                                    "\" is not in hex format (bytea_output)"));
      }
      const absl::string_view hex = text.substr(2);
      if (!wal2json::DecodeHex(hex, bytes_next)) break;
      out->kind = ValueKind::kBytes;
      out->value = absl::string_view(bytes_next, hex.size() / 2);
      bytes_next += hex.size() / 2;
      return absl::OkStatus();
    }
  }
  return Invalid(
      absl::StrCat("bad ", col.type, " value in column \"", col.name, "\""));
}

absl::Status PgOutputDecoder::State::ReadTuple(Reader& r, const Relation& rel,
                                               bool allow_unchanged,
                                               std::vector<Column>* out) {
  uint16_t natts;
  if (!r.U16(&natts)) return Invalid("truncated tuple");
  if (natts != rel.columns.size()) {
    return Invalid(absl::StrCat("tuple has ", natts, " columns, relation ",
                                rel.schema, ".", rel.name, " has ",
                                rel.columns.size()));
  }
  patches.clear();
  for (const RelationColumn& col : rel.columns) {
    uint8_t kind;
    if (!r.U8(&kind)) return Invalid("truncated tuple");
    switch (kind) {
      case 'n':
        if (out != nullptr) {
          out->push_back(Column{col.name, col.type, ValueKind::kNull, {}});
        }
        break;
      case 'u':
        if (!allow_unchanged) {
          return Invalid(
              absl::StrCat("unchanged TOAST value outside an "
                           "Update in column \"",
                           col.name, "\""));
        }
        break;  // left out, as wal2json leaves it out
      case 't':
      case 'b':
        if (out != nullptr) {
          const size_t index = out->size();
          Column& c = out->emplace_back();
          c.name = col.name;
          c.type = col.type;
          absl::Status s = kind == 't' ? ReadValue(r, col, &c)
                                       : ReadBinaryValue(r, col, index, &c);
          if (!s.ok()) return s;
        } else {
          uint32_t len;
          absl::string_view skipped;
          if (!r.U32(&len) || !r.Bytes(len, &skipped)) {
            return Invalid("truncated tuple");
          }
        }
        break;
      default:
        return Invalid(absl::StrCat("unknown tuple value kind 0x",
                                    absl::Hex(kind, absl::kZeroPad2)));
    }
  }
  if (out != nullptr) {
    for (const Patch& p : patches) {
      (*out)[p.column].value =
          absl::string_view(formatted.data() + p.offset, p.size);
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------

PgOutputDecoder::PgOutputDecoder(bool binary, Unformattable* unformattable)
    : state_(std::make_unique<State>()) {
  state_->binary = binary;
  state_->unformattable = unformattable;
}
PgOutputDecoder::~PgOutputDecoder() = default;

absl::Status PgOutputDecoder::Decode(absl::string_view data, Change* out) {
  return Decode(data, kInvalidLsn, out);
}

absl::Status PgOutputDecoder::Decode(absl::string_view data, Lsn wal_start,
                                     Change* out) {
  State& s = *state_;
  out->Clear();
  if (data.empty()) return Invalid("empty message");
  const char type = data[0];
  const char* name = MessageName(type);
  if (name == nullptr) {
    switch (type) {
      case 'S':
      case 'E':
      case 'c':
      case 'A':
        return Invalid(absl::StrCat("streamed transaction message '",
                                    absl::string_view(&type, 1),
                                    "' (streaming was not requested)"));
      case 'b':
      case 'P':
      case 'K':
      case 'r':
      case 'p':
        return Invalid(absl::StrCat("two-phase message '",
                                    absl::string_view(&type, 1),
                                    "' (two_phase was not requested)"));
      default:
        return Invalid(absl::StrCat(
            "unknown message type 0x",
            absl::Hex(static_cast<uint8_t>(type), absl::kZeroPad2)));
    }
  }
  Reader r(s.CopyInput(data).substr(1));
  const auto truncated = [name] {
    return Invalid(absl::StrCat("truncated ", name, " message"));
  };
  absl::Status st;
  out->lsn = wal_start;
  switch (type) {
    case 'B': {
      out->kind = Change::Kind::kBegin;
      uint64_t timestamp;
      if (!r.U64(&out->lsn) || !r.U64(&timestamp) || !r.U32(&out->xid)) {
        return truncated();
      }
      st = UnixMicros(timestamp, &out->commit_time_us);
      s.xid = out->xid;
      s.commit_time_us = out->commit_time_us;
      break;
    }
    case 'C': {
      out->kind = Change::Kind::kCommit;
      uint8_t flags;
      uint64_t timestamp;
      if (!r.U8(&flags) || !r.U64(&out->lsn) || !r.U64(&out->end_lsn) ||
          !r.U64(&timestamp)) {
        return truncated();
      }
      if (flags != 0) {
        return Invalid(absl::StrCat("unknown Commit flags 0x",
                                    absl::Hex(flags, absl::kZeroPad2)));
      }
      st = UnixMicros(timestamp, &out->commit_time_us);
      out->xid = s.xid;
      s.xid = 0;
      s.commit_time_us = 0;
      break;
    }
    case 'O': {
      uint64_t origin_lsn;
      absl::string_view origin;
      if (!r.U64(&origin_lsn) || !r.CString(&origin)) return truncated();
      break;
    }
    case 'R':
      st = s.ReadRelation(r);
      break;
    case 'Y':
      st = s.ReadType(r);
      break;
    case 'I':
    case 'U':
    case 'D': {
      absl::StatusOr<const Relation*> rel = s.ReadRelationId(r);
      if (!rel.ok()) return rel.status();
      out->schema = (*rel)->schema;
      out->table = (*rel)->name;
      out->xid = s.xid;
      out->commit_time_us = s.commit_time_us;
      uint8_t tag;
      if (!r.U8(&tag)) return truncated();
      if (type != 'I' && (tag == 'K' || tag == 'O')) {
        // An old row may hold unchanged TOAST values (REPLICA IDENTITY FULL).
        st = s.ReadTuple(r, **rel, /*allow_unchanged=*/true, nullptr);
        if (!st.ok()) return st;
        if (type == 'D') {
          out->kind = Change::Kind::kDelete;
          break;
        }
        if (!r.U8(&tag)) return truncated();
      }
      if (tag != 'N' || type == 'D') {
        return Invalid(absl::StrCat(name, " message with tuple tag 0x",
                                    absl::Hex(tag, absl::kZeroPad2)));
      }
      out->kind = type == 'I' ? Change::Kind::kInsert : Change::Kind::kUpdate;
      out->columns.reserve((*rel)->columns.size());
      st =
          s.ReadTuple(r, **rel, /*allow_unchanged=*/type == 'U', &out->columns);
      break;
    }
    case 'T': {
      uint32_t count;
      uint8_t options;
      if (!r.U32(&count) || !r.U8(&options)) return truncated();
      for (uint32_t i = 0; i < count; ++i) {
        uint32_t oid;
        if (!r.U32(&oid)) return truncated();
      }
      out->xid = s.xid;
      out->commit_time_us = s.commit_time_us;
      break;
    }
    case 'M': {
      out->kind = Change::Kind::kMessage;
      uint8_t flags;
      uint32_t len;
      if (!r.U8(&flags) || !r.U64(&out->lsn) || !r.CString(&out->prefix) ||
          !r.U32(&len) || len > INT32_MAX || !r.Bytes(len, &out->content)) {
        return truncated();
      }
      if ((flags & ~1u) != 0) {
        return Invalid(absl::StrCat("unknown Message flags 0x",
                                    absl::Hex(flags, absl::kZeroPad2)));
      }
      out->transactional = (flags & 1) != 0;
      if (out->transactional) {
        out->xid = s.xid;
        out->commit_time_us = s.commit_time_us;
      }
      break;
    }
  }
  if (!st.ok()) return st;
  if (!r.AtEnd()) {
    return Invalid(absl::StrCat("bytes after the end of a ", name, " message"));
  }
  return absl::OkStatus();
}

}  // namespace outbox
