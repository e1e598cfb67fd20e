// The start-up checks on the server's answers (pg/server_checks.h), for
// every major's answers: PostgreSQL 19's effective_wal_level, which no
// server here can give yet, and 18's idle_replication_slot_timeout.
#include "pg/server_checks.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

// Issue 32 item 12.
TEST(CheckLogicalDecodingTest, BeforeNineteenWalLevelMustBeLogical) {
  EXPECT_TRUE(CheckLogicalDecoding({"logical", std::nullopt, false}).ok());
  EXPECT_TRUE(CheckLogicalDecoding({"logical", std::nullopt, true}).ok());
  for (const char* level : {"replica", "minimal"}) {
    absl::Status s = CheckLogicalDecoding({level, std::nullopt, false});
    EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
    EXPECT_THAT(std::string(s.message()),
                HasSubstr(std::string("wal_level is '") + level +
                          "' but logical decoding needs wal_level = logical"));
  }
}

TEST(CheckLogicalDecodingTest, NineteenDecodesWithWalLevelReplica) {
  // No logical slot yet (the relay creates it, which turns decoding on),
  // and with one.
  EXPECT_TRUE(CheckLogicalDecoding({"replica", "replica", false}).ok());
  EXPECT_TRUE(CheckLogicalDecoding({"replica", "logical", false}).ok());
  EXPECT_TRUE(CheckLogicalDecoding({"logical", "logical", false}).ok());
  // A standby decodes when its primary has decoding on.
  EXPECT_TRUE(CheckLogicalDecoding({"replica", "logical", true}).ok());
  absl::Status s = CheckLogicalDecoding({"replica", "replica", true});
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("this standby's effective_wal_level is 'replica'"));
  s = CheckLogicalDecoding({"minimal", "minimal", false});
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("needs wal_level = replica (PostgreSQL 19"));
}

// Issue 32 item 11.
TEST(IdleSlotTimeoutWarningTest, WarnsWhenShorterThanTheExpectedOutage) {
  EXPECT_EQ(IdleSlotTimeoutWarning(0, 86400), std::nullopt);  // off
  EXPECT_EQ(IdleSlotTimeoutWarning(86400, 86400), std::nullopt);
  EXPECT_EQ(IdleSlotTimeoutWarning(172800, 86400), std::nullopt);
  EXPECT_EQ(IdleSlotTimeoutWarning(60, 0), std::nullopt);  // no check
  std::optional<std::string> w = IdleSlotTimeoutWarning(3600, 86400);
  EXPECT_THAT(w, Optional(HasSubstr("idle_replication_slot_timeout is 3600 s, "
                                    "shorter than postgres.expected_outage_s "
                                    "(86400 s)")));
  EXPECT_THAT(w, Optional(HasSubstr("idle_replication_slot_timeout = "
                                    "'1440min'")));
  EXPECT_EQ(w->find('\n'), std::string::npos);
}

// Issue 35: validate --connect's lines.
TEST(StartupCheckTest, OneLineOkOrFail) {
  EXPECT_EQ(FormatStartupCheck({"wal_level", absl::OkStatus(), "logical"}),
            "ok wal_level: logical");
  EXPECT_EQ(FormatStartupCheck(
                {"tables", absl::FailedPreconditionError("no\ntable\r"), ""}),
            "FAIL tables: no table ");
}

}  // namespace
}  // namespace outbox
