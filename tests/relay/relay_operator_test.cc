// The Relay drops exactly the events an operator named (skip, advance:
// core/operator_actions.h), never produces or tracks them, confirms past
// them, and reports each action applied once its drops are confirmed.
#include <vector>

#include "core/operator_actions.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "relay/relay_fixture.h"

namespace outbox::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

class RelayOperatorTest : public RelayTest {
 protected:
  // Runs with `actions`; the named events count as delivered for the
  // invariant check (confirming past them is the point), nothing else.
  absl::Status RunWith(std::vector<OperatorAction> list,
                       const std::vector<std::string>& named) {
    actions_ = OperatorActions(list);
    options_.operator_actions = &actions_;
    options_.on_operator_applied = [this](const OperatorAction& a) {
      applied_.push_back(a);
    };
    delivered_.insert(named.begin(), named.end());
    return Run([&] { DeliverAll(); });
  }

  std::vector<std::string> ProducedIds() const {
    std::vector<std::string> ids;
    for (const auto& p : sink_.produced()) ids.push_back(p.headers.at("id"));
    return ids;
  }

  static OperatorAction Skip(const std::string& id) {
    OperatorAction a;
    a.id = "2026-11-27T16:00:00Z-1";
    a.kind = OperatorAction::Kind::kSkip;
    a.event_id = id;
    a.by = "alice@host";
    return a;
  }

  OperatorActions actions_;
  std::vector<OperatorAction> applied_;
};

TEST_F(RelayOperatorTest, SkipDropsExactlyTheNamedPoisonRow) {
  auto a = script_.Txn(1);
  auto b = script_.Txn(2, /*null_key=*/1);  // b[1] halts the relay
  auto c = script_.Txn(1);
  ASSERT_TRUE(RunWith({Skip(b[1])}, {b[1]}).ok());
  EXPECT_THAT(ProducedIds(), ElementsAre(a[0], b[0], c[0]));
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
  EXPECT_EQ(stats_.skipped_by_operator, 1);
  ASSERT_EQ(applied_.size(), 1u);
  EXPECT_EQ(applied_[0].events, 1);
  EXPECT_THAT(applied_[0].event_ids, ElementsAre(b[1]));
  EXPECT_TRUE(actions_.pending().empty());
}

TEST_F(RelayOperatorTest, WithoutTheSkipThePoisonRowStillHalts) {
  script_.Txn(1);
  auto b = script_.Txn(2, /*null_key=*/1);
  absl::Status s = RunWith({Skip("00000000-0000-4000-8000-other")}, {});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_LE(stream_.last_flushed(), script_.commit_of(b[0]));
  EXPECT_TRUE(applied_.empty());
  EXPECT_EQ(actions_.pending().size(), 1u);  // its event never came
}

TEST_F(RelayOperatorTest, AdvanceDropsEveryEventCommittedBelowTheTarget) {
  auto a = script_.Txn(2);
  auto b = script_.Txn(1, /*null_key=*/0);
  auto c = script_.Txn(2);
  OperatorAction adv;
  adv.id = "2026-11-27T16:00:00Z-2";
  adv.kind = OperatorAction::Kind::kAdvance;
  adv.from = start_;
  adv.to = script_.commit_of(c[0]);  // c's commit starts there: kept
  ASSERT_TRUE(RunWith({adv}, {a[0], a[1], b[0]}).ok());
  EXPECT_THAT(ProducedIds(), ElementsAreArray(c));
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
  EXPECT_EQ(stats_.skipped_by_operator, 3);
  ASSERT_EQ(applied_.size(), 1u);
  EXPECT_EQ(applied_[0].events, 3);
  EXPECT_THAT(applied_[0].event_ids, ElementsAre(a[0], a[1], b[0]));
}

}  // namespace
}  // namespace outbox::testing
