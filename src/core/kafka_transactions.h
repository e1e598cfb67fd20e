// KafkaTransactions: the transactional half of a Kafka producer, as the
// exactly-once commit policy needs it. Implemented over librdkafka by
// RdKafkaSink (kafka/), by fakes in tests.
//
// Error codes, from librdkafka's classification of transactional errors:
//   Aborted            the transaction must be aborted (txn_requires_abort):
//                      abort, then replay from the last checkpoint
//   Unavailable        retriable: the same call may be made again
//   FailedPrecondition fenced: another producer with the same
//                      transactional.id took over; never commit again
//   Internal           any other fatal error: rebuild the producer
//
// Threading: the relay's poll loop only. Delivery reports of the events in
// a transaction are served from inside CommitTransaction() too.
#ifndef OUTBOX_CORE_KAFKA_TRANSACTIONS_H_
#define OUTBOX_CORE_KAFKA_TRANSACTIONS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace outbox {

class KafkaTransactions {
 public:
  virtual ~KafkaTransactions() = default;

  virtual absl::Status BeginTransaction() = 0;
  // Produces one record in the open transaction, outside the event
  // tickets: it gets no delivery report through the EventSink's handler;
  // CommitTransaction() fails if it was not delivered.
  virtual absl::Status ProduceInTransaction(absl::string_view topic,
                                            absl::string_view key,
                                            absl::string_view value) = 0;
  // Flushes every record of the transaction and commits it.
  virtual absl::Status CommitTransaction() = 0;
  virtual absl::Status AbortTransaction() = 0;
};

}  // namespace outbox

#endif  // OUTBOX_CORE_KAFKA_TRANSACTIONS_H_
