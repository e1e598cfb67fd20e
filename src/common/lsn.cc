#include "outbox/lsn.h"

#include <cinttypes>
#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace outbox {

std::string FormatLsn(Lsn lsn) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%" PRIX32 "/%" PRIX32,
                static_cast<uint32_t>(lsn >> 32), static_cast<uint32_t>(lsn));
  return buf;
}

absl::StatusOr<Lsn> ParseLsn(absl::string_view text) {
  size_t slash = text.find('/');
  uint32_t hi = 0, lo = 0;
  if (slash == absl::string_view::npos || slash == 0 ||
      slash + 1 == text.size() || slash > 8 || text.size() - slash - 1 > 8 ||
      !absl::SimpleHexAtoi(text.substr(0, slash), &hi) ||
      !absl::SimpleHexAtoi(text.substr(slash + 1), &lo) ||
      text.find_first_of("+- xX") != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("not an LSN (want X/Y in hex): \"", text, "\""));
  }
  return (static_cast<Lsn>(hi) << 32) | lo;
}

}  // namespace outbox
