#include "config/connector_properties.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "simdjson.h"

namespace outbox {
namespace {

// Java properties: key=value or key: value, '#'/'!' comments, a trailing
// '\' continues the line, "\x" is x.
absl::StatusOr<ConnectorProperties> ParseProperties(absl::string_view text) {
  ConnectorProperties out;
  std::string logical;
  auto finish = [&]() -> absl::Status {
    absl::string_view line = absl::StripLeadingAsciiWhitespace(logical);
    if (line.empty() || line[0] == '#' || line[0] == '!') return {};
    std::string key, value;
    bool in_key = true, skipping_separator = false;
    for (size_t i = 0; i < line.size(); ++i) {
      char c = line[i];
      if (in_key && (c == '=' || c == ':')) {
        in_key = false;
        skipping_separator = true;
        continue;
      }
      if (skipping_separator && (c == ' ' || c == '\t')) continue;
      skipping_separator = false;
      if (c == '\\' && i + 1 < line.size()) c = line[++i];
      (in_key ? key : value).push_back(c);
    }
    key = std::string(absl::StripAsciiWhitespace(key));
    if (in_key) {
      return absl::InvalidArgumentError(
          absl::StrCat("line \"", line, "\" is not key=value"));
    }
    out[key] = std::string(absl::StripTrailingAsciiWhitespace(value));
    return {};
  };
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    absl::string_view line = absl::StripTrailingAsciiWhitespace(raw);
    bool continued =
        absl::EndsWith(line, "\\") && !absl::EndsWith(line, "\\\\");
    if (continued) line.remove_suffix(1);
    absl::StrAppend(&logical, logical.empty()
                                  ? line
                                  : absl::StripLeadingAsciiWhitespace(line));
    if (continued) continue;
    if (absl::Status s = finish(); !s.ok()) return s;
    logical.clear();
  }
  if (absl::Status s = finish(); !s.ok()) return s;
  return out;
}

// Kafka Connect REST: {"name": N, "config": {...}} or the config alone.
// Values are strings in Connect; numbers and booleans are taken as text.
absl::StatusOr<ConnectorProperties> ParseJson(absl::string_view text) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto error = parser.parse(text.data(), text.size()).get(root)) {
    return absl::InvalidArgumentError(
        absl::StrCat("not JSON: ", simdjson::error_message(error)));
  }
  simdjson::dom::object object;
  if (root.get_object().get(object)) {
    return absl::InvalidArgumentError("the JSON is not an object");
  }
  ConnectorProperties out;
  simdjson::dom::object config;
  if (!object["config"].get_object().get(config)) {
    std::string_view name;
    if (!object["name"].get_string().get(name)) out["name"] = name;
    object = config;
  }
  for (auto field : object) {
    std::string key(field.key);
    std::string_view s;
    if (!field.value.get_string().get(s)) {
      out[key] = std::string(s);
    } else if (field.value.is_object() || field.value.is_array()) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", key, "\" is not a string"));
    } else {
      out[key] = simdjson::minify(field.value);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<ConnectorProperties> ParseConnectorProperties(
    absl::string_view text) {
  absl::string_view start = absl::StripLeadingAsciiWhitespace(text);
  return !start.empty() && start[0] == '{' ? ParseJson(text)
                                           : ParseProperties(text);
}

}  // namespace outbox
