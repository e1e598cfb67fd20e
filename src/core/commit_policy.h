// CommitPolicy: when the relay may confirm a position to PostgreSQL, and
// which replayed events it must not publish again. The one seam between
// at-least-once and exactly-once delivery (src/README.md, "Exactly once
// into Kafka"): the Relay calls it at the same four points whatever the
// mode, and AckTracker and the sink know nothing of either.
//
//   B               -> OnBegin(commit_lsn)
//   routed insert   -> Admit(now_us): false drops the event (published)
//   C               -> OnCommit(end_lsn, now_us), after AckTracker::Commit
//   every loop turn -> Confirmable(AckTracker::confirmed(), now_us)
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
#include "outbox/lsn.h"

namespace outbox {

class CommitPolicy {
 public:
  virtual ~CommitPolicy() = default;

  // A transaction opens; commit_lsn is its commit record's LSN (wal2json
  // and pgoutput both send it in B).
  virtual void OnBegin(Lsn commit_lsn) = 0;

  // Called for each routed event of the open transaction before it is
  // tracked or produced. false: drop it, it was published before. An error
  // ends the session (see the implementation for codes).
  virtual absl::StatusOr<bool> Admit(int64_t now_us) = 0;

  // The open transaction closed at end_lsn.
  virtual absl::Status OnCommit(Lsn end_lsn, int64_t now_us) = 0;

  // The flush position to send, given the delivered prefix (AckTracker).
  virtual absl::StatusOr<Lsn> Confirmable(Lsn delivered, int64_t now_us) = 0;

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
  absl::StatusOr<bool> Admit(int64_t) override { return true; }
  absl::Status OnCommit(Lsn, int64_t) override { return absl::OkStatus(); }
  absl::StatusOr<Lsn> Confirmable(Lsn delivered, int64_t) override {
    return delivered;
  }
  absl::Status Finish(bool) override { return absl::OkStatus(); }
};

}  // namespace outbox

#endif  // OUTBOX_CORE_COMMIT_POLICY_H_
