#include "kafka/producer_statistics.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "http/kafka_client_metrics.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace outbox {
namespace {

// The shape of librdkafka 2.0's statistics (STATISTICS.md), trimmed: the
// bootstrap entry (nodeid -1), the transaction coordinator's logical
// connection, and one learned broker.
constexpr char kStats[] = R"({
  "name": "outbox-relay#producer-1", "type": "producer", "msg_cnt": 1200,
  "msg_size": 345678,
  "brokers": {
    "127.0.0.1:9092/bootstrap": {"name": "127.0.0.1:9092/bootstrap",
      "nodeid": -1, "source": "configured", "state": "UP",
      "rtt": {"p50": 100, "p99": 100, "cnt": 1}},
    "TxnCoordinator": {"name": "TxnCoordinator", "nodeid": 1,
      "source": "logical", "state": "UP",
      "rtt": {"p50": 9000, "p99": 9000, "cnt": 3}},
    "127.0.0.1:9092/1": {"name": "127.0.0.1:9092/1", "nodeid": 1,
      "nodename": "127.0.0.1:9092", "source": "learned", "state": "UP",
      "outbuf_cnt": 1, "outbuf_msg_cnt": 40, "waitresp_cnt": 2,
      "waitresp_msg_cnt": 900,
      "int_latency": {"min": 10, "max": 9000, "avg": 3000, "p50": 2500,
        "p75": 4000, "p90": 6000, "p95": 7000, "p99": 8500, "cnt": 5000},
      "outbuf_latency": {"p50": 20, "p99": 300, "cnt": 80},
      "rtt": {"p50": 1500, "p99": 12000, "cnt": 80},
      "throttle": {"p50": 0, "p99": 0, "cnt": 0}}
  }
})";

TEST(ProducerStatisticsTest, ReadsTheQueueAndTheLearnedBrokersOnly) {
  absl::StatusOr<ProducerStatistics> s = ParseProducerStatistics(kStats);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->queue_messages, 1200);
  EXPECT_EQ(s->queue_bytes, 345678);
  ASSERT_EQ(s->brokers.size(), 1u);
  const BrokerStatistics& b = s->brokers[0];
  EXPECT_EQ(b.name, "127.0.0.1:9092/1");
  EXPECT_EQ(b.node_id, 1);
  EXPECT_EQ(b.state, "UP");
  EXPECT_DOUBLE_EQ(b.internal.p50_s, 0.0025);
  EXPECT_DOUBLE_EQ(b.internal.p99_s, 0.0085);
  EXPECT_EQ(b.internal.count, 5000);
  EXPECT_DOUBLE_EQ(b.outbuf.p99_s, 0.0003);
  EXPECT_DOUBLE_EQ(b.rtt.p50_s, 0.0015);
  EXPECT_DOUBLE_EQ(b.rtt.p99_s, 0.012);
  EXPECT_EQ(b.outbuf_msgs, 40);
  EXPECT_EQ(b.waitresp_msgs, 900);
}

TEST(ProducerStatisticsTest, RefusesWhatIsNotStatistics) {
  EXPECT_FALSE(ParseProducerStatistics("not json").ok());
  EXPECT_FALSE(ParseProducerStatistics(R"({"msg_cnt": 1})").ok());
}

std::string Scrape(prometheus::Registry& r) {
  return prometheus::TextSerializer().Serialize(r.Collect());
}

TEST(KafkaClientMetricsTest, ExportsEachBrokerAndDropsOneThatLeft) {
  prometheus::Registry r;
  KafkaClientMetrics m(r, "outbox_relay");
  absl::StatusOr<ProducerStatistics> s = ParseProducerStatistics(kStats);
  ASSERT_TRUE(s.ok());
  m.Update(*s);
  std::string text = Scrape(r);
  EXPECT_THAT(text,
              ::testing::HasSubstr("outbox_relay_kafka_queue_messages 1200"));
  EXPECT_THAT(text,
              ::testing::HasSubstr(
                  "outbox_relay_kafka_broker_rtt_seconds{broker=\"127.0.0."
                  "1:9092/1\",quantile=\"0.99\"} 0.012"));
  EXPECT_THAT(text,
              ::testing::HasSubstr(
                  "outbox_relay_kafka_broker_internal_latency_seconds{"
                  "broker=\"127.0.0.1:9092/1\",quantile=\"0.5\"} 0.0025"));
  EXPECT_THAT(
      text, ::testing::HasSubstr("outbox_relay_kafka_broker_waitresp_messages{"
                                 "broker=\"127.0.0.1:9092/1\"} 900"));
  EXPECT_THAT(
      text, ::testing::HasSubstr(
                "outbox_relay_kafka_broker_up{broker=\"127.0.0.1:9092/1\"} 1"));
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("bootstrap")));
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("TxnCoordinator")));

  // A quiet interval: no samples is NaN, not a latency of 0.
  s->brokers[0].rtt = LatencyWindow{};
  s->brokers[0].state = "DOWN";
  m.Update(*s);
  text = Scrape(r);
  EXPECT_THAT(text,
              ::testing::HasSubstr(
                  "outbox_relay_kafka_broker_rtt_seconds{broker=\"127.0.0."
                  "1:9092/1\",quantile=\"0.99\"} Nan"));
  EXPECT_THAT(
      text, ::testing::HasSubstr(
                "outbox_relay_kafka_broker_up{broker=\"127.0.0.1:9092/1\"} 0"));

  s->brokers.clear();
  m.Update(*s);
  EXPECT_THAT(Scrape(r), ::testing::Not(::testing::HasSubstr("9092/1")));
}

}  // namespace
}  // namespace outbox
