// Poller: outbox-poller's loop. Claims outbox rows in batches, routes each
// through the same Router and EventSink as outbox-relay, waits for every
// delivery report, then records the outcome and commits:
//
//   Claim   BEGIN; SELECT ... WHERE unsent AND due ORDER BY seq LIMIT
//           batch_size FOR UPDATE SKIP LOCKED          (OutboxStore::Claim)
//   Produce one Record per row, in seq order (Router::Route, Sink::Produce)
//   Await   every report of the batch (Sink::Poll)
//   Settle  delivered rows: sent_at = now() (mark) or DELETE (delete);
//           failed rows: attempts + 1, last_error, next_attempt_at = now() +
//           RetryPolicy delay; after max_attempts: dead_lettered_at (and,
//           with outbox.on_invalid = dead_letter, the row is also produced
//           to outbox.dead_letter_topic); COMMIT        (OutboxStore::Settle)
//
// A failure is any of: the Router cannot map the row, the sink refuses it
// (e.g. larger than message.max.bytes) or its delivery report is an error.
// No row is ever dropped: it is sent, waiting for a retry, or dead-lettered
// in the table. outbox.on_invalid = halt does not stop the poller (the
// dead-letter state is its poison policy); dead_letter adds the Kafka copy.
//
// Delivery: at least once. A row is marked only after Kafka acknowledged it;
// if the process dies or the connection drops before COMMIT, the server
// rolls back, the locks go, and the rows are claimed again (duplicates, never
// losses). Consumers de-duplicate on the id header, as with outbox-relay.
//
// Kafka outages. The claim transaction holds the batch's row locks and the
// database's xmin horizon (VACUUM cannot remove dead rows younger than it),
// so it must not last as long as an outage. A batch gets batch_timeout_ms
// from its claim to have every report back (produce, await and the
// dead-letter round included); past that it is abandoned: rolled back, so
// its rows stay unsent and are claimed again later (records Kafka already
// has will repeat, which at least once permits). Its generation is retired
// at once, so reports that still come for it mark nothing. Before the next
// claim the poller backs off with no transaction open: RetryPolicy::CapMs(n)
// for the n-th batch abandoned in a row, and until the producer has handed
// back every record it holds (the abandoned batch is delivered once Kafka
// returns, or fails after message.timeout.ms). A long outage thus leaves one
// batch queued in the producer, not one per attempt, and no open
// transaction.
//
// What is published: the row as it is when claimed, not as it was inserted
// (outbox-relay publishes each INSERT as the WAL recorded it):
//   * an UPDATE of an unsent row before the claim changes what is published
//     (payload, key, topic, headers); an UPDATE of a claimed row waits for
//     the batch to settle, and an UPDATE of a sent row publishes nothing;
//   * a row deleted before the claim is never published, so the
//     insert-then-delete pattern (insert the event and delete it in the same
//     transaction, which outbox-relay supports) publishes nothing here:
//     leave the rows to the poller (mode delete removes them once sent).
//
// Per-key order. seq comes from an identity at INSERT time, not at commit.
// What holds:
//   * One instance, no failed deliveries: rows are published in seq order
//     (batches one after another, each produced in seq order through the
//     idempotent producer, which keeps a partition's order through retries),
//     so one key's events reach its partition in seq order; after a crash
//     the re-sent batch repeats events but no first occurrence comes out of
//     order. seq order is commit order for one key when the application
//     serializes an aggregate's writes (e.g. it locks or updates the
//     aggregate row before inserting the event), the usual outbox pattern.
// What does not hold:
//   * Without that serialization, two open transactions can take seq n and
//     n+1 for the same key and commit in the other order; if the poller
//     claims between the commits, n+1 is published before n.
//   * A failed row waits for its retry while later rows of the same key go
//     on: retries reorder a key.
//   * Several instances: SKIP LOCKED hands neighbouring batches to different
//     instances that produce concurrently, so one key's events can be
//     published out of seq order. Run one instance (plus standbys) when
//     per-key order matters; several for throughput.
//
// Threading: one thread calls everything; `stop` may be set from a signal
// handler. Run() finishes the batch in hand (waiting up to flush_timeout_ms
// for its reports, or to its batch_timeout_ms deadline if sooner, else
// rolling it back) and returns OK.
#ifndef OUTBOX_POLLER_POLLER_H_
#define OUTBOX_POLLER_POLLER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/config.h"
#include "outbox/change.h"
#include "outbox/clock.h"
#include "outbox/event_sink.h"
#include "outbox/record.h"
#include "poller/outbox_store.h"
#include "poller/poller_metrics.h"
#include "poller/retry_policy.h"
#include "route/dead_letter.h"
#include "route/router.h"

namespace outbox {

struct PollerOptions {
  int batch_size = 500;
  PollerMode mode = PollerMode::kMark;
  int32_t max_attempts = 10;
  int64_t backoff_initial_ms = 1000;
  int64_t backoff_max_ms = 300000;
  int64_t batch_timeout_ms = 30000;  // claim to settle, else rolled back
  uint64_t seed = 1;                 // jitter generator
  int64_t interval_ms = 500;         // idle wait (a NOTIFY ends it early)
  int64_t retention_s = 86400;       // janitor, mode mark; 0 keeps rows
  int janitor_batch = 1000;          // rows per janitor DELETE
  bool dead_letter = false;          // outbox.on_invalid == dead_letter
  std::string dead_letter_topic = "outbox.dead_letter";
  std::vector<std::string> payload_columns;  // per table, for dead letters
  int flush_timeout_ms = 30000;              // report wait once stopping
  int progress_interval_s = 10;              // 0: no progress lines
  // Asked before each round of batches: true ends Run() as a stop does,
  // between batches (each batch is settled: delivered and marked, or rolled
  // back). The supervisor's "end this session cleanly" (SIGHUP;
  // daemon/session_restart.h).
  std::function<bool()> end_session;
  int report_interval_ms = 5000;  // backlog gauges refresh
};

struct PollerStats {
  int64_t batches = 0;
  int64_t claimed = 0;
  int64_t delivered = 0;
  int64_t failures = 0;
  int64_t dead_lettered = 0;
  int64_t abandoned = 0;  // batches rolled back at their deadline
  int64_t janitor_deleted = 0;
  int64_t notifications = 0;
};

class Poller {
 public:
  // All pointers must outlive the Poller; metrics may be null.
  Poller(const PollerOptions& options, OutboxStore* store, const Router* router,
         EventSink* sink, Clock* clock, PollerMetrics* metrics);

  // Polls until `stop` or an error: Unavailable/Internal (the supervisor
  // reconnects), FailedPrecondition (the operator must act).
  absl::Status Run(const std::atomic<bool>& stop);

  // One claim-produce-settle cycle on table `table`. Returns the rows
  // claimed (batch_size means more may be waiting). Cancelled when `stop`
  // was set and the reports did not all come within flush_timeout_ms;
  // DeadlineExceeded when they did not all come within batch_timeout_ms of
  // the claim (either way the batch is rolled back; after DeadlineExceeded
  // call BackOff() before the next claim).
  absl::StatusOr<int> PollTable(size_t table, const std::atomic<bool>& stop);

  // After an abandoned batch: serves the producer, with no transaction
  // open, until the back-off has passed and the producer holds no record,
  // or `stop`. Not OK if the producer broke or the backlog query failed.
  absl::Status BackOff(const std::atomic<bool>& stop);

  // Janitor pass when due (mode mark, retention_s > 0).
  absl::Status MaybeRunJanitor(const std::atomic<bool>& stop, bool force);

  // Waits up to interval_ms, or less when a NOTIFY arrives or stop is set.
  absl::Status Idle(const std::atomic<bool>& stop);

  const PollerStats& stats() const { return stats_; }

 private:
  enum class State : uint8_t { kPending, kDelivered, kFailed };
  struct Outcome {
    State state = State::kPending;
    std::string error;
  };

  uint64_t Ticket(size_t index, bool dead_letter) const;
  void OnDelivery(const DeliveryReport& report);
  absl::Status ProduceWithBackpressure(const Record& record, uint64_t ticket);
  absl::Status AwaitReports(const std::atomic<bool>& stop);
  // Rolls the batch in hand back and retires its generation; a deadline
  // (DeadlineExceeded) is counted, logged and schedules the back-off.
  // Returns `why`.
  absl::Status AbandonBatch(size_t table, absl::Status why);
  void ProduceDeadLetter(size_t table, size_t index, const std::string& error);
  absl::Status MaybeReport(bool force);

  PollerOptions options_;
  OutboxStore* store_;
  const Router* router_;
  EventSink* sink_;
  Clock* clock_;
  PollerMetrics* metrics_;
  RetryPolicy retry_;

  // The batch in hand. Records point into change_, which points into rows_.
  std::vector<OutboxRow> rows_;
  std::vector<Outcome> outcomes_;
  std::vector<Outcome> dead_letter_outcomes_;
  Change change_;
  Record record_;
  uint32_t generation_ = 0;  // tells late reports of an old batch apart
  int64_t pending_ = 0;
  int64_t deadline_us_ = 0;  // the batch in hand's batch_timeout_ms
  int32_t abandoned_in_a_row_ = 0;
  int64_t resume_at_us_ = 0;  // no claim before (after an abandoned batch)
  std::vector<int64_t> delivered_seqs_;
  std::vector<RowFailure> failures_;
  DeadLetter dead_letter_;

  PollerStats stats_;
  int64_t last_janitor_us_ = 0;
  int64_t last_report_us_ = 0;
  int64_t last_report_delivered_ = 0;
  int64_t last_progress_us_ = 0;
  int64_t last_progress_delivered_ = 0;
  std::vector<Backlog> backlog_;
};

}  // namespace outbox

#endif  // OUTBOX_POLLER_POLLER_H_
