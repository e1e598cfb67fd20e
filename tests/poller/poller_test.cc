#include "poller/poller.h"

#include <prometheus/registry.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "poller/fake_store.h"
#include "relay/fakes.h"

namespace outbox::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class PollerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = Router::Create(OutboxConfig{});
    ASSERT_TRUE(r.ok()) << r.status();
    router_ = *std::move(r);
    options_.batch_size = 10;
    options_.max_attempts = 3;
    options_.backoff_initial_ms = 100;
    options_.backoff_max_ms = 1000;
    options_.interval_ms = 500;
    options_.retention_s = 0;
    options_.progress_interval_s = 0;
    options_.flush_timeout_ms = 1000;
    options_.payload_columns = {"payload"};
    // By default Kafka acknowledges everything at the next poll.
    sink_.on_poll = [this] {
      clock_.Advance(1000);
      for (size_t i : sink_.Unreported()) {
        auto it = fail_topic_.find(sink_.produced()[i].event_id);
        sink_.Report(i, it == fail_topic_.end()
                            ? absl::OkStatus()
                            : absl::InvalidArgumentError(it->second));
      }
    };
    // The poller waits for a batch's reports with Flush(), which serves
    // them like a poll (rd_kafka_flush polls).
    sink_.on_flush = [this] { sink_.Poll(0); };
  }

  Poller& MakePoller() {
    poller_ = std::make_unique<Poller>(options_, &store_, router_.get(), &sink_,
                                       &clock_, metrics_.get());
    return *poller_;
  }

  int Poll() {
    absl::StatusOr<int> n = poller_->PollTable(0, stop_);
    EXPECT_TRUE(n.ok()) << n.status();
    return n.ok() ? *n : -1;
  }

  FakeClock clock_;
  FakeStore store_{&clock_};
  FakeSink sink_;
  std::unique_ptr<Router> router_;
  PollerOptions options_;
  std::unique_ptr<PollerMetrics> metrics_;
  std::unique_ptr<Poller> poller_;
  std::atomic<bool> stop_{false};
  std::map<std::string, std::string> fail_topic_;  // event id -> error
};

TEST_F(PollerTest, DeliversRowsInSeqOrderAndMarksThemSent) {
  store_.Add("a", R"({"n": 1})");
  store_.Add("b", R"({"n": 2})");
  store_.Add("a", R"({"n": 3})");
  store_.Add("b", R"({"n": 4})");
  MakePoller();
  EXPECT_EQ(Poll(), 4);
  ASSERT_EQ(sink_.produced().size(), 4u);
  std::vector<std::string> values;
  for (const auto& p : sink_.produced()) {
    EXPECT_EQ(p.topic, "outbox.event.order");
    values.push_back(p.key + p.value);
  }
  // One instance: every key's events in seq order (here the whole batch).
  EXPECT_THAT(values, ElementsAre(R"(a{"n": 1})", R"(b{"n": 2})",
                                  R"(a{"n": 3})", R"(b{"n": 4})"));
  EXPECT_EQ(sink_.produced()[0].headers.at("id"), store_.rows()[0].id);
  for (const auto& r : store_.rows()) {
    EXPECT_NE(r.sent_us, 0) << r.seq;
    EXPECT_EQ(r.attempts, 0);
  }
  EXPECT_FALSE(store_.in_transaction());
  EXPECT_EQ(Poll(), 0);  // nothing left
  EXPECT_EQ(sink_.produced().size(), 4u);
}

TEST_F(PollerTest, NothingIsMarkedBeforeItsReportArrives) {
  store_.Add("a", "{}");
  store_.Add("a", "{}");
  MakePoller();
  sink_.on_poll = [this] {
    clock_.Advance(1000);
    // Settle must not have run while a report is outstanding.
    EXPECT_EQ(store_.settles(), 0);
    if (sink_.polls() == 3) sink_.ReportAll();
  };
  EXPECT_EQ(Poll(), 2);
  EXPECT_EQ(store_.settles(), 1);
  EXPECT_NE(store_.rows()[1].sent_us, 0);
}

TEST_F(PollerTest, DeleteModeDeletesDeliveredRows) {
  options_.mode = PollerMode::kDelete;
  store_.Add("a", "{}");
  store_.Add("b", "{}");
  MakePoller();
  EXPECT_EQ(Poll(), 2);
  EXPECT_TRUE(store_.rows()[0].deleted);
  EXPECT_TRUE(store_.rows()[1].deleted);
}

TEST_F(PollerTest, ClaimsAtMostBatchSize) {
  options_.batch_size = 2;
  for (int i = 0; i < 5; ++i) store_.Add("k", "{}");
  MakePoller();
  EXPECT_EQ(Poll(), 2);
  EXPECT_EQ(Poll(), 2);
  EXPECT_EQ(Poll(), 1);
  EXPECT_EQ(Poll(), 0);
}

TEST_F(PollerTest, FailedRowIsRetriedWithBackoffThenDeadLettered) {
  store_.Add("a", "{}");
  const std::string bad = store_.Add("big", "{}").id;
  store_.Add("a", "{}");
  fail_topic_[bad] = "Broker: Message size too large";
  MakePoller();

  EXPECT_EQ(Poll(), 3);
  const FakeStore::Row& row = store_.rows()[1];
  EXPECT_EQ(row.attempts, 1);
  EXPECT_FALSE(row.dead);
  EXPECT_THAT(row.last_error, HasSubstr("too large"));
  EXPECT_THAT(row.last_error, HasSubstr("outbox.event.order"));
  // Backoff with jitter: due within [now, now + 100 ms].
  EXPECT_GE(row.next_attempt_us, clock_.NowMicros());
  EXPECT_LE(row.next_attempt_us, clock_.NowMicros() + 100'000);
  // The other rows flowed.
  EXPECT_NE(store_.rows()[0].sent_us, 0);
  EXPECT_NE(store_.rows()[2].sent_us, 0);

  int claims_of_bad = 1;
  for (int i = 0; i < 100 && !row.dead; ++i) {
    int n = Poll();
    claims_of_bad += n;
    clock_.Advance(50'000);
  }
  EXPECT_TRUE(row.dead);
  EXPECT_EQ(row.attempts, 3);
  EXPECT_EQ(claims_of_bad, 3);
  EXPECT_EQ(row.sent_us, 0);
  EXPECT_THAT(row.last_error, HasSubstr("too large"));
  // Dead rows are never claimed again.
  clock_.Advance(10'000'000);
  EXPECT_EQ(Poll(), 0);
  EXPECT_EQ(poller_->stats().dead_lettered, 1);
  EXPECT_EQ(poller_->stats().failures, 3);
  EXPECT_EQ(poller_->stats().delivered, 2);
}

TEST_F(PollerTest, RowTheRouterRejectsCountsAsAFailedAttempt) {
  FakeStore::Row& r = store_.Add("a", "{}");
  r.key_null = true;
  store_.Add("b", "{}");
  MakePoller();
  EXPECT_EQ(Poll(), 2);
  EXPECT_EQ(sink_.produced().size(), 1u);
  EXPECT_EQ(store_.rows()[0].attempts, 1);
  EXPECT_THAT(store_.rows()[0].last_error, HasSubstr("key column"));
  EXPECT_THAT(store_.rows()[0].last_error, HasSubstr(store_.rows()[0].id));
  EXPECT_NE(store_.rows()[1].sent_us, 0);
}

TEST_F(PollerTest, RecordTheSinkRefusesCountsAsAFailedAttempt) {
  store_.Add("a", "{}");
  sink_.reject_topic = "outbox.event.order";
  MakePoller();
  EXPECT_EQ(Poll(), 1);
  EXPECT_EQ(store_.rows()[0].attempts, 1);
  EXPECT_THAT(store_.rows()[0].last_error, HasSubstr("rejected"));
}

TEST_F(PollerTest, DeadLetterTopicGetsTheRowWhenConfigured) {
  options_.dead_letter = true;
  options_.dead_letter_topic = "dlq";
  options_.max_attempts = 1;
  const std::string bad = store_.Add("big", R"({"x": 1})").id;
  fail_topic_[bad] = "Broker: Message size too large";
  MakePoller();
  EXPECT_EQ(Poll(), 1);
  ASSERT_EQ(sink_.produced().size(), 2u);
  const auto& dl = sink_.produced()[1];
  EXPECT_EQ(dl.topic, "dlq");
  EXPECT_EQ(dl.key, bad);
  EXPECT_EQ(dl.value, R"({"x": 1})");
  EXPECT_EQ(dl.headers.at("id"), bad);
  EXPECT_EQ(dl.headers.at("topic"), "outbox.event.order");
  EXPECT_EQ(dl.headers.at("key"), "big");
  EXPECT_EQ(dl.headers.at("attempts"), "1");
  EXPECT_THAT(dl.headers.at("error"), HasSubstr("too large"));
  EXPECT_TRUE(store_.rows()[0].dead);
}

TEST_F(PollerTest, WithoutDeadLetterTopicTheRowOnlyChangesState) {
  options_.max_attempts = 1;
  const std::string bad = store_.Add("big", "{}").id;
  fail_topic_[bad] = "Broker: Message size too large";
  MakePoller();
  EXPECT_EQ(Poll(), 1);
  EXPECT_EQ(sink_.produced().size(), 1u);
  EXPECT_TRUE(store_.rows()[0].dead);
}

TEST_F(PollerTest, StopWithReportsOutstandingRollsTheBatchBack) {
  store_.Add("a", "{}");
  store_.Add("b", "{}");
  MakePoller();
  sink_.on_poll = [this] {
    clock_.Advance(100'000);
    stop_ = true;  // SIGTERM while Kafka is unreachable
  };
  absl::StatusOr<int> n = poller_->PollTable(0, stop_);
  EXPECT_TRUE(absl::IsCancelled(n.status())) << n.status();
  EXPECT_EQ(store_.abandons(), 1);
  EXPECT_EQ(store_.settles(), 0);
  // The waiting lasted flush_timeout_ms, not for ever.
  EXPECT_LE(sink_.polls(), 12);
  for (const auto& r : store_.rows()) {
    EXPECT_EQ(r.sent_us, 0);
    EXPECT_EQ(r.attempts, 0);  // not the row's fault
  }
}

TEST_F(PollerTest, StopWhileReportsArriveFinishesTheBatch) {
  store_.Add("a", "{}");
  MakePoller();
  stop_ = true;
  EXPECT_EQ(Poll(), 1);
  EXPECT_NE(store_.rows()[0].sent_us, 0);
}

TEST_F(PollerTest, LateReportOfAnAbandonedBatchIsIgnored) {
  store_.Add("a", "{}");
  MakePoller();
  store_.settle_error = absl::UnavailableError("connection lost");
  sink_.on_poll = [this] {
    clock_.Advance(1000);
    if (sink_.produced().size() == 1) sink_.ReportAll();
  };
  EXPECT_TRUE(absl::IsUnavailable(poller_->PollTable(0, stop_).status()));
  EXPECT_EQ(store_.rows()[0].sent_us, 0);  // rolled back: claimed again
  store_.settle_error = absl::OkStatus();
  // Second batch: the first batch's ticket must not count for it.
  sink_.on_poll = [this] {
    clock_.Advance(1000);
    if (sink_.polls() > 5) sink_.ReportAll();
  };
  EXPECT_EQ(Poll(), 1);
  EXPECT_EQ(sink_.produced().size(), 2u);
  EXPECT_NE(store_.rows()[0].sent_us, 0);
}

// Kafka is down: no report comes. The claim transaction (row locks, the
// xmin horizon) must end at the batch's deadline, not with the outage.
TEST_F(PollerTest, BatchPastItsDeadlineIsRolledBack) {
  options_.batch_timeout_ms = 2000;
  store_.Add("a", "{}");
  store_.Add("b", "{}");
  MakePoller();
  const int64_t claimed_at = clock_.NowMicros();
  sink_.on_poll = [&] {
    clock_.Advance(100'000);
    // Without a deadline this would wait for ever; stopping bounds the test.
    if (clock_.NowMicros() - claimed_at > 60'000'000) stop_ = true;
  };
  absl::StatusOr<int> n = poller_->PollTable(0, stop_);
  EXPECT_TRUE(absl::IsDeadlineExceeded(n.status())) << n.status();
  EXPECT_THAT(n.status().message(), HasSubstr("batch_timeout_ms"));
  EXPECT_FALSE(store_.in_transaction());
  EXPECT_EQ(store_.abandons(), 1);
  EXPECT_EQ(store_.settles(), 0);
  EXPECT_GE(clock_.NowMicros() - claimed_at, 2'000'000);
  EXPECT_LE(clock_.NowMicros() - claimed_at, 2'100'000);
  EXPECT_EQ(poller_->stats().abandoned, 1);
  // Kafka comes back and acknowledges the abandoned records: that marks
  // nothing (and costs the row no attempt); the rows wait for a new claim.
  sink_.ReportAll();
  for (const auto& r : store_.rows()) {
    EXPECT_EQ(r.sent_us, 0);
    EXPECT_EQ(r.attempts, 0);
  }
  sink_.on_poll = [this] {
    clock_.Advance(1000);
    for (size_t i : sink_.Unreported()) sink_.Report(i);
  };
  EXPECT_EQ(Poll(), 2);
  EXPECT_EQ(sink_.produced().size(), 4u);  // each row once more
  for (const auto& r : store_.rows()) EXPECT_NE(r.sent_us, 0);
}

// A producer queue that stays full (Kafka down, the queue filled by
// earlier records) must not hold the claim open either.
TEST_F(PollerTest, ProducerQueueFullPastTheDeadlineRollsTheBatchBack) {
  options_.batch_timeout_ms = 500;
  for (int i = 0; i < 3; ++i) store_.Add("k", "{}");
  sink_.queue_limit = 1;
  MakePoller();
  sink_.on_poll = [this] {
    clock_.Advance(10'000);
    if (clock_.NowMicros() > 60'000'000)
      sink_.set_health(absl::InternalError("test ran away"));
  };
  absl::StatusOr<int> n = poller_->PollTable(0, stop_);
  EXPECT_TRUE(absl::IsDeadlineExceeded(n.status())) << n.status();
  EXPECT_THAT(n.status().message(), HasSubstr("queue stayed full"));
  EXPECT_EQ(store_.abandons(), 1);
  EXPECT_FALSE(store_.in_transaction());
  EXPECT_EQ(sink_.produced().size(), 1u);
}

// Run() through an outage: one batch is claimed and rolled back at its
// deadline; then no claim (and no transaction) until the producer has
// handed the abandoned records back, i.e. until Kafka returns.
TEST_F(PollerTest, RunBacksOffWithNoTransactionOpenUntilKafkaReturns) {
  prometheus::Registry registry;
  metrics_ = std::make_unique<PollerMetrics>(registry);
  options_.batch_timeout_ms = 1000;
  for (int i = 0; i < 3; ++i) store_.Add("k", "{}");
  MakePoller();
  const int64_t kafka_back_at = clock_.NowMicros() + 10'000'000;
  std::vector<int64_t> claimed_at;
  store_.on_claim = [&] {
    claimed_at.push_back(clock_.NowMicros());
    if (store_.claims() == 3) stop_ = true;
  };
  int polls_backing_off = 0;
  sink_.on_poll = [&] {
    clock_.Advance(10'000);
    if (store_.abandons() == 1 && store_.claims() == 1) {
      ++polls_backing_off;
      EXPECT_FALSE(store_.in_transaction());
    }
    if (clock_.NowMicros() >= kafka_back_at) {
      for (size_t i : sink_.Unreported()) sink_.Report(i);
    }
    if (clock_.NowMicros() > kafka_back_at + 60'000'000) stop_ = true;
  };
  ASSERT_TRUE(poller_->Run(stop_).ok());
  ASSERT_EQ(claimed_at.size(), 3u);
  EXPECT_EQ(store_.abandons(), 1);
  EXPECT_GT(polls_backing_off, 0);
  EXPECT_GE(claimed_at[1], kafka_back_at);
  EXPECT_EQ(metrics_->abandoned.Value(), 1);
  EXPECT_EQ(sink_.produced().size(), 6u);
  for (const auto& r : store_.rows()) EXPECT_NE(r.sent_us, 0);
}

// Batches abandoned in a row back off like a failed row's retries
// (RetryPolicy::CapMs: 100, 200, 400 ms here), even when the producer hands
// the records back at once (they failed, e.g. after message.timeout.ms).
TEST_F(PollerTest, AbandonedBatchesInARowBackOffExponentially) {
  options_.batch_timeout_ms = 1000;
  store_.Add("k", "{}");
  MakePoller();
  std::vector<int64_t> claimed_at;
  store_.on_claim = [&] {
    claimed_at.push_back(clock_.NowMicros());
    if (store_.claims() == 4) stop_ = true;
  };
  sink_.on_poll = [&] {
    clock_.Advance(10'000);
    if (store_.in_transaction()) return;  // the batch waits: no report
    for (size_t i : sink_.Unreported()) {
      sink_.Report(i, absl::DeadlineExceededError("Local: Message timed out"));
    }
    if (clock_.NowMicros() > 60'000'000) stop_ = true;
  };
  ASSERT_TRUE(poller_->Run(stop_).ok());
  ASSERT_EQ(claimed_at.size(), 4u);
  for (int k = 0; k < 3; ++k) {
    const int64_t backoff = (int64_t{100} << k) * 1000;
    const int64_t gap = claimed_at[k + 1] - claimed_at[k];
    EXPECT_GE(gap, 1'000'000 + backoff) << k;
    EXPECT_LE(gap, 1'000'000 + backoff + 50'000) << k;
  }
  EXPECT_GE(poller_->stats().abandoned, 3);
  EXPECT_EQ(store_.rows()[0].attempts, 0);  // an outage is no row's fault
}

TEST_F(PollerTest, FatalProducerErrorAbandonsTheBatch) {
  store_.Add("a", "{}");
  MakePoller();
  sink_.on_poll = [this] { sink_.set_health(absl::InternalError("fatal")); };
  EXPECT_TRUE(absl::IsInternal(poller_->PollTable(0, stop_).status()));
  EXPECT_EQ(store_.abandons(), 1);
  EXPECT_EQ(store_.rows()[0].attempts, 0);
}

TEST_F(PollerTest, IdleWaitsTheIntervalOrUntilANotify) {
  MakePoller();
  int64_t start = clock_.NowMicros();
  ASSERT_TRUE(poller_->Idle(stop_).ok());
  EXPECT_EQ(clock_.NowMicros() - start, 500'000);
  start = clock_.NowMicros();
  store_.notify_pending = true;
  ASSERT_TRUE(poller_->Idle(stop_).ok());
  EXPECT_EQ(clock_.NowMicros(), start);
  EXPECT_EQ(poller_->stats().notifications, 1);
}

TEST_F(PollerTest, RunPollsAgainAtOnceAfterAFullBatch) {
  options_.batch_size = 2;
  for (int i = 0; i < 5; ++i) store_.Add("k", "{}");
  MakePoller();
  store_.on_claim = [this] {
    if (store_.claims() == 4) stop_ = true;
  };
  ASSERT_TRUE(poller_->Run(stop_).ok());
  // Claims 1 and 2 were full; only after the third (1 row) did it idle.
  EXPECT_EQ(store_.claims(), 4);
  EXPECT_GE(store_.waits(), 1);
  EXPECT_EQ(poller_->stats().delivered, 5);
}

TEST_F(PollerTest, RunStopsWithUnavailableWhenTheStoreFails) {
  MakePoller();
  store_.claim_error = absl::UnavailableError("server closed the connection");
  EXPECT_TRUE(absl::IsUnavailable(poller_->Run(stop_)));
}

TEST_F(PollerTest, JanitorDeletesOldSentRowsInBoundedBatches) {
  options_.retention_s = 60;
  options_.janitor_batch = 2;
  for (int i = 0; i < 5; ++i) store_.Add("k", "{}");
  MakePoller();
  EXPECT_EQ(Poll(), 5);
  ASSERT_TRUE(poller_->MaybeRunJanitor(stop_, true).ok());
  EXPECT_EQ(poller_->stats().janitor_deleted, 0);  // too young
  clock_.Advance(61'000'000);
  store_.Add("k", "{}");  // unsent: never deleted
  int calls = store_.janitor_calls();
  ASSERT_TRUE(poller_->MaybeRunJanitor(stop_, true).ok());
  EXPECT_EQ(poller_->stats().janitor_deleted, 5);
  EXPECT_EQ(store_.janitor_calls() - calls, 3);  // 2 + 2 + 1
  EXPECT_FALSE(store_.rows()[5].deleted);
}

TEST_F(PollerTest, JanitorIsOffInDeleteModeAndWithZeroRetention) {
  options_.mode = PollerMode::kDelete;
  options_.retention_s = 60;
  MakePoller();
  ASSERT_TRUE(poller_->MaybeRunJanitor(stop_, true).ok());
  EXPECT_EQ(store_.janitor_calls(), 0);
}

TEST_F(PollerTest, MetricsCountDeliveriesFailuresAndDeadLetters) {
  prometheus::Registry registry;
  metrics_ = std::make_unique<PollerMetrics>(registry);
  options_.max_attempts = 1;
  store_.Add("a", "{}");
  const std::string bad = store_.Add("big", "{}").id;
  fail_topic_[bad] = "too large";
  MakePoller();
  EXPECT_EQ(Poll(), 2);
  EXPECT_EQ(metrics_->delivered.Value(), 1);
  EXPECT_EQ(metrics_->attempts.Value(), 2);
  EXPECT_EQ(metrics_->failures.Value(), 1);
  EXPECT_EQ(metrics_->dead_lettered.Value(), 1);
  EXPECT_EQ(metrics_->batches.Value(), 1);
  store_.Add("c", "{}");
  stop_ = true;
  ASSERT_TRUE(poller_->Run(stop_).ok());  // reports the backlog at start
  EXPECT_EQ(metrics_->Unsent("public.outbox").Value(), 1);
}

}  // namespace
}  // namespace outbox::testing
