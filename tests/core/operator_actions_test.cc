#include "core/operator_actions.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(OperatorActionsTest, RequestsAndAppliedRecordsRoundTrip) {
  OperatorAction skip;
  skip.kind = OperatorAction::Kind::kSkip;
  skip.event_id = "e-1";
  skip.by = "alice@db1";
  skip.at = "2026-11-27T16:00:00Z";
  skip.reason = "too \"large\"";
  OperatorAction adv;
  adv.kind = OperatorAction::Kind::kAdvance;
  adv.from = 0x100;
  adv.to = 0x2000;
  adv.by = "bob";
  adv.at = "2026-11-27T16:01:00Z";
  OperatorAction applied = adv;
  applied.applied_at = "2026-11-27T16:02:00Z";
  applied.events = 1200;
  applied.event_ids = {"a", "b"};
  applied.ids_truncated = true;
  std::vector<std::string> malformed;
  auto actions = ParseOperatorRecords(
      {{"pair/slot/operator/1-x", FormatOperatorRequest(skip)},
       {"pair/slot/operator/2-y", FormatOperatorRequest(adv)},
       {"pair/slot/operator/2-y/applied", FormatOperatorApplied(applied)},
       {"pair/slot/operator/3-z", "{\"action\":\"erase\"}"}},
      &malformed);
  ASSERT_EQ(actions.size(), 2u);
  EXPECT_EQ(actions[0].id, "1-x");
  EXPECT_EQ(actions[0].event_id, "e-1");
  EXPECT_EQ(actions[0].reason, "too \"large\"");
  EXPECT_FALSE(actions[0].applied);
  EXPECT_EQ(actions[0].What(), "skip event e-1");
  EXPECT_EQ(actions[1].to, 0x2000u);
  EXPECT_TRUE(actions[1].applied);
  EXPECT_EQ(actions[1].events, 1200);
  EXPECT_THAT(actions[1].event_ids, ElementsAre("a", "b"));
  EXPECT_TRUE(actions[1].ids_truncated);
  EXPECT_EQ(actions[1].What(), "advance 0/100..0/2000");
  ASSERT_EQ(malformed.size(), 1u);
  EXPECT_THAT(malformed[0], HasSubstr("unknown action"));
}

TEST(OperatorActionsTest, AppliedActionsAreNotPending) {
  OperatorAction a;
  a.id = "1";
  a.event_id = "e";
  a.applied = true;
  OperatorActions actions({a});
  EXPECT_TRUE(actions.empty());
  EXPECT_EQ(actions.Match("e", 0x10), -1);
}

TEST(OperatorActionsTest, SkipCompletesOnceItsTransactionIsConfirmed) {
  OperatorAction a;
  a.id = "1";
  a.event_id = "e";
  OperatorActions actions({a});
  EXPECT_EQ(actions.Match("f", 0x10), -1);
  ASSERT_EQ(actions.Match("e", 0x10), 0);
  actions.Dropped(0, "e");
  EXPECT_THAT(actions.Complete(0x40), IsEmpty());  // not committed yet
  actions.Committed(0x40);
  EXPECT_THAT(actions.Complete(0x3f), IsEmpty());
  auto done = actions.Complete(0x40);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].events, 1);
  EXPECT_THAT(actions.Complete(0x50), IsEmpty());  // once
  EXPECT_THAT(actions.pending(), IsEmpty());
}

TEST(OperatorActionsTest, AdvanceNamesAtMostTheBoundOfIds) {
  OperatorAction a;
  a.id = "1";
  a.kind = OperatorAction::Kind::kAdvance;
  a.to = 0x1000;
  OperatorActions actions({a});
  EXPECT_EQ(actions.Match("x", 0x1000), -1);  // commit at the target: kept
  for (size_t i = 0; i < kMaxAppliedIds + 5; ++i) {
    ASSERT_EQ(actions.Match("x", 0x10), 0);
    actions.Dropped(0, std::to_string(i));
  }
  actions.Committed(0x20);
  EXPECT_THAT(actions.Complete(0xfff), IsEmpty());
  auto done = actions.Complete(0x1000);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].events, static_cast<int64_t>(kMaxAppliedIds + 5));
  EXPECT_EQ(done[0].event_ids.size(), kMaxAppliedIds);
  EXPECT_TRUE(done[0].ids_truncated);
}

TEST(OperatorActionsTest, AddKeepsWhatActionsUnderWayDropped) {
  OperatorAction a;
  a.id = "1";
  a.event_id = "e";
  OperatorActions actions({a});
  actions.Dropped(0, "e");
  actions.Committed(0x40);
  OperatorAction b = a;
  b.id = "2";
  b.event_id = "f";
  EXPECT_EQ(actions.Add({a, b}).size(), 1u);
  auto done = actions.Complete(0x40);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].id, "1");
}

}  // namespace
}  // namespace outbox
