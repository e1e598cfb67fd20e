#include "core/ack_tracker.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace outbox {

AckTracker::AckTracker(Lsn confirmed)
    : confirmed_(confirmed), received_(confirmed), tail_(confirmed) {}

absl::Status AckTracker::Begin(int64_t commit_time_us) {
  if (open_) {
    return absl::FailedPreconditionError(
        "transaction begins while another is open (missing commit)");
  }
  Entry entry;
  entry.commit_time_us = commit_time_us;
  entries_.push_back(entry);
  open_ = true;
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> AckTracker::Track() {
  if (!open_) {
    return absl::FailedPreconditionError("record outside a transaction");
  }
  tickets_.push_back(front_entry_seq_ + entries_.size());  // back's seq + 1
  ++entries_.back().pending;
  ++pending_;
  return next_ticket_++;
}

absl::Status AckTracker::Commit(Lsn end_lsn) {
  if (!open_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "commit at ", FormatLsn(end_lsn), " without an open transaction"));
  }
  if (end_lsn == kInvalidLsn) {
    return absl::InvalidArgumentError("commit with an invalid end LSN");
  }
  open_ = false;
  received_ = std::max(received_, end_lsn);
  tail_ = std::max(tail_, end_lsn);
  Entry& entry = entries_.back();
  entry.lsn = end_lsn;
  entry.closed = true;
  if (entry.settled()) {
    // Its tickets are all reported, so no slot refers to it any more.
    int64_t commit_time_us = entry.commit_time_us;
    entries_.pop_back();
    PushSettled(end_lsn, commit_time_us);
  }
  ConfirmPrefix();
  return absl::OkStatus();
}

void AckTracker::Advance(Lsn lsn) {
  received_ = std::max(received_, lsn);
  if (open_ || lsn <= tail_) return;
  tail_ = lsn;
  PushSettled(lsn, 0);
  ConfirmPrefix();
}

absl::Status AckTracker::Delivered(uint64_t ticket) {
  return Report(ticket, true);
}

absl::Status AckTracker::Failed(uint64_t ticket) {
  return Report(ticket, false);
}

void AckTracker::Reset(Lsn confirmed) {
  entries_.clear();
  tickets_.clear();
  first_ticket_ = next_ticket_;
  open_ = false;
  frozen_ = false;
  pending_ = 0;
  confirmed_ = received_ = tail_ = confirmed;
}

absl::Status AckTracker::Report(uint64_t ticket, bool ok) {
  if (ticket == 0 || ticket >= next_ticket_) {
    return absl::InvalidArgumentError(
        absl::StrCat("delivery report for unknown ticket ", ticket));
  }
  uint64_t* slot =
      ticket < first_ticket_ ? nullptr : &tickets_[ticket - first_ticket_];
  if (slot == nullptr || *slot == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("delivery report for ticket ", ticket,
                     " that was already reported or predates the last reset"));
  }
  uint64_t index = *slot - 1 - front_entry_seq_;
  if (*slot - 1 < front_entry_seq_ || index >= entries_.size()) {
    return absl::InternalError(
        absl::StrCat("ticket ", ticket, " refers to a dropped entry"));
  }
  *slot = 0;
  while (!tickets_.empty() && tickets_.front() == 0) {
    tickets_.pop_front();
    ++first_ticket_;
  }
  Entry& entry = entries_[index];
  --entry.pending;
  --pending_;
  if (!ok) {
    entry.failed = true;
    frozen_ = true;
  }
  if (index == 0) ConfirmPrefix();
  return absl::OkStatus();
}

void AckTracker::PushSettled(Lsn lsn, int64_t commit_time_us) {
  if (!entries_.empty() && entries_.back().settled()) {
    // Becomes confirmable at the same moment a separate entry would.
    Entry& last = entries_.back();
    last.lsn = std::max(last.lsn, lsn);
    if (commit_time_us != 0) last.commit_time_us = commit_time_us;
    return;
  }
  Entry entry;
  entry.lsn = lsn;
  entry.commit_time_us = commit_time_us;
  entry.closed = true;
  entries_.push_back(entry);
}

void AckTracker::ConfirmPrefix() {
  while (!entries_.empty() && entries_.front().settled()) {
    const Entry& entry = entries_.front();
    confirmed_ = std::max(confirmed_, entry.lsn);
    if (entry.commit_time_us != 0) {
      confirmed_commit_time_us_ = entry.commit_time_us;
    }
    entries_.pop_front();
    ++front_entry_seq_;
  }
}

}  // namespace outbox
