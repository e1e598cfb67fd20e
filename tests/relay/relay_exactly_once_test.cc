// The Relay under the exactly-once commit policy, with fakes: replayed
// transactions the start-up checkpoint covers are never produced again, no
// position past the last committed Kafka transaction is confirmed, and a
// record Kafka refuses is dead-lettered in the replayed transaction (or,
// under halt, the open transaction is aborted).
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

TEST_F(RelayExactlyOnceTest, NeverSendsAFlushBelowTheSessionStart) {
  // The slot was confirmed past the last checkpoint (no Kafka transaction
  // was open then), and the new session opens one at once: the policy's
  // durable position is the checkpoint, behind the slot. Issue 23 item 5.
  script_.Txn(2);
  script_.Txn(2);
  TransactionOptions o;
  o.max_ms = 1'000'000'000;  // the Kafka transaction stays open
  TransactionalCommitPolicy policy(o, &kafka_, At(start_ - 0x100));
  policy_ = &policy;
  options_.status_interval_ms = 0;  // a status update every loop turn
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());
  ASSERT_FALSE(stream_.statuses().empty());
  for (const auto& status : stream_.statuses()) {
    EXPECT_GE(status.flushed, start_) << FormatLsn(status.flushed);
  }
}

TEST_F(RelayExactlyOnceTest, RefusedRecordIsDeadLetteredWhenReplayed) {
  options_.dead_letter = true;
  std::vector<std::string> first = script_.Txn(2);
  std::vector<std::string> second = script_.Txn(3);
  TransactionOptions o;
  o.max_ms = 1'000'000'000;  // one Kafka transaction for both
  RefusedEvents refused;
  {
    TransactionalCommitPolicy policy(o, &kafka_, At(kInvalidLsn), &refused);
    policy_ = &policy;
    // Kafka refuses the second event of the second transaction.
    absl::Status s = Run([&] {
      for (size_t i = 0; i < sink_.produced().size(); ++i) {
        Deliver(i, i == 3 ? absl::InvalidArgumentError("Broker: too large")
                          : absl::OkStatus());
      }
    });
    EXPECT_TRUE(absl::IsUnavailable(s)) << s;
    EXPECT_NE(s.message().find(second[1]), std::string::npos) << s;
    EXPECT_EQ(kafka_.calls, (std::vector<std::string>{"begin", "abort"}));
    for (const auto& status : stream_.statuses()) {
      EXPECT_EQ(status.flushed, start_) << FormatLsn(status.flushed);
    }
    for (const auto& p : sink_.produced()) {
      EXPECT_NE(p.topic, options_.dead_letter_topic);
    }
  }
  // The next session: the slot replays both transactions.
  stream_ = FakeStream();
  stream_.on_status = [this](Lsn flushed) { CheckInvariant(flushed); };
  script_ = Script(&stream_);
  sink_ = FakeSink();
  kafka_ = FakeKafkaTransactions();
  script_.Txn(2);
  script_.Txn(3);
  TransactionalCommitPolicy policy(o, &kafka_, At(kInvalidLsn), &refused);
  policy_ = &policy;
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());
  ASSERT_EQ(sink_.produced().size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    const auto& p = sink_.produced()[i];
    EXPECT_EQ(p.headers.at("id"), i < 2 ? first[i] : second[i - 2]);
    EXPECT_EQ(p.topic == options_.dead_letter_topic, i == 3) << p.topic;
  }
  EXPECT_EQ(sink_.produced()[3].headers.at("error"), "Broker: too large");
  EXPECT_EQ(kafka_.calls,
            (std::vector<std::string>{"begin", "checkpoint", "commit"}));
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
  EXPECT_EQ(refused.size(), 0u);
}

TEST_F(RelayExactlyOnceTest, HaltOnARefusedRecordAbortsTheOpenTransaction) {
  std::vector<std::string> first = script_.Txn(2);
  script_.Txn(2);
  TransactionOptions o;
  o.max_ms = 1'000'000'000;
  TransactionalCommitPolicy policy(o, &kafka_, At(kInvalidLsn));
  policy_ = &policy;
  absl::Status s = Run([&] {
    for (size_t i = 0; i < sink_.produced().size(); ++i) {
      Deliver(i, i == 2 ? absl::InvalidArgumentError("Broker: too large")
                        : absl::OkStatus());
    }
  });
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("halting"), std::string::npos) << s;
  // The first transaction was delivered, but its Kafka transaction held
  // the refused record too: aborted, never confirmed.
  EXPECT_EQ(kafka_.calls, (std::vector<std::string>{"begin", "abort"}));
  for (const auto& status : stream_.statuses()) {
    EXPECT_LT(status.flushed, script_.commit_of(first[0]));
  }
}

TEST_F(RelayExactlyOnceTest, ASplitNeverCountsAnEventWaitingForQueueSpace) {
  // Each event waits for room in the producer's queue, and every wait is
  // past split_ms: a split made during the wait must not count the event
  // that is admitted but not yet produced (its checkpoint would say it is
  // published, and a replay would drop it).
  std::vector<std::string> ids = script_.Txn(6);
  TransactionOptions o;
  o.max_ms = 1'000'000'000;
  o.backlog_ms = 0;
  o.split_ms = 1;
  TransactionalCommitPolicy policy(o, &kafka_, At(kInvalidLsn));
  policy_ = &policy;
  sink_.queue_limit = 1;
  std::vector<size_t> produced_at_commit;
  kafka_.on_commit = [&] {
    produced_at_commit.push_back(sink_.produced().size());
  };
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());

  ASSERT_EQ(sink_.produced().size(), ids.size());
  ASSERT_EQ(kafka_.checkpoints.size(), produced_at_commit.size());
  ASSERT_FALSE(kafka_.checkpoints.empty());
  for (size_t i = 0; i < kafka_.checkpoints.size(); ++i) {
    absl::StatusOr<Checkpoint> c = Checkpoint::Parse(kafka_.checkpoints[i]);
    ASSERT_TRUE(c.ok()) << c.status();
    if (c->partial_commit_lsn == kInvalidLsn) continue;
    EXPECT_LE(c->partial_events, static_cast<int64_t>(produced_at_commit[i]))
        << "checkpoint " << i;
  }
  EXPECT_EQ(Checkpoint::Parse(kafka_.checkpoints.back())->end_lsn,
            script_.last_end());
}

}  // namespace
}  // namespace outbox::testing
