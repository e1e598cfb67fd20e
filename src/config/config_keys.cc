#include "config/config_keys.h"

#include <type_traits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "config/config_key_table.h"

namespace outbox {
namespace {

constexpr absl::string_view kOnInvalidNames[] = {"halt", "dead_letter"};
constexpr absl::string_view kLogFormatNames[] = {"text", "json"};
constexpr absl::string_view kLogLevelNames[] = {"debug", "info", "warn",
                                                "error"};
constexpr absl::string_view kPollerModeNames[] = {"mark", "delete"};
constexpr absl::string_view kCompatibilityNames[] = {"native", "debezium"};
constexpr absl::string_view kTimestampSourceNames[] = {"auto", "commit",
                                                       "produce"};
constexpr absl::string_view kOnUpdateNames[] = {"ignore", "warn", "error",
                                                "halt"};
constexpr absl::string_view kSlotMarkerBackendNames[] = {"file", "kafka"};
constexpr absl::string_view kPgOutputBinaryNames[] = {"auto", "on", "off"};

template <typename E>
struct EnumTraits;
template <>
struct EnumTraits<OnInvalid> {
  static constexpr const auto& kNames = kOnInvalidNames;
};
template <>
struct EnumTraits<LogFormat> {
  static constexpr const auto& kNames = kLogFormatNames;
};
template <>
struct EnumTraits<LogLevel> {
  static constexpr const auto& kNames = kLogLevelNames;
};
template <>
struct EnumTraits<PollerMode> {
  static constexpr const auto& kNames = kPollerModeNames;
};

template <>
struct EnumTraits<Compatibility> {
  static constexpr const auto& kNames = kCompatibilityNames;
};
template <>
struct EnumTraits<TimestampSource> {
  static constexpr const auto& kNames = kTimestampSourceNames;
};
template <>
struct EnumTraits<OnUpdate> {
  static constexpr const auto& kNames = kOnUpdateNames;
};
template <>
struct EnumTraits<SlotMarkerBackend> {
  static constexpr const auto& kNames = kSlotMarkerBackendNames;
};
template <>
struct EnumTraits<PgOutputBinary> {
  static constexpr const auto& kNames = kPgOutputBinaryNames;
};

template <typename E>
absl::string_view NameOf(E v) {
  return EnumTraits<E>::kNames[static_cast<int>(v)];
}

absl::Status ParseInt(const ConfigKey& key, absl::string_view text,
                      int64_t* out) {
  text = absl::StripAsciiWhitespace(text);
  int64_t unit = 1;
  if (key.bytes) {
    for (auto [suffix, factor] :
         {std::pair<absl::string_view, int64_t>{"KiB", int64_t{1} << 10},
          {"MiB", int64_t{1} << 20},
          {"GiB", int64_t{1} << 30}}) {
      if (absl::ConsumeSuffix(&text, suffix)) {
        unit = factor;
        text = absl::StripTrailingAsciiWhitespace(text);
        break;
      }
    }
  }
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v) ||
      (v != 0 && (v > INT64_MAX / unit || v < INT64_MIN / unit))) {
    return absl::InvalidArgumentError(absl::StrCat("expected an integer",
                                                   key.bytes ? " (bytes)" : "",
                                                   ", got \"", text, "\""));
  }
  v *= unit;
  if (v < key.min) {
    return absl::InvalidArgumentError(
        absl::StrCat("must be at least ", key.min, ", got ", v));
  }
  *out = v;
  return absl::OkStatus();
}

}  // namespace

absl::string_view EnumName(OnInvalid v) { return NameOf(v); }
absl::string_view EnumName(LogFormat v) { return NameOf(v); }
absl::string_view EnumName(LogLevel v) { return NameOf(v); }
absl::string_view EnumName(PollerMode v) { return NameOf(v); }
absl::string_view EnumName(Compatibility v) { return NameOf(v); }
absl::string_view EnumName(TimestampSource v) { return NameOf(v); }
absl::string_view EnumName(OnUpdate v) { return NameOf(v); }
absl::string_view EnumName(SlotMarkerBackend v) { return NameOf(v); }
absl::string_view EnumName(PgOutputBinary v) { return NameOf(v); }

bool ConfigKey::IsMap() const {
  if (global != nullptr) {
    Config scratch;
    return std::holds_alternative<StringMap*>(global(scratch));
  }
  if (table != nullptr) {
    TableDraft scratch;
    return std::holds_alternative<StringMap*>(table(scratch));
  }
  return false;
}

const std::vector<ConfigKey>& ConfigKeys() {
  static const std::vector<ConfigKey>* keys =
      new std::vector<ConfigKey>(BuildKeys());
  return *keys;
}

const ConfigKey* FindConfigKey(absl::string_view path) {
  for (const ConfigKey& key : ConfigKeys()) {
    if (key.path == path) return &key;
  }
  return nullptr;
}

bool IsConfigSection(absl::string_view prefix) {
  for (const ConfigKey& key : ConfigKeys()) {
    if (key.path.size() > prefix.size() && absl::StartsWith(key.path, prefix) &&
        key.path[prefix.size()] == '.') {
      return true;
    }
  }
  return false;
}

absl::Status SetField(const ConfigKey& key, FieldRef field,
                      absl::string_view text) {
  return std::visit(
      [&](auto* p) -> absl::Status {
        using V = std::remove_pointer_t<decltype(p)>;
        if constexpr (std::is_same_v<V, std::string>) {
          *p = std::string(text);
        } else if constexpr (std::is_same_v<V, int64_t>) {
          return ParseInt(key, text, p);
        } else if constexpr (std::is_same_v<V, bool>) {
          if (text == "true" || text == "yes" || text == "on") {
            *p = true;
          } else if (text == "false" || text == "no" || text == "off") {
            *p = false;
          } else {
            return absl::InvalidArgumentError(
                absl::StrCat("expected true or false, got \"", text, "\""));
          }
        } else if constexpr (std::is_same_v<V, StringMap>) {
          return absl::InvalidArgumentError("expected a map");
        } else {
          const auto& names = EnumTraits<V>::kNames;
          for (size_t i = 0; i < std::size(names); ++i) {
            if (text == names[i]) {
              *p = static_cast<V>(i);
              return absl::OkStatus();
            }
          }
          return absl::InvalidArgumentError(
              absl::StrCat("expected one of ", absl::StrJoin(names, " | "),
                           ", got \"", text, "\""));
        }
        return absl::OkStatus();
      },
      field);
}

std::string RenderField(FieldRef field) {
  return std::visit(
      [](auto* p) -> std::string {
        using V = std::remove_pointer_t<decltype(p)>;
        if constexpr (std::is_same_v<V, std::string>) {
          return p->empty() ? "\"\"" : *p;
        } else if constexpr (std::is_same_v<V, int64_t>) {
          return absl::StrCat(*p);
        } else if constexpr (std::is_same_v<V, bool>) {
          return *p ? "true" : "false";
        } else if constexpr (std::is_same_v<V, StringMap>) {
          return absl::StrCat(
              "{", absl::StrJoin(*p, ", ", absl::PairFormatter(": ")), "}");
        } else {
          return std::string(NameOf(*p));
        }
      },
      field);
}

namespace {

// The key's field in a scratch Config or TableDraft; nullopt for the table
// list itself.
template <typename F>
auto VisitKeyField(const ConfigKey& key, F f) {
  Config config;
  TableDraft table;
  return std::visit(
      f, key.global != nullptr ? key.global(config) : key.table(table));
}

}  // namespace

absl::string_view KeyTypeName(const ConfigKey& key) {
  if (key.global == nullptr && key.table == nullptr) return "list";
  if (key.list) return "list";
  return VisitKeyField(key, [](auto* p) -> absl::string_view {
    using V = std::remove_pointer_t<decltype(p)>;
    if constexpr (std::is_same_v<V, std::string>) {
      return "string";
    } else if constexpr (std::is_same_v<V, int64_t>) {
      return "integer";
    } else if constexpr (std::is_same_v<V, bool>) {
      return "boolean";
    } else if constexpr (std::is_same_v<V, StringMap>) {
      return "map";
    } else {
      return "enum";
    }
  });
}

std::vector<absl::string_view> KeyAllowedValues(const ConfigKey& key) {
  if (key.global == nullptr && key.table == nullptr) return {};
  return VisitKeyField(key, [](auto* p) -> std::vector<absl::string_view> {
    using V = std::remove_pointer_t<decltype(p)>;
    if constexpr (std::is_same_v<V, std::string> ||
                  std::is_same_v<V, int64_t> || std::is_same_v<V, bool> ||
                  std::is_same_v<V, StringMap>) {
      return {};
    } else {
      const auto& names = EnumTraits<V>::kNames;
      return {std::begin(names), std::end(names)};
    }
  });
}

std::string KeyDefault(const ConfigKey& key) {
  if (key.global == nullptr) return std::string(key.default_text);
  Config defaults;
  return RenderField(key.global(defaults));
}

}  // namespace outbox
