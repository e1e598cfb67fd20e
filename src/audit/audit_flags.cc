#include "audit/audit_flags.h"

#include <cstdint>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "config/command_line.h"

namespace outbox {

absl::StatusOr<AuditFlags> ParseAuditFlags(int argc, char** argv) {
  AuditFlags flags;
  if (argc > 0) flags.rest.push_back(argv[0]);
  for (int i = 1; i < argc; ++i) {
    absl::string_view a = argv[i];
    // The value of `flag` ("--flag=V" or "--flag V"); nullopt when `a` is
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
    std::string v;
    absl::StatusOr<bool> max_duplicates = value("--max-duplicates", &v);
    if (!max_duplicates.ok()) return max_duplicates.status();
    if (*max_duplicates) {
      absl::StatusOr<int64_t> n =
          ParseIntegerFlag("--max-duplicates", v, 0, INT64_MAX);
      if (!n.ok()) return n.status();
      flags.max_duplicates = *n;
      continue;
    }
    absl::StatusOr<bool> timeout = value("--timeout-s", &v);
    if (!timeout.ok()) return timeout.status();
    if (*timeout) {
      absl::StatusOr<int64_t> n =
          ParseIntegerFlag("--timeout-s", v, 1, INT32_MAX);
      if (!n.ok()) return n.status();
      flags.timeout_s = static_cast<int>(*n);
      continue;
    }
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
