#include "common/uuid.h"

#include <chrono>
#include <random>

namespace outbox {

std::string FormatUuidV7(int64_t unix_ms, uint64_t rand_a, uint64_t rand_b) {
  const uint64_t msb =
      (static_cast<uint64_t>(unix_ms) << 16) | 0x7000u | (rand_a & 0x0fffu);
  const uint64_t lsb = (rand_b & 0x3fffffffffffffffull) | 0x8000000000000000ull;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 32; ++i) {
    if (i == 8 || i == 12 || i == 16 || i == 20) out.push_back('-');
    const uint64_t word = i < 16 ? msb : lsb;
    out.push_back(kHex[(word >> (60 - 4 * (i % 16))) & 0xf]);
  }
  return out;
}

std::string NewUuidV7() {
  std::random_device device;
  auto random64 = [&device] {
    return (static_cast<uint64_t>(device()) << 32) | device();
  };
  const int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count();
  return FormatUuidV7(now_ms, random64(), random64());
}

bool IsUuidV7(absl::string_view text) {
  if (text.size() != 36) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  const char variant = text[19];
  return text[14] == '7' &&
         (variant == '8' || variant == '9' || variant == 'a' || variant == 'b');
}

}  // namespace outbox
