#include "core/transactional_commit_policy.h"

#include <string>
#include <vector>

#include "core/fake_kafka_transactions.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

using ::outbox::testing::FakeKafkaTransactions;

Checkpoint Start(Lsn end_lsn) {
  Checkpoint c;
  c.system_identifier = "42";
  c.slot = "slot";
  c.end_lsn = end_lsn;
  return c;
}

TransactionOptions Options() {
  TransactionOptions o;
  o.checkpoint_topic = "cp";
  o.max_ms = 100;
  o.max_events = 1000;
  o.split_events = 1000000;
  return o;
}

// One PostgreSQL transaction of `events` events; returns how many Admit()
// let through.
int Txn(CommitPolicy& p, Lsn commit_lsn, Lsn end_lsn, int events,
        int64_t now_us) {
  p.OnBegin(commit_lsn);
  int admitted = 0;
  for (int i = 0; i < events; ++i) {
    absl::StatusOr<bool> a = p.Admit(now_us);
    EXPECT_TRUE(a.ok()) << a.status();
    if (a.ok() && *a) ++admitted;
  }
  EXPECT_TRUE(p.OnCommit(end_lsn, now_us).ok());
  return admitted;
}

Lsn Confirm(CommitPolicy& p, Lsn delivered, int64_t now_us) {
  absl::StatusOr<Lsn> c = p.Confirmable(delivered, now_us);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : kInvalidLsn;
}

TEST(AckCommitPolicyTest, ConfirmsTheDeliveredPrefixAndDropsNothing) {
  AckCommitPolicy p;
  EXPECT_EQ(Txn(p, 0x10, 0x20, 3, 0), 3);
  EXPECT_EQ(Confirm(p, 0x20, 0), 0x20u);
}

TEST(TransactionalCommitPolicyTest,
     ConfirmsOnlyWhatACommittedTransactionHolds) {
  FakeKafkaTransactions kafka;
  TransactionalCommitPolicy p(Options(), &kafka, Start(kInvalidLsn));
  EXPECT_EQ(Txn(p, 0x10, 0x20, 2, 0), 2);
  // Delivered, but the Kafka transaction is still open: not confirmable.
  EXPECT_EQ(Confirm(p, 0x20, 50'000), kInvalidLsn);
  EXPECT_EQ(kafka.calls, (std::vector<std::string>{"begin"}));
  // Time bound reached between PostgreSQL transactions: commit, then the
  // delivered prefix is durable.
  EXPECT_EQ(Confirm(p, 0x20, 100'000), 0x20u);
  EXPECT_EQ(kafka.calls,
            (std::vector<std::string>{"begin", "checkpoint", "commit"}));
  ASSERT_EQ(kafka.checkpoints.size(), 1u);
  EXPECT_EQ(Checkpoint::Parse(kafka.checkpoints[0])->end_lsn, 0x20u);
  EXPECT_EQ(p.committed().end_lsn, 0x20u);
}

TEST(TransactionalCommitPolicyTest, CommitsWholePostgresTransactionsOnly) {
  FakeKafkaTransactions kafka;
  TransactionOptions o = Options();
  o.max_events = 3;
  TransactionalCommitPolicy p(o, &kafka, Start(kInvalidLsn));
  p.OnBegin(0x10);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(*p.Admit(0));
  // Over both bounds, but inside a PostgreSQL transaction: no commit.
  EXPECT_EQ(Confirm(p, 0x8, 1'000'000), kInvalidLsn);
  EXPECT_EQ(kafka.calls, (std::vector<std::string>{"begin"}));
  ASSERT_TRUE(p.OnCommit(0x20, 1'000'000).ok());  // its commit: due now
  EXPECT_EQ(kafka.calls,
            (std::vector<std::string>{"begin", "checkpoint", "commit"}));
  EXPECT_EQ(Confirm(p, 0x20, 1'000'000), 0x20u);
}

TEST(TransactionalCommitPolicyTest, DropsWhatTheStartCheckpointCovers) {
  FakeKafkaTransactions kafka;
  TransactionalCommitPolicy p(Options(), &kafka, Start(0x230));
  // The slot lags the checkpoint: the replay repeats two transactions.
  EXPECT_EQ(Txn(p, 0x100, 0x130, 3, 0), 0);
  EXPECT_EQ(Txn(p, 0x200, 0x230, 2, 0), 0);
  EXPECT_TRUE(kafka.calls.empty());  // nothing to publish, nothing opened
  EXPECT_EQ(Confirm(p, 0x230, 0), 0x230u);
  EXPECT_EQ(Txn(p, 0x300, 0x330, 2, 0), 2);
  EXPECT_EQ(p.dropped(), 5);
}

TEST(TransactionalCommitPolicyTest, SplitsAnOversizedTransactionWithAPartial) {
  FakeKafkaTransactions kafka;
  TransactionOptions o = Options();
  o.split_events = 4;
  TransactionalCommitPolicy p(o, &kafka, Start(0x50));
  EXPECT_EQ(Txn(p, 0x100, 0x130, 10, 0), 10);
  // Split after 4 and after 8 events.
  ASSERT_EQ(kafka.checkpoints.size(), 2u);
  absl::StatusOr<Checkpoint> first = Checkpoint::Parse(kafka.checkpoints[0]);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->end_lsn, 0x50u);  // the transaction is not whole yet
  EXPECT_EQ(first->partial_commit_lsn, 0x100u);
  EXPECT_EQ(first->partial_events, 4);
  EXPECT_EQ(Checkpoint::Parse(kafka.checkpoints[1])->partial_events, 8);
  // Nothing past the last whole transaction is confirmable meanwhile.
  EXPECT_EQ(Confirm(p, 0x50, 0), 0x50u);

  // A restart from the second checkpoint publishes the last 2 events only.
  FakeKafkaTransactions again;
  TransactionalCommitPolicy q(o, &again,
                              *Checkpoint::Parse(kafka.checkpoints[1]));
  EXPECT_EQ(Txn(q, 0x100, 0x130, 10, 0), 2);
}

TEST(TransactionalCommitPolicyTest, FencedStopsForGoodNeverCommitting) {
  FakeKafkaTransactions kafka;
  TransactionalCommitPolicy p(Options(), &kafka, Start(0x10));
  EXPECT_EQ(Txn(p, 0x20, 0x30, 1, 0), 1);
  // The checkpoint produce is refused: another producer took over.
  kafka.calls.clear();
  kafka.fail_call = "checkpoint";
  kafka.fail_status = absl::FailedPreconditionError("fenced");
  absl::StatusOr<Lsn> c = p.Confirmable(0x30, 200'000);
  EXPECT_TRUE(absl::IsUnavailable(c.status())) << c.status();
  EXPECT_NE(c.status().message().find("fenced"), std::string::npos);
  EXPECT_EQ(kafka.calls, (std::vector<std::string>{"checkpoint"}));
  // Every later call fails the same way and calls Kafka no more.
  p.OnBegin(0x40);
  EXPECT_FALSE(p.Admit(300'000).ok());
  EXPECT_FALSE(p.OnCommit(0x50, 300'000).ok());
  EXPECT_FALSE(p.Finish(true).ok());
  EXPECT_EQ(kafka.calls, (std::vector<std::string>{"checkpoint"}));
  EXPECT_EQ(p.committed().end_lsn, 0x10u);
}

TEST(TransactionalCommitPolicyTest,
     AbortableCommitErrorAbortsAndConfirmsNothing) {
  FakeKafkaTransactions kafka;
  TransactionalCommitPolicy p(Options(), &kafka, Start(kInvalidLsn));
  EXPECT_EQ(Txn(p, 0x20, 0x30, 1, 0), 1);
  kafka.calls.clear();
  kafka.fail_call = "commit";
  kafka.fail_status = absl::AbortedError("txn requires abort");
  absl::StatusOr<Lsn> c = p.Confirmable(0x30, 200'000);
  EXPECT_TRUE(absl::IsUnavailable(c.status())) << c.status();
  EXPECT_EQ(kafka.calls,
            (std::vector<std::string>{"checkpoint", "commit", "abort"}));
  EXPECT_EQ(p.committed().end_lsn, kInvalidLsn);
}

TEST(TransactionalCommitPolicyTest, FinishCommitsBetweenTransactionsOnly) {
  FakeKafkaTransactions kafka;
  TransactionalCommitPolicy p(Options(), &kafka, Start(kInvalidLsn));
  EXPECT_EQ(Txn(p, 0x20, 0x30, 1, 0), 1);
  ASSERT_TRUE(p.Finish(true).ok());
  EXPECT_EQ(p.committed().end_lsn, 0x30u);

  FakeKafkaTransactions k2;
  TransactionalCommitPolicy q(Options(), &k2, Start(kInvalidLsn));
  q.OnBegin(0x20);
  ASSERT_TRUE(*q.Admit(0));
  ASSERT_TRUE(q.Finish(true).ok());  // inside a PG transaction: abort
  EXPECT_EQ(k2.calls, (std::vector<std::string>{"begin", "abort"}));
  EXPECT_EQ(q.committed().end_lsn, kInvalidLsn);
}

}  // namespace
}  // namespace outbox
