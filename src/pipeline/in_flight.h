// InFlight: everything the relay has read and not yet seen confirmed, in
// one owner: the delivery watermark (AckTracker), the commit time of each
// unconfirmed transaction (CommitTimes), the byte window (InflightWindow)
// and the events and bytes handed to the sink whose reports have not come
// back.
//
// Feeding it (the loop, relay/relay.h):
//   B                -> Begin(commit_time_us)
//   routed event     -> ticket = Track(); sink.Produce(); OnProduced()
//   C                -> Commit(end_lsn)
//   keepalive        -> Advance(wal_end)
//   delivery report  -> OnReport(), then Delivered(ticket) or Failed(ticket)
// and confirm confirmed().
//
// Invariant: confirmed() never passes an event whose delivery has not
// succeeded (AckTracker's). The commit times hold exactly the unconfirmed
// transactions with events: they are pruned here, whenever the watermark
// moves, and nowhere else.
//
// Backpressure: Backpressured() once the in-flight events or bytes reach
// their limits (the bytes' limit is the window) or the tracked events do
// (from the oldest unacknowledged one on), which bounds the memory the
// session holds (footprint()).
//
// Threading: one thread (the relay's loop); not thread-safe.
#ifndef OUTBOX_PIPELINE_IN_FLIGHT_H_
#define OUTBOX_PIPELINE_IN_FLIGHT_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/ack_tracker.h"
#include "core/commit_times.h"
#include "core/inflight_window.h"
#include "outbox/lsn.h"

namespace outbox {

// What a session's memory is proportional to (InFlight::footprint()).
// Reading pauses once tracked_events reaches the tracked-events limit,
// which bounds the other two: tracker_entries <= 2 * tracked_events + 2,
// and commit_time_index <= max(tracked_events, 1).
struct RelayFootprint {
  int64_t tracked_events = 0;    // AckTracker::span()
  size_t tracker_entries = 0;    // AckTracker::open_entries()
  size_t commit_time_index = 0;  // unconfirmed transactions with events
};

class InFlight {
 public:
  struct Limits {
    int64_t max_events = 10000;
    int64_t max_tracked_events = 100000;
    // The window's floor and cap, and the producer's linger.ms.
    int64_t min_bytes = 256 << 10;
    int64_t max_bytes = 4 << 20;
    int64_t batching_delay_us = 5000;
  };

  // `start`: the slot's confirmed position, where the watermark starts.
  InFlight(Lsn start, const Limits& limits);

  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

  // Transactions of the stream (AckTracker's errors: a malformed stream).
  absl::Status Begin(int64_t commit_time_us);
  absl::StatusOr<uint64_t> Track();
  absl::Status Commit(Lsn end_lsn);
  void Advance(Lsn wal_end);
  uint64_t next_ticket() const { return tracker_.next_ticket(); }

  // A record of `bytes` (key and value) was handed to the sink under
  // `ticket` at `now_us`.
  void OnProduced(uint64_t ticket, int64_t bytes, int64_t now_us);
  // Whether OnProduced() wants the time (the window samples one record at
  // a time), and whether `ticket`'s report does (OnReport()'s `now_us`).
  bool sampling() const { return window_.sampling(); }
  bool sampled(uint64_t ticket) const { return window_.sampled(ticket); }
  // The report of the record of `bytes` under `ticket` came back
  // (`delivered` or not; `now_us` matters only when sampled()); then
  // Delivered() or Failed() settles the ticket.
  void OnReport(uint64_t ticket, int64_t bytes, bool delivered, int64_t now_us);
  // An error: a report the tracker cannot place.
  absl::Status Delivered(uint64_t ticket);
  // The ticket's transaction is never confirmed (errors ignored: a ticket
  // already settled stays as it is).
  void Failed(uint64_t ticket);

  // Once per loop turn: the window follows the acknowledgements.
  void UpdateWindow(int64_t now_us) { window_.Update(now_us); }
  bool Backpressured() const;

  Lsn confirmed() const { return tracker_.confirmed(); }
  int64_t confirmed_commit_time_us() const {
    return tracker_.confirmed_commit_time_us();
  }
  // The commit time (Unix microseconds) of the oldest unconfirmed event's
  // transaction; 0 when nothing is in flight or it is unknown.
  int64_t OldestUnconfirmedCommitTimeUs() const;
  // The commit time of `ticket`'s transaction; -1 when unknown.
  int64_t CommitTimeOf(uint64_t ticket) const {
    return commit_times_.CommitTimeOf(ticket);
  }

  int64_t events() const { return events_; }
  int64_t bytes() const { return bytes_; }
  int64_t window_bytes() const { return window_.bytes(); }
  int64_t span() const { return tracker_.span(); }
  RelayFootprint footprint() const {
    return {tracker_.span(), tracker_.open_entries(), commit_times_.size()};
  }

 private:
  // The watermark may have moved: drop the transactions it passed.
  void Prune() { commit_times_.Prune(tracker_.confirmed()); }

  const Limits limits_;
  AckTracker tracker_;
  CommitTimes commit_times_;
  InflightWindow window_;
  // Handed to the sink, report not yet back.
  int64_t events_ = 0;
  int64_t bytes_ = 0;
  // The open transaction's commit time, and whether it has an event yet.
  int64_t txn_commit_time_us_ = 0;
  bool txn_has_events_ = false;
};

}  // namespace outbox

#endif  // OUTBOX_PIPELINE_IN_FLIGHT_H_
