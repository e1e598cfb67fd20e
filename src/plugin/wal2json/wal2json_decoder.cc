#include "plugin/wal2json/wal2json_decoder.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "outbox/lsn.h"
#include "plugin/wal2json/wal2json_keys.h"
#include "plugin/wal2json/wal2json_text.h"

namespace outbox {
namespace {

namespace od = simdjson::ondemand;
using std::string_view_literals::operator""sv;
using wal2json::ActionKind;
using wal2json::ClassifyKey;
using wal2json::Key;
using enum wal2json::Key;
using wal2json::KeyName;
using wal2json::RequiredKeys;

// ---------------------------------------------------------------------------
// Errors, built only on failure: the hot path formats nothing.

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("wal2json: ", what));
}

absl::Status JsonError(simdjson::error_code e) {
  return Invalid(
      absl::StrCat("malformed JSON (", simdjson::error_message(e), ")"));
}

absl::Status TypeError(absl::string_view key, absl::string_view want,
                       simdjson::error_code e) {
  if (e != simdjson::INCORRECT_TYPE) return JsonError(e);
  return Invalid(absl::StrCat("\"", key, "\" is not ", want));
}

// At most 32 bytes of untrusted text, for an error message.
std::string Excerpt(absl::string_view text) {
  if (text.size() <= 32) return std::string(text);
  return absl::StrCat(text.substr(0, 32), "...");
}

}  // namespace

// ---------------------------------------------------------------------------

struct Wal2JsonDecoder::State {
  od::parser parser;
  // The record, copied with SIMDJSON_PADDING bytes after it (libpq's buffer
  // has none). Strings without escapes and number literals are views of it.
  std::unique_ptr<char[]> input;
  size_t input_capacity = 0;
  // Unescaped strings and decoded bytea values, one after another. Twice
  // as big as `input`: a string unescapes to at most its own size, and its
  // bytea bytes add at most half that again, so no write moves an earlier
  // value.
  std::unique_ptr<char[]> arena;
  char* arena_next = nullptr;
  // A record that is not valid UTF-8 is parsed from `input` with each bad
  // byte replaced, while its strings are read from `original`, a padded
  // copy of the true bytes at the same offsets. Strings are read from
  // string_bytes: input.get() or original.get().
  std::unique_ptr<char[]> original;
  size_t original_capacity = 0;
  const char* string_bytes = nullptr;

  void CopyInput(absl::string_view data);
  // Keeps the record's bytes in `original` and makes `input` valid UTF-8.
  void SplitInvalidUtf8(size_t size);
  simdjson::error_code GetString(od::value& v, absl::string_view* out);
  // Each returns OK or InvalidArgument naming the key.
  absl::Status ReadString(od::value& v, Key key, absl::string_view* out);
  absl::Status ReadLsn(od::value& v, Key key, Lsn* out);
  absl::Status ReadXid(od::value& v, uint32_t* out);
  absl::Status ReadTimestamp(od::value& v, int64_t* out);
  absl::Status ReadColumnValue(od::value& v, Column* col);
  absl::Status ReadColumns(od::value& v, Change* out);
  // Reads the whole record into *out.
  absl::Status ReadRecord(od::document& doc, Change* out);
};

void Wal2JsonDecoder::State::CopyInput(absl::string_view data) {
  const size_t needed = data.size() + simdjson::SIMDJSON_PADDING;
  if (needed > input_capacity) {
    input_capacity = std::max(needed, 2 * input_capacity);
    input = std::make_unique_for_overwrite<char[]>(input_capacity);
    arena = std::make_unique_for_overwrite<char[]>(2 * input_capacity);
  }
  if (!data.empty()) std::memcpy(input.get(), data.data(), data.size());
  std::memset(input.get() + data.size(), 0, simdjson::SIMDJSON_PADDING);
  arena_next = arena.get();
  string_bytes = input.get();
}

void Wal2JsonDecoder::State::SplitInvalidUtf8(size_t size) {
  if (original_capacity < input_capacity) {
    original_capacity = input_capacity;
    original = std::make_unique_for_overwrite<char[]>(original_capacity);
  }
  std::memcpy(original.get(), input.get(), size + simdjson::SIMDJSON_PADDING);
  wal2json::ReplaceInvalidUtf8(input.get(), size, '?');
  string_bytes = original.get();
}

// Strings are read from the raw token rather than with simdjson's
// get_string(): most wal2json strings (names, types, uuids, timestamps)
// have no escapes and become views of the input without a copy, and the
// rest unescape faster (see UnescapeJsonString).
simdjson::error_code Wal2JsonDecoder::State::GetString(od::value& v,
                                                       absl::string_view* out) {
  const std::string_view token = v.raw_json_token();
  if (token.empty() || token[0] != '"') return simdjson::INCORRECT_TYPE;
  // Stage 1 found the string closed: after any trailing whitespace comes
  // its closing quote.
  const absl::string_view raw = TrimJsonSpace(ToAbsl(token));
  if (raw.size() < 2 || raw.back() != '"') return simdjson::STRING_ERROR;
  const char* begin = string_bytes + (raw.data() + 1 - input.get());
  const char* end = begin + (raw.size() - 2);
  if (!wal2json::HasBackslash(begin, end - begin)) {
    *out = absl::string_view(begin, end - begin);
    return simdjson::SUCCESS;
  }
  char* out_end = wal2json::UnescapeJsonString(begin, end, arena_next);
  if (out_end == nullptr) return simdjson::STRING_ERROR;
  *out = absl::string_view(arena_next, out_end - arena_next);
  arena_next = out_end;
  return simdjson::SUCCESS;
}

absl::Status Wal2JsonDecoder::State::ReadString(od::value& v, Key key,
                                                absl::string_view* out) {
  if (auto e = GetString(v, out)) {
    return TypeError(KeyName(key), "a string", e);
  }
  return absl::OkStatus();
}

absl::Status Wal2JsonDecoder::State::ReadLsn(od::value& v, Key key, Lsn* out) {
  absl::string_view text;
  if (absl::Status st = ReadString(v, key, &text); !st.ok()) return st;
  absl::StatusOr<Lsn> lsn = ParseLsn(text);
  if (!lsn.ok()) {
    return Invalid(
        absl::StrCat("bad \"", KeyName(key), "\" \"", Excerpt(text), "\""));
  }
  *out = *lsn;
  return absl::OkStatus();
}

absl::Status Wal2JsonDecoder::State::ReadXid(od::value& v, uint32_t* out) {
  bool null = false;
  if (auto e = v.is_null().get(null)) return JsonError(e);
  if (null) return absl::OkStatus();  // non-transactional M record
  uint64_t xid = 0;
  if (auto e = v.get_uint64().get(xid)) {
    return TypeError("xid", "an unsigned integer", e);
  }
  if (xid > UINT32_MAX) return Invalid("\"xid\" out of range");
  *out = static_cast<uint32_t>(xid);
  return absl::OkStatus();
}

absl::Status Wal2JsonDecoder::State::ReadTimestamp(od::value& v, int64_t* out) {
  bool null = false;
  if (auto e = v.is_null().get(null)) return JsonError(e);
  if (null) return absl::OkStatus();  // non-transactional M record
  absl::string_view text;
  if (absl::Status st = ReadString(v, kTimestamp, &text); !st.ok()) return st;
  if (!wal2json::ParseTimestamptz(text, out)) {
    return Invalid(absl::StrCat("bad \"timestamp\" \"", Excerpt(text), "\""));
  }
  return absl::OkStatus();
}

absl::Status Wal2JsonDecoder::State::ReadColumnValue(od::value& v,
                                                     Column* col) {
  od::json_type type;
  if (auto e = v.type().get(type)) return JsonError(e);
  switch (type) {
    case od::json_type::string:
      if (auto e = GetString(v, &col->value)) return JsonError(e);
      col->kind = ValueKind::kText;
      return absl::OkStatus();
    case od::json_type::number: {
      // The literal text keeps numeric precision (no trip through double);
      // simdjson checks no token it is not asked to convert, so check it.
      absl::string_view token = TrimJsonSpace(ToAbsl(v.raw_json_token()));
      if (!wal2json::IsJsonNumber(token)) {
        return Invalid(absl::StrCat("bad number \"", Excerpt(token), "\""));
      }
      col->kind = ValueKind::kNumber;
      col->value = token;
      return absl::OkStatus();
    }
    case od::json_type::boolean: {
      bool b = false;
      if (auto e = v.get_bool().get(b)) return JsonError(e);
      col->kind = ValueKind::kBool;
      col->value = b ? "true" : "false";
      return absl::OkStatus();
    }
    case od::json_type::null: {
      bool null = false;
      if (auto e = v.is_null().get(null)) return JsonError(e);
      if (!null) return JsonError(simdjson::N_ATOM_ERROR);
      col->kind = ValueKind::kNull;
      col->value = {};
      return absl::OkStatus();
    }
    case od::json_type::array:
    case od::json_type::object:
      break;
  }
  return Invalid("column \"value\" is an array or object");
}

absl::Status Wal2JsonDecoder::State::ReadColumns(od::value& v, Change* out) {
  od::array columns;
  if (auto e = v.get_array().get(columns)) {
    return TypeError("columns", "an array", e);
  }
  for (auto element : columns) {
    od::object object;
    if (auto e = element.get_object().get(object)) {
      return TypeError("columns[]", "an object", e);
    }
    Column& col = out->columns.emplace_back();
    unsigned seen = 0;  // 1 name, 2 type, 4 value
    for (auto field_result : object) {
      if (auto e = field_result.error()) return JsonError(e);
      // By reference: moving the field out of its result cost a
      // store-forwarding stall per field (a third of the insert record's
      // time). value_unsafe() only comes const&; field_result is our own
      // non-const object, so casting the const away is sound.
      od::field& field = const_cast<od::field&>(field_result.value_unsafe());
      const od::raw_json_string key = field.key();
      od::value& value = field.value();
      unsigned bit;
      if (key.unsafe_is_equal("name"sv)) {
        bit = 1;
        if (auto e = GetString(value, &col.name)) {
          return TypeError("name", "a string", e);
        }
      } else if (key.unsafe_is_equal("type"sv)) {
        bit = 2;
        if (auto e = GetString(value, &col.type)) {
          return TypeError("type", "a string", e);
        }
      } else if (key.unsafe_is_equal("value"sv)) {
        bit = 4;
        if (absl::Status st = ReadColumnValue(value, &col); !st.ok()) {
          return st;
        }
      } else {
        continue;
      }
      if (seen & bit) return Invalid("duplicate key in a column");
      seen |= bit;
    }
    if (seen != 7) return Invalid("column without name, type or value");
    // Decided after the whole object: "type" may come after "value".
    if (col.kind == ValueKind::kText && col.type == "bytea") {
      absl::string_view hex = col.value;
      if (hex.size() >= 2 && hex[0] == '\\' && hex[1] == 'x') {
        hex.remove_prefix(2);
      }
      // Appended to the arena: hex that was unescaped there lies before
      // arena_next, so source and output never overlap.
      char* bytes = arena_next;
      if (!wal2json::DecodeHex(hex, bytes)) {
        return Invalid(absl::StrCat("bad hex in bytea column \"",
                                    Excerpt(col.name), "\""));
      }
      col.kind = ValueKind::kBytes;
      col.value = absl::string_view(bytes, hex.size() / 2);
      arena_next += hex.size() / 2;
    }
  }
  return absl::OkStatus();
}

absl::Status Wal2JsonDecoder::State::ReadRecord(od::document& doc,
                                                Change* out) {
  od::object record;
  if (auto e = doc.get_object().get(record)) {
    return TypeError("record", "a JSON object", e);
  }

  uint32_t seen = 0;
  for (auto field_result : record) {
    if (auto e = field_result.error()) return JsonError(e);
    // By reference, as in ReadColumns().
    od::field& field = const_cast<od::field&>(field_result.value_unsafe());
    const Key key = ClassifyKey(field.key());
    if (key == kUnknownKey) continue;  // the iterator skips its value
    if (seen & key) {
      return Invalid(absl::StrCat("duplicate key \"", KeyName(key), "\""));
    }
    seen |= key;
    od::value& value = field.value();
    absl::Status st;
    switch (key) {
      case kAction: {
        absl::string_view action;
        st = ReadString(value, key, &action);
        if (st.ok() && !ActionKind(action, &out->kind)) {
          return Invalid(
              absl::StrCat("unknown action \"", Excerpt(action), "\""));
        }
        break;
      }
      case kXid:
        st = ReadXid(value, &out->xid);
        break;
      case kTimestamp:
        st = ReadTimestamp(value, &out->commit_time_us);
        break;
      case kLsnKey:
        st = ReadLsn(value, key, &out->lsn);
        break;
      case kNextLsn:
        st = ReadLsn(value, key, &out->end_lsn);
        break;
      case kSchema:
        st = ReadString(value, key, &out->schema);
        break;
      case kTable:
        st = ReadString(value, key, &out->table);
        break;
      case kColumns:
        st = ReadColumns(value, out);
        break;
      case kTransactional:
        if (auto e = value.get_bool().get(out->transactional)) {
          st = TypeError("transactional", "a boolean", e);
        }
        break;
      case kPrefix:
        st = ReadString(value, key, &out->prefix);
        break;
      case kContent:
        st = ReadString(value, key, &out->content);
        break;
      case kUnknownKey:
        break;
    }
    if (!st.ok()) return st;
  }

  // Only whitespace may follow the closing brace.
  const char* trailing = nullptr;
  if (doc.current_location().get(trailing) != simdjson::OUT_OF_BOUNDS) {
    return Invalid("trailing data after the record");
  }
  if (!(seen & kAction)) return Invalid("record has no \"action\"");
  const uint32_t missing = RequiredKeys(out->kind) & ~seen;
  if (missing != 0) {
    const Key first = static_cast<Key>(missing & (~missing + 1));
    return Invalid(absl::StrCat("record has no \"", KeyName(first), "\""));
  }
  return absl::OkStatus();
}

Wal2JsonDecoder::Wal2JsonDecoder() : state_(std::make_unique<State>()) {}
Wal2JsonDecoder::~Wal2JsonDecoder() = default;

absl::Status Wal2JsonDecoder::Decode(absl::string_view data, Change* out) {
  State& s = *state_;
  out->Clear();
  s.CopyInput(data);

  od::document doc;
  simdjson::error_code e =
      s.parser.iterate(s.input.get(), data.size(), s.input_capacity).get(doc);
  const bool invalid_utf8 = e == simdjson::UTF8_ERROR;
  if (invalid_utf8) {
    // wal2json copies a logical message's prefix and content byte for byte
    // (pg_logical_emit_message takes bytea), so any session can put bytes
    // into the stream that are not UTF-8. Parse the record's structure with
    // those bytes masked; its strings keep their true bytes.
    s.SplitInvalidUtf8(data.size());
    e = s.parser.iterate(s.input.get(), data.size(), s.input_capacity).get(doc);
  }
  if (e) return JsonError(e);
  absl::Status st = s.ReadRecord(doc, out);
  if (invalid_utf8 && out->kind != Change::Kind::kMessage) {
    return Invalid(
        "malformed JSON (the record is not valid UTF-8, and only a logical "
        "message's prefix and content may hold arbitrary bytes)");
  }
  return st;
}

}  // namespace outbox
