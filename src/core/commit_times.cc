#include "core/commit_times.h"

#include <algorithm>

namespace outbox {

void CommitTimes::OnFirstEvent(uint64_t first_ticket, int64_t commit_time_us) {
  entries_.push_back({first_ticket, commit_time_us, kInvalidLsn});
}

void CommitTimes::OnCommit(Lsn end_lsn) {
  if (!entries_.empty() && entries_.back().end_lsn == kInvalidLsn) {
    entries_.back().end_lsn = end_lsn;
  }
}

void CommitTimes::Prune(Lsn confirmed) {
  // An open transaction (no end LSN yet) and all after it stay.
  while (!entries_.empty() && entries_.front().end_lsn != kInvalidLsn &&
         entries_.front().end_lsn <= confirmed) {
    entries_.pop_front();
  }
}

int64_t CommitTimes::OldestCommitTimeUs(int64_t otherwise) const {
  return entries_.empty() ? otherwise : entries_.front().commit_time_us;
}

int64_t CommitTimes::CommitTimeOf(uint64_t ticket) const {
  auto it = std::upper_bound(
      entries_.begin(), entries_.end(), ticket,
      [](uint64_t t, const Entry& e) { return t < e.first_ticket; });
  if (it == entries_.begin()) return -1;
  --it;
  return it->commit_time_us > 0 ? it->commit_time_us : -1;
}

}  // namespace outbox
