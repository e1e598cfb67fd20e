// CommitPolicy: when the relay may confirm a position to PostgreSQL, and
// which replayed events it must not publish again. The one seam between
// at-least-once and exactly-once delivery (src/README.md, "Exactly once
// into Kafka"): the Relay calls it at the same four points whatever the
// mode, and AckTracker and the sink know nothing of either.
//
//   B               -> OnBegin(commit_lsn), then OnBacklog(behind_us)
//   a read pass that found the stream empty -> OnBacklog(0)
//   routed insert   -> Admit(ticket, now_us): publish, drop (published
//                      before) or dead-letter (Kafka refused it before)
//   C               -> OnCommit(end_lsn, now_us), after AckTracker::Commit
//   every loop turn -> Confirmable(AckTracker::confirmed(), now_us)
//   refused record  -> OnRefused(ticket, error) (on_invalid: dead_letter)
//   session end     -> Finish(commit): after the final flush
//
// Invariant: Confirmable() never returns a position past an event that is
// not durable in Kafka for the mode's consumers (acknowledged, or in a
// committed Kafka transaction), and never less than a previous answer.
//
// Threading: one thread (the relay's poll loop) calls everything.
#ifndef OUTBOX_CORE_COMMIT_POLICY_H_
#define OUTBOX_CORE_COMMIT_POLICY_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "outbox/lsn.h"

namespace outbox {

class CommitPolicy {
 public:
  virtual ~CommitPolicy() = default;

  // A transaction opens; commit_lsn is its commit record's LSN (wal2json
  // and pgoutput both send it in B).
  virtual void OnBegin(Lsn commit_lsn) = 0;
  // How far behind PostgreSQL the stream is: at B, the relay's time minus
  // the opening transaction's commit time (0 when the plugin sent none);
  // 0 once a read finds the stream empty (caught up).
  virtual void OnBacklog(int64_t behind_us) { (void)behind_us; }

  // What the Relay does with one routed event.
  struct Admission {
    enum Kind { kPublish, kDrop, kDeadLetter };
    Kind kind = kPublish;
    // kDeadLetter: the error Kafka refused this event with in an earlier
    // attempt; valid until the next call.
    absl::string_view refusal;
  };

  // Called for each routed event of the open transaction before it is
  // tracked or produced; `ticket` is the one it will be tracked under
  // (AckTracker::next_ticket()). kDrop: it was published before; it is
  // neither tracked nor produced. kDeadLetter: produce its dead letter
  // instead of it. An error ends the session (see the implementation for
  // codes).
  virtual absl::StatusOr<Admission> Admit(uint64_t ticket, int64_t now_us) = 0;

  // Kafka refused the record produced under `ticket` for good, and the
  // poison policy is dead_letter. Called on the loop's thread by the
  // DeliveryQueue as it collects the report (inside the sink's Poll, Flush
  // or transaction commit), before the loop applies it; the answer travels
  // with the report. OK: the Relay dead-letters it where it is
  // (at-least-once). An error: it cannot be (exactly-once: the Kafka
  // transaction holding it must be aborted); the session ends with that
  // error, nothing of the open Kafka transaction is confirmed, and a later
  // session's Admit() returns kDeadLetter for the event.
  virtual absl::Status OnRefused(uint64_t ticket, absl::string_view error) = 0;

  // The open transaction closed at end_lsn.
  virtual absl::Status OnCommit(Lsn end_lsn, int64_t now_us) = 0;

  // The flush position to send, given the delivered prefix (AckTracker).
  virtual absl::StatusOr<Lsn> Confirmable(Lsn delivered, int64_t now_us) = 0;

  // Monotonic microseconds by which the Relay, between PostgreSQL
  // transactions, should turn its loop again (Confirmable() then commits
  // what fell due); -1: no deadline. The Relay's idle wait ends by then.
  virtual int64_t WakeAtUs() const { return -1; }

  // The session ends: with `commit`, make durable what can be (a stop
  // requested between transactions); without, give up what is not yet
  // durable (it is read again from the slot).
  virtual absl::Status Finish(bool commit) = 0;
};

// At-least-once: an event is durable once acknowledged. Admits every event
// and confirms the delivered prefix as is; costs nothing.
class AckCommitPolicy final : public CommitPolicy {
 public:
  void OnBegin(Lsn) override {}
  absl::StatusOr<Admission> Admit(uint64_t, int64_t) override {
    return Admission();
  }
  absl::Status OnRefused(uint64_t, absl::string_view) override {
    return absl::OkStatus();
  }
  absl::Status OnCommit(Lsn, int64_t) override { return absl::OkStatus(); }
  absl::StatusOr<Lsn> Confirmable(Lsn delivered, int64_t) override {
    return delivered;
  }
  absl::Status Finish(bool) override { return absl::OkStatus(); }
};

}  // namespace outbox

#endif  // OUTBOX_CORE_COMMIT_POLICY_H_
