// UUIDv7 as Debezium's runId writes it (RFC 9562): the time in the first 48
// bits, version 7, variant 10, lower-case 8-4-4-4-12, time-ordered as text.
#include "common/uuid.h"

#include <string>

#include "gtest/gtest.h"

namespace outbox {
namespace {

TEST(UuidV7Test, BitsAreWhereRfc9562PutsThem) {
  // 0x019b02a4d8c3 ms after the epoch (December 2025).
  EXPECT_EQ(FormatUuidV7(0x019b02a4d8c3, 0xabc, 0x123456789abcdef0),
            "019b02a4-d8c3-7abc-9234-56789abcdef0");
  // Only 12 and 62 random bits are used: the version and variant hold.
  EXPECT_EQ(FormatUuidV7(0, ~0ull, ~0ull),
            "00000000-0000-7fff-bfff-ffffffffffff");
  EXPECT_EQ(FormatUuidV7(1, 0, 0), "00000000-0001-7000-8000-000000000000");
}

TEST(UuidV7Test, NewOnesAreVersion7Variant10AndTimeOrdered) {
  std::string previous = FormatUuidV7(0, 0, 0);
  for (int i = 0; i < 100; ++i) {
    std::string u = NewUuidV7();
    EXPECT_TRUE(IsUuidV7(u)) << u;
    EXPECT_EQ(u[14], '7') << u;
    EXPECT_NE(std::string("89ab").find(u[19]), std::string::npos) << u;
    // Later (or the same) millisecond: the 48 time bits sort as text.
    EXPECT_GE(u.substr(0, 13), previous.substr(0, 13));
    previous = u;
  }
  EXPECT_NE(NewUuidV7(), NewUuidV7());  // 74 random bits
  EXPECT_LT(FormatUuidV7(1000, ~0ull, ~0ull), FormatUuidV7(1001, 0, 0));
}

TEST(UuidV7Test, IsUuidV7RefusesOtherForms) {
  EXPECT_TRUE(IsUuidV7("019b02a4-d8c3-7abc-9234-56789abcdef0"));
  EXPECT_FALSE(IsUuidV7("019b02a4-d8c3-4abc-9234-56789abcdef0"));  // v4
  EXPECT_FALSE(IsUuidV7("019b02a4-d8c3-7abc-c234-56789abcdef0"));  // variant
  EXPECT_FALSE(IsUuidV7("019B02A4-D8C3-7ABC-9234-56789ABCDEF0"));  // case
  EXPECT_FALSE(IsUuidV7("019b02a4d8c37abc923456789abcdef0"));
  EXPECT_FALSE(IsUuidV7(""));
}

}  // namespace
}  // namespace outbox
