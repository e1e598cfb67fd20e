#include "route/outbox_message.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace outbox {
namespace {

namespace od = simdjson::ondemand;

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("outbox message content: ", what));
}

absl::Status JsonError(simdjson::error_code e) {
  return Invalid(
      absl::StrCat("not valid JSON (", simdjson::error_message(e), ")"));
}

// One JSON value as a column value. Objects and arrays are kept as their
// JSON text only when `allow_nested`.
absl::Status ReadValue(od::value& v, bool allow_nested, ValueKind* kind,
                       absl::string_view* out) {
  od::json_type type;
  if (auto e = v.type().get(type)) return JsonError(e);
  switch (type) {
    case od::json_type::string: {
      std::string_view s;
      if (auto e = v.get_string().get(s)) return JsonError(e);
      *kind = ValueKind::kText;
      *out = ToAbsl(s);
      return absl::OkStatus();
    }
    case od::json_type::number: {
      // Checked by asking for a double; the literal is what is kept.
      double d;
      if (auto e = v.get_double().get(d)) return JsonError(e);
      *kind = ValueKind::kNumber;
      *out = TrimJsonSpace(ToAbsl(v.raw_json_token()));
      return absl::OkStatus();
    }
    case od::json_type::boolean: {
      bool b = false;
      if (auto e = v.get_bool().get(b)) return JsonError(e);
      *kind = ValueKind::kBool;
      *out = b ? "true" : "false";
      return absl::OkStatus();
    }
    case od::json_type::null: {
      bool null = false;
      if (auto e = v.is_null().get(null)) return JsonError(e);
      if (!null) return JsonError(simdjson::N_ATOM_ERROR);
      *kind = ValueKind::kNull;
      *out = {};
      return absl::OkStatus();
    }
    case od::json_type::object: {
      if (!allow_nested) break;
      od::object o;
      std::string_view raw;
      if (auto e = v.get_object().get(o)) return JsonError(e);
      if (auto e = o.raw_json().get(raw)) return JsonError(e);
      *kind = ValueKind::kText;
      *out = TrimJsonSpace(ToAbsl(raw));
      return absl::OkStatus();
    }
    case od::json_type::array: {
      if (!allow_nested) break;
      od::array a;
      std::string_view raw;
      if (auto e = v.get_array().get(a)) return JsonError(e);
      if (auto e = a.raw_json().get(raw)) return JsonError(e);
      *kind = ValueKind::kText;
      *out = TrimJsonSpace(ToAbsl(raw));
      return absl::OkStatus();
    }
  }
  return Invalid("an object or array where a scalar belongs");
}

}  // namespace

struct OutboxMessageParser::State {
  od::parser parser;
  // The content, copied with SIMDJSON_PADDING bytes after it.
  std::unique_ptr<char[]> input;
  size_t capacity = 0;

  absl::Status ReadHeaders(od::value& v, std::vector<Header>* headers);
};

absl::Status OutboxMessageParser::State::ReadHeaders(
    od::value& v, std::vector<Header>* headers) {
  bool null = false;
  if (auto e = v.is_null().get(null)) return JsonError(e);
  if (null) return absl::OkStatus();
  od::object object;
  if (auto e = v.get_object().get(object)) {
    if (e == simdjson::INCORRECT_TYPE) {
      return Invalid("\"headers\" is not an object");
    }
    return JsonError(e);
  }
  for (auto field : object) {
    std::string_view name;
    if (auto e = field.unescaped_key().get(name)) return JsonError(e);
    if (name == "id") {
      return Invalid("header \"id\" is reserved for the event id");
    }
    for (const Header& h : *headers) {
      if (h.name == name) {
        return Invalid(absl::StrCat("duplicate header \"", ToAbsl(name), "\""));
      }
    }
    od::value value;
    if (auto e = field.value().get(value)) return JsonError(e);
    od::json_type type;
    if (auto e = value.type().get(type)) return JsonError(e);
    if (type == od::json_type::object || type == od::json_type::array) {
      return Invalid(
          absl::StrCat("header \"", ToAbsl(name), "\" is an object or array"));
    }
    Header& h = headers->emplace_back();
    h.name.assign(name.data(), name.size());
    ValueKind kind;
    if (absl::Status st =
            ReadValue(value, /*allow_nested=*/false, &kind, &h.value);
        !st.ok()) {
      return st;
    }
    h.is_null = kind == ValueKind::kNull;
  }
  return absl::OkStatus();
}

OutboxMessageParser::OutboxMessageParser()
    : state_(std::make_unique<State>()) {}
OutboxMessageParser::~OutboxMessageParser() = default;

absl::Status OutboxMessageParser::Parse(absl::string_view content, Change* row,
                                        std::vector<Header>* headers) {
  State& s = *state_;
  row->columns.clear();
  headers->clear();
  const size_t needed = content.size() + simdjson::SIMDJSON_PADDING;
  if (needed > s.capacity) {
    s.capacity = std::max(needed, 2 * s.capacity);
    s.input = std::make_unique_for_overwrite<char[]>(s.capacity);
  }
  if (!content.empty()) {
    std::memcpy(s.input.get(), content.data(), content.size());
  }
  std::memset(s.input.get() + content.size(), 0, simdjson::SIMDJSON_PADDING);

  od::document doc;
  if (auto e = s.parser.iterate(s.input.get(), content.size(), s.capacity)
                   .get(doc)) {
    return JsonError(e);
  }
  od::object object;
  if (auto e = doc.get_object().get(object)) {
    if (e == simdjson::INCORRECT_TYPE) return Invalid("not a JSON object");
    return JsonError(e);
  }
  bool seen_headers = false;
  for (auto field : object) {
    std::string_view name;
    if (auto e = field.unescaped_key().get(name)) return JsonError(e);
    od::value value;
    if (auto e = field.value().get(value)) return JsonError(e);
    if (name == "headers") {
      if (seen_headers) return Invalid("duplicate field \"headers\"");
      seen_headers = true;
      if (absl::Status st = s.ReadHeaders(value, headers); !st.ok()) return st;
      continue;
    }
    if (row->Find(ToAbsl(name)) != nullptr) {
      return Invalid(absl::StrCat("duplicate field \"", ToAbsl(name), "\""));
    }
    Column& col = row->columns.emplace_back();
    col.name = ToAbsl(name);
    col.type = "json";
    if (name == "payload") {
      // The value's JSON text whatever its type (a string keeps its quotes,
      // as a jsonb column's text does); null is a null value.
      bool null = false;
      if (auto e = value.is_null().get(null)) return JsonError(e);
      if (null) {
        col.kind = ValueKind::kNull;
        continue;
      }
      od::json_type type;
      if (auto e = value.type().get(type)) return JsonError(e);
      if (type != od::json_type::object && type != od::json_type::array) {
        col.kind = ValueKind::kText;
        col.value = TrimJsonSpace(ToAbsl(value.raw_json_token()));
        continue;
      }
    }
    if (absl::Status st =
            ReadValue(value, /*allow_nested=*/true, &col.kind, &col.value);
        !st.ok()) {
      return st;
    }
  }
  // Only whitespace may follow the closing brace.
  const char* trailing = nullptr;
  if (doc.current_location().get(trailing) != simdjson::OUT_OF_BOUNDS) {
    return Invalid("trailing data after the JSON object");
  }
  return absl::OkStatus();
}

}  // namespace outbox
