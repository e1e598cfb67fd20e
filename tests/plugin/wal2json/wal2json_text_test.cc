#include "plugin/wal2json/wal2json_text.h"

#include <simdjson.h>

#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox::wal2json {
namespace {

constexpr int64_t kSecond = 1'000'000;

// The PADDED functions may read 15 bytes past the end: give them a buffer
// like the decoder's copy of a record.
class Padded {
 public:
  explicit Padded(absl::string_view text)
      : buf_(std::string(text) + std::string(64, '\\')), size_(text.size()) {}
  const char* begin() const { return buf_.data(); }
  const char* end() const { return buf_.data() + size_; }
  size_t size() const { return size_; }

 private:
  std::string buf_;  // padded with backslashes: a scan that reads past the
                     // end and trusts what it finds there fails
  size_t size_;
};

// Unescapes `body`; "<error>" when rejected.
std::string Unescape(absl::string_view body) {
  Padded in(body);
  std::string out(body.size() + 16, '\0');
  char* end = UnescapeJsonString(in.begin(), in.end(), out.data());
  if (end == nullptr) return "<error>";
  out.resize(end - out.data());
  return out;
}

bool HasBackslashIn(absl::string_view text) {
  Padded in(text);
  return HasBackslash(in.begin(), in.size());
}

TEST(UnescapeJsonStringTest, Escapes) {
  EXPECT_EQ(Unescape(""), "");
  EXPECT_EQ(Unescape("plain"), "plain");
  EXPECT_EQ(Unescape(R"(\"k\": \"v\")"), R"("k": "v")");
  EXPECT_EQ(Unescape(R"(\\\/\b\f\n\r\t)"), "\\/\b\f\n\r\t");
  EXPECT_EQ(Unescape(R"(\u0041\u00e9\u65e5\uD83D\uDE00)"),
            "A\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80");
  EXPECT_EQ(Unescape(R"(a\u0000b)"), std::string("a\0b", 3));
  EXPECT_EQ(Unescape("0123456789abcdef\\n0123456789abcdef"),
            "0123456789abcdef\n0123456789abcdef");
  EXPECT_EQ(Unescape("123456789012345\\t"), "123456789012345\t");
  EXPECT_EQ(Unescape("1234567890123456\\t"), "1234567890123456\t");
  EXPECT_EQ(Unescape("12345678901234\\u00e9x"), "12345678901234\xc3\xa9x");
  EXPECT_EQ(Unescape(std::string(36, '\\')), std::string(18, '\\'));
}

TEST(UnescapeJsonStringTest, Rejects) {
  for (const char* body :
       {"\\", "abc\\", "\\x41", "\\u", "\\u12", "\\u12g4", "\\uDE00", "\\uD83D",
        "\\uD83Dx", "\\uD83D\\u0041", "\\uD83D\\n", "\\U0041"}) {
    EXPECT_EQ(Unescape(body), "<error>") << body;
  }
}

// Same bytes as simdjson's own unescaping, on deterministic random strings
// rich in escapes and multi-byte characters, of every length around the
// 16-byte steps.
TEST(UnescapeJsonStringTest, AgreesWithSimdjson) {
  static const char* const kPieces[] = {"a",
                                        "Z",
                                        " ",
                                        "\\\"",
                                        "\\\\",
                                        "\\/",
                                        "\\n",
                                        "\\t",
                                        "\\u00e9",
                                        "\\u65E5",
                                        "\\uD83D\\uDE00",
                                        "\xc3\xbc",
                                        "\xe6\x97\xa5",
                                        "{",
                                        ":"};
  std::mt19937 rng(42);
  simdjson::dom::parser parser;
  for (int i = 0; i < 2000; ++i) {
    std::string body;
    const int n = static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) body += kPieces[rng() % std::size(kPieces)];
    simdjson::padded_string json("\"" + body + "\"");
    std::string_view want;
    ASSERT_EQ(parser.parse(json).get_string().get(want), simdjson::SUCCESS)
        << body;
    EXPECT_EQ(Unescape(body), std::string(want)) << body;
  }
}

TEST(UnescapeJsonStringTest, CopiesBytesThatAreNotUtf8) {
  EXPECT_EQ(Unescape("\xff\xfe"), "\xff\xfe");
  EXPECT_EQ(Unescape("a\xc0\\n\xed\xa0\x80\\\"z"), "a\xc0\n\xed\xa0\x80\"z");
}

// Returns `text` with ReplaceInvalidUtf8's '?' for each bad byte.
std::string Replaced(std::string text, size_t* count = nullptr) {
  size_t n = ReplaceInvalidUtf8(text.data(), text.size(), '?');
  if (count != nullptr) *count = n;
  return text;
}

TEST(ReplaceInvalidUtf8Test, KeepsWellFormedText) {
  for (const char* text :
       {"", "plain ascii", "\x7f", "\xc2\x80", "\xdf\xbf",  // U+0080, U+07FF
        "\xe0\xa0\x80", "\xed\x9f\xbf",                     // U+0800, U+D7FF
        "\xee\x80\x80", "\xef\xbf\xbf",                     // U+E000, U+FFFF
        "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf",             // U+10000, U+10FFFF
        "caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80"}) {
    size_t count = 1;
    EXPECT_EQ(Replaced(text, &count), text);
    EXPECT_EQ(count, 0u) << text;
  }
}

TEST(ReplaceInvalidUtf8Test, ReplacesEachBadByteInPlace) {
  size_t count = 0;
  EXPECT_EQ(Replaced("\xff\xfe", &count), "??");
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(Replaced("a\x80z"), "a?z");             // lone continuation
  EXPECT_EQ(Replaced("\xc0\x80"), "??");            // overlong NUL
  EXPECT_EQ(Replaced("\xc1\xbf"), "??");            // overlong
  EXPECT_EQ(Replaced("\xe0\x80\x80"), "???");       // overlong
  EXPECT_EQ(Replaced("\xed\xa0\x80"), "???");       // surrogate U+D800
  EXPECT_EQ(Replaced("\xf0\x80\x80\x80"), "????");  // overlong
  EXPECT_EQ(Replaced("\xf4\x90\x80\x80"), "????");  // above U+10FFFF
  EXPECT_EQ(Replaced("\xf5\x80\x80\x80"), "????");  // never a lead byte
  EXPECT_EQ(Replaced("ok\xe2\x82"), "ok??");        // truncated at the end
  EXPECT_EQ(Replaced("\xe2\x82z\xc3\xa9"), "??z\xc3\xa9");  // then valid
  EXPECT_EQ(Replaced("\xc3\xa9\xc3"), "\xc3\xa9?");
}

TEST(ReplaceInvalidUtf8Test, AgreesWithSimdjson) {
  // Random bytes biased towards UTF-8 lead and continuation bytes: after
  // replacement simdjson accepts the text, and text it accepted before is
  // left alone.
  static const unsigned char kBytes[] = {
      'a',  0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc2, 0xdf,
      0xe0, 0xe1, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff};
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {
    std::string text(rng() % 9, '\0');
    for (char& c : text) c = static_cast<char>(kBytes[rng() % sizeof(kBytes)]);
    const bool valid = simdjson::validate_utf8(text.data(), text.size());
    size_t count = 0;
    std::string out = Replaced(text, &count);
    EXPECT_TRUE(simdjson::validate_utf8(out.data(), out.size())) << text;
    EXPECT_EQ(count == 0, valid) << text;
    EXPECT_EQ(out.size(), text.size());
  }
}

TEST(HasBackslashTest, FindsOnlyInsideTheRange) {
  EXPECT_FALSE(HasBackslashIn(""));
  EXPECT_FALSE(HasBackslashIn("abcdefg"));
  EXPECT_FALSE(HasBackslashIn("abcdefgh"));
  EXPECT_FALSE(HasBackslashIn("abcdefghijklmnopq"));
  EXPECT_TRUE(HasBackslashIn("\\"));
  EXPECT_TRUE(HasBackslashIn("abcdefg\\"));
  EXPECT_TRUE(HasBackslashIn("abcdefgh\\"));
  EXPECT_TRUE(HasBackslashIn("abcdefghijklmnop\\q"));
}

TEST(HasBackslashTest, NoFalsePositiveFromBorrows) {
  // Every byte value next to every other, none of them a backslash.
  for (int a = 0; a < 256; ++a) {
    if (a == '\\') continue;
    for (int b : {0x00, 0x01, 0x5b, 0x5d, 0xdc, 0xff}) {
      std::string s = {static_cast<char>(a), static_cast<char>(b)};
      EXPECT_FALSE(HasBackslashIn(s)) << a << " " << b;
    }
  }
}

TEST(IsJsonNumberTest, Grammar) {
  for (const char* ok : {"0", "-0", "7", "-12", "12345.678900", "1.5",
                         "-2.25e-10", "1E5", "1e+05", "9007199254740993"}) {
    EXPECT_TRUE(IsJsonNumber(ok)) << ok;
  }
  for (const char* bad : {"", "-", "01", "+1", ".5", "1.", "1e", "1e+", "1x",
                          "--1", "0x10", "NaN", "Infinity", " 1", "1 "}) {
    EXPECT_FALSE(IsJsonNumber(bad)) << bad;
  }
}

TEST(DecodeHexTest, Bytes) {
  char out[8];
  ASSERT_TRUE(DecodeHex("deadBEEF00ff", out));
  EXPECT_EQ(std::string(out, 6), std::string("\xde\xad\xbe\xef\x00\xff", 6));
  EXPECT_TRUE(DecodeHex("", out));
  EXPECT_FALSE(DecodeHex("abc", out));
  EXPECT_FALSE(DecodeHex("0g", out));
  EXPECT_FALSE(DecodeHex("\\x00", out));
}

int64_t Ts(absl::string_view text) {
  int64_t us = -1;
  EXPECT_TRUE(ParseTimestamptz(text, &us)) << text;
  return us;
}

TEST(ParseTimestamptzTest, Valid) {
  constexpr int64_t k2000 = 946684800 * kSecond;
  EXPECT_EQ(Ts("2000-01-01 00:00:00+00"), k2000);
  EXPECT_EQ(Ts("1970-01-01 00:00:00+00"), 0);
  EXPECT_EQ(Ts("1969-12-31 23:59:59.5+00"), -kSecond / 2);
  EXPECT_EQ(Ts("2000-01-01 05:30:00+05:30"), k2000);
  EXPECT_EQ(Ts("1999-12-31 19:00:00-05"), k2000);
  EXPECT_EQ(Ts("1999-12-31 14:30:00-09:30"), k2000);
  EXPECT_EQ(Ts("2000-01-01 00:53:28+00:53:28"), k2000);
  EXPECT_EQ(Ts("2000-01-01 00:00:00.1+00"), k2000 + 100000);
  EXPECT_EQ(Ts("2000-01-01 00:00:00.000001+00"), k2000 + 1);
  EXPECT_EQ(Ts("2000-01-01 00:00:00.123456+00"), k2000 + 123456);
  EXPECT_EQ(Ts("2024-02-29 12:00:00+00"), 1709208000 * kSecond);
  EXPECT_EQ(Ts("2026-11-22 04:54:35.123456+00"), 1795323275 * kSecond + 123456);
  EXPECT_EQ(Ts("0001-01-01 00:00:00+00"), -62135596800 * kSecond);
  EXPECT_EQ(Ts("12000-01-01 00:00:00+00"), 316516204800 * kSecond);
}

TEST(ParseTimestamptzTest, Invalid) {
  for (const char* text : {"",
                           "infinity",
                           "-infinity",
                           "2000-01-01",
                           "2000-01-01 00:00:00",
                           "2000-01-01T00:00:00+00",
                           "2000-01-01 00:00:00Z",
                           "2000-01-01 00:00:00+0",
                           "2000-01-01 00:00:00+00:0",
                           "2000-01-01 00:00:00.+00",
                           "2000-01-01 00:00:00.1234567+00",
                           "2000-01-01 00:00:00+00 BC",
                           "2000-01-01 00:00:00+00 ",
                           "2023-02-29 00:00:00+00",
                           "2000-13-01 00:00:00+00",
                           "2000-00-01 00:00:00+00",
                           "2000-01-32 00:00:00+00",
                           "2000-01-01 24:00:00+00",
                           "2000-01-01 00:60:00+00",
                           "2000-01-01 00:00:60+00",
                           "0000-01-01 00:00:00+00",
                           "200-01-01 00:00:00+00",
                           "9999999-01-01 00:00:00+00",
                           "300000-01-01 00:00:00+00",
                           "2000-1-01 00:00:00+00",
                           "2000/01/01 00:00:00+00"}) {
    int64_t us = 0;
    EXPECT_FALSE(ParseTimestamptz(text, &us)) << text;
  }
}

}  // namespace
}  // namespace outbox::wal2json
