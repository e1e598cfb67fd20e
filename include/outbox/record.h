// Record: one Kafka message the Router built from an outbox row.
//
// Views point into the Change it came from (valid until the decoder's next
// Decode()) or into the Router (fixed header values); topic and
// value_storage are owned because the Router builds them. The sink copies
// everything it keeps (RD_KAFKA_MSG_F_COPY).
#ifndef OUTBOX_RECORD_H_
#define OUTBOX_RECORD_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace outbox {

struct Header {
  std::string name;
  absl::string_view value;
  bool is_null = false;
};

struct Record {
  std::string topic;
  absl::string_view key;
  bool key_is_null = false;
  absl::string_view value;
  bool value_is_null = false;
  std::vector<Header> headers;
  // For logs and dead letters: which event this is.
  absl::string_view event_id;
  int64_t commit_time_us = 0;
  // The partition to produce to; -1 lets the partitioner hash the key.
  int32_t partition = -1;
  // The Kafka record timestamp, Unix milliseconds; 0: the time of Produce().
  int64_t timestamp_ms = 0;
  // Backing for `value` when the Router built it (an envelope, a compacted
  // payload) rather than viewing the Change.
  std::string value_storage;

  size_t ByteSize() const {
    size_t n = topic.size() + key.size() + value.size();
    for (const Header& h : headers) n += h.name.size() + h.value.size();
    return n;
  }
};

}  // namespace outbox

#endif  // OUTBOX_RECORD_H_
