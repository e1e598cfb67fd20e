// The tableless outbox and the heartbeat in the Relay loop (fakes, wal2json
// records): messages under the outbox prefix are events in commit order with
// the rows around them, through the same poison, dead-letter and confirm
// logic; non-transactional ones, other prefixes and heartbeats never are.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "relay/heartbeat.h"
#include "relay/relay_fixture.h"
#include "route/message_router.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

std::string Row(uint32_t xid, Lsn lsn, absl::string_view id) {
  return absl::StrCat(
      "{\"action\":\"I\",\"xid\":", xid, ",", kTs, ",\"lsn\":\"",
      FormatLsn(lsn),
      "\",\"schema\":\"public\",\"table\":\"outbox\",\"columns\":["
      "{\"name\":\"id\",\"type\":\"uuid\",\"value\":\"",
      id,
      "\"},{\"name\":\"aggregatetype\",\"type\":\"text\",\"value\":\"order\"},"
      "{\"name\":\"aggregateid\",\"type\":\"text\",\"value\":\"k\"},"
      "{\"name\":\"type\",\"type\":\"text\",\"value\":\"Created\"},"
      "{\"name\":\"payload\",\"type\":\"jsonb\",\"value\":\"{}\"}]}");
}

std::string Msg(uint32_t xid, Lsn lsn, bool transactional,
                absl::string_view prefix, absl::string_view content) {
  return absl::StrCat(
      "{\"action\":\"M\",\"xid\":", transactional ? absl::StrCat(xid) : "null",
      ",\"timestamp\":", transactional ? absl::StrCat("\"", kTs + 13) : "null",
      ",\"lsn\":\"", FormatLsn(lsn),
      "\",\"transactional\":", transactional ? "true" : "false",
      ",\"prefix\":", JsonString(prefix), ",\"content\":", JsonString(content),
      "}");
}

std::string Event(absl::string_view id,
                  absl::string_view aggregatetype = "order") {
  return absl::StrCat(
      R"({"id": ")", id, R"(", "aggregatetype": ")", aggregatetype,
      R"(", "aggregateid": "k", "type": "T", "payload": {"m": 1}, )"
      R"("headers": {"h": "v"}})");
}

class RelayMessageTest : public RelayMetricsTest {
 protected:
  RelayMessageTest() {
    messages_ = std::move(MessageRouter::Create(config_.outbox).value());
    options_.message_router = messages_.get();
  }

  // One transaction: B, then each record built by `body` at its LSN, then
  // C. Returns the end LSN.
  Lsn Txn(const std::vector<std::function<std::string(uint32_t, Lsn)>>& body) {
    uint32_t xid = ++xid_;
    Lsn begin = next_;
    Lsn commit = begin + 0x100 * (body.size() + 1);
    Lsn end = commit + 0x30;
    stream_.AddData(begin, absl::StrCat("{\"action\":\"B\",\"xid\":", xid, ",",
                                        kTs, ",", Lsns(commit, end), "}"));
    for (size_t i = 0; i < body.size(); ++i) {
      Lsn lsn = begin + 0x100 * (i + 1);
      stream_.AddData(lsn, body[i](xid, lsn));
    }
    stream_.AddData(commit, absl::StrCat("{\"action\":\"C\",\"xid\":", xid, ",",
                                         kTs, ",", Lsns(commit, end), "}"));
    next_ = end;
    return end;
  }

  std::unique_ptr<MessageRouter> messages_;
  uint32_t xid_ = 900;
  Lsn next_ = 0x1000000;
};

TEST_F(RelayMessageTest, MessagesAreEventsInCommitOrderWithRows) {
  const std::string m1 = "00000000-0000-4000-8000-0000000000m1";
  Lsn end = Txn({
      [](uint32_t x, Lsn l) { return Row(x, l, "r1"); },
      [&](uint32_t x, Lsn l) { return Msg(x, l, true, "outbox", Event(m1)); },
      // Someone else's prefix and a heartbeat nobody here emitted.
      [](uint32_t x, Lsn l) { return Msg(x, l, true, "other", Event("o")); },
      [](uint32_t x, Lsn l) {
        return Msg(x, l, true, kHeartbeatPrefix, "1 2");
      },
      [](uint32_t x, Lsn l) { return Row(x, l, "r2"); },
  });
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());
  ASSERT_EQ(sink_.produced().size(), 3u);
  EXPECT_EQ(sink_.produced()[0].headers.at("id"), "r1");
  const auto& m = sink_.produced()[1];
  EXPECT_EQ(m.headers.at("id"), m1);
  EXPECT_EQ(m.headers.at("h"), "v");
  EXPECT_EQ(m.topic, "outbox.event.order");
  EXPECT_EQ(m.key, "k");
  EXPECT_EQ(m.value, "{\"m\": 1}");
  EXPECT_EQ(sink_.produced()[2].headers.at("id"), "r2");
  EXPECT_EQ(stream_.last_flushed(), end);
  EXPECT_EQ(stats_.events_delivered, 3);
  EXPECT_EQ(stats_.heartbeats_seen, 0);
}

TEST_F(RelayMessageTest, NeverConfirmsPastAnUndeliveredMessage) {
  Lsn first = Txn({[](uint32_t x, Lsn l) {
    return Msg(x, l, true, "outbox", Event("m1"));
  }});
  Txn({[](uint32_t x, Lsn l) { return Row(x, l, "r1"); }});
  flush_delivers_ = false;
  ASSERT_TRUE(Run(
                  [&] {
                    if (sink_.produced().size() == 2) Deliver(1);
                  },
                  /*max_polls=*/50)
                  .ok());
  ASSERT_EQ(sink_.produced().size(), 2u);
  EXPECT_LT(stream_.last_flushed(), first);
  EXPECT_EQ(stats_.events_delivered, 1);
}

TEST_F(RelayMessageTest, NonTransactionalMessagesAreIgnoredAndCounted) {
  Txn({});
  stream_.AddData(next_ + 0x10,
                  Msg(0, next_ + 0x10, false, "outbox", Event("nontx")));
  stream_.AddData(next_ + 0x20,
                  Msg(0, next_ + 0x20, false, "outbox", Event("nontx2")));
  next_ += 0x100;
  Lsn end = Txn({[](uint32_t x, Lsn l) { return Row(x, l, "r1"); }});
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());
  ASSERT_EQ(sink_.produced().size(), 1u);
  EXPECT_EQ(sink_.produced()[0].headers.at("id"), "r1");
  EXPECT_EQ(stats_.messages_ignored, 2);
  EXPECT_EQ(Get("outbox_relay_nontransactional_messages_total"), 2);
  EXPECT_EQ(stream_.last_flushed(), end);
}

TEST_F(RelayMessageTest, WithoutTheMessageOutboxMessagesAreNeverEvents) {
  options_.message_router = nullptr;
  Lsn end = Txn({[](uint32_t x, Lsn l) {
    return Msg(x, l, true, "outbox", Event("m1"));
  }});
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());
  EXPECT_TRUE(sink_.produced().empty());
  EXPECT_EQ(stream_.last_flushed(), end);
}

TEST_F(RelayMessageTest, PoisonMessageHaltsWithoutConfirmingIt) {
  Lsn before = Txn({[](uint32_t x, Lsn l) { return Row(x, l, "r1"); }});
  Txn({[](uint32_t x, Lsn l) {
    return Msg(x, l, true, "outbox",
               R"({"id": "bad-1", "aggregatetype": "order", "payload": 1})");
  }});
  absl::Status s = Run([&] { DeliverAll(); });
  ASSERT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("invalid outbox message event bad-1"));
  EXPECT_THAT(s.message(), HasSubstr("aggregateid is missing"));
  EXPECT_EQ(stream_.last_flushed(), before);
}

TEST_F(RelayMessageTest, PoisonMessageIsDeadLetteredAsItsContent) {
  options_.dead_letter = true;
  const std::string content = "{not an event";
  Txn({[&](uint32_t x, Lsn l) { return Msg(x, l, true, "outbox", content); }});
  Lsn end = Txn({[](uint32_t x, Lsn l) { return Row(x, l, "r1"); }});
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());
  ASSERT_EQ(sink_.produced().size(), 2u);
  const auto& dl = sink_.produced()[0];
  EXPECT_EQ(dl.topic, "outbox.dead_letter");
  EXPECT_EQ(dl.value, content);
  EXPECT_THAT(dl.headers.at("error"), HasSubstr("outbox message content"));
  EXPECT_EQ(sink_.produced()[1].headers.at("id"), "r1");
  EXPECT_EQ(stream_.last_flushed(), end);
  EXPECT_EQ(stats_.dead_lettered, 1);
}

TEST_F(RelayMessageTest, OwnHeartbeatIsTimedAndNeverAnEvent) {
  options_.heartbeat_nonce = 0xabc;
  const int64_t sent = clock_.UnixMicros() - 250'000;
  Lsn end = Txn({
      [&](uint32_t x, Lsn l) {
        return Msg(x, l, true, kHeartbeatPrefix,
                   FormatHeartbeatContent({0xabc, sent}));
      },
      // Another instance's, and garbage: ignored.
      [&](uint32_t x, Lsn l) {
        return Msg(x, l, true, kHeartbeatPrefix,
                   FormatHeartbeatContent({0xdef, sent}));
      },
      [](uint32_t x, Lsn l) {
        return Msg(x, l, true, kHeartbeatPrefix, "{\"id\": 1}");
      },
  });
  ASSERT_TRUE(Run(nullptr).ok());
  EXPECT_TRUE(sink_.produced().empty());
  EXPECT_EQ(stats_.heartbeats_seen, 1);
  EXPECT_GE(Get("outbox_relay_heartbeat_round_trip_seconds"), 0.25);
  EXPECT_EQ(stream_.last_flushed(), end);
}

TEST(HeartbeatContentTest, RoundTripsAndRejectsOthers) {
  HeartbeatContent c;
  ASSERT_TRUE(ParseHeartbeatContent(
      FormatHeartbeatContent({0xfedcba9876543210, 1700000000123456}), &c));
  EXPECT_EQ(c.nonce, 0xfedcba9876543210u);
  EXPECT_EQ(c.sent_unix_us, 1700000000123456);
  for (absl::string_view bad :
       {"", "abc", "zz 12", "1 x", "1", " 12", "11112222333344445 1"}) {
    EXPECT_FALSE(ParseHeartbeatContent(bad, &c)) << bad;
  }
}

TEST(HeartbeatProblemTest, OnlyWhenAHeartbeatIsLateAndNothingArrives) {
  RelayMetrics m(std::make_shared<prometheus::Registry>());
  const int64_t s = 1'000'000;
  EXPECT_EQ(m.heartbeat_problem(100 * s, 30 * s), "");  // none emitted
  m.OnHeartbeatEmitted(10 * s);
  m.OnHeartbeatEmitted(20 * s);  // the oldest pending one counts
  EXPECT_EQ(m.heartbeat_problem(39 * s, 30 * s), "");
  EXPECT_THAT(m.heartbeat_problem(41 * s, 30 * s),
              HasSubstr("no heartbeat came back through the slot for 31 s"));
  // A backlog being drained delivers: not stuck.
  m.OnStreamData(35 * s);
  EXPECT_EQ(m.heartbeat_problem(41 * s, 30 * s), "");
  EXPECT_NE(m.heartbeat_problem(66 * s, 30 * s), "");
  m.OnHeartbeatReturned(0.5, 66 * s);
  EXPECT_EQ(m.heartbeat_problem(200 * s, 30 * s), "");
}

}  // namespace
}  // namespace outbox::testing
