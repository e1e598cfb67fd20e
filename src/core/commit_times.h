// CommitTimes: the commit time of each unconfirmed transaction that holds
// events, for the relay's lag and latency figures (metrics and progress
// lines only; nothing here decides what is confirmed).
//
// Entries are keyed by the transaction's first ticket (AckTracker issues
// tickets in stream order, so the entries are sorted by it) and leave once
// the watermark passes their end LSN. A delivery report finds its
// transaction by binary search over the entries: O(log n) per report.
//
// Size: at most one entry per unconfirmed transaction with events, so
// never more than the tracked events (RelayFootprint::commit_time_index).
// Owned by InFlight (pipeline/in_flight.h), which prunes it whenever the
// watermark moves. One thread (the relay loop); not thread-safe.
#ifndef OUTBOX_CORE_COMMIT_TIMES_H_
#define OUTBOX_CORE_COMMIT_TIMES_H_

#include <cstddef>
#include <cstdint>
#include <deque>

#include "outbox/lsn.h"

namespace outbox {

class CommitTimes {
 public:
  // The open transaction's first event took `first_ticket`; the
  // transaction commits at `commit_time_us` (Unix microseconds; <= 0 when
  // the stream did not say).
  void OnFirstEvent(uint64_t first_ticket, int64_t commit_time_us);
  // The transaction of the last OnFirstEvent() committed at `end_lsn`.
  void OnCommit(Lsn end_lsn);
  // Drops the transactions the watermark `confirmed` has passed.
  void Prune(Lsn confirmed);

  // The commit time of the oldest transaction still held, or `otherwise`
  // when none is.
  int64_t OldestCommitTimeUs(int64_t otherwise) const;
  // The commit time of the transaction holding `ticket`: the last one whose
  // first ticket is at or before it; -1 when none is held or its commit
  // time is unknown.
  int64_t CommitTimeOf(uint64_t ticket) const;

  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    uint64_t first_ticket;
    int64_t commit_time_us;
    Lsn end_lsn;  // kInvalidLsn until the commit record
  };
  std::deque<Entry> entries_;
};

}  // namespace outbox

#endif  // OUTBOX_CORE_COMMIT_TIMES_H_
