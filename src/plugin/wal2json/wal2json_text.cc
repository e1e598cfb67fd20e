#include "plugin/wal2json/wal2json_text.h"

#include <array>
#include <bit>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/pg_timestamp.h"

namespace outbox::wal2json {
namespace {

bool IsDigit(char c) { return static_cast<unsigned char>(c - '0') < 10; }

constexpr std::array<int8_t, 256> MakeHexTable() {
  std::array<int8_t, 256> t{};
  for (int i = 0; i < 256; ++i) t[i] = -1;
  for (int i = 0; i < 10; ++i) t['0' + i] = static_cast<int8_t>(i);
  for (int i = 0; i < 6; ++i) {
    t['a' + i] = static_cast<int8_t>(10 + i);
    t['A' + i] = static_cast<int8_t>(10 + i);
  }
  return t;
}
constexpr std::array<int8_t, 256> kHexValue = MakeHexTable();

// Bit i set when p[i] == c, for i < 16. Reads 16 bytes.
#if defined(__SSE2__)
uint32_t Mask16(const char* p, char c) {
  const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return static_cast<uint32_t>(
      _mm_movemask_epi8(_mm_cmpeq_epi8(block, _mm_set1_epi8(c))));
}
#else
uint32_t Mask16(const char* p, char c) {
  uint32_t m = 0;
  for (int i = 0; i < 16; ++i) m |= static_cast<uint32_t>(p[i] == c) << i;
  return m;
}
#endif

// Copies 16 bytes; callers rely on the slack around both buffers.
void Copy16(char* dst, const char* src) { std::memcpy(dst, src, 16); }

bool Hex4(const char* p, const char* end, uint32_t* out) {
  if (end - p < 4) return false;
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    const int d = kHexValue[static_cast<unsigned char>(p[i])];
    if (d < 0) return false;
    v = (v << 4) | static_cast<uint32_t>(d);
  }
  *out = v;
  return true;
}

char* AppendUtf8(uint32_t cp, char* dst) {
  if (cp < 0x80) {
    *dst++ = static_cast<char>(cp);
  } else if (cp < 0x800) {
    *dst++ = static_cast<char>(0xC0 | (cp >> 6));
    *dst++ = static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *dst++ = static_cast<char>(0xE0 | (cp >> 12));
    *dst++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *dst++ = static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *dst++ = static_cast<char>(0xF0 | (cp >> 18));
    *dst++ = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *dst++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *dst++ = static_cast<char>(0x80 | (cp & 0x3F));
  }
  return dst;
}

}  // namespace

bool IsJsonNumber(absl::string_view text) {
  const char* p = text.data();
  const char* const end = p + text.size();
  if (p < end && *p == '-') ++p;
  if (p == end) return false;
  if (*p == '0') {
    ++p;
  } else if (IsDigit(*p)) {
    while (p < end && IsDigit(*p)) ++p;
  } else {
    return false;
  }
  if (p < end && *p == '.') {
    ++p;
    if (p == end || !IsDigit(*p)) return false;
    while (p < end && IsDigit(*p)) ++p;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    ++p;
    if (p < end && (*p == '+' || *p == '-')) ++p;
    if (p == end || !IsDigit(*p)) return false;
    while (p < end && IsDigit(*p)) ++p;
  }
  return p == end;
}

bool DecodeHex(absl::string_view hex, char* out) {
  if (hex.size() % 2 != 0) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(hex.data());
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = kHexValue[p[i]];
    const int lo = kHexValue[p[i + 1]];
    if ((hi | lo) < 0) return false;
    *out++ = static_cast<char>((hi << 4) | lo);
  }
  return true;
}

bool HasBackslash(const char* p, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    if (const uint32_t m = Mask16(p + i, '\\')) {
      return i + std::countr_zero(m) < n;
    }
  }
  return false;
}

// Returns the output length for an escape at p (p[0] == '\\') and writes
// it at dst, advancing p past it; -1 when the escape is bad.
int UnescapeOne(const char*& p, const char* end, char* dst) {
  if (end - p < 2) return -1;
  char c = p[1];
  p += 2;
  switch (c) {
    case '"':
    case '\\':
    case '/':
      break;
    case 'b':
      c = '\b';
      break;
    case 'f':
      c = '\f';
      break;
    case 'n':
      c = '\n';
      break;
    case 'r':
      c = '\r';
      break;
    case 't':
      c = '\t';
      break;
    case 'u': {
      uint32_t cp;
      if (!Hex4(p, end, &cp)) return -1;
      p += 4;
      if (cp >= 0xDC00 && cp <= 0xDFFF) return -1;
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        uint32_t low;
        if (end - p < 6 || p[0] != '\\' || p[1] != 'u' ||
            !Hex4(p + 2, end, &low) || low < 0xDC00 || low > 0xDFFF) {
          return -1;
        }
        p += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
      }
      return static_cast<int>(AppendUtf8(cp, dst) - dst);
    }
    default:
      return -1;
  }
  *dst = c;
  return 1;
}

// simdjson unescapes one escape per 64-byte block step, which makes
// escape-dense text its slowest case, and a jsonb payload is mostly \"
// pairs: on a 400-byte payload that cost more than the rest of the record.
// Here one 16-byte compare finds every backslash of a block, text between
// escapes moves with 16-byte copies, and \" and \\\\ are recognized from the
// block's masks, so the loop waits on no load.
char* UnescapeJsonString(const char* p, const char* const end, char* dst) {
  while (p < end) {
    Copy16(dst, p);
    uint32_t m = Mask16(p, '\\');
    if (m == 0) {
      p += 16;
      dst += 16;
      continue;
    }
    const char* const block = p;
    const uint32_t quotes = Mask16(block, '"');
    const uint32_t backslashes = m;
    for (;;) {
      // Text up to the next backslash (output lags input after the first
      // escape, so each piece is copied again).
      const int k = std::countr_zero(m);
      const char* backslash = block + k;
      Copy16(dst, p);
      dst += backslash - p;
      p = backslash;
      if (p >= end) break;  // past the string: done
      if (k < 15 && end - p >= 2 &&
          (((quotes | backslashes) >> (k + 1)) & 1) != 0) {
        *dst++ = ((quotes >> (k + 1)) & 1) != 0 ? '"' : '\\';
        p += 2;
      } else {
        const int n = UnescapeOne(p, end, dst);
        if (n < 0) return nullptr;
        dst += n;
      }
      const ptrdiff_t consumed = p - block;
      if (consumed >= 16) break;
      m &= ~0u << consumed;  // also drops an escaped backslash's own bit
      if (m == 0) break;
    }
  }
  return dst - (p - end);  // the last step may have run past end
}

namespace {

// The length of the well-formed UTF-8 sequence starting at p[0] (at most n
// bytes available), or 0 if none starts there.
size_t Utf8SequenceLength(const unsigned char* p, size_t n) {
  const unsigned char b = p[0];
  if (b < 0x80) return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
  if (b >= 0xC2 && b <= 0xDF) {
    len = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    len = 3;
    if (b == 0xE0) lo = 0xA0;  // no overlong forms
    if (b == 0xED) hi = 0x9F;  // no surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    len = 4;
    if (b == 0xF0) lo = 0x90;  // no overlong forms
    if (b == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (n < len || p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < len; ++i) {
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  }
  return len;
}

}  // namespace

size_t ReplaceInvalidUtf8(char* p, size_t n, char replacement) {
  auto* u = reinterpret_cast<unsigned char*>(p);
  size_t replaced = 0;
  for (size_t i = 0; i < n;) {
    const size_t len = Utf8SequenceLength(u + i, n - i);
    if (len == 0) {
      p[i++] = replacement;
      ++replaced;
    } else {
      i += len;
    }
  }
  return replaced;
}

bool ParseTimestamptz(absl::string_view text, int64_t* unix_micros) {
  return ParsePgTimestamp(text, UtcOffset::kRequired, unix_micros);
}

}  // namespace outbox::wal2json
