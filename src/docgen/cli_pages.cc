#include "docgen/cli_pages.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "config/command_line.h"
#include "daemon/exit_code.h"

namespace outbox {
namespace {

using Program = Tool;

std::string FlagTerm(absl::string_view name, absl::string_view arg) {
  return absl::StrCat("--", name, arg.empty() ? "" : " ", arg);
}

std::vector<CliEntry> Options(Program program) {
  std::vector<CliEntry> out;
  for (const CommandLineFlag& f : CommandLineFlags()) {
    if (!TakesFlag(f, program)) continue;
    out.push_back({FlagTerm(f.name, f.arg), std::string(f.help)});
  }
  out.push_back(
      {"configuration keys",
       "every key of the configuration file, with its default, is listed by "
       "`--help` and in the configuration reference; `--set key.path=value` "
       "sets any of them"});
  return out;
}

// The validate command, the same for both daemons.
CliEntry ValidateCommand() {
  return {"validate",
          "load the configuration exactly as `run` would (the file, `--set`, "
          "`${VAR}`, `_file` secrets), check every key and cross-key rule, "
          "print the effective configuration with every secret masked and "
          "exit (2 with one line naming the key when it is bad); `--connect` "
          "also runs the start-up checks against PostgreSQL and Kafka, read "
          "only (the slot is neither taken nor created, nothing is produced), "
          "one `ok|FAIL <check>: <detail>` line each: exit 3 when a check "
          "fails, 1 when a server cannot be reached; see "
          "docs/operations/validate.md"};
}

std::vector<CliEntry> DaemonExitStatus() {
  std::vector<CliEntry> out;
  for (const ExitCodeDoc& e : kExitCodes) {
    out.push_back({absl::StrCat(static_cast<int>(e.code)), e.meaning});
  }
  return out;
}

std::vector<CliEntry> Environment() {
  return {
      {"PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD, PGPASSFILE, "
       "PGSSLMODE, ...",
       "libpq's environment variables, used for whatever "
       "`postgres.conninfo` leaves out (an empty conninfo uses them alone); "
       "`~/.pgpass` is honoured"},
      {"PGOPTIONS",
       "server options; the relay appends `bytea_output=hex`, "
       "`TimeZone=UTC`, `DateStyle=ISO` and `extra_float_digits=3` to them "
       "on its connections"},
  };
}

std::vector<CliPage> BuildPages() {
  CliPage relay;
  relay.name = "outbox-relay";
  relay.summary =
      "publish a PostgreSQL transactional outbox to Kafka through logical "
      "replication";
  relay.synopsis = {
      "outbox-relay [run] [option...]",
      "outbox-relay validate [--connect] [option...]",
      "outbox-relay status [option...]",
      "outbox-relay republish {--since TIMESTAMP [--until TIMESTAMP] | --all} "
      "[--dry-run] [--timeout-s S] [option...]",
      "outbox-relay acls [--principal PRINCIPAL] [option...]",
      "outbox-relay from-debezium FILE",
  };
  relay.description = {
      "`outbox-relay` follows PostgreSQL's write-ahead log through a logical "
      "replication slot (output plugin wal2json or pgoutput) and publishes "
      "every committed outbox row, and every transactional logical message "
      "under the outbox prefix, to Kafka. It confirms the slot's position "
      "only after Kafka has acknowledged every event before it, so a crash "
      "anywhere loses nothing and repeats only what was in flight.",
      "Settings come from a YAML file (`--config`), then from the command "
      "line in order, the last one winning. At start the relay checks the "
      "server (wal_level, the plugin, the role's rights, the outbox tables, "
      "the slot) and refuses with one line naming the fix. Transient "
      "failures (PostgreSQL or Kafka down, the slot held by another "
      "instance) never end the process: it retries with backoff, so two "
      "instances on one slot are an active/standby pair.",
      "While running it serves a status page, `/status.json`, `/metrics`, "
      "`/healthz` and `/readyz` on `http.listen`.",
  };
  relay.commands = {
      {"run",
       "relay until SIGTERM or SIGINT (the default); SIGHUP reloads the "
       "configuration (docs/operations/reload.md)"},
      ValidateCommand(),
      {"status",
       "print the slot's position, lag, retained WAL, `wal_status` and, on "
       "PostgreSQL 17+, its failover state, then exit; does not take the "
       "slot, so it is safe while a relay runs; exit 3 when the slot does "
       "not exist"},
      {"republish",
       "produce the events of a time range (`--since`/`--until`, or `--all`) "
       "that are in the outbox tables but in no Kafka record, as the relay "
       "would; never touches the slot"},
      {"acls",
       "print the `kafka-acls` commands that grant the principal "
       "(`--principal`, default `User:` and `kafka.properties.sasl.username`) "
       "every Kafka resource and operation this configuration needs, then "
       "exit; see docs/operations/kafka-acls.md"},
      {"from-debezium FILE",
       "print the configuration that gives the records of this Debezium "
       "connector (`.properties` or Connect REST `.json`; `-` reads standard "
       "input); a key without counterpart is refused (exit 2)"},
  };
  relay.options = Options(Program::kRelay);
  relay.exit_status = DaemonExitStatus();
  relay.environment = Environment();
  relay.environment.push_back({"XDG_STATE_HOME, HOME",
                               "locate the default `postgres.state_dir`: "
                               "`$XDG_STATE_HOME/outbox-relay`, else "
                               "`~/.local/state/outbox-relay`"});
  relay.files = {
      {"relay.yaml",
       "the configuration file given with `--config`; "
       "`config/relay.example.yaml` shows every key"},
      {"STATE_DIR/SLOT.slot",
       "the slot marker in `postgres.state_dir`: the slot, system "
       "identifier, database, last confirmed LSN, timeline and host; it "
       "keeps a lost slot from being created anew silently and must outlive "
       "the process"},
  };
  relay.examples = {
      {"Relay one table with flags only:",
       "outbox-relay --pg \"host=db user=outbox_relay dbname=app\" --kafka "
       "broker:9092 --tables public.outbox"},
      {"Run from a configuration file, overriding one key:",
       "outbox-relay --config relay.yaml --set "
       "kafka.properties.linger.ms=50"},
      {"Check a configuration and the servers before starting:",
       "outbox-relay validate --connect --config relay.yaml"},
      {"Show the slot's position and lag:",
       "outbox-relay status --config relay.yaml"},
      {"Re-publish what a lost slot missed, first as a dry run:",
       "outbox-relay republish --config relay.yaml --since '2024-05-01 "
       "09:50:00+00' --dry-run"},
      {"Grant the relay's principal its Kafka access:",
       "outbox-relay acls --config relay.yaml > acls.sh"},
      {"Translate a Debezium connector:",
       "outbox-relay from-debezium connector.properties > relay.yaml"},
  };
  relay.see_also = {"outbox-poller(1)", "outbox-audit(1)", "pg_recvlogical(1)"};

  CliPage poller;
  poller.name = "outbox-poller";
  poller.summary =
      "publish a PostgreSQL transactional outbox to Kafka by polling";
  poller.synopsis = {"outbox-poller [run] [option...]",
                     "outbox-poller validate [--connect] [option...]",
                     "outbox-poller acls [--principal PRINCIPAL] [option...]"};
  poller.description = {
      "`outbox-poller` is the polling relay, for databases where logical "
      "replication is not allowed. It claims unsent rows with `SELECT ... "
      "FOR UPDATE SKIP LOCKED`, produces them, waits for every delivery "
      "report, marks them sent (or deletes them) and commits. It takes the "
      "same configuration file and flags as `outbox-relay` plus the "
      "`poller` section, and turns a row into the same record.",
      "It publishes a row as it is when claimed, not as it was inserted, and "
      "never a row deleted before the claim. Several instances may run side "
      "by side; per-key order holds with one instance only.",
  };
  poller.commands = {
      {"run",
       "poll until SIGTERM or SIGINT (the default); SIGHUP reloads the "
       "configuration (docs/operations/reload.md)"},
      ValidateCommand(),
      {"acls",
       "print the `kafka-acls` commands that grant the principal "
       "(`--principal`) the Kafka access this configuration needs, then "
       "exit; see docs/operations/kafka-acls.md"}};
  poller.options = Options(Program::kPoller);
  poller.exit_status = DaemonExitStatus();
  poller.environment = Environment();
  poller.files = {{"relay.yaml",
                   "the configuration file given with `--config`, shared "
                   "with outbox-relay"}};
  poller.examples = {
      {"Poll one table, woken by LISTEN/NOTIFY:",
       "outbox-poller --pg \"host=db user=outbox_poller dbname=app\" --kafka "
       "broker:9092 --tables public.outbox --set poller.notify=true"},
  };
  poller.see_also = {"outbox-relay(1)", "outbox-audit(1)"};

  CliPage audit;
  audit.name = "outbox-audit";
  audit.summary =
      "check what reached Kafka against what the database committed";
  audit.synopsis = {
      "outbox-audit [--config FILE] [--pg CONNINFO] [--kafka BROKERS] "
      "[--tables A,B] [--topic TEMPLATE] [--set KEY=VALUE]... "
      "[--max-duplicates N] [--json] [--timeout-s S] [--read-committed]"};
  audit.description = {
      "`outbox-audit` reads every row of the outbox tables, and every record "
      "of the topics their templates can produce from the beginning up to "
      "the end offsets seen when it starts, and reports missing events "
      "(committed, no record), duplicates (an event's records at different "
      "offsets), unknown records (an id never committed), misrouted "
      "records (a key that is not the event's) and per-key order violations "
      "(first deliveries out of creation order). It takes the relays' "
      "configuration file and flags.",
      "A record its consumer reads twice (the same partition and offset "
      "again, as a client may after a partition's leader changed) is Kafka "
      "holding it once: it is reported as `read twice` and left out of the "
      "other counts. A duplicate is shown with both copies' positions "
      "(topic/partition@offset).",
      "The order check assumes each aggregate's events are written by "
      "transactions that serialize on the aggregate, and needs the rows to "
      "still be in the table. Message events (the tableless outbox) leave "
      "no row, so a configuration without tables is refused (exit 2). At a "
      "terminal it shows its progress while it reads Kafka.",
  };
  audit.options = Options(Program::kAudit);
  audit.exit_status = {
      {"0",
       "the audit passed: nothing missing, unknown or misrouted, no "
       "order violation, duplicates within --max-duplicates"},
      {"1", "the audit failed; the report says which count"},
      {"2", "bad command line or configuration"},
      {"3", "a server could not be read"},
  };
  audit.environment = Environment();
  audit.files = poller.files;
  audit.examples = {
      {"Audit a deployment, allowing the duplicates of at-least-once "
       "delivery:",
       "outbox-audit --config relay.yaml"},
      {"Audit an exactly-once deployment as a read_committed consumer:",
       "outbox-audit --config relay.yaml --read-committed --json"},
  };
  audit.see_also = {"outbox-relay(1)", "outbox-poller(1)"};
  return {relay, poller, audit};
}

// Markdown: `code` stays; a term is shown as code.
void AppendEntries(std::string* out, absl::string_view title,
                   const std::vector<CliEntry>& entries, bool code_terms) {
  if (entries.empty()) return;
  absl::StrAppend(out, "\n## ", title, "\n\n");
  for (const CliEntry& e : entries) {
    absl::StrAppend(out, "- ", code_terms ? "`" : "**", e.term,
                    code_terms ? "`" : "**", ": ", e.text, "\n");
  }
}

// roff: escapes, and `code` in bold.
std::string Roff(absl::string_view text) {
  std::string s = absl::StrReplaceAll(text, {{"\\", "\\e"}, {"-", "\\-"}});
  std::string out;
  bool bold = false;
  for (char c : s) {
    if (c == '`') {
      out += bold ? "\\fR" : "\\fB";
      bold = !bold;
    } else {
      out += c;
    }
  }
  if (bold) out += "\\fR";
  // A line starting with '.' or '\'' would be a request.
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out = "\\&" + out;
  return out;
}

void AppendManEntries(std::string* out, absl::string_view title,
                      const std::vector<CliEntry>& entries) {
  if (entries.empty()) return;
  absl::StrAppend(out, ".SH ", title, "\n");
  for (const CliEntry& e : entries) {
    absl::StrAppend(out, ".TP\n.B ", Roff(e.term), "\n", Roff(e.text), "\n");
  }
}

}  // namespace

std::vector<CliPage> CliPages() { return BuildPages(); }

std::string RenderMarkdown(const CliPage& page, absl::string_view note) {
  std::string out = absl::StrCat("# ", page.name, "\n\n", note, page.name,
                                 " — ", page.summary, "\n\n## Synopsis\n\n");
  for (const std::string& s : page.synopsis) {
    absl::StrAppend(&out, "    ", s, "\n");
  }
  absl::StrAppend(&out, "\n## Description\n");
  for (const std::string& p : page.description) {
    absl::StrAppend(&out, "\n", p, "\n");
  }
  AppendEntries(&out, "Commands", page.commands, true);
  AppendEntries(&out, "Options", page.options, true);
  absl::StrAppend(&out,
                  "\nEvery configuration key, its type, default and meaning: "
                  "[configuration reference](configuration.md).\n");
  AppendEntries(&out, "Exit status", page.exit_status, false);
  absl::StrAppend(&out,
                  "\nWhat to do about each: [runbooks]"
                  "(../operations/runbooks.md#exit-codes).\n");
  AppendEntries(&out, "Environment", page.environment, true);
  AppendEntries(&out, "Files", page.files, true);
  absl::StrAppend(&out, "\n## Examples\n");
  for (const CliEntry& e : page.examples) {
    absl::StrAppend(&out, "\n", e.term, "\n\n    ", e.text, "\n");
  }
  std::vector<std::string> links;
  for (const std::string& s : page.see_also) {
    absl::string_view name = absl::string_view(s).substr(0, s.find('('));
    if (absl::StartsWith(name, "outbox-")) {
      links.push_back(absl::StrCat("[", s, "](", name, ".md)"));
    } else {
      links.push_back(s);
    }
  }
  absl::StrAppend(&out, "\n## See also\n\n", absl::StrJoin(links, ", "), "\n");
  return out;
}

std::string RenderMan(const CliPage& page) {
  std::string out = absl::StrCat(
      ".\\\" Generated by outbox-docgen from the code: do not edit.\n"
      ".\\\" Regenerate with scripts/gen_docs.sh.\n"
      ".TH ",
      absl::AsciiStrToUpper(page.name),
      " 1 \"\" \"outbox-relay\" "
      "\"outbox-relay manual\"\n.SH NAME\n",
      Roff(page.name), " \\- ", Roff(page.summary), "\n.SH SYNOPSIS\n");
  for (const std::string& s : page.synopsis) {
    absl::StrAppend(&out, ".PP\n", Roff(s), "\n");
  }
  absl::StrAppend(&out, ".SH DESCRIPTION\n");
  for (const std::string& p : page.description) {
    absl::StrAppend(&out, ".PP\n", Roff(p), "\n");
  }
  AppendManEntries(&out, "COMMANDS", page.commands);
  AppendManEntries(&out, "OPTIONS", page.options);
  AppendManEntries(&out, "EXIT STATUS", page.exit_status);
  AppendManEntries(&out, "ENVIRONMENT", page.environment);
  AppendManEntries(&out, "FILES", page.files);
  absl::StrAppend(&out, ".SH EXAMPLES\n");
  for (const CliEntry& e : page.examples) {
    absl::StrAppend(&out, ".PP\n", Roff(e.term), "\n.PP\n.nf\n.RS\n",
                    Roff(e.text), "\n.RE\n.fi\n");
  }
  absl::StrAppend(&out, ".SH SEE ALSO\n");
  std::vector<std::string> refs;
  for (const std::string& s : page.see_also) refs.push_back(Roff(s));
  absl::StrAppend(&out, absl::StrJoin(refs, ", "), "\n");
  return out;
}

}  // namespace outbox
