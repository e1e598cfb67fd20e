// outbox-audit: checks Kafka against the outbox tables and says pass/fail.
//
//   outbox-audit [--config relay.yaml] [--pg ...] [--kafka ...] [--tables ...]
//                [--since T [--until T] | --ids ID,... | --ids-file F |
//                 --seq-from N [--seq-to N]]
//                [--max-duplicates N] [--json] [--timeout-s S]
//                [--read-committed] [--help] [--version]
//
// Reads the committed events from the configured outbox tables (every row,
// or the rows selected as `outbox-relay republish` selects them:
// audit_sources.h) and every record of the topics the configured routing
// gives them (RoutedTopicPatterns: the templates, or outbox.topic_regex);
// prints missing, duplicates, unknown (rolled back or foreign; not counted
// when rows are selected), misrouted and per-key order violations, and the
// events operators skipped on purpose (outbox-relay skip/advance: "skipped
// by operator", with who, when and why; not missing). Exit 0 when it
// passes, 1 when it fails, 2 on bad usage, 3 when a server cannot be read
// or a table no longer holds rows the audit covers (a table that deletes
// its rows: one line each, and INCOMPLETE instead of PASS).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
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
  std::vector<std::string> not_kept;
  std::string rows;
  auto committed = ReadCommittedEvents(*config, cl->rows, &not_kept, &rows);
  if (!committed.ok()) {
    fprintf(stderr, "outbox-audit: %s\n",
            std::string(committed.status().message()).c_str());
    return absl::IsInvalidArgument(committed.status()) ? 2 : 3;
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
  // Selected rows, or a table that lost some: only their events' records
  // count (the others' would be unknown).
  const bool partial = !cl->rows.since.empty() || !cl->rows.ids.empty() ||
                       !cl->rows.ids_file.empty() ||
                       cl->rows.seq_from.has_value() || !not_kept.empty();
  if (partial) {
    std::set<std::string> ids;
    for (const CommittedEvent& e : *committed) ids.insert(e.id);
    records->erase(std::remove_if(records->begin(), records->end(),
                                  [&](const PublishedRecord& r) {
                                    return ids.count(r.id) == 0;
                                  }),
                   records->end());
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
  if (partial) report.rows = rows;
  bool passed = report.Passed(max_duplicates);
  if (flags.json) {
    printf("%s\n", report.ToJson().c_str());
  } else {
    printf("%s%s\n", report.ToText().c_str(),
           !passed            ? "FAIL"
           : not_kept.empty() ? "PASS"
                              : "INCOMPLETE");
  }
  fflush(stdout);
  for (const std::string& line : not_kept) {
    fprintf(stderr, "outbox-audit: %s\n", line.c_str());
  }
  if (!passed) return 1;
  return not_kept.empty() ? 0 : 3;
}
