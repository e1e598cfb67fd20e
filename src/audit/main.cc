// outbox-audit: checks Kafka against the outbox tables and says pass/fail.
//
//   outbox-audit [--config relay.yaml] [--pg ...] [--kafka ...] [--tables ...]
//                [--max-duplicates N] [--json] [--timeout-s S]
//
// Reads the committed events from the configured outbox tables and every
// record of the topics the configured routing gives them
// (RoutedTopicPatterns: the templates, or outbox.topic_regex); prints missing,
// duplicates, unknown (rolled back or foreign), misrouted and per-key order
// violations. Exit 0 when it passes, 1 when it fails, 2 on bad usage, 3 when
// a server cannot be read.
#include <cstdio>
#include <string>
#include <vector>

#include "audit/audit.h"
#include "audit/audit_flags.h"
#include "audit/audit_sources.h"
#include "common/progress.h"
#include "config/command_line.h"
#include "config/config.h"

int main(int argc, char** argv) {
  using namespace outbox;
  absl::StatusOr<AuditFlags> flags = ParseAuditFlags(argc, argv);
  if (!flags.ok()) {
    fprintf(stderr, "outbox-audit: %s\n",
            std::string(flags.status().message()).c_str());
    return 2;
  }
  if (flags->help) {
    puts(
        "usage: outbox-audit [--config FILE] [--pg CONNINFO] [--kafka "
        "BROKERS]\n"
        "                    [--tables A,B] [--topic TEMPLATE] [--set "
        "key=value] [flags]\n"
        "Compares the outbox tables with Kafka: missing, duplicates, "
        "unknown,\nmisrouted and per-key order violations. Exit 0 = pass, "
        "1 = fail.\nFlags:");
    for (const AuditFlag& f : kAuditFlags) {
      printf("  --%s%s%s\n      %s\n", f.name, *f.arg ? " " : "", f.arg,
             f.help);
    }
    return 0;
  }
  int64_t max_duplicates = flags->max_duplicates;
  const bool json = flags->json;
  const bool read_committed = flags->read_committed;
  const int timeout_s = static_cast<int>(flags->timeout_s);
  std::vector<char*> rest = flags->rest;
  absl::StatusOr<CommandLine> cl =
      ParseCommandLine(static_cast<int>(rest.size()), rest.data());
  if (!cl.ok()) {
    fprintf(stderr, "outbox-audit: %s\n",
            std::string(cl.status().message()).c_str());
    return 2;
  }
  absl::StatusOr<Config> config = LoadConfig(*cl);
  if (!config.ok()) {
    fprintf(stderr, "outbox-audit: %s\n",
            std::string(config.status().message()).c_str());
    return 2;
  }
  if (absl::Status s = RequireOutboxTables(
          *config, "outbox-audit compares the outbox tables with Kafka");
      !s.ok()) {
    fprintf(stderr, "outbox-audit: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  auto committed = ReadCommittedEvents(*config);
  if (!committed.ok()) {
    fprintf(stderr, "outbox-audit: %s\n",
            std::string(committed.status().message()).c_str());
    return 3;
  }
  // After the events: their topics are among these.
  auto patterns = RoutedTopicPatterns(*config, "outbox-audit");
  if (!patterns.ok()) {
    fprintf(stderr, "outbox-audit: %s\n",
            std::string(patterns.status().message()).c_str());
    return 3;
  }
  // Exactly once means exactly once: no duplicate is tolerated by default.
  if (read_committed && max_duplicates < 0) max_duplicates = 0;
  // A progress meter on a terminal only: logs and pipes stay quiet.
  auto records =
      ReadPublishedRecords(*config, *patterns, timeout_s, read_committed,
                           Progress::IsTerminal(stderr) ? stderr : nullptr);
  if (!records.ok()) {
    fprintf(stderr, "outbox-audit: %s\n",
            std::string(records.status().message()).c_str());
    return 3;
  }
  AuditReport report = Audit(*committed, *records);
  bool passed = report.Passed(max_duplicates);
  if (json) {
    printf("%s\n", report.ToJson().c_str());
  } else {
    printf("%s%s\n", report.ToText().c_str(), passed ? "PASS" : "FAIL");
  }
  return passed ? 0 : 1;
}
