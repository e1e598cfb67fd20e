#include "config/config.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "config/command_line.h"
#include "config/config_keys.h"
#include "config/config_validation.h"
#include "config/redact.h"
#include "config/secrets.h"
#include "outbox/status_macros.h"
#include "yaml-cpp/yaml.h"

namespace outbox {
namespace {

TableDraft NamedTable(absl::string_view name) {
  TableDraft t;
  t.table = std::string(name);
  return t;
}

// The Config while it is being assembled: tables keep their unset fields
// until Resolve() fills them from the top-level outbox keys.
struct Draft {
  Config config;
  std::vector<TableDraft> tables = {NamedTable("public.outbox")};
};

absl::Status UnknownKey(absl::string_view source, absl::string_view path,
                        int line = -1) {
  return absl::InvalidArgumentError(
      absl::StrCat(source, ": unknown key \"", path, "\"",
                   line >= 0 ? absl::StrCat(" (line ", line + 1, ")") : ""));
}

absl::string_view NodeKind(const YAML::Node& node) {
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  if (node.IsNull()) return "null";
  return "a scalar";
}

// Merges `entries` into *map; an empty value removes the entry.
void MergeEntry(StringMap* map, const std::string& name,
                const std::string& value) {
  if (value.empty()) {
    map->erase(name);
  } else {
    (*map)[name] = value;
  }
}

class YamlReader {
 public:
  YamlReader(absl::string_view source, Draft* draft)
      : source_(source), draft_(draft) {}

  absl::Status Read(const YAML::Node& root) {
    if (root.IsNull()) return absl::OkStatus();  // empty file: defaults
    if (!root.IsMap()) {
      return absl::InvalidArgumentError(absl::StrCat(
          source_, ": expected a map at the top level, got ", NodeKind(root)));
    }
    return WalkMap(root, "", "", nullptr);
  }

 private:
  // Walks a section (or one table entry when `table` is set).
  absl::Status WalkMap(const YAML::Node& map, const std::string& display,
                       const std::string& spec, TableDraft* table) {
    for (auto it = map.begin(); it != map.end(); ++it) {
      // Copies: yaml-cpp's iterator hands out temporaries.
      const YAML::Node k = it->first;
      const YAML::Node v = it->second;
      const int line = k.Mark().line;
      std::string name = k.IsScalar() ? k.Scalar() : "?";
      std::string path = display.empty() ? name : display + "." + name;
      std::string spec_path = spec.empty() ? name : spec + "." + name;
      if (!k.IsScalar() || absl::StrContains(name, '.') ||
          absl::StrContains(name, '[')) {
        return UnknownKey(source_, path, line);
      }
      const ConfigKey* key = FindConfigKey(spec_path);
      if (key != nullptr && (key->table != nullptr) != (table != nullptr)) {
        key = nullptr;
      }
      if (key != nullptr && key->path == kTablesPath) {
        RETURN_IF_ERROR(ReadTables(v, path, line));
      } else if (key != nullptr) {
        FieldRef field =
            table != nullptr ? key->table(*table) : key->global(draft_->config);
        RETURN_IF_ERROR(ReadValue(*key, field, v, path));
      } else if (IsConfigSection(spec_path)) {
        if (v.IsNull()) continue;
        if (!v.IsMap()) {
          return ConfigKeyError(
              source_, path, absl::StrCat("expected a map, got ", NodeKind(v)),
              line);
        }
        RETURN_IF_ERROR(WalkMap(v, path, spec_path, table));
      } else {
        return UnknownKey(source_, path, line);
      }
    }
    return absl::OkStatus();
  }

  absl::Status ReadTables(const YAML::Node& list, const std::string& path,
                          int line) {
    if (!list.IsSequence()) {
      return ConfigKeyError(
          source_, path, absl::StrCat("expected a list, got ", NodeKind(list)),
          line);
    }
    std::vector<TableDraft> tables;
    for (size_t i = 0; i < list.size(); ++i) {
      const YAML::Node entry = list[i];
      std::string entry_path = absl::StrCat(path, "[", i, "]");
      TableDraft t;
      if (entry.IsScalar()) {
        ASSIGN_OR_RETURN(t.table, Expanded(entry, entry_path));
      } else if (entry.IsMap()) {
        RETURN_IF_ERROR(WalkMap(entry, entry_path, "outbox.tables[]", &t));
      } else {
        return ConfigKeyError(
            source_, entry_path,
            absl::StrCat("expected a table name or a map, got ",
                         NodeKind(entry)),
            entry.Mark().line);
      }
      if (t.table.empty()) {
        return ConfigKeyError(source_, entry_path + ".table", "is required",
                              entry.Mark().line);
      }
      tables.push_back(std::move(t));
    }
    draft_->tables = std::move(tables);
    return absl::OkStatus();
  }

  absl::Status ReadValue(const ConfigKey& key, FieldRef field,
                         const YAML::Node& v, const std::string& path) {
    const int line = v.Mark().line;
    if (auto* map = std::get_if<StringMap*>(&field)) {
      if (v.IsNull()) return absl::OkStatus();
      if (!v.IsMap()) {
        return ConfigKeyError(source_, path,
                              absl::StrCat("expected a map, got ", NodeKind(v)),
                              line);
      }
      for (auto it = v.begin(); it != v.end(); ++it) {
        const YAML::Node name = it->first;
        const YAML::Node value = it->second;
        if (!name.IsScalar() || !value.IsScalar()) {
          return ConfigKeyError(source_, path,
                                "expected a map of strings to strings",
                                name.Mark().line);
        }
        std::string entry_path = absl::StrCat(path, ".", name.Scalar());
        ASSIGN_OR_RETURN(std::string text, Expanded(value, entry_path));
        MergeEntry(*map, name.Scalar(), text);
      }
      return absl::OkStatus();
    }
    if (v.IsNull() && std::holds_alternative<std::string*>(field)) {
      return SetField(key, field, "");
    }
    if (key.list && v.IsSequence()) {
      std::vector<std::string> items;
      for (size_t i = 0; i < v.size(); ++i) {
        if (!v[i].IsScalar()) {
          return ConfigKeyError(source_, path, "expected a list of strings",
                                v[i].Mark().line);
        }
        ASSIGN_OR_RETURN(std::string item, Expanded(v[i], path));
        items.push_back(std::move(item));
      }
      return SetField(key, field, absl::StrJoin(items, ","));
    }
    if (!v.IsScalar()) {
      return ConfigKeyError(
          source_, path, absl::StrCat("expected a scalar, got ", NodeKind(v)),
          line);
    }
    ASSIGN_OR_RETURN(std::string text, Expanded(v, path));
    absl::Status s = SetField(key, field, text);
    if (!s.ok()) return ConfigKeyError(source_, path, s.message(), line);
    return absl::OkStatus();
  }

  // A scalar's text with ${VAR} expanded (config/secrets.h).
  absl::StatusOr<std::string> Expanded(const YAML::Node& scalar,
                                       const std::string& path) {
    absl::StatusOr<std::string> text = ExpandVariables(scalar.Scalar());
    if (!text.ok()) {
      return ConfigKeyError(source_, path, text.status().message(),
                            scalar.Mark().line);
    }
    return text;
  }

  std::string source_;
  Draft* draft_;
};

absl::Status ReadYaml(absl::string_view yaml, absl::string_view source,
                      Draft* draft) {
  // yaml-cpp reports syntax errors by throwing; this is the only place they
  // can come from, and they stop here.
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    return YamlReader(source, draft).Read(root);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
  }
}

absl::Status ApplyOverride(const CommandLine::Override& o, Draft* draft) {
  if (o.path == kTablesPath) {
    std::vector<TableDraft> tables;
    for (absl::string_view name : absl::StrSplit(o.value, ',')) {
      name = absl::StripAsciiWhitespace(name);
      if (!name.empty()) tables.push_back(NamedTable(name));
    }
    // Empty: no outbox table, for the tableless outbox alone (Resolve()
    // refuses it without outbox.messages.enabled).
    draft->tables = std::move(tables);
    return absl::OkStatus();
  }
  if (o.path == "outbox.tables[*].topic") {
    draft->config.outbox.topic = o.value;
    for (TableDraft& t : draft->tables) t.topic.reset();
    return absl::OkStatus();
  }

  // "outbox.tables[N].rest" addresses one entry of the table list.
  std::string spec = o.path;
  TableDraft* table = nullptr;
  absl::string_view rest = o.path;
  if (absl::ConsumePrefix(&rest, "outbox.tables[")) {
    size_t close = rest.find("].");
    size_t index = 0;
    if (close == absl::string_view::npos ||
        !absl::SimpleAtoi(rest.substr(0, close), &index)) {
      return UnknownKey(o.flag, o.path);
    }
    if (index >= draft->tables.size()) {
      return ConfigKeyError(
          o.flag, o.path,
          absl::StrCat("there are only ", draft->tables.size(), " tables"));
    }
    table = &draft->tables[index];
    spec = absl::StrCat(kTableEntryPrefix, rest.substr(close + 2));
  }

  // Exact key, or "<map key>.<entry name>" (kafka.properties.linger.ms).
  const ConfigKey* key = FindConfigKey(spec);
  std::string entry;
  if (key == nullptr) {
    for (const ConfigKey& k : ConfigKeys()) {
      if (k.IsMap() && spec.size() > k.path.size() + 1 &&
          absl::StartsWith(spec, k.path) && spec[k.path.size()] == '.') {
        key = &k;
        entry = spec.substr(k.path.size() + 1);
        break;
      }
    }
  }
  if (key == nullptr || key->path == kTablesPath ||
      (key->table != nullptr) != (table != nullptr)) {
    return UnknownKey(o.flag, o.path);
  }
  FieldRef field =
      table != nullptr ? key->table(*table) : key->global(draft->config);
  if (auto* map = std::get_if<StringMap*>(&field)) {
    if (entry.empty()) {
      return ConfigKeyError(
          o.flag, o.path,
          absl::StrCat("is a map; set one entry with ", o.path, ".NAME=VALUE"));
    }
    MergeEntry(*map, entry, o.value);
    return absl::OkStatus();
  }
  absl::Status s = SetField(*key, field, o.value);
  if (!s.ok()) return ConfigKeyError(o.flag, o.path, s.message());
  return absl::OkStatus();
}

// Fills config.outbox.tables from the drafts, with inheritance.
absl::Status Resolve(Draft* draft) {
  OutboxConfig& outbox = draft->config.outbox;
  outbox.tables.clear();
  std::set<std::string> seen;
  for (size_t i = 0; i < draft->tables.size(); ++i) {
    const TableDraft& d = draft->tables[i];
    std::string path = absl::StrCat("outbox.tables[", i, "]");
    OutboxTable t;
    std::pair<std::string, std::string> parts =
        absl::StrSplit(d.table, absl::MaxSplits('.', 1));
    if (absl::StrContains(d.table, '.')) {
      t.schema = parts.first;
      t.name = parts.second;
    } else {
      t.name = d.table;
    }
    if (t.schema.empty() || t.name.empty()) {
      return InvalidConfigValue(
          path + ".table",
          absl::StrCat("\"", d.table, "\" is not schema.table"));
    }
    if (!seen.insert(t.QualifiedName()).second) {
      return InvalidConfigValue(
          path + ".table", absl::StrCat(t.QualifiedName(), " is listed twice"));
    }
    t.columns.id = d.id.value_or(outbox.columns.id);
    t.columns.aggregatetype =
        d.aggregatetype.value_or(outbox.columns.aggregatetype);
    t.columns.aggregateid = d.aggregateid.value_or(outbox.columns.aggregateid);
    t.columns.type = d.type.value_or(outbox.columns.type);
    t.columns.payload = d.payload.value_or(outbox.columns.payload);
    t.columns.time = d.time.value_or(outbox.columns.time);
    t.columns.seq = d.seq.value_or(outbox.columns.seq);
    t.topic = d.topic.value_or(outbox.topic);
    t.key = d.key.value_or(outbox.key);
    if (t.key.empty()) t.key = t.columns.aggregateid;
    t.headers = d.headers.value_or(outbox.headers);

    for (const auto& [what, column] :
         {std::pair<absl::string_view, const std::string&>{"columns.id",
                                                           t.columns.id},
          {"columns.aggregatetype", t.columns.aggregatetype},
          {"columns.aggregateid", t.columns.aggregateid},
          {"columns.type", t.columns.type},
          {"columns.payload", t.columns.payload},
          {"columns.time", t.columns.time},
          {"columns.seq", t.columns.seq},
          {"topic", t.topic}}) {
      if (column.empty()) {
        return InvalidConfigValue(absl::StrCat(path, ".", what),
                                  "must not be empty");
      }
    }
    for (const auto& [column, header] : t.headers) {
      if (column.empty() || header.empty()) {
        return InvalidConfigValue(path + ".headers",
                                  "column and header names must not be empty");
      }
      if (header == "id") {
        return InvalidConfigValue(path + ".headers",
                                  "header \"id\" is reserved for the event id");
      }
    }
    outbox.tables.push_back(std::move(t));
  }
  if (outbox.tables.empty() && !outbox.messages.enabled) {
    return InvalidConfigValue(
        "outbox.tables",
        "is empty and outbox.messages.enabled is false: nothing "
        "to relay (list an outbox table, or enable the tableless "
        "outbox)");
  }
  return absl::OkStatus();
}

absl::StatusOr<Config> Finish(Draft* draft) {
  RETURN_IF_ERROR(Resolve(draft));
  if (absl::Status s = ReadSecretFiles(&draft->config); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("config: ", s.message()));
  }
  RETURN_IF_ERROR(ValidateConfig(draft->config));
  return std::move(draft->config);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> Config::RedactedEntries()
    const {
  return EntriesOf(*this, /*redact=*/true);
}

std::vector<std::pair<std::string, std::string>> Config::Entries() const {
  return EntriesOf(*this, /*redact=*/false);
}

std::vector<std::pair<std::string, std::string>> Config::EntriesOf(
    const Config& config, bool redact) {
  Config copy = config;
  const OutboxConfig& outbox = config.outbox;
  std::vector<std::pair<std::string, std::string>> out;
  for (const ConfigKey& key : ConfigKeys()) {
    if (key.global == nullptr) continue;
    FieldRef field = key.global(copy);
    std::string value;
    if (key.secret && redact) {
      value = RedactConninfo(*std::get<std::string*>(field));
      if (value.empty()) value = "\"\"";
    } else if (auto* map = std::get_if<StringMap*>(&field);
               redact && map != nullptr && key.path == "kafka.properties") {
      StringMap masked = **map;
      for (auto& [name, v] : masked) {
        if (IsSecretProperty(name)) v = "****";
      }
      value = RenderField(&masked);
    } else {
      value = RenderField(field);
    }
    out.emplace_back(std::string(key.path), std::move(value));
  }
  for (size_t i = 0; i < outbox.tables.size(); ++i) {
    const OutboxTable& t = outbox.tables[i];
    StringMap headers = t.headers;
    out.emplace_back(
        absl::StrCat("outbox.tables[", i, "]"),
        absl::StrCat(t.QualifiedName(), " columns={id: ", t.columns.id,
                     ", aggregatetype: ", t.columns.aggregatetype,
                     ", aggregateid: ", t.columns.aggregateid, ", type: ",
                     t.columns.type, ", payload: ", t.columns.payload,
                     ", time: ", t.columns.time, ", seq: ", t.columns.seq,
                     "} topic=", t.topic, " key=", t.key,
                     " headers=", RenderField(&headers)));
  }
  return out;
}

std::string Config::Redacted() const {
  std::string out;
  for (const auto& [path, value] : RedactedEntries()) {
    absl::StrAppend(&out, path, ": ", value, "\n");
  }
  return out;
}

absl::StatusOr<Config> ParseConfigYaml(absl::string_view yaml,
                                       absl::string_view source) {
  Draft draft;
  RETURN_IF_ERROR(ReadYaml(yaml, source, &draft));
  return Finish(&draft);
}

absl::Status RequireOutboxTables(const Config& config, absl::string_view what) {
  if (!config.outbox.tables.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      what,
      ", but outbox.tables is empty: events sent as logical messages "
      "(outbox.messages) leave no row to read"));
}

absl::StatusOr<Config> LoadConfig(const CommandLine& command_line) {
  Draft draft;
  if (!command_line.config_path.empty()) {
    std::ifstream in(command_line.config_path, std::ios::binary);
    if (!in) {
      return absl::NotFoundError(absl::StrCat("cannot read config file ",
                                              command_line.config_path, ": ",
                                              std::strerror(errno)));
    }
    std::stringstream text;
    text << in.rdbuf();
    RETURN_IF_ERROR(ReadYaml(text.str(), command_line.config_path, &draft));
  }
  for (const CommandLine::Override& o : command_line.overrides) {
    RETURN_IF_ERROR(ApplyOverride(o, &draft));
  }
  return Finish(&draft);
}

}  // namespace outbox
