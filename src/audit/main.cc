// outbox-audit: checks Kafka against the outbox tables and says pass/fail.
//
//   outbox-audit [--config relay.yaml] [--pg ...] [--kafka ...] [--tables ...]
//                [--max-duplicates N] [--json] [--timeout-s S]
//                [--read-committed] [--help] [--version]
//
// Reads the committed events from the configured outbox tables and every
// record of the topics the configured routing gives them
// (RoutedTopicPatterns: the templates, or outbox.topic_regex); prints missing,
// duplicates, unknown (rolled back or foreign), misrouted and per-key order
// violations, and the events operators skipped on purpose (outbox-relay
// skip/advance: "skipped by operator", with who, when and why; not
// missing). Exit 0 when it passes, 1 when it fails, 2 on bad usage, 3 when
// a server cannot be read.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "audit/audit.h"
#include "audit/audit_sources.h"
#include "audit/operator_skips.h"
#include "common/progress.h"
#include "common/version.h"
#include "config/command_line.h"
#include "config/config.h"

int main(int argc, char** argv) {
  using namespace outbox;
  absl::StatusOr<CommandLine> cl = ParseCommandLine(argc, argv, Tool::kAudit);
  if (!cl.ok()) {
    fprintf(stderr, "outbox-audit: %s\n",
            std::string(cl.status().message()).c_str());
    return 2;
  }
  if (cl->help) {
    fputs(HelpText(Tool::kAudit).c_str(), stdout);
    return 0;
  }
  if (cl->version) {
    printf("%s\n", VersionLine("outbox-audit").c_str());
    return 0;
  }
  const CommandLine::Audit& flags = cl->audit;
  int64_t max_duplicates = flags.max_duplicates;
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
  if (flags.read_committed && max_duplicates < 0) max_duplicates = 0;
  // A progress meter on a terminal only: logs and pipes stay quiet.
  auto records = ReadPublishedRecords(
      *config, *patterns, flags.timeout_s, flags.read_committed,
      Progress::IsTerminal(stderr) ? stderr : nullptr);
  if (!records.ok()) {
    fprintf(stderr, "outbox-audit: %s\n",
            std::string(records.status().message()).c_str());
    return 3;
  }
  // The events operators dropped on purpose: skipped, not missing. Not
  // readable: reported, and such events count as missing.
  absl::StatusOr<OperatorSkips> skips = ReadOperatorSkips(*config);
  if (!skips.ok()) {
    fprintf(stderr,
            "outbox-audit: cannot read the operator's skip and advance "
            "records (events they dropped count as missing): %s\n",
            std::string(skips.status().message()).c_str());
  }
  AuditReport report =
      Audit(*committed, *records, skips.ok() ? &*skips : nullptr);
  bool passed = report.Passed(max_duplicates);
  if (flags.json) {
    printf("%s\n", report.ToJson().c_str());
  } else {
    printf("%s%s\n", report.ToText().c_str(), passed ? "PASS" : "FAIL");
  }
  return passed ? 0 : 1;
}
