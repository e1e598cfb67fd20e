// EventSink: where Records go (Kafka in production, fakes in tests).
//
// Implemented by RdKafkaSink (src/kafka). One thread calls everything,
// delivery handlers included: they run inside Poll() and Flush().
//
// Contract: every Produce() that returns OK yields exactly one
// DeliveryReport, carrying the caller's ticket. A report with a non-OK status
// is final (retries already happened inside the sink).
//
// Status codes of Produce() and of reports, the same in both:
//   InvalidArgument   about the record itself (too large, ...): poison
//   PermissionDenied  the producer may not write the topic (a missing ACL)
//   NotFound          the topic does not exist
//   Unavailable       transient: retry later
// PermissionDenied and NotFound are about the topic, not the record: the
// relay waits until the ACL or the topic appears (IsTopicAccessError).
#ifndef OUTBOX_EVENT_SINK_H_
#define OUTBOX_EVENT_SINK_H_

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "outbox/record.h"

namespace outbox {

struct DeliveryReport {
  uint64_t ticket = 0;
  absl::Status status;
  // The record as the sink saw it; views valid only during the handler.
  // Headers are filled only when status is not OK (for dead letters).
  Record record;
  int32_t partition = -1;
  int64_t offset = -1;
};

// A missing ACL or topic (PermissionDenied, NotFound): see above.
inline bool IsTopicAccessError(const absl::Status& s) {
  return absl::IsPermissionDenied(s) || absl::IsNotFound(s);
}

class EventSink {
 public:
  using DeliveryHandler = std::function<void(const DeliveryReport&)>;

  virtual ~EventSink() = default;

  // Set once before the first Produce().
  virtual void SetDeliveryHandler(DeliveryHandler handler) = 0;

  // Hands a record over; the sink copies what it keeps. ResourceExhausted
  // means the local queue is full: back off (serve Poll) and retry.
  // InvalidArgument is about the record itself (e.g. too large): a poison
  // row. PermissionDenied / NotFound: the topic's ACL or the topic is
  // missing. Unavailable is transient: retry later. Internal: the sink is
  // broken (health()
  // is not OK; see there what it means); once it is, every Produce() fails
  // so, never returning OK for a record no report will come for.
  virtual absl::Status Produce(const Record& record, uint64_t ticket) = 0;

  // Serves delivery reports for up to timeout_ms. Returns how many.
  virtual int Poll(int timeout_ms) = 0;

  // Waits until every produced record has its report, up to timeout_ms.
  // DeadlineExceeded if some are still outstanding.
  virtual absl::Status Flush(int timeout_ms) = 0;

  // Drops every record not yet delivered instead of waiting for it, so
  // nothing produced after a failed record can still overtake it. Each
  // dropped record gets its report, with a non-OK status, from this call
  // or from the next Poll()/Flush(). Records already sent to the broker may
  // still be written; only their acknowledgements are lost.
  virtual void Purge() = 0;

  // Not OK once the sink can no longer deliver anything: Internal (e.g. a
  // fatal idempotence error) means the owner must rebuild it;
  // InvalidArgument means a record was refused permanently and the sink
  // stopped so that nothing after it is delivered: a rebuilt sink would be
  // refused it again, so it is a poison row (its own report, if served,
  // names it).
  virtual absl::Status health() const = 0;

  // Records produced and not yet reported.
  virtual int64_t outstanding() const = 0;

  // A file descriptor that becomes readable when Poll() has reports to
  // serve, so one poll(2) loop can wait on the stream and the sink together;
  // -1 when the sink has none (then poll with a short timeout).
  virtual int wake_fd() const { return -1; }
};

}  // namespace outbox

#endif  // OUTBOX_EVENT_SINK_H_
