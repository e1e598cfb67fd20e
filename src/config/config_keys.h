// ConfigKeys: the one table of every configuration key.
//
// Each entry has the key's path, its description and a typed accessor into
// the Config (or into one outbox.tables[] entry). The YAML reader, --set,
// HelpText() and Config::Redacted() all walk this table; defaults shown by
// --help are rendered from a default-constructed Config, so the help text
// and the code cannot disagree. Private to src/config.
#ifndef OUTBOX_CONFIG_CONFIG_KEYS_H_
#define OUTBOX_CONFIG_CONFIG_KEYS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "config/config.h"
#include "config/tool.h"

namespace outbox {

using StringMap = std::map<std::string, std::string>;

// Typed pointer to the field a key sets.
using FieldRef =
    std::variant<std::string*, int64_t*, bool*, OnInvalid*, LogFormat*,
                 LogLevel*, PollerMode*, Compatibility*, TimestampSource*,
                 OnUpdate*, SlotMarkerBackend*, PgOutputBinary*, StringMap*>;

// One outbox.tables[] entry as written: unset fields inherit from the
// top-level outbox keys when the Config is resolved.
struct TableDraft {
  std::string table;  // "schema.name" or "name" (schema public)
  std::optional<std::string> id, aggregatetype, aggregateid, type, payload,
      time, seq;
  std::optional<std::string> topic;
  std::optional<std::string> key;
  std::optional<StringMap> headers;
};

// Path of the table list, and the prefix of keys inside one entry.
inline constexpr absl::string_view kTablesPath = "outbox.tables";
inline constexpr absl::string_view kTableEntryPrefix = "outbox.tables[].";

struct ConfigKey {
  absl::string_view path;  // "postgres.slot", "outbox.tables[].topic"
  absl::string_view description;
  // Exactly one of these is set, except for kTablesPath (neither).
  FieldRef (*global)(Config&) = nullptr;
  FieldRef (*table)(TableDraft&) = nullptr;
  // For keys without a global accessor: the default, as shown by --help.
  absl::string_view default_text;
  int64_t min = 0;      // integers: smallest legal value
  bool bytes = false;   // integers: accept KiB/MiB/GiB suffixes
  bool secret = false;  // strings: contains a password (redacted)
  bool list = false;    // strings: a comma-separated list; YAML may give a
                        // sequence of scalars, joined with ','
  // The tools that use the key: every tool reads the whole file (they
  // share it), and --help lists a tool's keys only.
  ToolSet tools = kAllTools;

  // Builder-style setters for the table in config_keys.cc.
  ConfigKey& Min(int64_t value) {
    min = value;
    return *this;
  }
  ConfigKey& Bytes() {
    bytes = true;
    return *this;
  }
  ConfigKey& Secret() {
    secret = true;
    return *this;
  }
  ConfigKey& List() {
    list = true;
    return *this;
  }
  ConfigKey& For(ToolSet set) {
    tools = set;
    return *this;
  }

  bool IsMap() const;  // a map<string,string> key (kafka.properties, ...)
};

// Every key, sections in the order of config.h.
const std::vector<ConfigKey>& ConfigKeys();

// The key whose path is exactly `path` ("outbox.tables[].topic" form), or
// nullptr.
const ConfigKey* FindConfigKey(absl::string_view path);

// True if some key's path starts with `prefix` + "." (a section).
bool IsConfigSection(absl::string_view prefix);

// Parses `text` into the field, checking the key's type and range. The error
// message says what was expected, without the key path.
absl::Status SetField(const ConfigKey& key, FieldRef field,
                      absl::string_view text);

// Renders a field's value the way --help and Redacted() show it.
std::string RenderField(FieldRef field);

// For the generated reference (outbox-docgen): the key's value type
// ("string", "integer", "boolean", "enum", "map", "list") and, for an enum,
// its values in order; for other types, none.
absl::string_view KeyTypeName(const ConfigKey& key);
std::vector<absl::string_view> KeyAllowedValues(const ConfigKey& key);
// The key's default as --help shows it.
std::string KeyDefault(const ConfigKey& key);

}  // namespace outbox

#endif  // OUTBOX_CONFIG_CONFIG_KEYS_H_
