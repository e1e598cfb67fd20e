// Small string helpers more than one stage needs.
//
// Pure functions over views: no allocation, no state, safe from any thread.
#ifndef OUTBOX_COMMON_STRINGS_H_
#define OUTBOX_COMMON_STRINGS_H_

#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"

namespace outbox {

// simdjson hands out std::string_view; this Abseil (20220623) has its own
// string_view class, not an alias of std's.
inline absl::string_view ToAbsl(std::string_view s) {
  return {s.data(), s.size()};
}

// `s` without the JSON whitespace (space, tab, newline, carriage return)
// that simdjson's raw_json_token() leaves after a value.
inline absl::string_view TrimJsonSpace(absl::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' ||
                        s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// PostgreSQL's rule for replication slot names (ReplicationSlotValidateName):
// 1-63 characters, lower-case letters, digits and underscores only.
inline bool IsValidSlotName(absl::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!absl::ascii_islower(c) && !absl::ascii_isdigit(c) && c != '_') {
      return false;
    }
  }
  return true;
}

}  // namespace outbox

#endif  // OUTBOX_COMMON_STRINGS_H_
