#include "outbox/lsn.h"

#include "gtest/gtest.h"

namespace outbox {
namespace {

TEST(LsnTest, FormatsLikePostgres) {
  EXPECT_EQ(FormatLsn(0), "0/0");
  EXPECT_EQ(FormatLsn(0x1511B70), "0/1511B70");
  EXPECT_EQ(FormatLsn((Lsn{0x2A} << 32) | 0xDEADBEEF), "2A/DEADBEEF");
}

TEST(LsnTest, ParsesWhatItFormats) {
  for (Lsn lsn : {Lsn{0}, Lsn{1}, Lsn{0x1511B70}, ~Lsn{0},
                  (Lsn{0x2A} << 32) | 0xDEADBEEF}) {
    auto parsed = ParseLsn(FormatLsn(lsn));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, lsn);
  }
  EXPECT_EQ(*ParseLsn("0/1511b70"), 0x1511B70u);
}

TEST(LsnTest, RejectsGarbage) {
  for (const char* bad : {"", "/", "1/", "/1", "12", "1/2/3", "G/1", "-1/2",
                          "0x1/2", "123456789/0", "1/+2", " 1/2"}) {
    EXPECT_FALSE(ParseLsn(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace outbox
