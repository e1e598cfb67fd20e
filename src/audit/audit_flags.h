// outbox-audit's own flags, read before the relays' common command line
// (config/command_line.h) gets the rest:
//   --max-duplicates N  an integer >= 0 (default: any number; 0 with
//                       --read-committed)
//   --timeout-s S       an integer >= 1 (default 120)
//   --json, --read-committed, --help/-h
// A numeric flag with no value or a value that is not such an integer is
// InvalidArgument in one line (ParseIntegerFlag); main exits 2 on it.
//
// Thread safety: a plain function over argv.
#ifndef OUTBOX_AUDIT_AUDIT_FLAGS_H_
#define OUTBOX_AUDIT_AUDIT_FLAGS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace outbox {

struct AuditFlags {
  int64_t max_duplicates = -1;  // negative: any number
  bool json = false;
  bool read_committed = false;
  int64_t timeout_s = 120;
  bool help = false;
  std::vector<char*> rest;  // argv[0] and every flag not ours, in order
};

absl::StatusOr<AuditFlags> ParseAuditFlags(int argc, char** argv);

// The same flags for --help and the generated CLI reference (outbox-docgen).
struct AuditFlag {
  const char* name;  // without "--"
  const char* arg;   // "": takes no value
  const char* help;
};

inline constexpr AuditFlag kAuditFlags[] = {
    {"max-duplicates", "N",
     "fail when there are more than N duplicates, an integer >= 0 (without it "
     "any number "
     "passes, except under --read-committed, where none does)"},
    {"json", "", "print the report as one JSON object"},
    {"timeout-s", "S",
     "give up reading Kafka after S seconds, an integer >= 1 (120)"},
    {"read-committed", "",
     "read only committed Kafka transactions, as a read_committed consumer "
     "does (kafka.exactly_once), and fail on any duplicate unless "
     "--max-duplicates is given"},
};

}  // namespace outbox

#endif  // OUTBOX_AUDIT_AUDIT_FLAGS_H_
