#include "relay/server_change.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const ServerIdentity kPrimary{"7311", 1, "127.0.0.1:5432"};

TEST(ServerChangesTest, FirstSessionHasNothingToCompare) {
  EXPECT_THAT(ServerChanges(std::nullopt, kPrimary), IsEmpty());
}

TEST(ServerChangesTest, SameClusterAndTimelineIsNoChangeWhateverTheHost) {
  EXPECT_THAT(ServerChanges(kPrimary, kPrimary), IsEmpty());
  EXPECT_THAT(ServerChanges(kPrimary, {"7311", 1, "127.0.0.1:5433"}),
              IsEmpty());
}

TEST(ServerChangesTest, AHigherTimelineIsAPromotionOnTheNewHost) {
  EXPECT_THAT(ServerChanges(kPrimary, {"7311", 2, "127.0.0.1:5433"}),
              ElementsAre("promoted: timeline 1 -> 2 on 127.0.0.1:5433"));
}

TEST(ServerChangesTest, ALowerTimelineIsReported) {
  EXPECT_THAT(
      ServerChanges(ServerIdentity{"7311", 3, "127.0.0.1:5433"}, kPrimary),
      ElementsAre(HasSubstr("timeline went back: 3 -> 1 on 127.0.0.1:5432 (was "
                            "127.0.0.1:5433)")));
}

TEST(ServerChangesTest, AnotherSystemIdentifierIsOneLineWithoutTimelines) {
  std::vector<std::string> lines =
      ServerChanges(kPrimary, {"9999", 2, "10.0.0.9:5432"});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("system identifier changed: 7311 -> 9999 on "
                                  "10.0.0.9:5432 (was 127.0.0.1:5432)"));
  EXPECT_THAT(lines[0], ::testing::Not(HasSubstr("timeline")));
}

}  // namespace
}  // namespace outbox
