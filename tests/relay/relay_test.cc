// The Relay loop against fakes (relay_fixture.h): publishing, the watermark
// invariant under every delivery order and failure, poison rows, dead
// letters, backpressure and disconnects.
#include <random>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "relay/relay_fixture.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

TEST_F(RelayTest, PublishesEveryInsertAndConfirmsTheLastCommit) {
  auto a = script_.Txn(2);
  auto b = script_.Txn(1);
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());
  ASSERT_EQ(sink_.produced().size(), 3u);
  const auto& first = sink_.produced()[0];
  EXPECT_EQ(first.topic, "outbox.event.order");
  EXPECT_EQ(first.key, "agg-0");
  EXPECT_EQ(first.value, "{\"n\": 0}");
  EXPECT_EQ(first.headers.at("id"), a[0]);
  EXPECT_EQ(sink_.produced()[2].headers.at("id"), b[0]);
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
  EXPECT_EQ(stream_.started_at(), start_);
  EXPECT_TRUE(stream_.stopped());
  EXPECT_EQ(stats_.events_delivered, 3);
  EXPECT_GT(checks_, 0);
}

TEST_F(RelayTest, NeverConfirmsPastAnUndeliveredEvent) {
  auto a = script_.Txn(1);
  auto b = script_.Txn(1);
  auto c = script_.Txn(1);
  flush_delivers_ = false;
  // Deliver b and c, never a: nothing may be confirmed past a's commit.
  ASSERT_TRUE(Run(
                  [&] {
                    if (sink_.produced().size() == 3) {
                      Deliver(1);
                      Deliver(2);
                    }
                  },
                  /*max_polls=*/50)
                  .ok());
  EXPECT_LE(stream_.last_flushed(), script_.commit_of(a[0]));
  EXPECT_EQ(stats_.events_delivered, 2);
}

TEST_F(RelayTest, EmptyTransactionsAndKeepalivesAdvanceTheSlot) {
  script_.Txn(0);
  script_.Txn(0);
  script_.Keepalive();
  ASSERT_TRUE(Run(nullptr).ok());
  EXPECT_TRUE(sink_.produced().empty());
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
}

TEST_F(RelayTest, KeepaliveWaitsBehindInFlightEvents) {
  auto a = script_.Txn(1);
  script_.Keepalive(/*reply=*/true);
  flush_delivers_ = false;
  ASSERT_TRUE(Run(nullptr, /*max_polls=*/30).ok());
  // The reply was sent, but it could not confirm past the undelivered row.
  EXPECT_GE(stream_.statuses().size(), 2u);
  EXPECT_LE(stream_.last_flushed(), script_.commit_of(a[0]));
}

TEST_F(RelayTest, RandomDeliveryOrderKeepsTheInvariantAndReachesTheEnd) {
  for (int seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE(seed);
    FakeStream stream;
    FakeSink sink;
    std::swap(stream_, stream);
    std::swap(sink_, sink);
    stream_.on_status = [this](Lsn flushed) { CheckInvariant(flushed); };
    delivered_.clear();
    Script script(&stream_);
    std::swap(script_, script);
    std::mt19937 rng(seed);
    for (int t = 0; t < 40; ++t) {
      script_.Txn(std::uniform_int_distribution<int>(0, 4)(rng));
      if (rng() % 4 == 0) script_.Keepalive(rng() % 2);
    }
    ASSERT_TRUE(Run([&] {
                  auto pending = sink_.Unreported();
                  std::shuffle(pending.begin(), pending.end(), rng);
                  pending.resize(
                      std::min(pending.size(), pending.size() / 2 + rng() % 2));
                  for (size_t i : pending) Deliver(i);
                }).ok());
    EXPECT_EQ(stream_.last_flushed(), script_.last_end());
    EXPECT_EQ(sink_.produced().size(), script_.events().size());
  }
}

TEST_F(RelayTest, PermanentDeliveryFailureHaltsBelowTheEvent) {
  auto a = script_.Txn(1);
  auto b = script_.Txn(2);
  auto c = script_.Txn(1);
  flush_delivers_ = false;
  absl::Status s = Run([&] {
    if (sink_.produced().size() == 4) {
      Deliver(0);
      Deliver(1);
      Deliver(2, absl::InvalidArgumentError("Broker: Message size too large"));
      Deliver(3);
    }
  });
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(b[1]));
  EXPECT_THAT(s.message(), HasSubstr("halt"));
  EXPECT_EQ(stream_.last_flushed(), script_.commit_of(a[0]) + 0x30);
  EXPECT_LE(stream_.last_flushed(), script_.commit_of(b[1]));
}

TEST_F(RelayTest, TransientDeliveryFailureRestartsWithoutConfirming) {
  auto a = script_.Txn(1);
  flush_delivers_ = false;
  absl::Status s = Run([&] {
    if (!sink_.produced().empty()) {
      Deliver(0, absl::UnavailableError("Local: Message timed out"));
    }
  });
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_LE(stream_.last_flushed(), script_.commit_of(a[0]));
}

TEST_F(RelayTest, PoisonRowHaltsWithItsLsn) {
  auto a = script_.Txn(1);
  auto b = script_.Txn(2, /*null_key=*/1);
  absl::Status s = Run([&] { DeliverAll(); });
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("null"));
  EXPECT_THAT(s.message(), HasSubstr("LSN"));
  // a is confirmed, b (with the poison row) is not.
  EXPECT_EQ(stream_.last_flushed(), script_.commit_of(a[0]) + 0x30);
}

TEST_F(RelayTest, PoisonRowGoesToTheDeadLetterTopicUnderDeadLetter) {
  options_.dead_letter = true;
  auto a = script_.Txn(2, /*null_key=*/0);
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());
  ASSERT_EQ(sink_.produced().size(), 2u);
  const auto& dl = sink_.produced()[0];
  EXPECT_EQ(dl.topic, "outbox.dead_letter");
  EXPECT_THAT(dl.value, HasSubstr(a[0]));  // the raw wal2json row
  EXPECT_THAT(dl.headers.at("error"), HasSubstr("null"));
  EXPECT_EQ(sink_.produced()[1].topic, "outbox.event.order");
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
  EXPECT_EQ(stats_.dead_lettered, 1);
}

TEST_F(RelayTest, UndeliverableRecordIsDeadLetteredAndOnlyThatConfirmsIt) {
  options_.dead_letter = true;
  auto a = script_.Txn(1);
  bool failed = false;
  ASSERT_TRUE(Run([&] {
                if (!failed && sink_.produced().size() == 1) {
                  failed = true;
                  Deliver(0, absl::InvalidArgumentError("too large"));
                } else if (sink_.produced().size() == 2) {
                  EXPECT_LE(stream_.last_flushed(), script_.commit_of(a[0]));
                  Deliver(1);
                }
              }).ok());
  ASSERT_EQ(sink_.produced().size(), 2u);
  EXPECT_EQ(sink_.produced()[1].topic, "outbox.dead_letter");
  EXPECT_EQ(sink_.produced()[1].headers.at("topic"), "outbox.event.order");
  EXPECT_EQ(sink_.produced()[1].value, "{\"n\": 0}");
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
}

TEST_F(RelayTest, BackpressureStopsReadingButKeepsSendingStatus) {
  options_.max_inflight_events = 3;
  for (int i = 0; i < 10; ++i) script_.Txn(1);
  flush_delivers_ = false;
  ASSERT_TRUE(Run(nullptr, /*max_polls=*/40).ok());
  EXPECT_EQ(sink_.produced().size(), 3u);
  EXPECT_GT(stream_.remaining(), 0u);
  EXPECT_GE(stream_.statuses().size(), 2u);  // timer kept running
}

TEST_F(RelayTest, FullProducerQueueIsRetriedNotDropped) {
  sink_.queue_limit = 2;
  for (int i = 0; i < 5; ++i) script_.Txn(1);
  int poll = 0;
  ASSERT_TRUE(Run([&] {
                if (++poll % 3 == 0) DeliverAll();
              }).ok());
  EXPECT_EQ(sink_.produced().size(), 5u);
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
}

TEST_F(RelayTest, DisconnectMidTransactionConfirmsOnlyWholeTransactions) {
  auto a = script_.Txn(1);
  auto b = script_.Txn(2, /*null_key=*/-1, /*commit=*/false);
  script_.Disconnect();
  absl::Status s = Run([&] { DeliverAll(); });
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  // b's rows were delivered, but b never committed in our stream: the slot
  // stays at a's end, so b is streamed again after the reconnect.
  EXPECT_EQ(sink_.produced().size(), 3u);
  EXPECT_LE(stream_.last_flushed(), script_.commit_of(a[0]) + 0x30);
  EXPECT_EQ(stats_.confirmed, script_.commit_of(a[0]) + 0x30);
}

TEST_F(RelayTest, UndecodableRecordStopsWithItsLsn) {
  script_.Txn(1);
  stream_.AddData(0x2000000, "{\"action\":\"X\"}");
  absl::Status s = Run([&] { DeliverAll(); });
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("0/2000000"));
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
}

TEST_F(RelayTest, FatalProducerErrorEndsTheSession) {
  auto a = script_.Txn(1);
  auto b = script_.Txn(2);
  auto c = script_.Txn(1);
  flush_delivers_ = false;
  bool fatal = false;
  absl::Status s = Run([&] {
    if (fatal || sink_.produced().size() < 4) return;
    // a and c are acknowledged, b's two events are in flight when the
    // producer dies: no report will ever come for them.
    Deliver(0);
    Deliver(3);
    sink_.set_health(absl::InternalError("fatal: out of order sequence"));
    fatal = true;
  });
  ASSERT_TRUE(fatal);
  EXPECT_TRUE(absl::IsInternal(s)) << s;
  EXPECT_EQ(sink_.Unreported().size(), 2u);
  // Confirmed up to a's end, and not past b, though c was delivered.
  EXPECT_EQ(stats_.confirmed, script_.commit_of(a[0]) + 0x30);
  EXPECT_EQ(stream_.last_flushed(), script_.commit_of(a[0]) + 0x30);
  EXPECT_LE(stream_.last_flushed(), script_.commit_of(b[0]));
  EXPECT_LT(stream_.last_flushed(), script_.commit_of(c[0]));
}

}  // namespace
}  // namespace outbox::testing
