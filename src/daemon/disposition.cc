#include "daemon/disposition.h"

#include "outbox/event_sink.h"

namespace outbox {
namespace {

Disposition Exit(int code) {
  Disposition d;
  d.action = Disposition::Action::kStop;
  d.exit_code = code;
  return d;
}

// Transient: the standby interval while the slot is held elsewhere, else
// the backoff.
Disposition Retry(const SessionEnd& end, const char* waiting_for) {
  Disposition d;
  d.action = Disposition::Action::kRetry;
  d.wait = end.slot_held_elsewhere ? Disposition::Wait::kStandbyInterval
                                   : Disposition::Wait::kBackoff;
  d.waiting_for = waiting_for;
  d.reset_backoff = end.progressed;
  return d;
}

Disposition DisposeStream(const SessionEnd& end) {
  const absl::Status& s = end.status;
  if (s.ok()) return Exit(kExitOk);
  if (end.restart_requested) {
    Disposition d;
    d.action = Disposition::Action::kRestartNow;
    return d;
  }
  if (absl::IsInvalidArgument(s)) return Exit(kExitHalted);
  if (absl::IsDataLoss(s)) return Exit(kExitStream);
  if (absl::IsFailedPrecondition(s)) return Exit(kExitPrecondition);
  // A missing ACL or topic: not the event's fault, so never poison. The
  // next session tries again from the slot; until then nothing past the
  // refused event is confirmed.
  if (absl::IsNotFound(s) && end.topic_creation && !end.blocked_topic.empty()) {
    Disposition d;
    d.action = Disposition::Action::kCreateTopic;
    return d;
  }
  if (IsTopicAccessError(s)) {
    // Not reset by progress: retries that end at the same missing ACL or
    // topic slow down, each one publishing again what came before it.
    Disposition d = Retry(end, "Kafka");
    d.wait = Disposition::Wait::kBlockedTopic;
    d.reset_backoff = false;
    return d;
  }
  return Retry(end, "PostgreSQL");
}

}  // namespace

Disposition Dispose(const SessionEnd& end) {
  const absl::Status& s = end.status;
  switch (end.stage) {
    case SessionStage::kConfigure:
      return Exit(kExitUsage);
    case SessionStage::kOpenSlotMarker:
      return Exit(kExitPrecondition);
    case SessionStage::kConnect:
      if (absl::IsFailedPrecondition(s) || absl::IsInvalidArgument(s)) {
        return Exit(kExitPrecondition);
      }
      return Retry(end, "PostgreSQL");
    case SessionStage::kCreateProducer:
      // init_transactions could not reach the coordinator: like a broker
      // outage, wait and retry. Anything else is the configuration's.
      if (absl::IsUnavailable(s)) return Retry(end, "Kafka");
      return Exit(kExitUsage);
    case SessionStage::kReadCheckpoint:
      if (absl::IsDataLoss(s)) return Exit(kExitStream);
      if (absl::IsFailedPrecondition(s)) return Exit(kExitPrecondition);
      return Retry(end, "Kafka");
    case SessionStage::kStream:
      break;
  }
  return DisposeStream(end);
}

Disposition AfterTopicCreation(const SessionEnd& end,
                               const absl::Status& created,
                               absl::Status* status_out) {
  if (created.ok()) {
    *status_out = end.status;
    Disposition d = Retry(end, "PostgreSQL");
    d.reset_backoff = true;
    return d;
  }
  SessionEnd again = end;
  again.topic_creation = false;
  again.status = IsTopicAccessError(created)
                     ? created
                     : absl::NotFoundError(created.message());
  *status_out = again.status;
  return Dispose(again);
}

}  // namespace outbox
