// The Relay loop's idle sends (RelayOptions::send_when_idle) against fakes:
// a quiet stream has the producer send at once, at most one such send is
// in flight, busy passes leave batching to linger.ms, and a pass held at the
// in-flight window sends what it holds once per hold.

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "relay/relay_fixture.h"

namespace outbox::testing {
namespace {

TEST_F(RelayTest, QuietStreamSendsWhatWasProducedWithoutLingering) {
  options_.send_when_idle = true;
  flush_delivers_ = false;
  script_.Txn(1);
  int produced_before_flush = -1;
  sink_.on_flush_extra = [&] {
    if (produced_before_flush < 0) {
      produced_before_flush = static_cast<int>(sink_.produced().size());
    }
  };
  ASSERT_TRUE(Run([&] {
                if (flushes_ >= 1) DeliverAll();  // acked once sent
              }).ok());
  // The quiet pass after the transaction flushed the producer once, with
  // the event in it; then the shutdown flushed.
  EXPECT_EQ(produced_before_flush, 1);
  EXPECT_EQ(flushes_, 2);
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
}

TEST_F(RelayTest, OneIdleSendInFlightAtATime) {
  // Like Nagle's algorithm: while the first idle send is unacknowledged,
  // records read after it wait for it (or linger.ms) instead of each
  // forcing a request of its own.
  options_.send_when_idle = true;
  flush_delivers_ = false;
  script_.Txn(1);
  size_t produced_at_second_flush = 0;
  sink_.on_flush_extra = [&] {
    if (flushes_ == 1) produced_at_second_flush = sink_.produced().size();
  };
  int turns_after_first_flush = 0;
  ASSERT_TRUE(Run([&] {
                if (flushes_ == 0) return;
                ++turns_after_first_flush;
                if (turns_after_first_flush == 1) {
                  script_.Txn(1);  // read while the first is in flight
                  script_.Txn(1);
                } else if (turns_after_first_flush == 5) {
                  Deliver(0);  // the first send is acknowledged
                } else if (flushes_ >= 2) {
                  DeliverAll();
                }
              }).ok());
  EXPECT_EQ(sink_.produced().size(), 3u);
  // The two later records went out together in one idle send, made only
  // after the first was acknowledged; then the shutdown flushed.
  EXPECT_EQ(produced_at_second_flush, 3u);
  EXPECT_GE(turns_after_first_flush, 5);
  EXPECT_EQ(flushes_, 3);
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
}

TEST_F(RelayTest, IdleFlushesAreOffWhenDisabled) {
  script_.Txn(1);
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());
  EXPECT_EQ(flushes_, 1);  // the shutdown's only
}

TEST_F(RelayTest, BusyPassesLingerAndOnlyTheQuietOneFlushes) {
  options_.send_when_idle = true;
  flush_delivers_ = false;
  for (int i = 0; i < 20; ++i) script_.Txn(1);  // 60 messages: a busy pass
  int first_poll_after_busy_pass = -1, poll_at_first_flush = -1;
  sink_.on_flush_extra = [&] {
    if (poll_at_first_flush < 0) poll_at_first_flush = sink_.polls();
  };
  ASSERT_TRUE(Run([&] {
                if (first_poll_after_busy_pass < 0 &&
                    sink_.produced().size() == 20) {
                  first_poll_after_busy_pass = sink_.polls();
                }
                if (flushes_ >= 1) DeliverAll();
              }).ok());
  EXPECT_EQ(sink_.produced().size(), 20u);
  EXPECT_EQ(flushes_, 2);  // one idle flush for all 20, then the shutdown
  // The busy pass itself did not flush: the flush came on a later turn.
  ASSERT_GE(first_poll_after_busy_pass, 0);
  EXPECT_GE(poll_at_first_flush, first_poll_after_busy_pass);
}

TEST_F(RelayTest, APassOfAFewLargeRowsIsBusy) {
  // The walsender's large rows arrive a few at a time however busy it is:
  // a pass is busy by its bytes too, or each such pass flushes a small
  // request of its own (bench/RESULTS.md, issue 26, shape C).
  options_.send_when_idle = true;
  flush_delivers_ = false;
  script_.payload_pad = 2500;
  script_.Txn(4);  // 6 messages, over 10 KB
  int first_poll_after_pass = -1, poll_at_first_flush = -1;
  sink_.on_flush_extra = [&] {
    if (poll_at_first_flush < 0) poll_at_first_flush = sink_.polls();
  };
  ASSERT_TRUE(Run([&] {
                if (first_poll_after_pass < 0 && sink_.produced().size() == 4) {
                  first_poll_after_pass = sink_.polls();
                }
                if (flushes_ >= 1) DeliverAll();
              }).ok());
  EXPECT_EQ(sink_.produced().size(), 4u);
  EXPECT_EQ(flushes_, 2);  // one idle flush on the quiet turn after, then
                           // the shutdown's
  ASSERT_GE(first_poll_after_pass, 0);
  EXPECT_GE(poll_at_first_flush, first_poll_after_pass);
}

TEST_F(RelayTest, APassHeldAtTheWindowSendsWhatItHoldsOncePerHold) {
  // Reading stops at the window: nothing more joins what the producer
  // holds until acknowledgements come, and records waiting out linger.ms
  // bring none. So the first held pass sends at once, and the turns held
  // after it (nothing produced since) send nothing more.
  options_.send_when_idle = true;
  options_.max_inflight_events = 2;
  flush_delivers_ = false;
  script_.Txn(3);
  int turns_held = 0, flushes_while_held = -1;
  size_t produced_at_first_flush = 0;
  sink_.on_flush_extra = [&] {
    if (flushes_ == 0) produced_at_first_flush = sink_.produced().size();
  };
  ASSERT_TRUE(Run([&] {
                if (sink_.produced().size() == 2 && ++turns_held == 5) {
                  flushes_while_held = flushes_;
                  DeliverAll();  // the window opens
                } else if (sink_.produced().size() == 3 && flushes_ >= 2) {
                  DeliverAll();
                }
              }).ok());
  EXPECT_EQ(turns_held, 5);
  EXPECT_EQ(flushes_while_held, 1);
  EXPECT_EQ(produced_at_first_flush, 2u);
  EXPECT_EQ(sink_.produced().size(), 3u);
  // Then the third event, read once the window opened, ended a quiet pass:
  // one idle send, then the shutdown's flush.
  EXPECT_EQ(flushes_, 3);
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
}

TEST_F(RelayTest, AHeldPassDoesNotSendWhenDisabled) {
  options_.max_inflight_events = 2;
  flush_delivers_ = false;
  script_.Txn(3);
  int turns_held = 0, flushes_while_held = -1;
  ASSERT_TRUE(Run([&] {
                if (sink_.produced().size() == 2 && ++turns_held == 5) {
                  flushes_while_held = flushes_;
                  DeliverAll();
                } else if (sink_.produced().size() == 3) {
                  DeliverAll();
                }
              }).ok());
  EXPECT_EQ(flushes_while_held, 0);
  EXPECT_EQ(flushes_, 1);  // the shutdown's only
}

}  // namespace
}  // namespace outbox::testing
