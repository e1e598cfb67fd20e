// Helpers for the pgoutput decoder tests: a builder of protocol messages
// and a reader of the captured files in tests/testdata/pgoutput/.
#ifndef OUTBOX_TESTS_DECODE_PGOUTPUT_TEST_UTIL_H_
#define OUTBOX_TESTS_DECODE_PGOUTPUT_TEST_UTIL_H_

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "outbox/lsn.h"
#include "plugin/wal2json/wal2json_text.h"

namespace outbox::testing {

// One pgoutput message, built field by field in network byte order.
class PgMessage {
 public:
  explicit PgMessage(char type) { bytes_.push_back(type); }

  PgMessage& U8(uint8_t v) { return Int(v, 1); }
  PgMessage& U16(uint16_t v) { return Int(v, 2); }
  PgMessage& U32(uint32_t v) { return Int(v, 4); }
  PgMessage& U64(uint64_t v) { return Int(v, 8); }
  PgMessage& Str(absl::string_view s) {  // NUL-terminated
    bytes_.append(s.data(), s.size());
    bytes_.push_back('\0');
    return *this;
  }
  PgMessage& Raw(absl::string_view s) {
    bytes_.append(s.data(), s.size());
    return *this;
  }
  // Tuple values.
  PgMessage& Text(absl::string_view v) {
    U8('t').U32(static_cast<uint32_t>(v.size()));
    return Raw(v);
  }
  PgMessage& Null() { return U8('n'); }
  PgMessage& Unchanged() { return U8('u'); }

  const std::string& str() const { return bytes_; }
  operator absl::string_view() const { return bytes_; }  // NOLINT

 private:
  PgMessage& Int(uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) {
      bytes_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    }
    return *this;
  }
  std::string bytes_;
};

// A line of a captured file: "X/Y HEX", the LSN the walsender puts in the
// XLogData header and the message.
struct CapturedMessage {
  Lsn wal_start = kInvalidLsn;
  std::string bytes;
};

inline std::string TestdataPath(absl::string_view name) {
  return std::string(OUTBOX_TESTDATA_DIR) + "/" + std::string(name);
}

inline std::vector<std::string> ReadLines(absl::string_view name) {
  std::ifstream in(TestdataPath(name));
  EXPECT_TRUE(in.good()) << "cannot open " << name;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(std::move(line));
  }
  return lines;
}

inline std::vector<CapturedMessage> ReadCaptured(absl::string_view name) {
  std::vector<CapturedMessage> out;
  for (const std::string& line : ReadLines(name)) {
    const size_t space = line.find(' ');
    EXPECT_NE(space, std::string::npos) << line;
    if (space == std::string::npos) continue;
    CapturedMessage m;
    absl::StatusOr<Lsn> lsn = ParseLsn(line.substr(0, space));
    EXPECT_TRUE(lsn.ok()) << line;
    m.wal_start = lsn.value_or(kInvalidLsn);
    const absl::string_view hex = absl::string_view(line).substr(space + 1);
    m.bytes.resize(hex.size() / 2);
    EXPECT_TRUE(wal2json::DecodeHex(hex, m.bytes.data())) << line;
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace outbox::testing

#endif  // OUTBOX_TESTS_DECODE_PGOUTPUT_TEST_UTIL_H_
