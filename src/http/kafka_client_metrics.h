// KafkaClientMetrics: the producer's own view of Kafka (librdkafka's
// statistics, kafka/producer_statistics.h) as Prometheus gauges, for both
// daemons:
//
//   <prefix>_kafka_queue_messages / _bytes     produced, not acknowledged
//   <prefix>_kafka_broker_rtt_seconds{broker,quantile}
//   <prefix>_kafka_broker_internal_latency_seconds{broker,quantile}
//   <prefix>_kafka_broker_outbuf_latency_seconds{broker,quantile}
//                                              quantile 0.5 and 0.99 of
//                                              the last interval; NaN when
//                                              the broker sent nothing in it
//   <prefix>_kafka_broker_outbuf_messages{broker}   waiting to be sent
//   <prefix>_kafka_broker_waitresp_messages{broker} sent, not answered
//   <prefix>_kafka_broker_up{broker}           1 while the connection is UP
//
// A broker that leaves the statistics (the producer was made anew, a
// cluster shrank) loses its series. Refreshed every
// statistics.interval.ms (docs/reference/kafka-producer.md).
//
// Threading: Update() from the thread serving the producer's callbacks;
// prometheus-cpp gauges are safe to read from the HTTP threads.
#ifndef OUTBOX_HTTP_KAFKA_CLIENT_METRICS_H_
#define OUTBOX_HTTP_KAFKA_CLIENT_METRICS_H_

#include <map>
#include <string>
#include <vector>

#include "kafka/producer_statistics.h"

namespace prometheus {
class Gauge;
template <typename T>
class Family;
class Registry;
}  // namespace prometheus

namespace outbox {

class KafkaClientMetrics {
 public:
  // Registers the gauges in `registry` under `metric_prefix` (e.g.
  // "outbox_relay").
  KafkaClientMetrics(prometheus::Registry& registry,
                     const std::string& metric_prefix);

  void Update(const ProducerStatistics& stats);

 private:
  // One broker's series, removed from their families when it leaves.
  struct BrokerGauges {
    std::vector<
        std::pair<prometheus::Family<prometheus::Gauge>*, prometheus::Gauge*>>
        all;
    prometheus::Gauge* rtt[2];
    prometheus::Gauge* internal[2];
    prometheus::Gauge* outbuf[2];
    prometheus::Gauge* outbuf_msgs;
    prometheus::Gauge* waitresp_msgs;
    prometheus::Gauge* up;
  };
  BrokerGauges& Broker(const std::string& name);

  prometheus::Gauge* queue_messages_;
  prometheus::Gauge* queue_bytes_;
  prometheus::Family<prometheus::Gauge>* rtt_;
  prometheus::Family<prometheus::Gauge>* internal_;
  prometheus::Family<prometheus::Gauge>* outbuf_;
  prometheus::Family<prometheus::Gauge>* outbuf_msgs_;
  prometheus::Family<prometheus::Gauge>* waitresp_msgs_;
  prometheus::Family<prometheus::Gauge>* up_;
  std::map<std::string, BrokerGauges> brokers_;
};

}  // namespace outbox

#endif  // OUTBOX_HTTP_KAFKA_CLIENT_METRICS_H_
