#include "config/command_line.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "config/config.h"
#include "config/config_keys.h"
#include "daemon/exit_code.h"

namespace outbox {
namespace {

constexpr ToolSet kAudit = ToolBit(Tool::kAudit);

// Every flag; ParseCommandLine() and HelpText() both read this. A name may
// appear twice, for different tools.
constexpr CommandLineFlag kFlags[] = {
    {"config", "FILE", "", "YAML configuration file (keys below)"},
    {"pg", "CONNINFO", "postgres.conninfo", "same as --set postgres.conninfo="},
    {"kafka", "BROKERS", "kafka.brokers", "same as --set kafka.brokers="},
    {"slot", "NAME", "postgres.slot",
     "same as --set postgres.slot=", kRelayOnly},
    {"tables", "A,B", kTablesPath,
     "replace outbox.tables with these tables, each with the default mapping"},
    {"topic", "TEMPLATE", "outbox.tables[*].topic",
     "topic template for every table (sets outbox.topic, drops per-table "
     "topics)"},
    {"set", "KEY=VALUE", "",
     "override any scalar key, a map entry (kafka.properties.linger.ms=50) or "
     "a table's key (outbox.tables[0].topic=x); repeatable"},
    {"since", "TIMESTAMP", "",
     "the events whose time column (outbox.columns.time) is at or after this "
     "time (timestamptz text; UTC unless it names a zone)",
     kRelayOnly | kAudit},
    {"until", "TIMESTAMP", "", "and before this time", kRelayOnly | kAudit},
    {"ids", "ID[,ID...]", "",
     "the events with these ids (outbox.columns.id); repeatable",
     kRelayOnly | kAudit},
    {"ids-file", "FILE", "",
     "the events whose ids the file lists, one a line (- for standard input)",
     kRelayOnly | kAudit},
    {"seq-from", "N", "",
     "the events whose sequence column (outbox.columns.seq) is at least N",
     kRelayOnly | kAudit},
    {"seq-to", "N", "", "and at most N", kRelayOnly | kAudit},
    {"all", "", "", "republish: every row of the outbox tables", kRelayOnly},
    {"dry-run", "", "", "republish: print what would be re-published only",
     kRelayOnly},
    {"timeout-s", "S", "",
     "republish: give up reading the topics back after S seconds (120)",
     kRelayOnly},
    {"event", "ID", "",
     "skip: the event id to drop (as the relay's poison line names it)",
     kRelayOnly},
    {"to", "LSN", "",
     "advance: drop every event whose transaction committed below this LSN "
     "(X/Y)",
     kRelayOnly},
    {"reason", "TEXT", "", "skip, advance: why, for the record", kRelayOnly},
    {"by", "NAME", "", "skip, advance: who, for the record ($USER@hostname)",
     kRelayOnly},
    {"debezium-version", "VERSION", "",
     "from-debezium: the Debezium release the connector runs (3.2.3.Final); "
     "picks outbox.debezium.run_id (default: the newest Debezium's "
     "headers)",
     kRelayOnly},
    {"principal", "PRINCIPAL", "",
     "acls: the principal to grant, User:NAME (default: User: and "
     "kafka.properties.sasl.username, else User:outbox-relay)",
     kDaemons},
    {"connect", "", "",
     "validate: also run the start-up checks against PostgreSQL and Kafka, "
     "read only (no slot taken or created, nothing produced)",
     kDaemons},
    {"max-duplicates", "N", "",
     "fail when there are more than N duplicates, an integer >= 0 (without "
     "it any number "
     "passes, except under --read-committed, where none does)",
     kAudit},
    {"json", "", "", "print the report as one JSON object", kAudit},
    {"timeout-s", "S", "",
     "give up reading Kafka after S seconds, an integer >= 1 (120)", kAudit},
    {"read-committed", "", "",
     "read only committed Kafka transactions, as a read_committed consumer "
     "does (kafka.exactly_once), and fail on any duplicate unless "
     "--max-duplicates is given",
     kAudit},
    {"help", "", "", "print this help and exit"},
    {"version", "", "", "print the version and the git revision, and exit"},
};

// The commands each tool has; the first is its default.
struct CommandSpec {
  absl::string_view name;
  absl::string_view arg;  // its operand, if any
  CommandLine::Command command;
  absl::string_view help;
  ToolSet tools;
};

constexpr CommandSpec kCommands[] = {
    {"run", "", CommandLine::Command::kRun,
     "relay outbox rows to Kafka until stopped (default)", kDaemons},
    {"validate", "", CommandLine::Command::kValidate,
     "load the configuration as the daemon would (file, --set, ${VAR}, "
     "_file secrets), check it, print it with secrets masked and exit; "
     "--connect also checks the servers",
     kDaemons},
    {"status", "", CommandLine::Command::kStatus,
     "print the replication slot's position and lag, then exit", kRelayOnly},
    {"republish", "", CommandLine::Command::kRepublish,
     "produce the selected events (--since/--until, --ids/--ids-file, "
     "--seq-from/--seq-to, or --all) that are in the outbox tables but in "
     "no Kafka record, as the relay would; never touches the slot",
     kRelayOnly},
    {"skip", "", CommandLine::Command::kSkip,
     "record that the relay drops one event (--event ID) instead of "
     "publishing it, on purpose and on the record; refused unless the relay "
     "is stopped or paused (docs/operations/skip-and-advance.md)",
     kRelayOnly},
    {"advance", "", CommandLine::Command::kAdvance,
     "record that the relay drops every event committed below --to LSN; "
     "refused unless the relay is stopped or paused",
     kRelayOnly},
    {"acls", "", CommandLine::Command::kAcls,
     "print the kafka-acls commands granting the Kafka access this "
     "configuration needs (docs/operations/kafka-acls.md), then exit",
     kDaemons},
    {"from-debezium", "FILE", CommandLine::Command::kFromDebezium,
     "print the configuration that gives the records of this Debezium "
     "connector (.properties or Connect REST .json)",
     kRelayOnly},
};

// The tools an exit code can come from (the meanings: kExitCodes).
ToolSet ExitCodeTools(ExitCode code) {
  return code == kExitHalted || code == kExitStream ? kRelayOnly : kAllTools;
}

bool Takes(ToolSet tools, Tool tool) { return (tools & ToolBit(tool)) != 0; }

// The flag `name` of `tool`, or nullptr; *other_tool says whether another
// tool has it.
const CommandLineFlag* FindFlag(absl::string_view name, Tool tool,
                                bool* other_tool) {
  *other_tool = false;
  for (const CommandLineFlag& f : kFlags) {
    if (f.name != name) continue;
    if (Takes(f.tools, tool)) return &f;
    *other_tool = true;
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

bool TakesFlag(const CommandLineFlag& flag, Tool tool) {
  return Takes(flag.tools, tool);
}

absl::string_view ToolName(Tool tool) {
  switch (tool) {
    case Tool::kRelay:
      return "outbox-relay";
    case Tool::kPoller:
      return "outbox-poller";
    case Tool::kAudit:
      return "outbox-audit";
  }
  return "outbox-relay";
}

absl::StatusOr<CommandLine> ParseCommandLine(int argc, char** argv, Tool tool) {
  CommandLine cl;
  absl::string_view program = argc > 0 ? argv[0] : ToolName(tool);
  size_t slash = program.rfind('/');
  cl.program = std::string(
      slash == absl::string_view::npos ? program : program.substr(slash + 1));
  bool have_command = false;
  std::string republish_flag;  // the last republish-only flag seen
  std::string operator_flag;   // the last skip/advance flag seen
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
      const CommandSpec* command = nullptr;
      std::vector<absl::string_view> names;
      for (const CommandSpec& c : kCommands) {
        if (!Takes(c.tools, tool)) continue;
        names.push_back(c.name);
        if (c.name == arg) command = &c;
      }
      if (command == nullptr) {
        return Error(absl::StrCat(
            "unknown command \"", arg, "\"; ",
            names.empty()
                ? absl::StrCat(ToolName(tool), " takes no command")
                : absl::StrCat("expected ", absl::StrJoin(names, ", "))));
      }
      cl.command = command->command;
      have_command = true;
      continue;
    }
    std::pair<absl::string_view, absl::string_view> name_value =
        absl::StrSplit(arg, absl::MaxSplits('=', 1));
    const bool inline_value = absl::StrContains(arg, '=');
    bool other_tool = false;
    const CommandLineFlag* flag = FindFlag(name_value.first, tool, &other_tool);
    if (flag == nullptr) {
      return Error(absl::StrCat(
          other_tool ? "flag \"--" : "unknown flag \"--", name_value.first,
          other_tool ? absl::StrCat("\" is not one of ", ToolName(tool), "'s")
                     : "\"",
          "; see --help"));
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
      (flag->name == "since" ? cl.rows.since : cl.rows.until) = value;
      republish_flag = flag_name;
    } else if (flag->name == "ids") {
      for (absl::string_view id : absl::StrSplit(value, ',')) {
        id = absl::StripAsciiWhitespace(id);
        if (id.empty()) return Error("--ids needs event ids, ID[,ID...]");
        cl.rows.ids.emplace_back(id);
      }
      republish_flag = flag_name;
    } else if (flag->name == "ids-file") {
      if (value.empty()) return Error("--ids-file needs a file name");
      cl.rows.ids_file = value;
      republish_flag = flag_name;
    } else if (flag->name == "seq-from" || flag->name == "seq-to") {
      absl::StatusOr<int64_t> n =
          ParseIntegerFlag(flag_name, value, 0, INT64_MAX);
      if (!n.ok()) return n.status();
      (flag->name == "seq-from" ? cl.rows.seq_from : cl.rows.seq_to) = *n;
      republish_flag = flag_name;
    } else if (flag->name == "all") {
      cl.rows.all = true;
      republish_flag = flag_name;
    } else if (flag->name == "dry-run") {
      cl.republish.dry_run = true;
      republish_flag = flag_name;
    } else if (flag->name == "timeout-s") {
      absl::StatusOr<int64_t> s =
          ParseIntegerFlag(flag_name, value, 1, INT32_MAX);
      if (!s.ok()) return s.status();
      if (tool == Tool::kAudit) {
        cl.audit.timeout_s = static_cast<int>(*s);
      } else {
        cl.republish.timeout_s = static_cast<int>(*s);
        republish_flag = flag_name;
      }
    } else if (flag->name == "event" || flag->name == "to" ||
               flag->name == "reason" || flag->name == "by") {
      if (value.empty() && flag->name != "reason") {
        return Error(
            absl::StrCat(flag_name, " needs a value (", flag->arg, ")"));
      }
      CommandLine::OperatorAction& o = cl.operator_action;
      (flag->name == "event" ? o.event
       : flag->name == "to"  ? o.to
       : flag->name == "by"  ? o.by
                             : o.reason) = value;
      operator_flag = flag_name;
    } else if (flag->name == "debezium-version") {
      if (value.empty()) return Error("--debezium-version needs a version");
      cl.debezium_version = value;
    } else if (flag->name == "principal") {
      if (value.empty()) return Error("--principal needs a principal");
      cl.acl_principal = value;
    } else if (flag->name == "connect") {
      cl.validate_connect = true;
    } else if (flag->name == "json") {
      cl.audit.json = true;
    } else if (flag->name == "read-committed") {
      cl.audit.read_committed = true;
    } else if (flag->name == "max-duplicates") {
      absl::StatusOr<int64_t> n =
          ParseIntegerFlag(flag_name, value, 0, INT64_MAX);
      if (!n.ok()) return n.status();
      cl.audit.max_duplicates = *n;
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
  if (cl.command != CommandLine::Command::kValidate && cl.validate_connect) {
    return Error("--connect belongs to the validate command");
  }
  if (cl.command != CommandLine::Command::kAcls && !cl.acl_principal.empty()) {
    return Error("--principal belongs to the acls command");
  }
  const bool skip = cl.command == CommandLine::Command::kSkip;
  const bool advance = cl.command == CommandLine::Command::kAdvance;
  if (!skip && !advance && !operator_flag.empty()) {
    return Error(absl::StrCat(operator_flag,
                              " belongs to the skip and advance commands"));
  }
  if (skip && !cl.operator_action.to.empty()) {
    return Error("--to belongs to the advance command");
  }
  if (advance && !cl.operator_action.event.empty()) {
    return Error("--event belongs to the skip command");
  }
  if (skip && cl.operator_action.event.empty()) {
    return Error("skip needs --event ID: the event the relay halted on");
  }
  if (advance && cl.operator_action.to.empty()) {
    return Error("advance needs --to LSN");
  }
  if (tool != Tool::kAudit && cl.command != CommandLine::Command::kRepublish) {
    if (!republish_flag.empty()) {
      return Error(
          absl::StrCat(republish_flag, " belongs to the republish command"));
    }
    return cl;
  }
  const CommandLine::Rows& r = cl.rows;
  const bool time = !r.since.empty() || !r.until.empty();
  const bool ids = !r.ids.empty() || !r.ids_file.empty();
  const bool seq = r.seq_from || r.seq_to;
  if ((r.all ? 1 : 0) + (time ? 1 : 0) + (ids ? 1 : 0) + (seq ? 1 : 0) > 1) {
    return Error(
        "take one kind of rows: --all, --since/--until, --ids/--ids-file or "
        "--seq-from/--seq-to, not several");
  }
  if (tool != Tool::kAudit && !r.all && r.since.empty() && !ids &&
      !r.seq_from) {
    // A whole-table re-publish must be asked for: rows whose records
    // Kafka's retention deleted look missing, and would all be sent again.
    return Error(
        "republish needs a range: --since TIMESTAMP (a time before the "
        "loss), --ids ID[,ID...], --seq-from N, or --all. Rows whose records "
        "Kafka's retention already deleted look missing too: re-publishing "
        "the whole table would flood consumers with old events");
  }
  if (!r.until.empty() && r.since.empty()) {
    return Error("--until needs --since");
  }
  if (r.seq_to && !r.seq_from) return Error("--seq-to needs --seq-from");
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

std::string HelpText(Tool tool) {
  const absl::string_view program = ToolName(tool);
  std::vector<const CommandSpec*> commands;
  for (const CommandSpec& c : kCommands) {
    if (Takes(c.tools, tool)) commands.push_back(&c);
  }
  std::string out = absl::StrCat("Usage: ", program);
  if (commands.size() > 1) {
    absl::StrAppend(&out, " [",
                    absl::StrJoin(commands, "|",
                                  [](std::string* o, const CommandSpec* c) {
                                    absl::StrAppend(o, c->name,
                                                    c->arg.empty() ? "" : " ",
                                                    c->arg);
                                  }),
                    "]");
  }
  absl::StrAppend(&out, " [flags]\n");
  if (tool == Tool::kAudit) {
    absl::StrAppend(&out,
                    "\nCompares the outbox tables with Kafka: missing, "
                    "duplicates, unknown,\nmisrouted and per-key order "
                    "violations.\n");
  }
  if (commands.size() > 1) {
    absl::StrAppend(&out, "\nCommands:\n");
    for (const CommandSpec* c : commands) {
      absl::StrAppend(&out, "  ", c->name, c->arg.empty() ? "" : " ", c->arg,
                      "\n");
      AppendWrapped(&out, c->help, 6, 78);
    }
  }
  absl::StrAppend(&out,
                  "\nFlags (--flag VALUE or --flag=VALUE; later ones win):\n");
  for (const CommandLineFlag& f : kFlags) {
    if (!Takes(f.tools, tool)) continue;
    std::string head =
        absl::StrCat("  --", f.name, f.arg.empty() ? "" : " ", f.arg);
    absl::StrAppend(&out, head, "\n");
    AppendWrapped(&out, f.help, 6, 78);
  }
  absl::StrAppend(&out, "\nConfiguration keys ", program,
                  " uses (YAML path = default; the same paths work with "
                  "--set; the file may hold the other tools' keys too):\n");
  for (const ConfigKey& key : ConfigKeys()) {
    if (!Takes(key.tools, tool)) continue;
    std::string def = KeyDefault(key);
    absl::StrAppend(&out, "  ", key.path, " = ", def, "\n");
    AppendWrapped(&out, key.description, 6, 78);
  }
  absl::StrAppend(&out, "\nExit status:\n");
  for (const ExitCodeDoc& e : kExitCodes) {
    if (!Takes(ExitCodeTools(e.code), tool)) continue;
    absl::StrAppend(&out, "  ", static_cast<int>(e.code), "\n");
    AppendWrapped(&out, e.meaning, 6, 78);
  }
  return out;
}

}  // namespace outbox
