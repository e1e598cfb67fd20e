#include "core/transactional_commit_policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace outbox {

TransactionalCommitPolicy::TransactionalCommitPolicy(
    const TransactionOptions& options, KafkaTransactions* kafka,
    const Checkpoint& last)
    : options_(options), kafka_(kafka), filter_(last), committed_(last) {}

void TransactionalCommitPolicy::OnBegin(Lsn commit_lsn) {
  filter_.Begin(commit_lsn);
  in_pg_ = true;
  pg_commit_lsn_ = commit_lsn;
  pg_events_ = 0;
}

bool TransactionalCommitPolicy::Due(int64_t now_us) const {
  return open_ && (txn_events_ >= options_.max_events ||
                   now_us - opened_us_ >= options_.max_ms * 1000);
}

absl::StatusOr<bool> TransactionalCommitPolicy::Admit(int64_t now_us) {
  if (!failed_.ok()) return failed_;
  ++pg_events_;
  if (filter_.Drop()) return false;
  if (open_ && txn_events_ >= options_.split_events) {
    // This PostgreSQL transaction outgrew the bound: commit what it has
    // published so far (every event before this one).
    if (absl::Status s = Commit(pg_commit_lsn_, pg_events_ - 1); !s.ok()) {
      return s;
    }
  }
  if (!open_) {
    if (absl::Status s = kafka_->BeginTransaction(); !s.ok()) return Fail(s);
    open_ = true;
    opened_us_ = now_us;
    txn_events_ = 0;
  }
  ++txn_events_;
  return true;
}

absl::Status TransactionalCommitPolicy::OnCommit(Lsn end_lsn, int64_t now_us) {
  if (!failed_.ok()) return failed_;
  in_pg_ = false;
  if (!open_) return absl::OkStatus();  // nothing of it to publish
  open_end_ = end_lsn;
  if (Due(now_us)) return Commit(kInvalidLsn, 0);
  return absl::OkStatus();
}

absl::StatusOr<Lsn> TransactionalCommitPolicy::Confirmable(Lsn delivered,
                                                           int64_t now_us) {
  if (!failed_.ok()) return failed_;
  if (!in_pg_ && Due(now_us)) {
    if (absl::Status s = Commit(kInvalidLsn, 0); !s.ok()) return s;
  }
  // With no Kafka transaction open every admitted event is committed, so
  // the delivered prefix is durable; with one open, only what the last
  // committed checkpoint covers.
  Lsn durable = open_ ? std::min(delivered, committed_.end_lsn) : delivered;
  last_ = std::max(last_, durable);
  return last_;
}

absl::Status TransactionalCommitPolicy::Finish(bool commit) {
  if (!failed_.ok() || !open_) return failed_;
  if (commit && !in_pg_) return Commit(kInvalidLsn, 0);
  // A stop inside a PostgreSQL transaction, or an error: never commit part
  // of it; the slot replays it.
  open_ = false;
  absl::Status s = kafka_->AbortTransaction();
  if (!s.ok()) return Fail(s);
  return absl::OkStatus();
}

absl::Status TransactionalCommitPolicy::Commit(Lsn partial_commit_lsn,
                                               int64_t partial_events) {
  Checkpoint c = committed_;
  if (open_end_ != kInvalidLsn) c.end_lsn = open_end_;
  c.partial_commit_lsn = partial_commit_lsn;
  c.partial_events = partial_events;
  absl::Status s = kafka_->ProduceInTransaction(options_.checkpoint_topic,
                                                c.Key(), c.Encode());
  if (s.ok()) s = kafka_->CommitTransaction();
  if (!s.ok()) return Fail(s);
  committed_ = c;
  open_ = false;
  open_end_ = kInvalidLsn;
  txn_events_ = 0;
  ++commits_;
  return absl::OkStatus();
}

absl::Status TransactionalCommitPolicy::Fail(const absl::Status& s) {
  if (absl::IsAborted(s)) {
    // Abortable: abort so nothing of it is ever visible; the next session
    // replays from the last checkpoint.
    kafka_->AbortTransaction().IgnoreError();
  }
  open_ = false;
  if (absl::IsFailedPrecondition(s)) {
    failed_ = absl::UnavailableError(absl::StrCat(
        "fenced by another instance with the same transactional.id; back to "
        "standby, nothing committed past ",
        FormatLsn(committed_.end_lsn), " (", s.message(), ")"));
  } else {
    failed_ = absl::UnavailableError(
        absl::StrCat("Kafka transaction failed, replaying from checkpoint ",
                     FormatLsn(committed_.end_lsn), ": ", s.message()));
  }
  return failed_;
}

}  // namespace outbox
