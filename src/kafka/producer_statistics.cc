#include "kafka/producer_statistics.h"

#include <algorithm>

#include "absl/status/status.h"
#include "simdjson.h"

namespace outbox {

namespace {

// An integer field, 0 when absent (older librdkafka versions lack some).
int64_t Int(simdjson::dom::object o, const char* name) {
  int64_t v = 0;
  if (o[name].get(v) != simdjson::SUCCESS) return 0;
  return v;
}

// A window object of microseconds ({"p50": .., "p99": .., "cnt": ..}).
LatencyWindow Window(simdjson::dom::object broker, const char* name) {
  LatencyWindow w;
  simdjson::dom::object o;
  if (broker[name].get(o) != simdjson::SUCCESS) return w;
  w.p50_s = static_cast<double>(Int(o, "p50")) / 1e6;
  w.p99_s = static_cast<double>(Int(o, "p99")) / 1e6;
  w.count = Int(o, "cnt");
  return w;
}

}  // namespace

absl::StatusOr<ProducerStatistics> ParseProducerStatistics(
    absl::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::object root;
  if (parser.parse(json.data(), json.size()).get(root) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        "librdkafka statistics: not a JSON object");
  }
  ProducerStatistics s;
  s.queue_messages = Int(root, "msg_cnt");
  s.queue_bytes = Int(root, "msg_size");
  simdjson::dom::object brokers;
  if (root["brokers"].get(brokers) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        "librdkafka statistics: no \"brokers\" object");
  }
  for (auto [key, value] : brokers) {
    simdjson::dom::object b;
    if (value.get(b) != simdjson::SUCCESS) continue;
    int64_t node = -1;
    if (b["nodeid"].get(node) != simdjson::SUCCESS || node < 0) continue;
    // The transaction and group coordinators are extra connections to a
    // broker listed already ("logical"); "internal" is librdkafka's own.
    std::string_view source;
    if (b["source"].get(source) == simdjson::SUCCESS &&
        (source == "logical" || source == "internal")) {
      continue;
    }
    BrokerStatistics out;
    out.name = std::string(key);
    out.node_id = static_cast<int32_t>(node);
    std::string_view state;
    if (b["state"].get(state) == simdjson::SUCCESS) {
      out.state = std::string(state);
    }
    out.internal = Window(b, "int_latency");
    out.outbuf = Window(b, "outbuf_latency");
    out.rtt = Window(b, "rtt");
    out.outbuf_msgs = Int(b, "outbuf_msg_cnt");
    out.waitresp_msgs = Int(b, "waitresp_msg_cnt");
    s.brokers.push_back(std::move(out));
  }
  std::sort(s.brokers.begin(), s.brokers.end(),
            [](const BrokerStatistics& a, const BrokerStatistics& b) {
              return a.name < b.name;
            });
  return s;
}

}  // namespace outbox
