// KafkaTransactions: the transactional half of a Kafka producer, as the
// exactly-once commit policy needs it. Implemented over librdkafka by
// RdKafkaSink (kafka/), by fakes in tests.
//
// Error codes, from librdkafka's classification of transactional errors
// (TransactionErrorClass below is the one place that maps between them):
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

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace outbox {

// What a failed transactional call means (the codes above).
enum class TransactionErrorClass {
  kFenced,     // never commit again: back to standby
  kFatal,      // the producer is unusable: rebuild it
  kAbortable,  // abort the transaction, replay from the last checkpoint
  kRetriable,  // the same call may be made again
};

// librdkafka's flags of one error, as its transactional API reports them
// (`fencing`: the code is one of the fencing codes, kafka/rdkafka_sink.cc's
// IsFencingError), to the class. Fencing wins over fatal (librdkafka
// reports a fence as fatal), fatal over abortable, abortable over
// retriable; none of them: fatal.
inline TransactionErrorClass ClassifyTransactionError(bool fencing, bool fatal,
                                                      bool requires_abort,
                                                      bool retriable) {
  if (fencing) return TransactionErrorClass::kFenced;
  if (fatal) return TransactionErrorClass::kFatal;
  if (requires_abort) return TransactionErrorClass::kAbortable;
  if (retriable) return TransactionErrorClass::kRetriable;
  return TransactionErrorClass::kFatal;
}

// The class as the status code KafkaTransactions returns, saying `what`.
inline absl::Status TransactionError(TransactionErrorClass c,
                                     absl::string_view what) {
  switch (c) {
    case TransactionErrorClass::kFenced:
      return absl::FailedPreconditionError(what);
    case TransactionErrorClass::kAbortable:
      return absl::AbortedError(what);
    case TransactionErrorClass::kRetriable:
      return absl::UnavailableError(what);
    case TransactionErrorClass::kFatal:
      break;
  }
  return absl::InternalError(what);
}

// The class of a non-OK status KafkaTransactions returned (the inverse of
// TransactionError(); any other code is fatal).
inline TransactionErrorClass TransactionErrorClassOf(const absl::Status& s) {
  if (absl::IsFailedPrecondition(s)) return TransactionErrorClass::kFenced;
  if (absl::IsAborted(s)) return TransactionErrorClass::kAbortable;
  if (absl::IsUnavailable(s)) return TransactionErrorClass::kRetriable;
  return TransactionErrorClass::kFatal;
}

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
