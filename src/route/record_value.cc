#include "route/record_value.h"

#include <limits>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/pg_timestamp.h"

namespace outbox {
namespace {

bool IsJsonType(absl::string_view type) {
  return type == "jsonb" || type == "json";
}

void AppendJsonValue(const Column* c, std::string* out) {
  if (c == nullptr || c->kind == ValueKind::kNull) {
    out->append("null");
  } else if (c->kind == ValueKind::kNumber || c->kind == ValueKind::kBool ||
             (c->kind == ValueKind::kText && IsJsonType(c->type))) {
    out->append(c->value.data(), c->value.size());
  } else if (c->kind == ValueKind::kBytes) {
    AppendJsonString(out, absl::Base64Escape(c->value));
  } else {
    AppendJsonString(out, c->value);
  }
}

}  // namespace

bool IsBlankPayload(absl::string_view payload) {
  for (char c : payload) {
    if (static_cast<unsigned char>(c) > 0x20) return false;
  }
  return true;
}

bool CompactJson(absl::string_view json, std::string* out) {
  if (json.empty() || (json[0] != '{' && json[0] != '[')) return false;
  std::string compact;
  compact.reserve(json.size());
  bool in_string = false;
  int depth = 0;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (in_string) {
      compact.push_back(c);
      if (c == '\\' && i + 1 < json.size()) {
        compact.push_back(json[++i]);
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case ' ':
      case '\t':
      case '\n':
      case '\r':
        continue;
      case '"':
        in_string = true;
        break;
      case '{':
      case '[':
        ++depth;
        break;
      case '}':
      case ']':
        if (--depth < 0) return false;
        break;
      default:
        break;
    }
    compact.push_back(c);
  }
  if (in_string || depth != 0) return false;
  *out = std::move(compact);
  return true;
}

void AppendJsonEnvelope(const std::vector<EnvelopeField>& fields,
                        std::string* out) {
  out->push_back('{');
  bool first = true;
  for (const auto& [name, column] : fields) {
    if (!first) out->push_back(',');
    first = false;
    AppendJsonString(out, name);
    out->push_back(':');
    AppendJsonValue(column, out);
  }
  out->push_back('}');
}

void AppendStructEnvelope(const std::vector<EnvelopeField>& fields,
                          std::string* out) {
  out->append("Struct{");
  bool first = true;
  for (const auto& [name, column] : fields) {
    if (column == nullptr || column->kind == ValueKind::kNull) continue;
    if (!first) out->push_back(',');
    first = false;
    absl::StrAppend(out, name, "=", column->value);
  }
  out->push_back('}');
}

absl::StatusOr<int64_t> ColumnTimestampMs(const Column& column) {
  if (column.kind == ValueKind::kNumber) {
    int64_t ms = 0;
    if (absl::SimpleAtoi(column.value, &ms)) return ms;
  } else if (column.kind == ValueKind::kText) {
    int64_t us = 0;
    if (ParsePgTimestamp(column.value, UtcOffset::kOptional, &us)) {
      return us / 1000;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "timestamp column ", column.name, " holds \"", column.value.substr(0, 64),
      "\", not a timestamp or Unix milliseconds"));
}

absl::StatusOr<int32_t> ColumnInt32(const Column& column, int32_t min) {
  int64_t v = 0;
  if (column.kind != ValueKind::kNumber ||
      !absl::SimpleAtoi(column.value, &v) || v < min ||
      v > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "column ", column.name, " holds \"", column.value.substr(0, 64),
        "\", not an integer from ", min, " to 2147483647"));
  }
  return static_cast<int32_t>(v);
}

}  // namespace outbox
