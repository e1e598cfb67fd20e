// PoisonHandler: what the relay does with an event it cannot publish
// (outbox.on_invalid): halt, or dead-letter it under its own ticket so
// that only the dead letter's delivery lets the watermark pass it.
//
//   router or sink refuses an event -> Invalid()
//   a delivery report failed        -> OnFailedDelivery(): the error that
//                                      ends the session, or queued
//   each loop turn, Shutdown()      -> DeadLetterQueued()
//   exactly-once replay (kDeadLetter) -> DeadLetterUndeliverable()
//
// Error codes (relay/relay.h's): InvalidArgument halts on a poison event
// (under halt, or when its dead letter is itself refused); a report that
// failed for a transient reason is Unavailable, for a missing ACL or topic
// PermissionDenied / NotFound (waited for, never poison). A dead letter
// that cannot be produced keeps its code (a stop or a failed delivery as
// is), so the session restarts and reads the event again from the slot.
//
// Every ticket it gives up on is marked Failed in InFlight, so nothing at
// or past it is confirmed. Produce is the loop's (Relay::ProduceTracked,
// which waits for room in the producer's queue).
//
// Threading: one thread (the relay's loop). `in_flight` is not owned.
#ifndef OUTBOX_PIPELINE_POISON_H_
#define OUTBOX_PIPELINE_POISON_H_

#include <cstdint>
#include <deque>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "outbox/lsn.h"
#include "outbox/record.h"
#include "pipeline/delivery_queue.h"
#include "pipeline/in_flight.h"
#include "route/dead_letter.h"

namespace outbox {

class PoisonHandler {
 public:
  using Produce = absl::FunctionRef<absl::Status(const Record&, uint64_t)>;

  // `dead_letter`: on_invalid is dead_letter (else halt), to `topic`.
  PoisonHandler(bool dead_letter, absl::string_view topic, InFlight* in_flight);

  PoisonHandler(const PoisonHandler&) = delete;
  PoisonHandler& operator=(const PoisonHandler&) = delete;

  // Whether `topic` is where dead letters go (never under halt).
  bool IsDeadLetterTopic(absl::string_view topic) const {
    return dead_letter_ && topic == topic_;
  }

  // The router or the sink refused the event of `ticket` (`why`); `raw` is
  // what its dead letter carries, `what_kind` names it ("outbox row",
  // "outbox message").
  absl::Status Invalid(const absl::Status& why, uint64_t ticket,
                       absl::string_view event_id, Lsn lsn,
                       absl::string_view raw, absl::string_view what_kind,
                       Produce produce);

  // A failed delivery report `o` of `failed` (moved from when queued).
  // `first`: no failure ends the session yet; when one does, only the
  // policy's refusal is still settled. Returns the error that ends the
  // session, or OK.
  absl::Status OnFailedDelivery(const DeliveryOutcome& o, FailedRecord* failed,
                                bool first);

  // Produces the dead letters of the queued failures; the first error
  // ends the session.
  absl::Status DeadLetterQueued(Produce produce);
  bool has_queued() const { return !queued_.empty(); }

  // Produces f's dead letter under f.ticket.
  absl::Status DeadLetterUndeliverable(const FailedRecord& f, Produce produce);

 private:
  const bool dead_letter_;
  const std::string topic_;
  InFlight* in_flight_;
  DeadLetter builder_;
  // Permanently failed deliveries waiting to be dead-lettered.
  std::deque<FailedRecord> queued_;
};

}  // namespace outbox

#endif  // OUTBOX_PIPELINE_POISON_H_
