#include "core/transactional_commit_policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace outbox {

TransactionalCommitPolicy::TransactionalCommitPolicy(
    const TransactionOptions& options, KafkaTransactions* kafka,
    const Checkpoint& last, RefusedEvents* refused)
    : options_(options),
      kafka_(kafka),
      refused_(refused != nullptr ? refused : &own_refused_),
      filter_(last),
      committed_(last) {}

void TransactionalCommitPolicy::OnBegin(Lsn commit_lsn) {
  filter_.Begin(commit_lsn);
  in_pg_ = true;
  pg_commit_lsn_ = commit_lsn;
  pg_events_ = 0;
}

bool TransactionalCommitPolicy::Due(int64_t now_us) const {
  return open_ && (txn_events_ >= CommitAfterEvents() ||
                   now_us - opened_us_ >= CommitAfterMs() * 1000);
}

bool TransactionalCommitPolicy::SplitDue(int64_t now_us) const {
  return open_ && (txn_events_ >= options_.split_events ||
                   (options_.split_ms > 0 &&
                    now_us - opened_us_ >= options_.split_ms * 1000));
}

absl::StatusOr<CommitPolicy::Admission> TransactionalCommitPolicy::Admit(
    uint64_t ticket, int64_t now_us) {
  if (!failed_.ok()) return failed_;
  now_us_ = std::max(now_us_, now_us);
  const int64_t ordinal = pg_events_++;
  if (filter_.Drop()) return Admission{Admission::kDrop, {}};
  if (SplitDue(now_us)) {
    // This PostgreSQL transaction outgrew the bound: commit what it has
    // published so far (every event before this one; none yet: only the
    // whole transactions before it).
    absl::Status s =
        ordinal > 0 ? Commit(pg_commit_lsn_, ordinal) : Commit(kInvalidLsn, 0);
    if (!s.ok()) return s;
  }
  if (!open_) {
    if (absl::Status s = kafka_->BeginTransaction(); !s.ok()) return Fail(s);
    open_ = true;
    opened_us_ = now_us;
    txn_events_ = 0;
  }
  ++txn_events_;
  if (segments_.empty() || segments_.back().commit_lsn != pg_commit_lsn_) {
    if (ordinal != 0) resumed_.emplace_back(segments_.size(), ordinal);
    segments_.push_back({pg_commit_lsn_, ticket});
  }
  Admission a;
  if (const std::string* refusal = refused_->Find(pg_commit_lsn_, ordinal)) {
    a.kind = Admission::kDeadLetter;
    a.refusal = *refusal;
  }
  return a;
}

int64_t TransactionalCommitPolicy::FirstOrdinal(size_t index) const {
  for (const auto& [i, ordinal] : resumed_) {
    if (i == index) return ordinal;
  }
  return 0;
}

absl::Status TransactionalCommitPolicy::OnRefused(uint64_t ticket,
                                                  absl::string_view error) {
  // The newest segment starting at or before the ticket holds it.
  auto it = std::upper_bound(
      segments_.begin(), segments_.end(), ticket,
      [](uint64_t t, const Segment& s) { return t < s.first_ticket; });
  if (!open_ || it == segments_.begin()) {
    if (failed_.ok()) {
      failed_ = absl::InternalError(absl::StrCat(
          "Kafka refused a record outside the open transaction (", error, ")"));
    }
    return failed_;
  }
  --it;
  const int64_t ordinal =
      FirstOrdinal(static_cast<size_t>(it - segments_.begin())) +
      static_cast<int64_t>(ticket - it->first_ticket);
  refused_->Add(it->commit_lsn, ordinal, error);
  // The transaction is abortable now: never commit it (Finish() aborts).
  if (failed_.ok()) {
    failed_ = absl::UnavailableError(absl::StrCat(
        "Kafka refused the record (", error,
        "); aborting the open Kafka transaction and replaying it from "
        "checkpoint ",
        FormatLsn(committed_.end_lsn),
        " with the event dead-lettered (PostgreSQL transaction committed at ",
        FormatLsn(it->commit_lsn), ", event ", ordinal + 1, ")"));
  }
  return failed_;
}

absl::Status TransactionalCommitPolicy::OnCommit(Lsn end_lsn, int64_t now_us) {
  if (!failed_.ok()) return failed_;
  now_us_ = std::max(now_us_, now_us);
  in_pg_ = false;
  if (!open_) return absl::OkStatus();  // nothing of it to publish
  open_end_ = end_lsn;
  if (Due(now_us)) return Commit(kInvalidLsn, 0);
  return absl::OkStatus();
}

absl::StatusOr<Lsn> TransactionalCommitPolicy::Confirmable(Lsn delivered,
                                                           int64_t now_us) {
  if (!failed_.ok()) return failed_;
  now_us_ = std::max(now_us_, now_us);
  if (!in_pg_ && Due(now_us)) {
    if (absl::Status s = Commit(kInvalidLsn, 0); !s.ok()) return s;
  } else if (in_pg_ && SplitDue(now_us)) {
    // A PostgreSQL transaction streaming slowly (no event for a while):
    // split it here, every event admitted so far published.
    absl::Status s = pg_events_ > 0 ? Commit(pg_commit_lsn_, pg_events_)
                                    : Commit(kInvalidLsn, 0);
    if (!s.ok()) return s;
  }
  // With no Kafka transaction open every admitted event is committed, so
  // the delivered prefix is durable; with one open, or after one was
  // aborted (delivered events were in it), only what the last committed
  // checkpoint covers.
  Lsn durable =
      open_ || aborted_ ? std::min(delivered, committed_.end_lsn) : delivered;
  last_ = std::max(last_, durable);
  return last_;
}

absl::Status TransactionalCommitPolicy::Finish(bool commit) {
  if (!open_) return failed_;
  if (commit && failed_.ok() && !in_pg_) return Commit(kInvalidLsn, 0);
  // A stop inside a PostgreSQL transaction, or an error (a refused record):
  // never commit part of it; the slot replays it.
  open_ = false;
  aborted_ = true;
  segments_.clear();
  resumed_.clear();
  absl::Status s = kafka_->AbortTransaction();
  if (!failed_.ok()) return failed_;  // the abort was best effort
  if (!s.ok()) return Fail(s);
  return absl::OkStatus();
}

absl::Status TransactionalCommitPolicy::Commit(Lsn partial_commit_lsn,
                                               int64_t partial_events) {
  if (!failed_.ok()) return failed_;
  Checkpoint c = committed_;
  if (open_end_ != kInvalidLsn) c.end_lsn = open_end_;
  c.partial_commit_lsn = partial_commit_lsn;
  c.partial_events = partial_events;
  absl::Status s = kafka_->ProduceInTransaction(options_.checkpoint_topic,
                                                c.Key(), c.Encode());
  if (s.ok()) s = kafka_->CommitTransaction();
  if (!s.ok()) return Fail(s);
  committed_ = c;
  refused_->Forget(c.end_lsn);
  open_ = false;
  segments_.clear();
  resumed_.clear();
  open_end_ = kInvalidLsn;
  txn_events_ = 0;
  ++commits_;
  return absl::OkStatus();
}

absl::Status TransactionalCommitPolicy::Fail(const absl::Status& s) {
  const bool was_open = open_;
  const TransactionErrorClass error_class = TransactionErrorClassOf(s);
  if (error_class == TransactionErrorClass::kAbortable) {
    // Abortable: abort so nothing of it is ever visible; the next session
    // replays from the last checkpoint.
    kafka_->AbortTransaction().IgnoreError();
  }
  open_ = false;
  segments_.clear();
  resumed_.clear();
  if (!failed_.ok()) return failed_;  // a refusal came first: say that
  const int64_t now_us =
      options_.clock != nullptr ? options_.clock->NowMicros() : now_us_;
  const int64_t open_ms = (now_us - opened_us_) / 1000;
  // Every class ends the session as Unavailable (the supervisor waits and
  // retries); the message says which it was.
  if (was_open && options_.timeout_ms > 0 && open_ms >= options_.timeout_ms) {
    failed_ = absl::UnavailableError(
        absl::StrCat("the Kafka transaction was open ", open_ms,
                     " ms, past transaction.timeout.ms (", options_.timeout_ms,
                     " ms): the broker aborted it; replaying from checkpoint ",
                     FormatLsn(committed_.end_lsn), " (", s.message(), ")"));
  } else if (error_class == TransactionErrorClass::kFenced) {
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
