// HexBytes: the bytes an even-length string of hex digits spells, for tests
// that write wire data in hex. Every character must be a hex digit (the
// callers' constants are).
//
// Abseil's HexStringToBytes returning std::string is deprecated from
// 20240722 (Debian 13; GCC 14 warns), and the form returning bool that
// replaces it is not in 20220623 (Debian 12): this builds on both.
#ifndef OUTBOX_TESTS_HEX_BYTES_H_
#define OUTBOX_TESTS_HEX_BYTES_H_

#include <string>

#include "absl/strings/string_view.h"

namespace outbox {

inline std::string HexBytes(absl::string_view hex) {
  auto nibble = [](char c) {
    return c <= '9' ? c - '0' : ((c | 0x20) - 'a' + 10);
  };
  std::string bytes;
  bytes.reserve(hex.size() / 2);
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(
        static_cast<char>(nibble(hex[i]) << 4 | nibble(hex[i + 1])));
  }
  return bytes;
}

}  // namespace outbox

#endif  // OUTBOX_TESTS_HEX_BYTES_H_
