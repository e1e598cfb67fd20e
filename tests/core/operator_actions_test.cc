#include "core/operator_actions.h"

#include "absl/strings/str_cat.h"
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
  applied.id_pages = 3;
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
  EXPECT_EQ(actions[1].id_pages, 3);
  EXPECT_FALSE(actions[1].ids_truncated);
  EXPECT_EQ(actions[1].What(), "advance 0/100..0/2000");
  ASSERT_EQ(malformed.size(), 1u);
  EXPECT_THAT(malformed[0], HasSubstr("unknown action"));
  // An applied record written before the pages said when it named only
  // the first ids.
  malformed.clear();
  actions = ParseOperatorRecords(
      {{"p/s/operator/2-y", FormatOperatorRequest(adv)},
       {"p/s/operator/2-y/applied",
        R"({"applied_at":"x","events":1200,"event_ids":["a"],)"
        R"("ids_truncated":true})"}},
      &malformed);
  EXPECT_THAT(malformed, IsEmpty());
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_TRUE(actions[0].ids_truncated);
  EXPECT_EQ(actions[0].id_pages, 0);
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
  EXPECT_FALSE(actions.Dropped(0, "e", 0x40, 0x20).has_value());
  EXPECT_THAT(actions.Complete(0x40), IsEmpty());  // not committed yet
  actions.Committed(0x40);
  EXPECT_THAT(actions.Complete(0x3f), IsEmpty());
  auto done = actions.Complete(0x40);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].events, 1);
  EXPECT_THAT(done[0].event_ids, ElementsAre("e"));
  EXPECT_EQ(done[0].id_pages, 0);
  EXPECT_THAT(actions.Complete(0x50), IsEmpty());  // once
  EXPECT_THAT(actions.pending(), IsEmpty());
}

TEST(OperatorActionsTest, AdvanceWritesItsIdsInPagesAndNamesEveryOne) {
  OperatorAction a;
  a.id = "1";
  a.kind = OperatorAction::Kind::kAdvance;
  a.to = 0x100000;
  OperatorActions actions({a});
  EXPECT_EQ(actions.Match("x", 0x100000), -1);  // commit at the target: kept
  const size_t total = 2 * kMaxAppliedIds + 5;
  std::vector<std::pair<std::string, std::string>> records = {
      {"p/s/operator/1", FormatOperatorRequest(a)}};
  std::vector<std::string> firsts;
  for (size_t i = 0; i < total; ++i) {
    const Lsn commit = 0x100 + i / 10 * 0x100;  // 10 per transaction
    ASSERT_EQ(actions.Match("x", commit), 0);
    std::optional<OperatorIdPage> page =
        actions.Dropped(0, absl::StrCat("id-", i), commit, commit - 0x80 + i);
    if (i % 10 == 9) actions.Committed(commit + 0x10);
    if ((i + 1) % kMaxAppliedIds != 0) {
      EXPECT_FALSE(page.has_value()) << i;
      continue;
    }
    ASSERT_TRUE(page.has_value()) << i;
    EXPECT_EQ(page->action_id, "1");
    EXPECT_EQ(page->event_ids.size(), kMaxAppliedIds);
    EXPECT_EQ(page->event_ids.front(),
              absl::StrCat("id-", i + 1 - kMaxAppliedIds));
    firsts.push_back(page->first);
    records.emplace_back(
        absl::StrCat("p/s/", OperatorIdsSuffix(page->action_id, page->first)),
        FormatOperatorIds(*page));
  }
  // Keyed by the first id's position: in the order dropped, as text too.
  ASSERT_EQ(firsts.size(), 2u);
  EXPECT_EQ(firsts[0], "0000000000000100-0000000000000080");
  EXPECT_LT(firsts[0], firsts[1]);
  EXPECT_THAT(actions.Complete(0xfffff), IsEmpty());
  auto done = actions.Complete(0x100000);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].events, static_cast<int64_t>(total));
  EXPECT_EQ(done[0].id_pages, 2);
  ASSERT_EQ(done[0].event_ids.size(), 5u);  // after the last page
  done[0].applied_at = "2026-11-28T04:00:00Z";
  records.emplace_back("p/s/operator/1/applied",
                       FormatOperatorApplied(done[0]));
  // A page an interrupted session wrote, overlapping the first ones.
  OperatorIdPage earlier{
      "1", "0000000000000100-0000000000000070", {"id-0", "id-1", "id-early"}};
  records.emplace_back(
      absl::StrCat("p/s/", OperatorIdsSuffix("1", earlier.first)),
      FormatOperatorIds(earlier));
  std::vector<std::string> malformed;
  auto read = ParseOperatorRecords(records, &malformed);
  EXPECT_THAT(malformed, IsEmpty());
  ASSERT_EQ(read.size(), 1u);
  EXPECT_TRUE(read[0].applied);
  EXPECT_EQ(read[0].id_pages, 2);
  ASSERT_EQ(read[0].event_ids.size(), total + 1);  // each once
  EXPECT_EQ(read[0].event_ids[0], "id-0");
  EXPECT_EQ(read[0].event_ids[2], "id-early");
  EXPECT_EQ(read[0].event_ids.back(), absl::StrCat("id-", total - 1));
  // A page that is not JSON is named, never guessed at.
  records.emplace_back("p/s/operator/1/ids/x", "not json");
  read = ParseOperatorRecords(records, &malformed);
  ASSERT_EQ(malformed.size(), 1u);
  EXPECT_THAT(malformed[0], HasSubstr("operator/1/ids/x: bad event_ids"));
}

TEST(OperatorActionsTest, AddKeepsWhatActionsUnderWayDropped) {
  OperatorAction a;
  a.id = "1";
  a.event_id = "e";
  OperatorActions actions({a});
  actions.Dropped(0, "e", 0x40, 0x20);
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
