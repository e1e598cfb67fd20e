#include "config/command_line.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "config/config.h"
#include "config/config_keys.h"

namespace outbox {
namespace {

// Every flag; ParseCommandLine() and HelpText() both read this.
constexpr CommandLineFlag kFlags[] = {
    {"config", "FILE", "", "YAML configuration file (keys below)"},
    {"pg", "CONNINFO", "postgres.conninfo", "same as --set postgres.conninfo="},
    {"kafka", "BROKERS", "kafka.brokers", "same as --set kafka.brokers="},
    {"slot", "NAME", "postgres.slot", "same as --set postgres.slot="},
    {"tables", "A,B", kTablesPath,
     "replace outbox.tables with these tables, each with the default mapping"},
    {"topic", "TEMPLATE", "outbox.tables[*].topic",
     "topic template for every table (sets outbox.topic, drops per-table "
     "topics)"},
    {"set", "KEY=VALUE", "",
     "override any scalar key, a map entry (kafka.properties.linger.ms=50) or "
     "a table's key (outbox.tables[0].topic=x); repeatable"},
    {"since", "TIMESTAMP", "",
     "republish: events created at or after this time (timestamptz text; "
     "UTC unless it names a zone)"},
    {"until", "TIMESTAMP", "", "republish: and before this time"},
    {"all", "", "", "republish: every row of the outbox tables"},
    {"dry-run", "", "", "republish: print what would be re-published only"},
    {"timeout-s", "S", "",
     "republish: give up reading the topics back after S seconds (120)"},
    {"debezium-version", "VERSION", "",
     "from-debezium: the Debezium release the connector runs (3.2.3.Final); "
     "picks outbox.debezium.run_id (default: the newest Debezium's "
     "headers)"},
    {"help", "", "", "print this help and exit"},
    {"version", "", "", "print the version and exit"},
};

const CommandLineFlag* FindFlag(absl::string_view name) {
  for (const CommandLineFlag& f : kFlags) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

absl::Status Error(absl::string_view message) {
  return absl::InvalidArgumentError(message);
}

// Appends `text` word-wrapped to `width` columns, each line indented.
void AppendWrapped(std::string* out, absl::string_view text, size_t indent,
                   size_t width) {
  std::string pad(indent, ' ');
  size_t column = 0;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (column == 0) {
      absl::StrAppend(out, pad, word);
      column = indent + word.size();
    } else if (column + 1 + word.size() > width) {
      absl::StrAppend(out, "\n", pad, word);
      column = indent + word.size();
    } else {
      absl::StrAppend(out, " ", word);
      column += 1 + word.size();
    }
  }
  out->push_back('\n');
}

}  // namespace

absl::Span<const CommandLineFlag> CommandLineFlags() { return kFlags; }

absl::StatusOr<CommandLine> ParseCommandLine(int argc, char** argv) {
  CommandLine cl;
  absl::string_view program = argc > 0 ? argv[0] : "outbox-relay";
  size_t slash = program.rfind('/');
  cl.program = std::string(
      slash == absl::string_view::npos ? program : program.substr(slash + 1));
  bool have_command = false;
  std::string republish_flag;  // the last republish-only flag seen
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "-h") arg = "--help";
    if (!absl::ConsumePrefix(&arg, "--")) {
      if (absl::StartsWith(arg, "-") && arg.size() > 1) {
        return Error(absl::StrCat("unknown flag \"", arg, "\"; see --help"));
      }
      if (cl.command == CommandLine::Command::kFromDebezium &&
          cl.debezium_config.empty()) {
        cl.debezium_config = std::string(arg);
        continue;
      }
      if (have_command) {
        return Error(absl::StrCat("unexpected argument \"", arg, "\""));
      }
      if (arg == "run") {
        cl.command = CommandLine::Command::kRun;
      } else if (arg == "status") {
        cl.command = CommandLine::Command::kStatus;
      } else if (arg == "republish") {
        cl.command = CommandLine::Command::kRepublish;
      } else if (arg == "from-debezium") {
        cl.command = CommandLine::Command::kFromDebezium;
      } else {
        return Error(absl::StrCat("unknown command \"", arg,
                                  "\"; expected run, status, republish or "
                                  "from-debezium"));
      }
      have_command = true;
      continue;
    }
    std::pair<absl::string_view, absl::string_view> name_value =
        absl::StrSplit(arg, absl::MaxSplits('=', 1));
    const bool inline_value = absl::StrContains(arg, '=');
    const CommandLineFlag* flag = FindFlag(name_value.first);
    if (flag == nullptr) {
      return Error(absl::StrCat("unknown flag \"--", name_value.first,
                                "\"; see --help"));
    }
    std::string value;
    if (flag->arg.empty()) {
      if (inline_value) {
        return Error(absl::StrCat("--", flag->name, " takes no value"));
      }
    } else if (inline_value) {
      value = std::string(name_value.second);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return Error(
          absl::StrCat("--", flag->name, " needs a value (", flag->arg, ")"));
    }
    const std::string flag_name = absl::StrCat("--", flag->name);
    if (flag->name == "help") {
      cl.help = true;
    } else if (flag->name == "version") {
      cl.version = true;
    } else if (flag->name == "config") {
      if (value.empty()) return Error("--config needs a file name");
      cl.config_path = value;
    } else if (flag->name == "since" || flag->name == "until") {
      if (value.empty()) return Error(absl::StrCat(flag_name, " needs a time"));
      (flag->name == "since" ? cl.republish.since : cl.republish.until) = value;
      republish_flag = flag_name;
    } else if (flag->name == "all") {
      cl.republish.all = true;
      republish_flag = flag_name;
    } else if (flag->name == "dry-run") {
      cl.republish.dry_run = true;
      republish_flag = flag_name;
    } else if (flag->name == "timeout-s") {
      absl::StatusOr<int64_t> s =
          ParseIntegerFlag(flag_name, value, 1, INT32_MAX);
      if (!s.ok()) return s.status();
      cl.republish.timeout_s = static_cast<int>(*s);
      republish_flag = flag_name;
    } else if (flag->name == "debezium-version") {
      if (value.empty()) return Error("--debezium-version needs a version");
      cl.debezium_version = value;
    } else if (flag->name == "set") {
      std::pair<std::string, std::string> kv =
          absl::StrSplit(value, absl::MaxSplits('=', 1));
      if (!absl::StrContains(value, '=') || kv.first.empty()) {
        return Error(
            absl::StrCat("--set expects KEY=VALUE, got \"", value, "\""));
      }
      cl.overrides.push_back({flag_name, kv.first, kv.second});
    } else {
      cl.overrides.push_back({flag_name, std::string(flag->path), value});
    }
  }
  if (cl.help || cl.version) return cl;
  if (cl.command == CommandLine::Command::kFromDebezium &&
      cl.debezium_config.empty()) {
    return Error(
        "from-debezium needs the connector's configuration: a .properties "
        "or .json file, or - for standard input");
  }
  if (cl.command != CommandLine::Command::kFromDebezium &&
      !cl.debezium_version.empty()) {
    return Error("--debezium-version belongs to the from-debezium command");
  }
  if (cl.command != CommandLine::Command::kRepublish) {
    if (!republish_flag.empty()) {
      return Error(
          absl::StrCat(republish_flag, " belongs to the republish command"));
    }
    return cl;
  }
  const CommandLine::Republish& r = cl.republish;
  if (r.all && (!r.since.empty() || !r.until.empty())) {
    return Error("republish takes --all or --since/--until, not both");
  }
  if (!r.all && r.since.empty()) {
    // A whole-table re-publish must be asked for: rows whose records
    // Kafka's retention deleted look missing, and would all be sent again.
    return Error(
        "republish needs a range: --since TIMESTAMP (a time before the "
        "loss) or --all. Rows whose records Kafka's retention already "
        "deleted look missing too: re-publishing the whole table would "
        "flood consumers with old events");
  }
  return cl;
}

absl::StatusOr<int64_t> ParseIntegerFlag(absl::string_view flag,
                                         absl::string_view value, int64_t min,
                                         int64_t max) {
  // Digits only, an optional '-' first: SimpleAtoi alone would take "+3"
  // and " 3 ".
  absl::string_view digits = value;
  absl::ConsumePrefix(&digits, "-");
  int64_t v = 0;
  if (digits.empty() ||
      !std::all_of(digits.begin(), digits.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(value, &v) || v < min || v > max) {
    return Error(absl::StrCat(
        flag, " needs an integer from ", min,
        max == INT64_MAX || max == INT32_MAX ? "" : absl::StrCat(" to ", max),
        ", got \"", absl::CHexEscape(value), "\""));
  }
  return v;
}

std::string HelpText(absl::string_view program) {
  std::string out = absl::StrCat(
      "Usage: ", program,
      " [run|status|republish|from-debezium FILE] [flags]\n\n", "Commands:\n",
      "  run        relay outbox rows to Kafka until stopped (default)\n",
      "  status     print the replication slot's position and lag, then exit\n",
      "  republish  produce the events of a time range (--since/--until, or\n",
      "             --all) that are in the outbox tables but in no Kafka\n",
      "             record, as the relay would; never touches the slot\n",
      "  from-debezium FILE\n",
      "             print the configuration that gives the records of this\n",
      "             Debezium connector (.properties or Connect REST .json)\n\n",
      "Flags (--flag VALUE or --flag=VALUE; later ones win):\n");
  for (const CommandLineFlag& f : kFlags) {
    std::string head =
        absl::StrCat("  --", f.name, f.arg.empty() ? "" : " ", f.arg);
    absl::StrAppend(&out, head, "\n");
    AppendWrapped(&out, f.help, 6, 78);
  }
  absl::StrAppend(&out,
                  "\nConfiguration keys (YAML path = default; the same paths "
                  "work with --set):\n");
  for (const ConfigKey& key : ConfigKeys()) {
    std::string def = KeyDefault(key);
    absl::StrAppend(&out, "  ", key.path, " = ", def, "\n");
    AppendWrapped(&out, key.description, 6, 78);
  }
  return out;
}

}  // namespace outbox
