// ProducerStatistics: what an operator needs from librdkafka's statistics
// (the JSON it emits every statistics.interval.ms; STATISTICS.md in
// librdkafka) to tell where a record's time after the produce call went:
//
//   queue          records and bytes produced, not yet acknowledged
//                  (msg_cnt, msg_size: librdkafka's whole queue)
//   per broker     each broker the client talks to by node id (learned
//                  from the metadata; not the bootstrap entries or the
//                  logical coordinator connections):
//     internal     produce() -> the record's request is built
//                  (int_latency: librdkafka's partition queues, where
//                  linger.ms waits)
//     outbuf       the request waits in the broker connection's output
//                  buffer (outbuf_latency: max.in.flight, a slow socket)
//     rtt          request sent -> response (the broker's produce time,
//                  acks=all replication, the network)
//     outbuf_msgs, waitresp_msgs   records waiting to be sent, and sent
//                                  but not answered yet
//
// Latencies are seconds over the last interval (librdkafka's windows):
// p50, p99 and the count of samples; a broker that sent nothing in the
// interval has count 0 and zeros.
#ifndef OUTBOX_KAFKA_PRODUCER_STATISTICS_H_
#define OUTBOX_KAFKA_PRODUCER_STATISTICS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace outbox {

struct LatencyWindow {
  double p50_s = 0;
  double p99_s = 0;
  int64_t count = 0;
};

struct BrokerStatistics {
  std::string name;  // librdkafka's: "host:port/nodeid"
  int32_t node_id = -1;
  std::string state;  // "UP", "DOWN", "CONNECT", ...
  LatencyWindow internal, outbuf, rtt;
  int64_t outbuf_msgs = 0;
  int64_t waitresp_msgs = 0;
};

struct ProducerStatistics {
  int64_t queue_messages = 0;
  int64_t queue_bytes = 0;
  std::vector<BrokerStatistics> brokers;  // by name
};

// InvalidArgument when `json` is not librdkafka's statistics object.
absl::StatusOr<ProducerStatistics> ParseProducerStatistics(
    absl::string_view json);

}  // namespace outbox

#endif  // OUTBOX_KAFKA_PRODUCER_STATISTICS_H_
