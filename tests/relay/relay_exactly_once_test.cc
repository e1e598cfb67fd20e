// The Relay under the exactly-once commit policy, with fakes: replayed
// transactions the start-up checkpoint covers are never produced again, and
// no position past the last committed Kafka transaction is confirmed.
#include <string>
#include <vector>

#include "core/fake_kafka_transactions.h"
#include "core/transactional_commit_policy.h"
#include "relay/relay_fixture.h"

namespace outbox::testing {
namespace {

class RelayExactlyOnceTest : public RelayTest {
 protected:
  Checkpoint At(Lsn end_lsn) {
    Checkpoint c;
    c.system_identifier = "42";
    c.slot = "s";
    c.end_lsn = end_lsn;
    return c;
  }
  FakeKafkaTransactions kafka_;
};

TEST_F(RelayExactlyOnceTest, DropsWhatTheCheckpointCoversAndCommitsTheRest) {
  // The slot resumes behind Kafka: its first two transactions were
  // published and committed before the crash.
  // (The fixture's invariant check counts them as delivered: they were.)
  for (int events : {2, 3}) {
    for (const std::string& id : script_.Txn(events)) delivered_.insert(id);
  }
  Lsn checkpoint = script_.last_end();
  std::vector<std::string> fresh = script_.Txn(2);
  TransactionOptions o;
  o.checkpoint_topic = "cp";
  TransactionalCommitPolicy policy(o, &kafka_, At(checkpoint));
  policy_ = &policy;
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());

  ASSERT_EQ(sink_.produced().size(), fresh.size());
  for (size_t i = 0; i < fresh.size(); ++i) {
    EXPECT_EQ(sink_.produced()[i].headers.at("id"), fresh[i]);
  }
  EXPECT_EQ(policy.dropped(), 5);
  // The stop came between transactions: the open Kafka transaction
  // committed, with a checkpoint at the last commit, then was confirmed.
  ASSERT_FALSE(kafka_.checkpoints.empty());
  EXPECT_EQ(kafka_.topics.back(), "cp");
  EXPECT_EQ(kafka_.keys.back(), "42/s");
  EXPECT_EQ(Checkpoint::Parse(kafka_.checkpoints.back())->end_lsn,
            script_.last_end());
  EXPECT_EQ(kafka_.calls.back(), "commit");
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
}

TEST_F(RelayExactlyOnceTest, ConfirmsNothingPastAnUncommittedTransaction) {
  script_.Txn(2);
  Lsn first_end = script_.last_end();
  script_.Txn(2);
  TransactionOptions o;
  o.max_ms = 1'000'000'000;  // never due: only the stop could commit
  TransactionalCommitPolicy policy(o, &kafka_, At(kInvalidLsn));
  policy_ = &policy;
  options_.status_interval_ms = 0;  // a status update every loop turn
  // The commit fails (fenced): nothing delivered may be confirmed.
  kafka_.fail_call = "checkpoint";
  kafka_.fail_status = absl::FailedPreconditionError("fenced");
  absl::Status s = Run([&] { DeliverAll(); });
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(s.message().find("fenced"), std::string::npos) << s;
  EXPECT_EQ(sink_.produced().size(), 4u);
  EXPECT_FALSE(stream_.statuses().empty());
  for (const auto& status : stream_.statuses()) {
    EXPECT_LT(status.flushed, first_end) << FormatLsn(status.flushed);
  }
  EXPECT_EQ(std::count(kafka_.calls.begin(), kafka_.calls.end(), "commit"), 0);
}

}  // namespace
}  // namespace outbox::testing
