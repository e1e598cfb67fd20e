// TransactionalCommitPolicy: exactly-once delivery (kafka.exactly_once).
//
// Events go into Kafka transactions, each holding whole PostgreSQL
// transactions plus, last, a Checkpoint record naming the end LSN of the
// newest PostgreSQL commit it covers. A position is confirmable only once
// the Kafka transaction covering it has committed, so after any crash the
// slot replays from at or before the last checkpoint, and the
// CheckpointFilter drops what that checkpoint says is published.
//
// Cadence: a Kafka transaction commits at the first PostgreSQL commit after
// it has been open max_ms or holds max_events events (or on a loop turn
// between PostgreSQL transactions once it is due). While the stream is
// behind PostgreSQL by backlog_ms or more (OnBacklog: a backlog, the events
// have waited that long already), max_ms gives way to backlog_ms and
// max_events grows by as much (backlog_ms / max_ms, at most half of
// split_events): fewer, larger transactions, so that each commit's flush
// and round trip, during which the loop reads nothing, is a small share of
// the drain; this adds at most what the events had waited already. A
// PostgreSQL transaction is split when the Kafka transaction already holds
// split_events events, or has been open split_ms (a PostgreSQL transaction
// that streams slowly, wide rows or Kafka backpressure, must not outlive
// the producer's transaction.timeout.ms: the broker would abort it, and
// every replay would time out the same way): the commit then records the
// split transaction's commit LSN and how many of its events are published
// (Checkpoint::partial_*).
//
// A record Kafka refuses for good (on_invalid: dead_letter) makes the Kafka
// transaction abortable, so it cannot be dead-lettered where it is:
// OnRefused() remembers the event's position in RefusedEvents and fails
// the session; the transaction is aborted and replayed from the last
// checkpoint, and Admit() then answers kDeadLetter for that event, so its
// dead letter commits in the replayed transaction with everything around
// it.
//
// Errors end the session, and nothing after the last committed checkpoint
// is confirmed: the next session's producer (init_transactions) aborts
// whatever this one left open. Fenced (FailedPrecondition from
// KafkaTransactions) becomes Unavailable naming the fence, so the
// supervisor goes back to waiting for the slot as a standby. Any error
// after the Kafka transaction had been open timeout_ms or longer says
// instead that the broker aborted it for its age (it bumps the producer
// epoch, which librdkafka 2.0 reports like a fencing; not another
// instance). An abortable error aborts first. Once failed, every call returns
// the same error.
//
// Threading: one thread (the relay's poll loop).
#ifndef OUTBOX_CORE_TRANSACTIONAL_COMMIT_POLICY_H_
#define OUTBOX_CORE_TRANSACTIONAL_COMMIT_POLICY_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "core/checkpoint.h"
#include "core/commit_policy.h"
#include "core/kafka_transactions.h"
#include "core/refused_events.h"
#include "outbox/clock.h"

namespace outbox {

struct TransactionOptions {
  std::string checkpoint_topic = "outbox.relay.checkpoints";
  int64_t max_ms = 100;
  int64_t max_events = 10000;
  // Behind by this long or more, commit after this long instead of max_ms,
  // and after max_events * backlog_ms / max_ms events (<= max_ms: never).
  int64_t backlog_ms = 1000;
  int64_t split_events = 1000000;
  // Split a PostgreSQL transaction once the Kafka transaction has been
  // open this long (and commit between them by then at the latest, even
  // with a larger max_ms); <= 0: never by time.
  int64_t split_ms = 20000;
  // The producer's transaction.timeout.ms (to classify an epoch error).
  int64_t timeout_ms = 60000;
  // Where the time of a failure is read (a commit may block for seconds
  // after the time its caller gave); null: the newest time a call gave.
  // Not owned; the callers' clock.
  const Clock* clock = nullptr;
};

class TransactionalCommitPolicy final : public CommitPolicy {
 public:
  // `kafka` is not owned and must outlive the policy. `last` is the
  // checkpoint read at start-up (its system identifier and slot name the
  // ones written; end_lsn kInvalidLsn when none was found). `refused` (not
  // owned; null: the policy keeps its own) outlives the session so that
  // the next one knows what Kafka refused in this one.
  TransactionalCommitPolicy(const TransactionOptions& options,
                            KafkaTransactions* kafka, const Checkpoint& last,
                            RefusedEvents* refused = nullptr);

  void OnBegin(Lsn commit_lsn) override;
  void OnBacklog(int64_t behind_us) override { behind_us_ = behind_us; }
  absl::StatusOr<Admission> Admit(uint64_t ticket, int64_t now_us) override;
  // Unavailable naming the refusal; from then on nothing commits and
  // Finish() aborts. May be called from inside CommitTransaction(), which
  // serves delivery reports.
  absl::Status OnRefused(uint64_t ticket, absl::string_view error) override;
  absl::Status OnCommit(Lsn end_lsn, int64_t now_us) override;
  absl::StatusOr<Lsn> Confirmable(Lsn delivered, int64_t now_us) override;
  // When the open Kafka transaction reaches max_ms.
  int64_t WakeAtUs() const override {
    return open_ ? opened_us_ + CommitAfterMs() * 1000 : -1;
  }
  absl::Status Finish(bool commit) override;

  // The newest committed checkpoint (for the next session).
  const Checkpoint& committed() const { return committed_; }
  int64_t dropped() const { return filter_.dropped(); }
  int64_t transactions_committed() const { return commits_; }

 private:
  bool Due(int64_t now_us) const;
  // How long a Kafka transaction stays open between PostgreSQL
  // transactions: max_ms (backlog_ms while behind), or split_ms if sooner.
  int64_t CommitAfterMs() const {
    const int64_t ms = Behind() ? options_.backlog_ms : options_.max_ms;
    return options_.split_ms > 0 ? std::min(ms, options_.split_ms) : ms;
  }
  // How many events a Kafka transaction takes before it commits.
  // Grown in a backlog, it stays at or below half of split_events (but not
  // below max_events): a Kafka transaction reaching split_events splits the
  // PostgreSQL transaction it is in, which only an oversized one should.
  int64_t CommitAfterEvents() const {
    if (!Behind()) return options_.max_events;
    const int64_t scale = options_.backlog_ms / options_.max_ms;  // >= 1
    const int64_t grown = options_.max_events > INT64_MAX / scale
                              ? INT64_MAX
                              : options_.max_events * scale;
    return std::max(options_.max_events,
                    std::min(grown, options_.split_events / 2));
  }
  // The stream is behind by backlog_ms or more, and backlog_ms is on.
  bool Behind() const {
    return options_.backlog_ms > options_.max_ms &&
           behind_us_ >= options_.backlog_ms * 1000;
  }
  // The open Kafka transaction must split the PostgreSQL transaction.
  bool SplitDue(int64_t now_us) const;
  // Produces the checkpoint (end_lsn = open_end_, or the last committed
  // one, plus the partial transaction if given) and commits.
  absl::Status Commit(Lsn partial_commit_lsn, int64_t partial_events);
  absl::Status Fail(const absl::Status& s);

  // The events of one PostgreSQL transaction in the open Kafka
  // transaction: tickets from first_ticket on are its events from its
  // first ordinal on (tickets of one transaction are consecutive). The
  // first ordinal is 0 unless resumed_ names the segment.
  struct Segment {
    Lsn commit_lsn;
    uint64_t first_ticket;
  };
  // The first ordinal of segment `index`.
  int64_t FirstOrdinal(size_t index) const;

  const TransactionOptions options_;
  KafkaTransactions* kafka_;
  RefusedEvents own_refused_;
  RefusedEvents* refused_;
  // Of the open Kafka transaction: up to one per PostgreSQL transaction
  // (100,000 in a backlog of one event each), so 16 bytes each, in a
  // deque, which grows without a vector's doubled copy and gives its
  // blocks back on clear().
  std::deque<Segment> segments_;
  // (segment index, first ordinal) of the segments that start past their
  // transaction's first event: one split before this Kafka transaction,
  // or replayed with its first events published; the first one if any.
  std::vector<std::pair<size_t, int64_t>> resumed_;
  CheckpointFilter filter_;
  Checkpoint committed_;
  absl::Status failed_;
  bool open_ = false;           // a Kafka transaction is open
  bool aborted_ = false;        // Finish() aborted one
  int64_t opened_us_ = 0;       // when it opened
  int64_t now_us_ = 0;          // the newest time a call was given
  int64_t txn_events_ = 0;      // events in it
  Lsn open_end_ = kInvalidLsn;  // newest PostgreSQL commit in it
  bool in_pg_ = false;          // between B and C
  Lsn pg_commit_lsn_ = kInvalidLsn;
  int64_t pg_events_ = 0;   // events of the open PostgreSQL transaction
  Lsn last_ = kInvalidLsn;  // newest Confirmable() answer
  int64_t commits_ = 0;
  int64_t behind_us_ = 0;  // the newest OnBacklog()
};

}  // namespace outbox

#endif  // OUTBOX_CORE_TRANSACTIONAL_COMMIT_POLICY_H_
