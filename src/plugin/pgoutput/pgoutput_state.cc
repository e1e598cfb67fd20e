#include "plugin/pgoutput/pgoutput_state.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "plugin/pgoutput/pgoutput_binary.h"
#include "plugin/wal2json/wal2json_text.h"

namespace outbox {

namespace pgoutput {

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("pgoutput: ", what));
}

}  // namespace pgoutput

namespace {

using pgoutput::Invalid;
using pgoutput::Reader;
using pgoutput::Relation;
using pgoutput::RelationColumn;
using pgoutput::ValueClass;

bool IsNonFinite(absl::string_view text) {
  return text == "NaN" || text == "Infinity" || text == "-Infinity";
}

// `v` in network byte order, as pgoutput writes its integers.
template <typename T>
void AppendBigEndian(T v, std::string* out) {
  for (int shift = 8 * (sizeof(T) - 1); shift >= 0; shift -= 8) {
    out->push_back(static_cast<char>((v >> shift) & 0xff));
  }
}

}  // namespace

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

absl::Status PgOutputDecoder::State::AppendTextTuple(Reader& r,
                                                     const Relation& rel,
                                                     std::string* out) {
  uint16_t natts;
  if (!r.U16(&natts) || natts != rel.columns.size()) {
    return Invalid("tuple does not match its relation");
  }
  AppendBigEndian(natts, out);
  std::string text;
  for (const RelationColumn& col : rel.columns) {
    uint8_t kind;
    if (!r.U8(&kind)) return Invalid("truncated tuple");
    if (kind == 'n' || kind == 'u') {
      out->push_back(static_cast<char>(kind));
      continue;
    }
    absl::string_view raw;
    if (absl::Status s = ReadBytes(r, col, &raw); !s.ok()) return s;
    if (kind == 't') {
      text.assign(raw.data(), raw.size());
    } else if (kind != 'b') {
      return Invalid("unknown tuple value kind");
    } else if (col.value_class == ValueClass::kBytes) {  // byteaout, hex
      text = absl::StrCat("\\x", absl::BytesToHexString(raw));
    } else {
      absl::string_view view;
      bool appended = false;
      text.clear();
      if (!pgoutput::FormatBinary(col.type_oid, raw, &text, &view, &appended)) {
        return Invalid(absl::StrCat("bad binary ", col.type,
                                    " value in column \"", col.name, "\""));
      }
      if (!appended) text.assign(view.data(), view.size());
    }
    out->push_back('t');
    AppendBigEndian(static_cast<uint32_t>(text.size()), out);
    out->append(text);
  }
  return absl::OkStatus();
}

}  // namespace outbox
