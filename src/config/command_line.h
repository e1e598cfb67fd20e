// CommandLine: the parsed argv of outbox-relay, outbox-poller and
// outbox-audit. Each tool accepts only its own commands and flags (see
// kFlags in command_line.cc); the others are refused with one line.
//
//   PROGRAM [run|validate|status|republish|skip|advance|acls|from-debezium
//   FILE]
//   [--config FILE]
//   [--pg CONNINFO] [--kafka BROKERS]
//           [--slot NAME] [--tables a,b] [--topic TEMPLATE]
//           [--set key.path=value]... [--help] [--version]
//
// republish (outbox-relay only) takes the rows it reads (Rows below:
// --since TIMESTAMP [--until TIMESTAMP], --ids ID[,ID...] / --ids-file FILE,
// --seq-from N [--seq-to N], or --all), and --dry-run, --timeout-s S;
// without rows, or with these flags on another command, the command line is
// refused.
//
// outbox-audit takes --json, --read-committed, --max-duplicates N and
// --timeout-s S (reading Kafka), the same row selectors but --all (none:
// every row), and no command.
//
// skip --event ID and advance --to LSN (outbox-relay only) take --reason
// TEXT and --by NAME; skip needs --event, advance --to, and the four
// belong to these commands only.
//
// validate (outbox-relay and outbox-poller) loads the configuration as the
// daemon would, prints it redacted and exits (cli/validate_command.h);
// with --connect it also runs the start-up checks against the servers.
//
// acls (outbox-relay and outbox-poller) prints the kafka-acls commands of
// the configuration (config/kafka_acls.h); it takes --principal P.
//
// from-debezium (outbox-relay only) takes the Debezium connector's
// configuration file ("-": standard input) and optionally
// --debezium-version VERSION, the Debezium release it runs.
//
// Flags take `--flag value` or `--flag=value`. Overrides are kept in
// command-line order and applied by LoadConfig() after the file, so the last
// one wins. ParseCommandLine() only checks syntax; key paths and values are
// checked by LoadConfig() against the key table. Errors are InvalidArgument
// with a one-line message.
#ifndef OUTBOX_CONFIG_COMMAND_LINE_H_
#define OUTBOX_CONFIG_COMMAND_LINE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "config/tool.h"

namespace outbox {

struct CommandLine {
  enum class Command {
    kRun,
    kStatus,
    kRepublish,
    kFromDebezium,
    kAcls,
    kSkip,
    kAdvance,
    kValidate
  };

  // skip and advance (outbox-relay only; cli/operator_command.h): the
  // event or the target LSN, and what goes on the record.
  struct OperatorAction {
    std::string event;   // skip --event
    std::string to;      // advance --to, an LSN (checked by the command)
    std::string reason;  // --reason
    std::string by;      // --by; empty: $USER@hostname
  };

  // The outbox rows republish and outbox-audit read (audit/audit_sources.h,
  // SelectRows): one kind of selector at most. Timestamps are PostgreSQL
  // timestamptz text, checked by the server.
  struct Rows {
    bool all = false;                 // republish --all
    std::string since;                // the time column, at or after
    std::string until;                // and before; empty: no upper bound
    std::vector<std::string> ids;     // --ids, in order
    std::string ids_file;             // --ids-file: one id a line
    std::optional<int64_t> seq_from;  // the seq column, at or above
    std::optional<int64_t> seq_to;    // and at or below
  };

  // The republish command's flags (cli/republish_command.h); its rows are
  // CommandLine::rows.
  struct Republish {
    bool dry_run = false;
    int timeout_s = 120;  // reading the topics back
  };

  // outbox-audit's flags (audit/audit.h says what they do).
  struct Audit {
    bool json = false;
    bool read_committed = false;
    int64_t max_duplicates = -1;  // -1: the audit's default
    int timeout_s = 120;          // reading the topics
  };

  // One override, in command-line order. `flag` is what the user typed
  // ("--pg", "--set") for error messages; `path` is a key path from the key
  // table ("postgres.conninfo"), or one of the list paths "outbox.tables"
  // (value: comma-separated table names) and "outbox.tables[*].topic"
  // (--topic: sets outbox.topic and drops every table's own topic).
  struct Override {
    std::string flag;
    std::string path;
    std::string value;
  };

  std::string program;  // basename of argv[0]
  Command command = Command::kRun;
  std::string config_path;  // empty: defaults plus overrides only
  bool help = false;
  bool version = false;
  std::vector<Override> overrides;
  Rows rows;
  Republish republish;
  OperatorAction operator_action;
  Audit audit;
  std::string debezium_config;    // from-debezium's file
  std::string debezium_version;   // from-debezium: empty, the newest
  std::string acl_principal;      // acls: empty, DefaultAclPrincipal()
  bool validate_connect = false;  // validate --connect
};

absl::StatusOr<CommandLine> ParseCommandLine(int argc, char** argv,
                                             Tool tool = Tool::kRelay);

// One flag of the command line; ParseCommandLine(), HelpText() and the
// generated CLI reference (outbox-docgen) all read the same table. A name
// may appear twice, for different tools (--timeout-s).
struct CommandLineFlag {
  absl::string_view name;     // without "--"
  absl::string_view arg;      // empty: takes no value
  absl::string_view path;     // override path; empty: handled by the parser
  absl::string_view help;     // "republish: ..." for the republish command's
  ToolSet tools = kAllTools;  // the tools that take it
};

// Every flag of every tool, in --help order.
absl::Span<const CommandLineFlag> CommandLineFlags();

// The value of a numeric flag (`flag` as typed, "--timeout-s"): a decimal
// integer in [min, max], else InvalidArgument in one line ("--timeout-s
// needs an integer from 1, got \"abc\""). Every numeric flag of
// outbox-relay, outbox-poller and outbox-audit is read with it.
absl::StatusOr<int64_t> ParseIntegerFlag(absl::string_view flag,
                                         absl::string_view value, int64_t min,
                                         int64_t max);

// True when `tool` takes `flag`.
bool TakesFlag(const CommandLineFlag& flag, Tool tool);

// Usage, the tool's commands and flags, then every config key it uses with
// its default and description (generated from the key table), then its exit
// codes.
std::string HelpText(Tool tool);

}  // namespace outbox

#endif  // OUTBOX_CONFIG_COMMAND_LINE_H_
