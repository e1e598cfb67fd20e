// The tableless outbox and the heartbeat, end to end: the real relay with
// each plugin (wal2json, pgoutput) on the fixture's PostgreSQL 15 and Kafka.
// Events written with sql/outbox_emit.sql's outbox_emit() in the same
// transactions as outbox rows come out in commit order with them; rolled
// back ones never; non-transactional messages are ignored and counted; a
// message that is not an event is dead-lettered. The heartbeat comes back
// through the slot, and /readyz fails while the walsender is SIGSTOPped.
#include <signal.h>

#include "e2e/relay/message_outbox_fixture.h"
#include "e2e/relay_http.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

class MessageOutboxE2ETest : public MessageOutboxTest {
 protected:
  // SQL that inserts an outbox row.
  std::string InsertRow(const std::string& id, const std::string& key,
                        const std::string& payload) {
    return "INSERT INTO public." + table_ +
           " (id, aggregatetype, aggregateid, type, payload) VALUES ('" + id +
           "', '" + aggtype_ + "', '" + key + "', 'Row', '" + payload + "');";
  }
  std::string Id(int n) {
    return absl::StrCat("00000000-0000-4000-8000-", 100000000000 + n);
  }
};

TEST_P(MessageOutboxE2ETest, MessagesAndRowsArriveInCommitOrder) {
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  const std::string payload = "{\"n\": 1, \"note\": \"caf\u00e9\"}";
  // One key, so one partition: Kafka's order is the commit order.
  db_->Exec("BEGIN;" + InsertRow(Id(1), "k", payload) +
            Emit(Id(2), "k", payload, "'{\"trace\": \"t-2\", \"v\": 2}'") +
            InsertRow(Id(3), "k", payload) + Emit(Id(4), "k", payload) +
            "COMMIT;");
  // Rolled back: neither its row nor its message is published.
  db_->Exec("BEGIN;" + InsertRow(Id(5), "k", payload) +
            Emit(Id(6), "k", payload) + "ROLLBACK;");
  // Non-transactional, under the prefix, a valid event: ignored, counted.
  db_->Exec(absl::StrCat("SELECT pg_logical_emit_message(false, '", prefix_,
                         "', '{\"id\": \"", Id(7), "\", \"aggregatetype\": \"",
                         aggtype_,
                         "\", \"aggregateid\": \"k\", \"payload\": {}}')"));
  // A transaction of messages only, then one more row.
  db_->Exec("BEGIN;" + Emit(Id(8), "k", payload) + Emit(Id(9), "k", payload) +
            "COMMIT;");
  db_->Exec(InsertRow(Id(10), "k", payload));

  const std::vector<std::string> want = {Id(1), Id(2), Id(3), Id(4),
                                         Id(8), Id(9), Id(10)};
  auto got = ConsumeUntil(
      env_->kafka_brokers(), {topic_},
      [&](const std::vector<KafkaMessage>& m) {
        return m.size() >= want.size();
      },
      60000);
  // Give anything unwanted (6, 7) time to show up behind them.
  db_->Exec(InsertRow(Id(11), "k", payload));
  got = ConsumeUntil(
      env_->kafka_brokers(), {topic_},
      [&](const std::vector<KafkaMessage>& m) {
        return m.size() >= want.size() + 1;
      },
      60000);
  std::vector<std::string> ids;
  for (const auto& m : got) ids.push_back(m.Header("id"));
  std::vector<std::string> want_all = want;
  want_all.push_back(Id(11));
  EXPECT_EQ(ids, want_all) << relay_->Output();
  const std::string jsonb_text =
      db_->Scalar("SELECT '" + payload + "'::jsonb::text");
  for (const auto& m : got) {
    // Rows and messages give the same bytes for the same jsonb.
    EXPECT_EQ(m.value, jsonb_text) << m.Header("id");
    EXPECT_EQ(m.key, "k");
  }
  ASSERT_GE(got.size(), 2u);
  EXPECT_EQ(got[1].Header("trace"), "t-2");
  EXPECT_EQ(got[1].Header("v"), "2");
  EXPECT_EQ(got[1].headers.size(), 3u);  // id, then the content's two

  int code = 0;
  EXPECT_TRUE(WaitUntil(
      [&] {
        return RelayMetric(*relay_,
                           "outbox_relay_nontransactional_messages_total") == 1;
      },
      10000))
      << RelayHttpGet(*relay_, "/metrics", &code);
  EXPECT_THAT(relay_->Output(),
              HasSubstr("ignoring non-transactional logical messages"));
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();
}

TEST_P(MessageOutboxE2ETest, APoisonMessageIsDeadLettered) {
  const std::string dlq = UniqueName("dlq");
  StartRelay({"--set", "outbox.on_invalid=dead_letter", "--set",
              "outbox.dead_letter_topic=" + dlq});
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  const std::string bad =
      absl::StrCat("{\"id\": \"", Id(1), "\", \"aggregatetype\": \"", aggtype_,
                   "\", \"payload\": {\"no\": \"key\"}}");
  db_->Exec("BEGIN; SELECT pg_logical_emit_message(true, '" + prefix_ + "', '" +
            bad + "'); " + Emit(Id(2), "k", "{}") + "COMMIT;");
  auto dead = ConsumeAll(env_->kafka_brokers(), {dlq}, 1, 60000);
  ASSERT_EQ(dead.size(), 1u) << relay_->Output();
  EXPECT_EQ(dead[0].value, bad);
  EXPECT_EQ(dead[0].Header("id"), Id(1));
  EXPECT_THAT(dead[0].Header("error"), HasSubstr("aggregateid is missing"));
  auto good = ConsumeAll(env_->kafka_brokers(), {topic_}, 1, 60000);
  ASSERT_EQ(good.size(), 1u);
  EXPECT_EQ(good[0].Header("id"), Id(2));
  EXPECT_TRUE(relay_->Running()) << relay_->Output();
  // Both are behind the confirmed position: the slot passed the commit.
  ExpectConfirmedReachesCurrentWal(30000);
}

TEST_P(MessageOutboxE2ETest, HeartbeatComesBackAndAStoppedWalsenderIsNotReady) {
  StartRelay({"--set", "postgres.heartbeat_interval_s=1", "--set",
              "postgres.heartbeat_timeout_s=3"});
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  int code = 0;
  ASSERT_TRUE(WaitUntil(
      [&] {
        return RelayMetric(*relay_,
                           "outbox_relay_heartbeat_round_trip_seconds") >= 0 &&
               RelayHttpGet(*relay_, "/readyz", &code) != "" && code == 200;
      },
      30000))
      << relay_->Output();
  EXPECT_GT(RelayMetric(*relay_, "outbox_relay_heartbeats_emitted_total"), 0);
  EXPECT_GE(RelayMetric(*relay_, "outbox_relay_heartbeat_age_seconds"), 0);
  // Nothing was published: heartbeats are never events.
  EXPECT_EQ(ConsumeAll(env_->kafka_brokers(), {topic_}, 1, 2000).size(), 0u);

  const std::string walsender = db_->Scalar(
      "SELECT active_pid FROM pg_replication_slots WHERE slot_name = '" +
      slot_ + "'");
  ASSERT_FALSE(walsender.empty());
  ASSERT_EQ(kill(std::stoi(walsender), SIGSTOP), 0);
  std::string body;
  bool not_ready = WaitUntil(
      [&] {
        body = RelayHttpGet(*relay_, "/readyz", &code);
        return code == 503;
      },
      30000);
  // The gauge is refreshed at each turn of the relay's loop, /readyz at
  // each request: it may lag the 503 by a turn.
  double age = 0;
  WaitUntil(
      [&] {
        age = RelayMetric(*relay_, "outbox_relay_heartbeat_age_seconds");
        return age > 3;
      },
      10000);
  kill(std::stoi(walsender), SIGCONT);
  ASSERT_TRUE(not_ready) << code << " " << body << "\n" << relay_->Output();
  EXPECT_THAT(body, HasSubstr("no heartbeat came back through the slot"));
  EXPECT_GT(age, 3);
  EXPECT_TRUE(WaitUntil(
      [&] { return RelayHttpGet(*relay_, "/readyz", &code), code == 200; },
      30000))
      << body << "\n"
      << relay_->Output();
  EXPECT_TRUE(relay_->Running());
}

INSTANTIATE_TEST_SUITE_P(Plugins, MessageOutboxE2ETest,
                         ::testing::Values("wal2json", "pgoutput"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return p.param;
                         });

}  // namespace
}  // namespace outbox::testing
