#include "http/kafka_client_metrics.h"

#include <cmath>
#include <limits>
#include <set>

#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace outbox {

namespace {

constexpr const char* kQuantiles[2] = {"0.5", "0.99"};

prometheus::Family<prometheus::Gauge>* Family(prometheus::Registry& r,
                                              const std::string& name,
                                              const std::string& help) {
  return &prometheus::BuildGauge().Name(name).Help(help).Register(r);
}

void SetWindow(prometheus::Gauge* const gauges[2], const LatencyWindow& w) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  gauges[0]->Set(w.count > 0 ? w.p50_s : nan);
  gauges[1]->Set(w.count > 0 ? w.p99_s : nan);
}

}  // namespace

KafkaClientMetrics::KafkaClientMetrics(prometheus::Registry& r,
                                       const std::string& p) {
  queue_messages_ =
      &Family(r, p + "_kafka_queue_messages",
              "Records produced and not yet acknowledged, in librdkafka's "
              "queue (its statistics, every statistics.interval.ms).")
           ->Add({});
  queue_bytes_ = &Family(r, p + "_kafka_queue_bytes",
                         "Bytes of the records in librdkafka's queue.")
                      ->Add({});
  rtt_ = Family(r, p + "_kafka_broker_rtt_seconds",
                "Round trip of the producer's requests to the broker (sent -> "
                "answered; produce requests, mostly) "
                "over the last statistics interval; NaN: none sent.");
  internal_ = Family(r, p + "_kafka_broker_internal_latency_seconds",
                     "produce() -> the record's request is built (librdkafka's "
                     "partition queues, linger.ms) over the last statistics "
                     "interval; NaN: none.");
  outbuf_ = Family(r, p + "_kafka_broker_outbuf_latency_seconds",
                   "Time a request waited in the broker connection's output "
                   "buffer over the last statistics interval; NaN: none.");
  outbuf_msgs_ =
      Family(r, p + "_kafka_broker_outbuf_messages",
             "Records in requests waiting to be sent to the broker.");
  waitresp_msgs_ =
      Family(r, p + "_kafka_broker_waitresp_messages",
             "Records in requests sent to the broker and not answered yet.");
  up_ = Family(r, p + "_kafka_broker_up",
               "1 while the producer's connection to the broker is up.");
}

KafkaClientMetrics::BrokerGauges& KafkaClientMetrics::Broker(
    const std::string& name) {
  auto it = brokers_.find(name);
  if (it != brokers_.end()) return it->second;
  BrokerGauges& g = brokers_[name];
  auto add = [&](prometheus::Family<prometheus::Gauge>* f,
                 std::map<std::string, std::string> labels) {
    labels["broker"] = name;
    prometheus::Gauge* gauge = &f->Add(labels);
    g.all.emplace_back(f, gauge);
    return gauge;
  };
  for (int q = 0; q < 2; ++q) {
    g.rtt[q] = add(rtt_, {{"quantile", kQuantiles[q]}});
    g.internal[q] = add(internal_, {{"quantile", kQuantiles[q]}});
    g.outbuf[q] = add(outbuf_, {{"quantile", kQuantiles[q]}});
  }
  g.outbuf_msgs = add(outbuf_msgs_, {});
  g.waitresp_msgs = add(waitresp_msgs_, {});
  g.up = add(up_, {});
  return g;
}

void KafkaClientMetrics::Update(const ProducerStatistics& stats) {
  queue_messages_->Set(static_cast<double>(stats.queue_messages));
  queue_bytes_->Set(static_cast<double>(stats.queue_bytes));
  std::set<std::string> present;
  for (const BrokerStatistics& b : stats.brokers) {
    present.insert(b.name);
    BrokerGauges& g = Broker(b.name);
    SetWindow(g.rtt, b.rtt);
    SetWindow(g.internal, b.internal);
    SetWindow(g.outbuf, b.outbuf);
    g.outbuf_msgs->Set(static_cast<double>(b.outbuf_msgs));
    g.waitresp_msgs->Set(static_cast<double>(b.waitresp_msgs));
    g.up->Set(b.state == "UP" ? 1 : 0);
  }
  for (auto it = brokers_.begin(); it != brokers_.end();) {
    if (present.count(it->first) != 0) {
      ++it;
      continue;
    }
    for (auto& [family, gauge] : it->second.all) family->Remove(gauge);
    it = brokers_.erase(it);
  }
}

}  // namespace outbox
