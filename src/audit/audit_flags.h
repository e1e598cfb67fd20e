// The flags outbox-audit takes besides the relays' common command line
// (config/command_line.h). main.cc's --help and the generated CLI reference
// (outbox-docgen) print this table; main.cc parses the flags.
#ifndef OUTBOX_AUDIT_AUDIT_FLAGS_H_
#define OUTBOX_AUDIT_AUDIT_FLAGS_H_

namespace outbox {

struct AuditFlag {
  const char* name;  // without "--"
  const char* arg;   // "": takes no value
  const char* help;
};

inline constexpr AuditFlag kAuditFlags[] = {
    {"max-duplicates", "N",
     "fail when there are more than N duplicates (without it any number "
     "passes, except under --read-committed, where none does)"},
    {"json", "", "print the report as one JSON object"},
    {"timeout-s", "S", "give up reading Kafka after S seconds (120)"},
    {"read-committed", "",
     "read only committed Kafka transactions, as a read_committed consumer "
     "does (kafka.exactly_once), and fail on any duplicate unless "
     "--max-duplicates is given"},
};

}  // namespace outbox

#endif  // OUTBOX_AUDIT_AUDIT_FLAGS_H_
