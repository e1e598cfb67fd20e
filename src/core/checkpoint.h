// Checkpoint: what an exactly-once relay has published, as recorded in
// Kafka in the same transaction as the events it covers (src/README.md,
// "Exactly once into Kafka").
//
// The record lives on a compacted topic under Key(): one per database
// (system identifier) and slot. Its value is one line of JSON:
//   {"v":1,"system_identifier":"7312","slot":"s","timeline":2,
//    "end_lsn":"0/16B3748"}
// plus, when a PostgreSQL transaction too large for one Kafka transaction
// was split, "partial":{"commit_lsn":"0/16B9000","events":500000}: that many
// of its first events are published too.
//
// CheckpointFilter applies a checkpoint to a replayed stream: it drops every
// event of a transaction whose commit is at or before end_lsn, and the
// first `events` events of the partial transaction. It decides at Begin,
// from the commit record's LSN (wal2json's and pgoutput's B both carry it):
// commit records never overlap, so "end LSN <= end_lsn" is exactly
// "commit LSN < end_lsn".
//
// "timeline" is the PostgreSQL timeline the writing session streamed from;
// records written before it existed have none (timeline 0 here) and are
// read as written on the server's current timeline. Version 1 readers
// ignore it, so the record stays "v":1 both ways.
//
// TrustedCheckpoint decides how much of a checkpoint holds on the server
// a session streams from (docs/concepts/exactly-once-failover.md): all of
// it on the checkpoint's own timeline; on a later timeline, only what lies
// before the point where the checkpoint's timeline forked off (from the
// server's TIMELINE_HISTORY), since WAL past it was lost in the failover
// and the new timeline's transactions there were never published.
//
// Threading: value types and a filter owned by one thread (the relay loop).
#ifndef OUTBOX_CORE_CHECKPOINT_H_
#define OUTBOX_CORE_CHECKPOINT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "outbox/lsn.h"

namespace outbox {

struct Checkpoint {
  std::string system_identifier;
  std::string slot;
  // The timeline the checkpoint was written on; 0: unknown (an older
  // record).
  int timeline = 0;
  // End of the commit record of the newest PostgreSQL transaction whose
  // events are all published; kInvalidLsn when none is.
  Lsn end_lsn = kInvalidLsn;
  // A split transaction: its commit record's LSN, and how many of its first
  // events are published. kInvalidLsn / 0 when none is open.
  Lsn partial_commit_lsn = kInvalidLsn;
  int64_t partial_events = 0;

  // The record key on the checkpoint topic: "<system_identifier>/<slot>".
  static std::string Key(absl::string_view system_identifier,
                         absl::string_view slot);
  std::string Key() const { return Key(system_identifier, slot); }

  // The record value (format above).
  std::string Encode() const;

  // Parses a record value. DataLoss for anything malformed (a checkpoint
  // is never skipped silently: guessing would publish twice or lose).
  static absl::StatusOr<Checkpoint> Parse(absl::string_view value);

  // True if this checkpoint is further on than `o` (of the same key): a
  // later timeline, else a larger end LSN, else more of a split
  // transaction published.
  bool After(const Checkpoint& o) const;

  bool operator==(const Checkpoint& o) const {
    return system_identifier == o.system_identifier && slot == o.slot &&
           timeline == o.timeline && end_lsn == o.end_lsn &&
           partial_commit_lsn == o.partial_commit_lsn &&
           partial_events == o.partial_events;
  }
};

// One line of a PostgreSQL timeline history file: `timeline` ended (the
// next one forked off) at `end`.
struct TimelineSwitch {
  int timeline = 0;
  Lsn end = kInvalidLsn;
};

// Parses a timeline history file (TIMELINE_HISTORY's content): lines of
// "<parent timeline>\t<switch LSN>\t<reason>", comments and blank lines
// skipped. DataLoss for a malformed line.
absl::StatusOr<std::vector<TimelineSwitch>> ParseTimelineHistory(
    absl::string_view content);

// The part of `checkpoint` (read for this server's system and slot) that
// holds on the server: `system_identifier` and `timeline` are the server's,
// `history` its current timeline's history (empty on timeline 1). The
// result carries the server's timeline (what the next commit records).
// FailedPrecondition, one line, for a checkpoint of another system, of a
// later timeline, or of one not in the server's history (a sibling branch:
// where it forked cannot be known). `*note` (may be null) gets a line to
// log when the checkpoint was cut back to a fork point, else "".
absl::StatusOr<Checkpoint> TrustedCheckpoint(
    const Checkpoint& checkpoint, absl::string_view system_identifier,
    int timeline, const std::vector<TimelineSwitch>& history,
    std::string* note);

class CheckpointFilter {
 public:
  explicit CheckpointFilter(const Checkpoint& checkpoint)
      : end_lsn_(checkpoint.end_lsn),
        partial_commit_lsn_(checkpoint.partial_commit_lsn),
        partial_events_(checkpoint.partial_events) {}

  // A transaction opens (B); commit_lsn is its commit record's LSN.
  void Begin(Lsn commit_lsn);
  // For each event of the open transaction, in stream order: true if it
  // was already published and must be dropped.
  bool Drop();
  // Events dropped so far.
  int64_t dropped() const { return dropped_; }

 private:
  Lsn end_lsn_;
  Lsn partial_commit_lsn_;
  int64_t partial_events_;
  // Events of the open transaction still to drop; -1: drop all.
  int64_t to_drop_ = 0;
  int64_t dropped_ = 0;
};

}  // namespace outbox

#endif  // OUTBOX_CORE_CHECKPOINT_H_
