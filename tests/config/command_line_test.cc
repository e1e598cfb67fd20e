#include "config/command_line.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

absl::StatusOr<CommandLine> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "/usr/bin/outbox-relay");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return ParseCommandLine(static_cast<int>(argv.size()), argv.data());
}

MATCHER_P3(OverrideIs, flag, path, value, "") {
  return arg.flag == flag && arg.path == path && arg.value == value;
}

TEST(CommandLineTest, DefaultsToRun) {
  auto cl = Parse({});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->program, "outbox-relay");
  EXPECT_EQ(cl->command, CommandLine::Command::kRun);
  EXPECT_EQ(cl->config_path, "");
  EXPECT_FALSE(cl->help);
  EXPECT_FALSE(cl->version);
  EXPECT_TRUE(cl->overrides.empty());
}

TEST(CommandLineTest, Subcommands) {
  EXPECT_EQ(Parse({"status"})->command, CommandLine::Command::kStatus);
  EXPECT_EQ(Parse({"--config", "x", "status"})->command,
            CommandLine::Command::kStatus);
  EXPECT_EQ(Parse({"run"})->command, CommandLine::Command::kRun);
  EXPECT_THAT(Parse({"start"}).status().message(),
              HasSubstr("unknown command \"start\""));
  EXPECT_THAT(Parse({"run", "status"}).status().message(),
              HasSubstr("unexpected argument \"status\""));
}

// Issue 35: validate, and --connect with it only; the audit has neither.
TEST(CommandLineTest, ValidateTakesConnect) {
  auto cl = Parse({"validate", "--connect", "--config", "relay.yaml"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->command, CommandLine::Command::kValidate);
  EXPECT_TRUE(cl->validate_connect);
  EXPECT_FALSE(Parse({"validate"})->validate_connect);
  EXPECT_THAT(Parse({"--connect"}).status().message(),
              HasSubstr("--connect belongs to the validate command"));
  std::vector<std::string> args = {"outbox-poller", "validate", "--connect"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  EXPECT_TRUE(ParseCommandLine(3, argv.data(), Tool::kPoller).ok());
  args[0] = "outbox-audit";
  argv.clear();
  for (std::string& a : args) argv.push_back(a.data());
  EXPECT_FALSE(ParseCommandLine(2, argv.data(), Tool::kAudit).ok());
}

TEST(CommandLineTest, AclsTakesAPrincipal) {
  auto cl = Parse({"acls", "--principal", "User:relay"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->command, CommandLine::Command::kAcls);
  EXPECT_EQ(cl->acl_principal, "User:relay");
  EXPECT_EQ(Parse({"acls"})->acl_principal, "");
  EXPECT_THAT(Parse({"--principal", "User:x"}).status().message(),
              HasSubstr("--principal belongs to the acls command"));
  EXPECT_THAT(Parse({"acls", "--principal="}).status().message(),
              HasSubstr("--principal needs a principal"));
}

TEST(CommandLineTest, RepublishTakesARange) {
  auto cl =
      Parse({"republish", "--since", "2024-05-01 10:00:00+00",
             "--until=2024-05-01 11:00", "--dry-run", "--timeout-s", "30"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->command, CommandLine::Command::kRepublish);
  EXPECT_EQ(cl->rows.since, "2024-05-01 10:00:00+00");
  EXPECT_EQ(cl->rows.until, "2024-05-01 11:00");
  EXPECT_FALSE(cl->rows.all);
  EXPECT_TRUE(cl->republish.dry_run);
  EXPECT_EQ(cl->republish.timeout_s, 30);
  cl = Parse({"--all", "republish"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_TRUE(cl->rows.all);
  EXPECT_FALSE(cl->republish.dry_run);
  cl = Parse({"republish", "--ids", "a, b", "--ids=c", "--ids-file", "f"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_THAT(cl->rows.ids, ElementsAre("a", "b", "c"));
  EXPECT_EQ(cl->rows.ids_file, "f");
  cl = Parse({"republish", "--seq-from", "10", "--seq-to=20"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->rows.seq_from, 10);
  EXPECT_EQ(cl->rows.seq_to, 20);
  // --help still answers without a range.
  EXPECT_TRUE(Parse({"republish", "--help"})->help);
}

TEST(CommandLineTest, SkipAndAdvanceTakeWhatTheyDropAndTheRecord) {
  auto cl = Parse({"skip", "--event", "e-1", "--reason", "too big", "--by=al"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->command, CommandLine::Command::kSkip);
  EXPECT_EQ(cl->operator_action.event, "e-1");
  EXPECT_EQ(cl->operator_action.reason, "too big");
  EXPECT_EQ(cl->operator_action.by, "al");
  cl = Parse({"advance", "--to", "0/16B3748"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->command, CommandLine::Command::kAdvance);
  EXPECT_EQ(cl->operator_action.to, "0/16B3748");
  EXPECT_TRUE(cl->operator_action.by.empty());  // $USER@hostname later
  EXPECT_THAT(Parse({"skip"}).status().message(), HasSubstr("--event ID"));
  EXPECT_THAT(Parse({"advance"}).status().message(), HasSubstr("--to LSN"));
  EXPECT_THAT(Parse({"skip", "--event", "e", "--to", "0/1"}).status().message(),
              HasSubstr("--to belongs to the advance command"));
  EXPECT_THAT(Parse({"--event", "e"}).status().message(),
              HasSubstr("--event belongs to the skip and advance commands"));
}

TEST(CommandLineTest, RepublishWithoutARangeIsRefusedWithTheReason) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{
           {"republish"},
           {"republish", "--dry-run"},
           {"republish", "--until", "2024-05-01"}}) {
    auto cl = Parse(args);
    EXPECT_EQ(cl.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(cl.status().message(),
                HasSubstr("republish needs a range: --since TIMESTAMP"));
    EXPECT_THAT(cl.status().message(),
                HasSubstr("would flood consumers with old events"));
  }
  EXPECT_THAT(Parse({"republish", "--all", "--since", "x"}).status().message(),
              HasSubstr("take one kind of rows: --all, --since/--until, "
                        "--ids/--ids-file or --seq-from/--seq-to"));
  EXPECT_THAT(
      Parse({"republish", "--ids", "a", "--seq-from", "3"}).status().message(),
      HasSubstr("take one kind of rows"));
  EXPECT_THAT(Parse({"republish", "--seq-from", "x"}).status().message(),
              HasSubstr("--seq-from needs an integer from 0"));
  EXPECT_THAT(Parse({"republish", "--ids", "a,,b"}).status().message(),
              HasSubstr("--ids needs event ids"));
  EXPECT_THAT(
      Parse({"republish", "--all", "--timeout-s", "0"}).status().message(),
      HasSubstr("--timeout-s needs an integer from 1"));
  // The range flags mean nothing to the other commands.
  EXPECT_THAT(Parse({"--since", "2024-05-01"}).status().message(),
              HasSubstr("--since belongs to the republish command"));
  EXPECT_THAT(Parse({"status", "--dry-run"}).status().message(),
              HasSubstr("--dry-run belongs to the republish command"));
}

TEST(CommandLineTest, FromDebeziumTakesADebeziumVersion) {
  auto cl = Parse(
      {"from-debezium", "c.properties", "--debezium-version", "3.2.3.Final"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->debezium_config, "c.properties");
  EXPECT_EQ(cl->debezium_version, "3.2.3.Final");
  EXPECT_EQ(Parse({"from-debezium", "c.json"})->debezium_version, "");
  EXPECT_THAT(Parse({"--debezium-version=3.7", "run"}).status().message(),
              HasSubstr("--debezium-version belongs to the from-debezium"));
}

TEST(CommandLineTest, BothValueForms) {
  auto cl = Parse({"--config=a.yaml", "--pg", "host=x port=5", "--kafka=k:1",
                   "--slot", "s", "--tables=a,b", "--topic", "t.{type}",
                   "--set", "limits.max_inflight_events=5",
                   "--set=kafka.properties.linger.ms=a=b"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->config_path, "a.yaml");
  EXPECT_THAT(cl->overrides,
              ::testing::ElementsAre(
                  OverrideIs("--pg", "postgres.conninfo", "host=x port=5"),
                  OverrideIs("--kafka", "kafka.brokers", "k:1"),
                  OverrideIs("--slot", "postgres.slot", "s"),
                  OverrideIs("--tables", "outbox.tables", "a,b"),
                  OverrideIs("--topic", "outbox.tables[*].topic", "t.{type}"),
                  OverrideIs("--set", "limits.max_inflight_events", "5"),
                  OverrideIs("--set", "kafka.properties.linger.ms", "a=b")));
}

TEST(CommandLineTest, HelpAndVersion) {
  EXPECT_TRUE(Parse({"--help"})->help);
  EXPECT_TRUE(Parse({"-h"})->help);
  EXPECT_TRUE(Parse({"--version"})->version);
  EXPECT_THAT(Parse({"--help=yes"}).status().message(),
              HasSubstr("--help takes no value"));
}

TEST(CommandLineTest, Errors) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  for (const Case& tc : std::vector<Case>{
           {{"--bogus"}, "unknown flag \"--bogus\""},
           {{"--bogus=1"}, "unknown flag \"--bogus\""},
           {{"-x"}, "unknown flag \"-x\""},
           {{"--pg"}, "--pg needs a value"},
           {{"--set", "novalue"}, "--set expects KEY=VALUE"},
           {{"--set", "=1"}, "--set expects KEY=VALUE"},
           {{"--config="}, "--config needs a file name"},
           {{"republish", "--all", "--timeout-s", "abc"},
            "--timeout-s needs an integer from 1, got \"abc\""},
           {{"republish", "--all", "--timeout-s", "0"},
            "--timeout-s needs an integer from 1"},
           {{"republish", "--all", "--timeout-s=+5"}, "got \"+5\""},
           {{"republish", "--all", "--timeout-s", "99999999999"},
            "--timeout-s needs an integer"},
       }) {
    auto cl = Parse(tc.args);
    EXPECT_EQ(cl.status().code(), absl::StatusCode::kInvalidArgument)
        << tc.args[0];
    EXPECT_THAT(cl.status().message(), HasSubstr(tc.message)) << tc.args[0];
  }
}

TEST(CommandLineTest, HelpTextListsFlagsAndCommands) {
  std::string help = HelpText(Tool::kRelay);
  EXPECT_THAT(help, HasSubstr("Usage: outbox-relay "
                              "[run|validate|status|republish|skip|advance|"
                              "acls|from-debezium FILE]"));
  for (const char* flag :
       {"--config FILE", "--pg CONNINFO", "--kafka BROKERS", "--slot NAME",
        "--tables A,B", "--topic TEMPLATE", "--set KEY=VALUE", "--since",
        "--help", "--version"}) {
    EXPECT_THAT(help, HasSubstr(flag));
  }
  EXPECT_THAT(help, HasSubstr("  status\n"));
  EXPECT_THAT(help, HasSubstr("Exit status:\n  0\n"));
  EXPECT_THAT(help, HasSubstr("  5\n      a replication record the decoder"));
}

// Issue 24: outbox-poller --help lists only what the poller accepts.
// The help before its exit codes (whose meanings name every tool's cases),
// and the exit codes listed.
std::pair<std::string, std::string> SplitExitStatus(const std::string& help) {
  size_t at = help.find("\nExit status:\n");
  if (at == std::string::npos) return {help, ""};
  return {help.substr(0, at), help.substr(at)};
}

TEST(CommandLineTest, PollerHelpListsOnlyThePollersCommandsFlagsAndKeys) {
  auto [help, exits] = SplitExitStatus(HelpText(Tool::kPoller));
  EXPECT_THAT(help,
              HasSubstr("Usage: outbox-poller [run|validate|acls] [flags]\n"));
  for (const char* flag :
       {"--config FILE", "--pg CONNINFO", "--kafka BROKERS", "--tables A,B",
        "--topic TEMPLATE", "--set KEY=VALUE", "--help", "--version"}) {
    EXPECT_THAT(help, HasSubstr(flag));
  }
  for (const char* other :
       {"  status\n", "republish", "from-debezium", "--slot", "--since",
        "--all", "--dry-run", "--json", "postgres.slot", "postgres.state_dir",
        "kafka.exactly_once", "limits.", "outbox.messages.prefix"}) {
    EXPECT_THAT(help, Not(HasSubstr(other))) << other;
  }
  EXPECT_THAT(exits, HasSubstr("  3\n"));
  EXPECT_THAT(exits, Not(HasSubstr("  4\n")));
  EXPECT_THAT(exits, Not(HasSubstr("  5\n")));
  for (const char* key :
       {"postgres.conninfo = ", "poller.batch_size = ", "poller.mode = ",
        "outbox.on_invalid = ", "kafka.properties = ", "http.listen = "}) {
    EXPECT_THAT(help, HasSubstr(key));
  }
}

// http.listen's help names every endpoint the server answers
// (http/metrics_server.h): /activez was once missing.
TEST(CommandLineTest, HelpNamesEveryHttpEndpoint) {
  for (Tool tool : {Tool::kRelay, Tool::kPoller}) {
    const std::string help = HelpText(tool);
    // The entry: its line, and the description lines indented under it.
    const size_t at = help.find("http.listen = ");
    ASSERT_NE(at, std::string::npos);
    size_t end = help.find('\n', at);
    while (end != std::string::npos &&
           help.compare(end + 1, 6, "      ") == 0) {
      end = help.find('\n', end + 1);
    }
    const std::string entry = help.substr(at, end - at);
    for (const char* path : {"(/)", "/status.json", "/metrics", "/healthz",
                             "/readyz", "/activez"}) {
      EXPECT_THAT(entry, HasSubstr(path)) << ToolName(tool);
    }
  }
}

TEST(CommandLineTest, AuditHelpListsItsFlagsAndExitCodes) {
  auto [help, exits] = SplitExitStatus(HelpText(Tool::kAudit));
  EXPECT_THAT(help, HasSubstr("Usage: outbox-audit [flags]\n"));
  for (const char* flag :
       {"--json", "--read-committed", "--max-duplicates N", "--timeout-s S",
        "--pg CONNINFO", "--version", "--since TIMESTAMP", "--ids ID[,ID...]",
        "--seq-from N", "outbox.columns.time = created_at"}) {
    EXPECT_THAT(help, HasSubstr(flag));
  }
  for (const char* other : {"republish", "--slot", "--dry-run", "poller.",
                            "http.listen", "postgres.slot"}) {
    EXPECT_THAT(help, Not(HasSubstr(other))) << other;
  }
  EXPECT_THAT(exits, HasSubstr("  1\n"));
  EXPECT_THAT(exits, HasSubstr("the audit failed"));
  EXPECT_THAT(exits, Not(HasSubstr("  4\n")));
}

absl::StatusOr<CommandLine> ParseAs(Tool tool, std::vector<std::string> args) {
  args.insert(args.begin(), std::string(ToolName(tool)));
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return ParseCommandLine(static_cast<int>(argv.size()), argv.data(), tool);
}

TEST(CommandLineTest, EachToolRefusesTheOthersCommandsAndFlags) {
  EXPECT_THAT(ParseAs(Tool::kPoller, {"status"}).status().message(),
              HasSubstr("unknown command \"status\"; expected run"));
  EXPECT_THAT(ParseAs(Tool::kPoller, {"--slot", "s"}).status().message(),
              HasSubstr("flag \"--slot\" is not one of outbox-poller's"));
  EXPECT_THAT(ParseAs(Tool::kRelay, {"--json"}).status().message(),
              HasSubstr("flag \"--json\" is not one of outbox-relay's"));
  EXPECT_THAT(ParseAs(Tool::kAudit, {"run"}).status().message(),
              HasSubstr("outbox-audit takes no command"));
  EXPECT_TRUE(ParseAs(Tool::kPoller, {"run", "--pg", "x"}).ok());
  EXPECT_EQ(ParseAs(Tool::kPoller, {"acls"})->command,
            CommandLine::Command::kAcls);
  EXPECT_THAT(ParseAs(Tool::kAudit, {"acls"}).status().message(),
              HasSubstr("outbox-audit takes no command"));
}

TEST(CommandLineTest, AuditFlags) {
  auto cl =
      ParseAs(Tool::kAudit, {"--json", "--read-committed", "--max-duplicates=3",
                             "--timeout-s", "9", "--pg", "host=x"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_TRUE(cl->audit.json);
  EXPECT_TRUE(cl->audit.read_committed);
  EXPECT_EQ(cl->audit.max_duplicates, 3);
  EXPECT_EQ(cl->audit.timeout_s, 9);
  EXPECT_EQ(cl->republish.timeout_s, 120);
  EXPECT_THAT(cl->overrides,
              ElementsAre(OverrideIs("--pg", "postgres.conninfo", "host=x")));
  EXPECT_THAT(
      ParseAs(Tool::kAudit, {"--max-duplicates", "x"}).status().message(),
      HasSubstr("--max-duplicates needs an integer from 0"));
  // The rows republish takes, without a range being required; no --all.
  EXPECT_FALSE(cl->rows.seq_from.has_value());
  cl = ParseAs(Tool::kAudit, {"--since", "2024-05-01", "--until", "2024-06"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->rows.since, "2024-05-01");
  cl = ParseAs(Tool::kAudit, {"--seq-from", "5"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->rows.seq_from, 5);
  EXPECT_THAT(ParseAs(Tool::kAudit, {"--seq-to", "5"}).status().message(),
              HasSubstr("--seq-to needs --seq-from"));
  EXPECT_THAT(ParseAs(Tool::kAudit, {"--all"}).status().message(),
              HasSubstr("is not one of outbox-audit's"));
}

// "--max-duplicates abc" used to become 0 (atoll): every numeric flag is an
// integer in range or a one-line error.
TEST(CommandLineTest, AuditNumericFlagsAreIntegersInRangeOrOneLineError) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  for (const Case& tc : std::vector<Case>{
           {{"--max-duplicates", "abc"},
            "--max-duplicates needs an integer from 0, got \"abc\""},
           {{"--max-duplicates=abc"}, "--max-duplicates needs an integer"},
           {{"--max-duplicates", "-1"}, "got \"-1\""},
           {{"--max-duplicates", "1.5"}, "got \"1.5\""},
           {{"--max-duplicates", "10x"}, "got \"10x\""},
           {{"--max-duplicates", "+3"}, "got \"+3\""},
           {{"--max-duplicates", " 3"}, "got \" 3\""},
           {{"--max-duplicates="}, "--max-duplicates"},
           {{"--max-duplicates", "99999999999999999999"}, "needs an integer"},
           {{"--max-duplicates"}, "--max-duplicates"},
           {{"--timeout-s", "0"}, "--timeout-s needs an integer from 1"},
           {{"--timeout-s", "abc"}, "--timeout-s needs an integer from 1"},
           {{"--timeout-s", "9999999999"}, "--timeout-s needs an integer"},
           {{"--json", "--timeout-s"}, "--timeout-s"},
       }) {
    auto cl = ParseAs(Tool::kAudit, tc.args);
    EXPECT_EQ(cl.status().code(), absl::StatusCode::kInvalidArgument)
        << tc.args[0];
    EXPECT_THAT(cl.status().message(), HasSubstr(tc.message)) << tc.args[0];
    EXPECT_THAT(cl.status().message(), testing::Not(HasSubstr("\n")));
  }
}

}  // namespace
}  // namespace outbox
