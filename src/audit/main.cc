// outbox-audit: checks Kafka against the outbox tables and says pass/fail.
//
//   outbox-audit [--config relay.yaml] [--pg ...] [--kafka ...] [--tables ...]
//                [--max-duplicates N] [--json] [--timeout-s S]
//
// Reads the committed events from the configured outbox tables and every
// record of the topics their templates can produce; prints missing,
// duplicates, unknown (rolled back or foreign), misrouted and per-key order
// violations. Exit 0 when it passes, 1 when it fails, 2 on bad usage, 3 when
// a server cannot be read.
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
  int64_t max_duplicates = -1;
  bool json = false;
  bool read_committed = false;
  int timeout_s = 120;
  // Our own flags first; the rest is the relays' common command line.
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      size_t n = strlen(flag);
      if (a.size() > n && a.compare(0, n, flag) == 0 && a[n] == '=') {
        return argv[i] + n + 1;
      }
      if (a == flag && i + 1 < argc) return argv[++i];
      return nullptr;
    };
    if (a == "--json") {
      json = true;
    } else if (a == "--read-committed") {
      read_committed = true;
    } else if (const char* v = value("--max-duplicates")) {
      max_duplicates = atoll(v);
    } else if (const char* t = value("--timeout-s")) {
      timeout_s = atoi(t);
    } else if (a == "--help" || a == "-h") {
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
    } else {
      rest.push_back(argv[i]);
    }
  }
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
  std::vector<std::string> patterns;
  for (const OutboxTable& t : config->outbox.tables) {
    patterns.push_back(TopicPattern(t.topic));
  }
  // Exactly once means exactly once: no duplicate is tolerated by default.
  if (read_committed && max_duplicates < 0) max_duplicates = 0;
  // A progress meter on a terminal only: logs and pipes stay quiet.
  auto records =
      ReadPublishedRecords(*config, patterns, timeout_s, read_committed,
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
