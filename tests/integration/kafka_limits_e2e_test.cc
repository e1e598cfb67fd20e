// outbox-relay against the real broker's limits: the payload sizes it
// publishes (the Java producer's 1048576-byte default, not librdkafka's
// 1000000), what a refusal names, and per-key order when the broker refuses
// a record permanently: nothing of its key queued behind it is published.
#include <librdkafka/rdkafka.h>

#include "integration/relay_e2e_fixture.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

// Creates `topic` with one partition and the given topic configs.
void CreateTopic(const std::string& brokers, const std::string& topic,
                 const std::map<std::string, std::string>& configs) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  ASSERT_EQ(rd_kafka_conf_set(conf, "bootstrap.servers", brokers.c_str(), err,
                              sizeof(err)),
            RD_KAFKA_CONF_OK);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  ASSERT_NE(rk, nullptr) << err;
  rd_kafka_NewTopic_t* nt =
      rd_kafka_NewTopic_new(topic.c_str(), 1, 1, err, sizeof(err));
  ASSERT_NE(nt, nullptr) << err;
  for (const auto& [k, v] : configs) {
    rd_kafka_NewTopic_set_config(nt, k.c_str(), v.c_str());
  }
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_CreateTopics(rk, &nt, 1, nullptr, q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 30000);
  ASSERT_NE(ev, nullptr) << "CreateTopics timed out";
  const rd_kafka_CreateTopics_result_t* res =
      rd_kafka_event_CreateTopics_result(ev);
  ASSERT_NE(res, nullptr) << rd_kafka_event_error_string(ev);
  size_t n = 0;
  const rd_kafka_topic_result_t** results =
      rd_kafka_CreateTopics_result_topics(res, &n);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(rd_kafka_topic_result_error(results[0]), RD_KAFKA_RESP_ERR_NO_ERROR)
      << rd_kafka_topic_result_error_string(results[0]);
  rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_NewTopic_destroy(nt);
  rd_kafka_destroy(rk);
}

class KafkaLimitsTest : public RelayE2ETest {
 protected:
  // SQL inserting one event whose payload's JSON text is `bytes` long.
  std::string InsertSql(const std::string& id, const std::string& key,
                        size_t bytes) {
    // {"blob": "yyy..."}: 12 bytes around the string.
    return absl::StrCat("INSERT INTO public.", table_,
                        " (id, aggregatetype, aggregateid, type, payload) "
                        "VALUES ('",
                        id, "', '", aggtype_, "', '", key,
                        "', 'Sized', jsonb_build_object('blob', repeat('y', ",
                        bytes - 12, ")));");
  }
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
  db_->Exec(InsertSql(Id(1), "k", kSize));
  EXPECT_EQ(relay_->Wait(60000), 4) << relay_->Output();
  EXPECT_THAT(relay_->Output(), HasSubstr(Id(1)));
  EXPECT_THAT(relay_->Output(),
              HasSubstr("exceed the producer's message.max.bytes (1000000)"));
  // ...with the default it publishes it, and what follows.
  db_->Exec(InsertSql(Id(2), "k", 100));
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
  db_->Exec(InsertSql(Id(1), "k", 1'048'577));
  EXPECT_EQ(relay_->Wait(60000), 4) << relay_->Output();
  EXPECT_THAT(relay_->Output(), HasSubstr(Id(1)));
  EXPECT_THAT(relay_->Output(),
              HasSubstr("exceed the producer's message.max.bytes (1048576)"));
}

TEST_F(KafkaLimitsTest,
       BrokerRefusalHaltsWithoutPublishingLaterEventsOfTheKey) {
  // The topic accepts 10000-byte batches, the producer 1048576-byte records:
  // the broker refuses the 20000-byte event after librdkafka accepted it.
  CreateTopic(env_->kafka_brokers(), topic_, {{"max.message.bytes", "10000"}});
  // One record per request, so the events after the refused one are not in
  // its batch (which the broker would refuse whole): they wait in the
  // producer, or are in flight, when the refusal comes back.
  StartRelay({"--set", "kafka.properties.batch.num.messages=1"});
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::string sql =
      "BEGIN;" + InsertSql(Id(0), "k", 100) + InsertSql(Id(1), "k", 20'000);
  const int kLater = 200;
  for (int i = 0; i < kLater; ++i) sql += InsertSql(Id(100 + i), "k", 100);
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
