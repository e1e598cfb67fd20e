// outbox-relay against the real broker's limits: the payload sizes it
// publishes (the Java producer's 1048576-byte default, not librdkafka's
// 1000000), what a refusal names, and per-key order when the broker refuses
// a record permanently: nothing of its key queued behind it is published.
#include "e2e/relay/relay_e2e_fixture.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

class KafkaLimitsTest : public RelayE2ETest {
 protected:
  static std::string Id(int n) {
    return absl::StrCat("00000000-0000-4000-8000-", 100000000000 + n);
  }
};

TEST_F(KafkaLimitsTest, PayloadUnderTheJavaDefaultIsPublished) {
  // 1,020,000 bytes: over librdkafka's default message.max.bytes (1000000),
  // under the Java producer's max.request.size (1048576).
  const size_t kSize = 1'020'000;
  // With librdkafka's old default the relay halts on it...
  StartRelay({"--set", "kafka.properties.message.max.bytes=1000000"});
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  db_->Exec(SizedEventSql(Id(1), "k", kSize));
  EXPECT_EQ(relay_->Wait(60000), 4) << relay_->Output();
  EXPECT_THAT(relay_->Output(), HasSubstr(Id(1)));
  EXPECT_THAT(relay_->Output(),
              HasSubstr("exceed the producer's message.max.bytes (1000000)"));
  // ...with the default it publishes it, and what follows.
  db_->Exec(SizedEventSql(Id(2), "k", 100));
  StartRelay();
  auto got = ConsumeAll(env_->kafka_brokers(), {topic_}, 2, 120000);
  ASSERT_EQ(got.size(), 2u) << relay_->Output();
  EXPECT_EQ(got[0].Header("id"), Id(1));
  EXPECT_EQ(got[0].value.size(), kSize);
  EXPECT_EQ(got[1].Header("id"), Id(2));
  EXPECT_TRUE(relay_->Running()) << relay_->Output();
}

TEST_F(KafkaLimitsTest, PayloadOverTheLimitHaltsNamingIt) {
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  db_->Exec(SizedEventSql(Id(1), "k", 1'048'577));
  EXPECT_EQ(relay_->Wait(60000), 4) << relay_->Output();
  EXPECT_THAT(relay_->Output(), HasSubstr(Id(1)));
  EXPECT_THAT(relay_->Output(),
              HasSubstr("exceed the producer's message.max.bytes (1048576)"));
}

TEST_F(KafkaLimitsTest,
       BrokerRefusalHaltsWithoutPublishingLaterEventsOfTheKey) {
  // The topic accepts 10000-byte batches, the producer 1048576-byte records:
  // the broker refuses the 20000-byte event after librdkafka accepted it.
  ASSERT_TRUE(CreateTopic(env_->kafka_brokers(), topic_, 1,
                          {{"max.message.bytes", "10000"}})
                  .ok());
  // One record per request, so the events after the refused one are not in
  // its batch (which the broker would refuse whole): they wait in the
  // producer, or are in flight, when the refusal comes back.
  StartRelay({"--set", "kafka.properties.batch.num.messages=1"});
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::string sql = "BEGIN;" + SizedEventSql(Id(0), "k", 100) +
                    SizedEventSql(Id(1), "k", 20'000);
  const int kLater = 200;
  for (int i = 0; i < kLater; ++i) sql += SizedEventSql(Id(100 + i), "k", 100);
  db_->Exec(sql + "COMMIT;");
  EXPECT_EQ(relay_->Wait(60000), 4) << relay_->Output();
  EXPECT_THAT(relay_->Output(), HasSubstr(Id(1)));
  EXPECT_THAT(relay_->Output(), HasSubstr("max.message.bytes"));
  EXPECT_THAT(relay_->Output(), HasSubstr("the broker refused"));
  auto got = ConsumeAll(env_->kafka_brokers(), {topic_}, kLater + 2, 15000);
  int later = 0;
  for (const auto& m : got) {
    if (m.Header("id") != Id(0)) ++later;
  }
  EXPECT_EQ(later, 0) << "events of key k published after the refused one";
  std::cerr << "consumed " << got.size() << " records\n";
}

}  // namespace
}  // namespace outbox::testing
