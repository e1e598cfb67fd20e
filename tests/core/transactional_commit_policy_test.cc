#include "core/transactional_commit_policy.h"

#include <string>
#include <vector>

#include "core/fake_kafka_transactions.h"
#include "gtest/gtest.h"
#include "outbox/clock.h"

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

using Admission = CommitPolicy::Admission;

// Tickets as the AckTracker hands them out: consecutive, one per event not
// dropped.
uint64_t next_ticket = 1;

// Admits one event; returns what the policy said (kDrop on error).
Admission::Kind Admit(CommitPolicy& p, int64_t now_us,
                      std::string* refusal = nullptr) {
  absl::StatusOr<Admission> a = p.Admit(next_ticket, now_us);
  EXPECT_TRUE(a.ok()) << a.status();
  if (!a.ok()) return Admission::kDrop;
  if (a->kind != Admission::kDrop) ++next_ticket;
  if (refusal != nullptr) *refusal = std::string(a->refusal);
  return a->kind;
}

// One PostgreSQL transaction of `events` events; returns how many Admit()
// let through.
int Txn(CommitPolicy& p, Lsn commit_lsn, Lsn end_lsn, int events,
        int64_t now_us) {
  p.OnBegin(commit_lsn);
  int admitted = 0;
  for (int i = 0; i < events; ++i) {
    if (Admit(p, now_us) != Admission::kDrop) ++admitted;
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
  // A refused record is dead-lettered where it is.
  EXPECT_TRUE(p.OnRefused(next_ticket - 1, "too large").ok());
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

// The Relay's idle wait ends when the open Kafka transaction falls due, so
// a quiet stream does not add its poll interval to max_ms.
TEST(TransactionalCommitPolicyTest, WakesTheRelayWhenTheTransactionFallsDue) {
  AckCommitPolicy ack;
  EXPECT_EQ(ack.WakeAtUs(), -1);
  FakeKafkaTransactions kafka;
  TransactionalCommitPolicy p(Options(), &kafka, Start(kInvalidLsn));
  EXPECT_EQ(p.WakeAtUs(), -1);  // nothing open
  EXPECT_EQ(Txn(p, 0x10, 0x20, 1, 5'000), 1);
  EXPECT_EQ(p.WakeAtUs(), 5'000 + 100'000);  // opened at 5 ms, max_ms 100
  EXPECT_EQ(Txn(p, 0x30, 0x40, 1, 60'000), 1);
  EXPECT_EQ(p.WakeAtUs(), 105'000);  // the same transaction: same deadline
  EXPECT_EQ(Confirm(p, 0x40, 105'000), 0x40u);
  EXPECT_EQ(p.WakeAtUs(), -1);  // committed
}

// Behind PostgreSQL by backlog_ms or more (a backlog), a Kafka transaction
// stays open up to backlog_ms instead of max_ms; once a read finds the
// stream empty, or a transaction read is recent again, max_ms applies.
TEST(TransactionalCommitPolicyTest, ABacklogKeepsTheTransactionOpenLonger) {
  FakeKafkaTransactions kafka;
  TransactionOptions o = Options();  // max_ms 100
  o.backlog_ms = 1000;
  TransactionalCommitPolicy p(o, &kafka, Start(kInvalidLsn));
  p.OnBegin(0x10);
  p.OnBacklog(5'000'000);  // committed 5 s ago
  ASSERT_EQ(Admit(p, 0), Admission::kPublish);
  ASSERT_TRUE(p.OnCommit(0x20, 0).ok());
  EXPECT_EQ(p.WakeAtUs(), 1'000'000);
  // Past max_ms, behind: still open, nothing confirmable.
  EXPECT_EQ(Confirm(p, 0x20, 500'000), kInvalidLsn);
  EXPECT_EQ(Txn(p, 0x30, 0x40, 1, 600'000), 1);
  EXPECT_EQ(kafka.calls, (std::vector<std::string>{"begin"}));
  // At backlog_ms: commits.
  EXPECT_EQ(Confirm(p, 0x40, 1'000'000), 0x40u);
  EXPECT_EQ(kafka.calls,
            (std::vector<std::string>{"begin", "checkpoint", "commit"}));
  // Behind, then caught up (an empty read): max_ms again.
  EXPECT_EQ(Txn(p, 0x50, 0x60, 1, 2'000'000), 1);
  EXPECT_EQ(Confirm(p, 0x60, 2'150'000), 0x40u);
  p.OnBacklog(0);
  EXPECT_EQ(p.WakeAtUs(), 2'100'000);
  EXPECT_EQ(Confirm(p, 0x60, 2'150'000), 0x60u);
  // Behind by less than backlog_ms: max_ms.
  p.OnBegin(0x70);
  p.OnBacklog(999'999);
  ASSERT_EQ(Admit(p, 3'000'000), Admission::kPublish);
  ASSERT_TRUE(p.OnCommit(0x80, 3'000'000).ok());
  EXPECT_EQ(p.WakeAtUs(), 3'100'000);
  EXPECT_EQ(Confirm(p, 0x80, 3'100'000), 0x80u);
  // Behind, max_events grows by backlog_ms / max_ms (10): 2 -> 20.
  o.max_events = 2;
  TransactionalCommitPolicy q(o, &kafka, Start(kInvalidLsn));
  kafka.calls.clear();
  q.OnBegin(0x10);
  q.OnBacklog(5'000'000);
  for (int i = 0; i < 19; ++i) ASSERT_EQ(Admit(q, 0), Admission::kPublish);
  ASSERT_TRUE(q.OnCommit(0x20, 0).ok());
  EXPECT_EQ(kafka.calls, (std::vector<std::string>{"begin"}));
  q.OnBegin(0x30);
  ASSERT_EQ(Admit(q, 0), Admission::kPublish);
  ASSERT_TRUE(q.OnCommit(0x40, 0).ok());  // the 20th event's commit
  EXPECT_EQ(kafka.calls,
            (std::vector<std::string>{"begin", "checkpoint", "commit"}));
  // Caught up: 2 again.
  q.OnBacklog(0);
  EXPECT_EQ(Txn(q, 0x50, 0x60, 2, 0), 2);
  EXPECT_EQ(kafka.calls.size(), 6u);
}

// The grown bound stays at half of split_events: transactions of ordinary
// size commit whole, however close split_events is to the grown bound.
TEST(TransactionalCommitPolicyTest, ABacklogNeverGrowsTheBoundIntoSplits) {
  FakeKafkaTransactions kafka;
  TransactionOptions o = Options();  // max_ms 100
  o.backlog_ms = 1000;               // grows max_events 10 times: 2 -> 20
  o.max_events = 2;
  o.split_events = 10;  // but 5 at most
  TransactionalCommitPolicy p(o, &kafka, Start(kInvalidLsn));
  Lsn lsn = 0x100;
  for (int t = 0; t < 8; ++t, lsn += 0x100) {
    p.OnBegin(lsn);
    p.OnBacklog(5'000'000);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(Admit(p, 0), Admission::kPublish);
    ASSERT_TRUE(p.OnCommit(lsn + 0x10, 0).ok());
  }
  // A commit after every second transaction (6 events >= 5), none split.
  ASSERT_EQ(kafka.checkpoints.size(), 4u);
  for (const std::string& c : kafka.checkpoints) {
    EXPECT_EQ(Checkpoint::Parse(c)->partial_commit_lsn, kInvalidLsn);
  }
}

// backlog_ms at or below max_ms never changes the cadence.
TEST(TransactionalCommitPolicyTest, ABacklogBoundBelowMaxMsIsOff) {
  FakeKafkaTransactions kafka;
  TransactionOptions o = Options();
  o.backlog_ms = 0;
  TransactionalCommitPolicy p(o, &kafka, Start(kInvalidLsn));
  p.OnBegin(0x10);
  p.OnBacklog(60'000'000);
  ASSERT_EQ(Admit(p, 0), Admission::kPublish);
  ASSERT_TRUE(p.OnCommit(0x20, 0).ok());
  EXPECT_EQ(p.WakeAtUs(), 100'000);
  EXPECT_EQ(Confirm(p, 0x20, 100'000), 0x20u);
}

TEST(TransactionalCommitPolicyTest, CommitsWholePostgresTransactionsOnly) {
  FakeKafkaTransactions kafka;
  TransactionOptions o = Options();
  o.max_events = 3;
  TransactionalCommitPolicy p(o, &kafka, Start(kInvalidLsn));
  p.OnBegin(0x10);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(Admit(p, 0), Admission::kPublish);
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

TEST(TransactionalCommitPolicyTest, SplitsASlowTransactionByTime) {
  // Issue 23 item 4: a PostgreSQL transaction that streams for longer than
  // the producer's transaction.timeout.ms must not stay in one Kafka
  // transaction (the broker would abort it, every replay alike).
  FakeKafkaTransactions kafka;
  TransactionOptions o = Options();
  o.max_ms = 100;
  o.split_ms = 1000;
  o.timeout_ms = 3000;
  TransactionalCommitPolicy p(o, &kafka, Start(0x50));
  p.OnBegin(0x100);
  // One event every 400 ms: the Kafka transaction is 1200 ms old at the
  // fourth, which splits after the first three.
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(Admit(p, i * 400'000), Admission::kPublish);
  }
  ASSERT_EQ(kafka.checkpoints.size(), 1u);
  absl::StatusOr<Checkpoint> first = Checkpoint::Parse(kafka.checkpoints[0]);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->end_lsn, 0x50u);
  EXPECT_EQ(first->partial_commit_lsn, 0x100u);
  EXPECT_EQ(first->partial_events, 3);
  // No event for a while inside the transaction: a loop turn splits too,
  // every event admitted so far published.
  EXPECT_EQ(Confirm(p, 0x50, 1'200'000 + 1'000'000), 0x50u);
  ASSERT_EQ(kafka.checkpoints.size(), 2u);
  EXPECT_EQ(Checkpoint::Parse(kafka.checkpoints[1])->partial_events, 4);
  EXPECT_TRUE(p.OnCommit(0x130, 2'300'000).ok());
  // A restart from the second checkpoint publishes none of those again.
  FakeKafkaTransactions again;
  TransactionalCommitPolicy q(o, &again,
                              *Checkpoint::Parse(kafka.checkpoints[1]));
  EXPECT_EQ(Txn(q, 0x100, 0x130, 5, 0), 1);
}

TEST(TransactionalCommitPolicyTest,
     ATransactionOpenPastTheTimeoutIsNotCalledFenced) {
  // The broker aborts a transaction open past transaction.timeout.ms and
  // bumps the epoch; librdkafka then reports it like a fencing.
  FakeKafkaTransactions kafka;
  TransactionOptions o = Options();
  o.max_ms = 4000;
  o.split_ms = 0;  // (e.g. the relay was paused: no turn could split)
  o.timeout_ms = 3000;
  TransactionalCommitPolicy p(o, &kafka, Start(0x10));
  EXPECT_EQ(Txn(p, 0x20, 0x30, 1, 0), 1);
  kafka.fail_call = "checkpoint";
  kafka.fail_status = absl::FailedPreconditionError(
      "Kafka producer: _FENCED: producer fenced by newer instance");
  absl::Status s = p.Confirmable(0x30, 5'000'000).status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(s.message().find("transaction.timeout.ms"), std::string::npos) << s;
  EXPECT_EQ(s.message().find("fenced by another instance"), std::string::npos)
      << s;
}

TEST(TransactionalCommitPolicyTest, TheTimeOfAFailureIsReadWhenItHappens) {
  // The commit itself blocked past the timeout: the time the caller gave
  // (before it) is not the time of the failure.
  FakeKafkaTransactions kafka;
  FakeClock clock;  // at 1 s
  TransactionOptions o = Options();
  o.max_ms = 100;
  o.split_ms = 1000;
  o.timeout_ms = 3000;
  o.clock = &clock;
  TransactionalCommitPolicy p(o, &kafka, Start(0x10));
  EXPECT_EQ(Txn(p, 0x20, 0x30, 1, 1'000'000), 1);
  kafka.fail_call = "commit";
  kafka.fail_status = absl::FailedPreconditionError("_FENCED");
  kafka.on_commit = [&] { clock.Advance(4'000'000); };
  absl::Status s = p.Confirmable(0x30, 1'200'000).status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(s.message().find("transaction.timeout.ms"), std::string::npos) << s;
  EXPECT_EQ(s.message().find("fenced by another instance"), std::string::npos)
      << s;
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
  EXPECT_FALSE(p.Admit(next_ticket, 300'000).ok());
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
  EXPECT_EQ(Txn(q, 0x20, 0x30, 1, 0), 1);
  q.OnBegin(0x40);
  ASSERT_EQ(Admit(q, 0), Admission::kPublish);
  ASSERT_TRUE(q.Finish(true).ok());  // inside a PG transaction: abort
  EXPECT_EQ(k2.calls, (std::vector<std::string>{"begin", "abort"}));
  EXPECT_EQ(q.committed().end_lsn, kInvalidLsn);
  // The whole transaction before it was delivered, but aborted with it:
  // not confirmable.
  EXPECT_EQ(Confirm(q, 0x30, 1'000'000), kInvalidLsn);
}

TEST(TransactionalCommitPolicyTest,
     RefusedRecordAbortsAndTheReplayDeadLettersIt) {
  FakeKafkaTransactions kafka;
  RefusedEvents refused;
  TransactionalCommitPolicy p(Options(), &kafka, Start(0x10), &refused);
  // Two PostgreSQL transactions in one Kafka transaction; Kafka refuses
  // the second event of the second one.
  EXPECT_EQ(Txn(p, 0x100, 0x130, 3, 0), 3);
  p.OnBegin(0x200);
  uint64_t first = next_ticket;
  ASSERT_EQ(Admit(p, 0), Admission::kPublish);
  ASSERT_EQ(Admit(p, 0), Admission::kPublish);
  absl::Status s = p.OnRefused(first + 1, "Broker: Message size too large");
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(s.message().find("Message size too large"), std::string::npos);
  EXPECT_NE(s.message().find("event 2"), std::string::npos) << s;
  EXPECT_EQ(refused.size(), 1u);
  // It never commits: every later call fails, Finish() aborts.
  EXPECT_FALSE(p.Confirmable(0x130, 1'000'000).ok());
  EXPECT_FALSE(p.Finish(true).ok());
  EXPECT_EQ(kafka.calls, (std::vector<std::string>{"begin", "abort"}));
  EXPECT_EQ(p.committed().end_lsn, 0x10u);

  // The next session replays both from the checkpoint.
  FakeKafkaTransactions again;
  TransactionalCommitPolicy q(Options(), &again, Start(0x10), &refused);
  EXPECT_EQ(Txn(q, 0x100, 0x130, 3, 0), 3);
  q.OnBegin(0x200);
  std::string refusal;
  EXPECT_EQ(Admit(q, 0), Admission::kPublish);
  EXPECT_EQ(Admit(q, 0, &refusal), Admission::kDeadLetter);
  EXPECT_EQ(refusal, "Broker: Message size too large");
  EXPECT_EQ(Admit(q, 0), Admission::kPublish);
  ASSERT_TRUE(q.OnCommit(0x230, 0).ok());
  ASSERT_TRUE(q.Finish(true).ok());
  EXPECT_EQ(q.committed().end_lsn, 0x230u);
  // Committed: never replayed again, so forgotten.
  EXPECT_EQ(refused.size(), 0u);
}

TEST(TransactionalCommitPolicyTest,
     ARefusalAfterASplitNamesTheEventInItsTransaction) {
  // A 10-event transaction split after 4 and 8 events: the third Kafka
  // transaction holds its events 9 and 10, then a whole transaction.
  FakeKafkaTransactions kafka;
  RefusedEvents refused;
  TransactionOptions o = Options();
  o.split_events = 4;
  TransactionalCommitPolicy p(o, &kafka, Start(0x50), &refused);
  p.OnBegin(0x100);
  uint64_t ninth = 0;
  for (int i = 0; i < 10; ++i) {
    if (i == 8) ninth = next_ticket;
    ASSERT_EQ(Admit(p, 0), Admission::kPublish);
  }
  ASSERT_TRUE(p.OnCommit(0x130, 0).ok());
  ASSERT_EQ(kafka.checkpoints.size(), 2u);
  p.OnBegin(0x200);
  ASSERT_EQ(Admit(p, 0), Admission::kPublish);
  ASSERT_EQ(Admit(p, 0), Admission::kPublish);
  // The resumed segment's ordinals start at 8, the next one's at 0.
  EXPECT_NE(p.OnRefused(ninth + 1, "too large").message().find("event 10"),
            std::string::npos);
  EXPECT_NE(refused.Find(0x100, 9), nullptr);
  EXPECT_EQ(refused.size(), 1u);

  // The same without the refusal of event 10: the next transaction's
  // second event is its event 2.
  FakeKafkaTransactions k2;
  RefusedEvents r2;
  TransactionalCommitPolicy p2(o, &k2, Start(0x50), &r2);
  p2.OnBegin(0x100);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(Admit(p2, 0), Admission::kPublish);
  ASSERT_TRUE(p2.OnCommit(0x130, 0).ok());
  p2.OnBegin(0x200);
  uint64_t first = next_ticket;
  ASSERT_EQ(Admit(p2, 0), Admission::kPublish);
  ASSERT_EQ(Admit(p2, 0), Admission::kPublish);
  EXPECT_NE(p2.OnRefused(first + 1, "too large").message().find("event 2"),
            std::string::npos);
  EXPECT_NE(r2.Find(0x200, 1), nullptr);

  // The replay from the second checkpoint (8 events of 0x100 published)
  // dead-letters event 10.
  FakeKafkaTransactions again;
  TransactionalCommitPolicy r(
      o, &again, *Checkpoint::Parse(kafka.checkpoints[1]), &refused);
  r.OnBegin(0x100);
  int published = 0, dead = 0;
  for (int i = 0; i < 10; ++i) {
    Admission::Kind k = Admit(r, 0);
    published += k == Admission::kPublish;
    dead += k == Admission::kDeadLetter;
  }
  EXPECT_EQ(published, 1);
  EXPECT_EQ(dead, 1);
}

TEST(TransactionalCommitPolicyTest, RefusalReportedInsideTheCommitAborts) {
  FakeKafkaTransactions kafka;
  RefusedEvents refused;
  TransactionalCommitPolicy p(Options(), &kafka, Start(kInvalidLsn), &refused);
  uint64_t first = next_ticket;
  EXPECT_EQ(Txn(p, 0x20, 0x30, 2, 0), 2);
  // commit_transaction serves the delivery reports: the refusal arrives
  // from inside it, and librdkafka then fails the commit as abortable.
  kafka.on_commit = [&] {
    p.OnRefused(first, "Broker: Policy violation").IgnoreError();
  };
  kafka.fail_call = "commit";
  kafka.fail_status = absl::AbortedError("txn requires abort");
  absl::StatusOr<Lsn> c = p.Confirmable(0x30, 200'000);
  EXPECT_TRUE(absl::IsUnavailable(c.status())) << c.status();
  EXPECT_NE(c.status().message().find("Policy violation"), std::string::npos);
  EXPECT_EQ(kafka.calls, (std::vector<std::string>{"begin", "checkpoint",
                                                   "commit", "abort"}));
  EXPECT_EQ(refused.size(), 1u);
  EXPECT_EQ(p.committed().end_lsn, kInvalidLsn);
}

}  // namespace
}  // namespace outbox
