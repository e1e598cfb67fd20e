// Checkpoint: what an exactly-once relay has published, as recorded in
// Kafka in the same transaction as the events it covers (src/README.md,
// "Exactly once into Kafka").
//
// The record lives on a compacted topic under Key(): one per database
// (system identifier) and slot. Its value is one line of JSON:
//   {"v":1,"system_identifier":"7312","slot":"s","end_lsn":"0/16B3748"}
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
// Threading: value types and a filter owned by one thread (the relay loop).
#ifndef OUTBOX_CORE_CHECKPOINT_H_
#define OUTBOX_CORE_CHECKPOINT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "outbox/lsn.h"

namespace outbox {

struct Checkpoint {
  std::string system_identifier;
  std::string slot;
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

  bool operator==(const Checkpoint& o) const {
    return system_identifier == o.system_identifier && slot == o.slot &&
           end_lsn == o.end_lsn && partial_commit_lsn == o.partial_commit_lsn &&
           partial_events == o.partial_events;
  }
};

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
