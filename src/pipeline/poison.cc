#include "pipeline/poison.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace outbox {
namespace {

// A dead letter that could not be produced: a refusal of the dead letter
// itself halts (the row is neither published nor dead-lettered), anything
// else (a full queue given up on a stop, an unknown dead-letter topic while
// the broker restarts, a fatal producer error) keeps its code, so the
// session restarts and the row is read again from the slot.
absl::Status DeadLetterError(const absl::Status& s, absl::string_view what) {
  std::string message =
      absl::StrCat("cannot dead-letter ", what, ": ", s.message());
  if (absl::IsInvalidArgument(s)) return absl::InvalidArgumentError(message);
  if (absl::IsCancelled(s)) return s;  // stop or failed delivery: as is
  return absl::Status(s.code(), message);
}

}  // namespace

PoisonHandler::PoisonHandler(bool dead_letter, absl::string_view topic,
                             InFlight* in_flight)
    : dead_letter_(dead_letter), topic_(topic), in_flight_(in_flight) {}

absl::Status PoisonHandler::Invalid(const absl::Status& why, uint64_t ticket,
                                    absl::string_view event_id, Lsn lsn,
                                    absl::string_view raw,
                                    absl::string_view what_kind,
                                    Produce produce) {
  std::string what = absl::StrCat(
      event_id.empty() ? "" : absl::StrCat("event ", event_id, " "), "at LSN ",
      FormatLsn(lsn), ": ", why.message());
  if (!dead_letter_) {
    in_flight_->Failed(ticket);
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid ", what_kind, " ", what,
        "; halting (outbox.on_invalid = halt), nothing at or past it is "
        "confirmed"));
  }
  Log(Severity::kWarn, absl::StrCat("dead-lettering invalid ", what_kind),
      {{"event_id", std::string(event_id)},
       {"lsn", FormatLsn(lsn)},
       {"error", std::string(why.message())},
       {"topic", topic_}});
  const Record& dead =
      builder_.Build(topic_, event_id, raw, /*value_is_null=*/false,
                     why.message(), {{"lsn", FormatLsn(lsn)}});
  absl::Status s = produce(dead, ticket);
  if (!s.ok()) {
    in_flight_->Failed(ticket);
    return DeadLetterError(s, absl::StrCat("invalid ", what_kind, " ", what));
  }
  return absl::OkStatus();
}

absl::Status PoisonHandler::OnFailedDelivery(const DeliveryOutcome& o,
                                             FailedRecord* failed, bool first) {
  std::string what =
      absl::StrCat("delivery of event ", failed->event_id, " to topic ",
                   *o.topic, " failed: ", o.status.message());
  if (!o.refusal.ok()) {
    // The policy cannot dead-letter it here (exactly-once): the session
    // ends, the replay dead-letters it.
    in_flight_->Failed(o.ticket);
    if (!first) return absl::OkStatus();
    return absl::Status(o.refusal.code(),
                        absl::StrCat(what, "; ", o.refusal.message()));
  }
  if (!first) return absl::OkStatus();  // already winding down
  if (!absl::IsInvalidArgument(o.status)) {
    // Transient (timeout, purge): restart from the slot; the slot's
    // position never passed this event, so it is read again. A missing
    // topic or ACL likewise, under its own code: the supervisor waits for
    // it (it is not the event's fault, so never poison).
    in_flight_->Failed(o.ticket);
    if (IsTopicAccessError(o.status))
      return absl::Status(o.status.code(), what);
    return absl::UnavailableError(what);
  }
  if (!dead_letter_ || IsDeadLetterTopic(*o.topic)) {
    in_flight_->Failed(o.ticket);
    return absl::InvalidArgumentError(absl::StrCat(
        what, "; halting (outbox.on_invalid = ",
        dead_letter_ ? "dead_letter, and the dead letter failed" : "halt",
        "), nothing at or past it is confirmed"));
  }
  // Permanent error for this record: produce it to the dead-letter topic
  // under the same ticket; only that delivery lets the watermark pass it.
  queued_.push_back(std::move(*failed));
  return absl::OkStatus();
}

absl::Status PoisonHandler::DeadLetterQueued(Produce produce) {
  while (!queued_.empty()) {
    FailedRecord f = std::move(queued_.front());
    queued_.pop_front();
    if (absl::Status s = DeadLetterUndeliverable(f, produce); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status PoisonHandler::DeadLetterUndeliverable(const FailedRecord& f,
                                                    Produce produce) {
  Log(Severity::kWarn, "dead-lettering undeliverable event",
      {{"event_id", f.event_id}, {"topic", f.topic}, {"error", f.error}});
  const Record& dead = builder_.Build(topic_, f.event_id, f.value,
                                      /*value_is_null=*/false, f.error,
                                      {{"topic", f.topic}, {"key", f.key}});
  absl::Status s = produce(dead, f.ticket);
  if (!s.ok()) {
    in_flight_->Failed(f.ticket);
    return DeadLetterError(s, absl::StrCat("event ", f.event_id));
  }
  return absl::OkStatus();
}

}  // namespace outbox
