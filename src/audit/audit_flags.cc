#include "audit/audit_flags.h"

#include <cstdint>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "config/command_line.h"
#include "outbox/status_macros.h"

namespace outbox {

absl::StatusOr<AuditFlags> ParseAuditFlags(int argc, char** argv) {
  AuditFlags flags;
  if (argc > 0) flags.rest.push_back(argv[0]);
  for (int i = 1; i < argc; ++i) {
    absl::string_view a = argv[i];
    // The value of `flag` ("--flag=V" or "--flag V"); false when `a` is
    // another flag; an error when the value is missing.
    auto value = [&](absl::string_view flag,
                     std::string* out) -> absl::StatusOr<bool> {
      if (absl::StartsWith(a, flag) && a.size() > flag.size() &&
          a[flag.size()] == '=') {
        *out = std::string(a.substr(flag.size() + 1));
        return true;
      }
      if (a != flag) return false;
      if (i + 1 >= argc) {
        return absl::InvalidArgumentError(absl::StrCat(flag, " needs a value"));
      }
      *out = argv[++i];
      return true;
    };
    // A numeric flag's value into *out; false when `a` is another flag.
    auto number = [&](absl::string_view flag, int64_t min, int64_t max,
                      int64_t* out) -> absl::StatusOr<bool> {
      std::string v;
      ASSIGN_OR_RETURN(bool took, value(flag, &v));
      if (!took) return false;
      ASSIGN_OR_RETURN(*out, ParseIntegerFlag(flag, v, min, max));
      return true;
    };
    ASSIGN_OR_RETURN(bool took, number("--max-duplicates", 0, INT64_MAX,
                                       &flags.max_duplicates));
    if (took) continue;
    ASSIGN_OR_RETURN(took,
                     number("--timeout-s", 1, INT32_MAX, &flags.timeout_s));
    if (took) continue;
    if (a == "--json") {
      flags.json = true;
    } else if (a == "--read-committed") {
      flags.read_committed = true;
    } else if (a == "--help" || a == "-h") {
      flags.help = true;
    } else {
      flags.rest.push_back(argv[i]);
    }
  }
  return flags;
}

}  // namespace outbox
