// outbox-relay with kafka.exactly_once and outbox.on_invalid=dead_letter
// against the real broker: records Kafka refuses inside an open Kafka
// transaction (the broker: over the topic's max.message.bytes; the
// producer: over its own message.max.bytes) each land in the dead-letter
// topic exactly once, and every other event on its topic exactly once, for
// a read_committed consumer (the fixture's consumer: librdkafka's default
// isolation.level is read_committed) and for `outbox-audit
// --read-committed`. Under halt the open Kafka transaction is aborted:
// nothing of it is visible, and all of it is published after the fix.
#include <iostream>
#include <map>
#include <thread>

#include "e2e/relay/relay_e2e_fixture.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

class RelayExactlyOncePoisonTest : public ExactlyOnceRelayE2ETest {
 protected:
  void SetUp() override {
    ExactlyOnceRelayE2ETest::SetUp();
    if (HasFatalFailure()) return;
    dead_letter_topic_ = "outbox.dead_letter." + UniqueName("dlq");
    extra_relay_args_.insert(
        extra_relay_args_.end(),
        {"--set", "outbox.on_invalid=dead_letter", "--set",
         "outbox.dead_letter_topic=" + dead_letter_topic_,
         // The broker refuses a whole batch when one record of it is over
         // the topic's limit: one record per batch, so only that one is.
         "--set", "kafka.properties.batch.num.messages=1"});
  }

  // Inserts, in one PostgreSQL transaction, a small event, one of `bytes`
  // and another small one; the small ones go to *small for the audit.
  std::string InsertAround(int n, size_t bytes, std::vector<Event>* small) {
    std::string refused = db_->Scalar("SELECT gen_random_uuid()");
    std::string sql = "BEGIN;";
    for (int i = 0; i < 2; ++i) {
      Event e;
      e.id = db_->Scalar("SELECT gen_random_uuid()");
      e.key = absl::StrCat("around-", n, "-", i);
      e.seq = 1;
      e.payload = db_->Scalar(
          "SELECT jsonb_build_object('blob', repeat('y', 88))::text");
      small->push_back(e);
      sql += SizedEventSql(e.id, e.key, 100);
      if (i == 0) sql += SizedEventSql(refused, "refused", bytes);
    }
    db_->Exec(sql + "COMMIT;");
    return refused;
  }

  std::string dead_letter_topic_;
};

TEST_F(RelayExactlyOncePoisonTest, RefusedRecordsAreDeadLetteredOnce) {
  ASSERT_TRUE(CreateTopic(env_->kafka_brokers(), topic_, 1,
                          {{"max.message.bytes", "10000"}})
                  .ok());
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  // A writer keeps committing, so the refused records share their Kafka
  // transactions with other PostgreSQL transactions.
  std::vector<Event> committed;
  std::vector<std::string> rolled_back;
  std::atomic<bool> stop{false};
  std::thread writer(
      [&] { Write(1, 100000, 4, 5, &committed, &rolled_back, &stop); });
  std::vector<Event> small;
  std::vector<std::string> refused;
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    // Over the topic's max.message.bytes: refused by the broker after
    // librdkafka sent it (the Kafka transaction is then abortable).
    refused.push_back(InsertAround(i, 20'000, &small));
  }
  // Over the producer's message.max.bytes: refused by librdkafka at once,
  // dead-lettered in the open transaction.
  refused.push_back(db_->Scalar("SELECT gen_random_uuid()"));
  InsertHugeEvent(refused.back());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  stop = true;
  writer.join();
  committed.insert(committed.end(), small.begin(), small.end());

  // Every other event once on its topic...
  int duplicates = Audit(committed, rolled_back, committed.size());
  EXPECT_EQ(duplicates, 0);
  // ...every refused one once in the dead-letter topic, never on its own.
  auto dead = ConsumeAll(env_->kafka_brokers(), {dead_letter_topic_},
                         refused.size() + 1, 15000);
  std::map<std::string, int> dead_count;
  for (const auto& m : dead) ++dead_count[m.Header("id")];
  for (const auto& id : refused) {
    EXPECT_EQ(dead_count[id], 1) << "dead letters of " << id;
  }
  EXPECT_EQ(dead.size(), refused.size());
  for (const auto& m : dead) {
    EXPECT_THAT(m.Header("error"), HasSubstr("too large"));
    // The broker's refusals name the topic the event was refused on.
    if (m.Header("id") != refused.back()) {
      EXPECT_EQ(m.Header("topic"), topic_);
    }
  }
  EXPECT_TRUE(relay_->Running()) << relay_->Output();
  // The broker's refusals aborted the transactions holding them.
  EXPECT_THAT(relay_->Output(),
              HasSubstr("aborting the open Kafka transaction"));

  // The product's audit agrees: exactly the refused events are missing
  // from the event topic, nothing is there twice, unknown or out of order.
  std::string out;
  EXPECT_EQ(RunOutboxAudit({"--read-committed", "--json"}, &out), 1) << out;
  EXPECT_EQ(AuditReportCount(out, "missing"), static_cast<int>(refused.size()))
      << out;
  EXPECT_EQ(AuditReportCount(out, "duplicates"), 0) << out;
  EXPECT_EQ(AuditReportCount(out, "unknown"), 0) << out;
  EXPECT_EQ(AuditReportCount(out, "order_violations"), 0) << out;
  std::cerr << committed.size() << " events, " << refused.size()
            << " refused: " << dead.size() << " dead letters, " << duplicates
            << " duplicates\n";
}

TEST_F(RelayExactlyOncePoisonTest, HaltAbortsTheOpenKafkaTransaction) {
  ASSERT_TRUE(CreateTopic(env_->kafka_brokers(), topic_, 1,
                          {{"max.message.bytes", "10000"}})
                  .ok());
  // One Kafka transaction holds both PostgreSQL transactions below.
  StartRelay({"--set", "outbox.on_invalid=halt", "--set",
              "kafka.transaction.max_ms=20000"});
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::vector<Event> small;
  std::string before = db_->Scalar("SELECT gen_random_uuid()");
  db_->Exec(SizedEventSql(before, "before", 100));
  std::string refused = InsertAround(0, 20'000, &small);
  EXPECT_EQ(relay_->Wait(60000), 4) << relay_->Output();
  EXPECT_THAT(relay_->Output(), HasSubstr("halting"));
  // Nothing of the aborted transaction is visible, not even the event
  // committed before the refused one.
  EXPECT_EQ(ConsumeAll(env_->kafka_brokers(), {topic_}, 1, 5000).size(), 0u);
  // After the fix (here: dead-lettering instead), everything once.
  StartRelay();
  auto got = ConsumeAll(env_->kafka_brokers(), {topic_}, 4, 10000);
  std::map<std::string, int> count;
  for (const auto& m : got) ++count[m.Header("id")];
  EXPECT_EQ(got.size(), 3u) << relay_->Output();
  EXPECT_EQ(count[before], 1);
  for (const auto& e : small) EXPECT_EQ(count[e.id], 1);
  auto dead = ConsumeAll(env_->kafka_brokers(), {dead_letter_topic_}, 2, 5000);
  ASSERT_EQ(dead.size(), 1u) << relay_->Output();
  EXPECT_EQ(dead[0].Header("id"), refused);
}

}  // namespace
}  // namespace outbox::testing
