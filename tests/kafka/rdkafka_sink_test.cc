// RdKafkaSink without a broker: what it decides locally, before anything
// is sent (the bootstrap address refuses connections, so records only
// queue). Delivery against a real broker is in tests/e2e.
#include "kafka/rdkafka_sink.h"

#include <librdkafka/rdkafka.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

using ::testing::HasSubstr;

class RdKafkaSinkTest : public ::testing::Test {
 protected:
  std::unique_ptr<RdKafkaSink> Make(
      std::map<std::string, std::string> properties = {}) {
    // Port 1 on loopback: nothing listens, nothing is ever delivered.
    auto sink = RdKafkaSink::Create({"127.0.0.1:1", std::move(properties)});
    EXPECT_TRUE(sink.ok()) << sink.status();
    if (!sink.ok()) return nullptr;
    (*sink)->SetDeliveryHandler(
        [this](const DeliveryReport& r) { reports_.push_back(r.status); });
    return *std::move(sink);
  }

  static Record WithValue(const std::string& value) {
    Record r;
    r.topic = "outbox.event.test";
    r.key = "agg-1";
    r.value = value;
    return r;
  }

  std::vector<absl::Status> reports_;
};

TEST_F(RdKafkaSinkTest, AcceptsWhatTheJavaProducerAcceptsByDefault) {
  auto sink = Make();
  ASSERT_NE(sink, nullptr);
  EXPECT_EQ(sink->effective_properties().at("message.max.bytes"), "1048576");
  // Over librdkafka's own default (1000000), under Java's 1048576.
  std::string value(1'020'000, 'x');
  EXPECT_TRUE(sink->Produce(WithValue(value), 1).ok());
  EXPECT_EQ(sink->outstanding(), 1);
}

TEST_F(RdKafkaSinkTest, TooLargeNamesTheProducerLimit) {
  auto sink = Make();
  ASSERT_NE(sink, nullptr);
  absl::Status s = sink->Produce(WithValue(std::string(1'048'577, 'x')), 1);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("too large"));
  EXPECT_THAT(s.message(), HasSubstr("message.max.bytes (1048576)"));
  EXPECT_THAT(s.message(), HasSubstr("1048582 bytes (key 5 + value 1048577"));
  EXPECT_EQ(sink->outstanding(), 0);

  auto small = Make({{"message.max.bytes", "5000"}});
  ASSERT_NE(small, nullptr);
  s = small->Produce(WithValue(std::string(6000, 'x')), 1);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("message.max.bytes (5000)"));
}

TEST_F(RdKafkaSinkTest, AfterAFatalErrorProduceFailsAtOnce) {
  auto sink = Make();
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(sink->Produce(WithValue("before"), 1).ok());
  ASSERT_TRUE(sink->InjectFatalErrorForTesting(
                      RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                      "test: sequence desync")
                  .ok());
  // No Poll() yet, so the error callback has not run: Produce must still
  // refuse, never accept a record no report will come for.
  absl::Status s = sink->Produce(WithValue("after"), 2);
  EXPECT_TRUE(absl::IsInternal(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("test: sequence desync"));
  EXPECT_TRUE(absl::IsInternal(sink->health()));
  EXPECT_EQ(sink->outstanding(), 1);
  // The record accepted before it still gets its (failed) report.
  sink->Purge();
  sink->Poll(100);
  EXPECT_EQ(sink->outstanding(), 0);
  ASSERT_EQ(reports_.size(), 1u);
  EXPECT_FALSE(reports_[0].ok());
}

TEST_F(RdKafkaSinkTest, GaplessStopIsAPermanentRefusalNotABrokenSink) {
  auto sink = Make({{"enable.gapless.guarantee", "true"}});
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(sink->InjectFatalErrorForTesting(
                      RD_KAFKA_RESP_ERR__GAPLESS_GUARANTEE,
                      "ProduceRequest failed: Broker: Message size too large")
                  .ok());
  absl::Status h = sink->health();
  EXPECT_TRUE(absl::IsInvalidArgument(h)) << h;
  EXPECT_THAT(h.message(), HasSubstr("Message size too large"));
  // Not a poison row itself: Produce says the sink is broken.
  EXPECT_TRUE(absl::IsInternal(sink->Produce(WithValue("v"), 1)));
}

TEST_F(RdKafkaSinkTest, PurgeReportsEveryQueuedRecordAsFailed) {
  auto sink = Make();
  ASSERT_NE(sink, nullptr);
  // Ticket 0 too (outbox-relay republish numbers its records from 0): every
  // ticket gets its report.
  for (uint64_t t = 0; t < 3; ++t) {
    ASSERT_TRUE(sink->Produce(WithValue("v"), t).ok());
  }
  sink->Purge();
  sink->Poll(100);
  EXPECT_EQ(sink->outstanding(), 0);
  ASSERT_EQ(reports_.size(), 3u);
  for (const absl::Status& r : reports_) {
    EXPECT_TRUE(absl::IsUnavailable(r)) << r;
  }
}

}  // namespace
}  // namespace outbox
