#include "pipeline/in_flight.h"

namespace outbox {

InFlight::InFlight(Lsn start, const Limits& limits)
    : limits_(limits),
      tracker_(start),
      window_(limits.min_bytes, limits.max_bytes, limits.batching_delay_us) {}

absl::Status InFlight::Begin(int64_t commit_time_us) {
  txn_commit_time_us_ = commit_time_us;
  txn_has_events_ = false;
  return tracker_.Begin(commit_time_us);
}

absl::StatusOr<uint64_t> InFlight::Track() {
  absl::StatusOr<uint64_t> ticket = tracker_.Track();
  if (ticket.ok() && !txn_has_events_) {
    txn_has_events_ = true;
    commit_times_.OnFirstEvent(*ticket, txn_commit_time_us_);
  }
  return ticket;
}

absl::Status InFlight::Commit(Lsn end_lsn) {
  if (txn_has_events_) commit_times_.OnCommit(end_lsn);
  absl::Status s = tracker_.Commit(end_lsn);
  Prune();
  return s;
}

void InFlight::Advance(Lsn wal_end) {
  tracker_.Advance(wal_end);
  Prune();
}

void InFlight::OnProduced(uint64_t ticket, int64_t bytes, int64_t now_us) {
  ++events_;
  bytes_ += bytes;
  if (window_.sampling()) window_.OnProduced(ticket, now_us);
}

void InFlight::OnReport(uint64_t ticket, int64_t bytes, bool delivered,
                        int64_t now_us) {
  --events_;
  bytes_ -= bytes;
  window_.OnReport(ticket, delivered ? bytes : 0, now_us);
}

absl::Status InFlight::Delivered(uint64_t ticket) {
  absl::Status s = tracker_.Delivered(ticket);
  Prune();
  return s;
}

void InFlight::Failed(uint64_t ticket) {
  tracker_.Failed(ticket).IgnoreError();
}

bool InFlight::Backpressured() const {
  return events_ >= limits_.max_events || bytes_ >= window_.bytes() ||
         tracker_.span() >= limits_.max_tracked_events;
}

int64_t InFlight::OldestUnconfirmedCommitTimeUs() const {
  // The oldest unconfirmed transaction with events, not the newest
  // confirmed one: after a quiet hour that would read as an hour of lag
  // while the first new event is in flight.
  if (events_ <= 0) return 0;
  const int64_t since =
      commit_times_.OldestCommitTimeUs(tracker_.confirmed_commit_time_us());
  return since > 0 ? since : 0;
}

}  // namespace outbox
