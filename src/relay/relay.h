// Relay: the CDC pipeline loop for one replication session.
//
//   stream --Read--> Decoder --Change--> Router --Record--> EventSink
//      ^                                                       |
//      +---- SendStatus(flush = AckTracker::confirmed()) <-----+ reports
//
// One thread runs everything: Run() polls the stream socket and the sink's
// wake fd together, so no state is shared and nothing is locked.
//
// Invariant: the flush LSN sent to PostgreSQL never reaches past an event
// whose Kafka delivery report has not come back successful (AckTracker).
// Backpressure: when in-flight events or bytes reach their limits, or the
// tracked events do (from the oldest unacknowledged one on: a report that
// never comes, say from a partition without a leader, while later events
// are acknowledged), the loop stops reading the stream but keeps serving
// the sink and sending status updates, so memory stays bounded whatever the
// backlog, outage or stuck event. The session's memory is proportional to
// the tracked events (footprint()).
//
// Metrics: with a RelayMetrics (optional; nullptr in most unit tests) the
// loop also updates the Prometheus metrics and the health heartbeat on its
// own thread: per delivery a hash lookup, a binary search over the
// unconfirmed transactions and a few plain adds; per loop turn a clock read,
// a few gauge stores and the flush of the buffered counters.
//
// Implemented in relay.cc (the loop, deliveries, dead letters, status
// updates, shutdown) and relay_changes.cc (each decoded change).
//
// Run() returns:
//   OK                  stop was requested (also while the producer's queue
//                       was full); everything deliverable was flushed and
//                       the final position sent
// After a failed delivery report the producer is purged, not flushed, so
// nothing queued behind the failed record is delivered ahead of it.
//   Unavailable         the connection dropped or a delivery failed for a
//                       transient reason, or (exactly once) Kafka refused
//                       a record inside a transaction, or the policy was
//                       fenced: reconnect from the slot
//   PermissionDenied    Kafka refused a record for a missing ACL, or
//   NotFound            for a topic that does not exist: not poison, the
//                       session ends like Unavailable (nothing past it is
//                       confirmed) and the supervisor waits for the ACL or
//                       topic (stats().blocked_topic names it)
//   Internal            the producer hit a fatal error: rebuild it
//   DataLoss            a record the decoder cannot read (LSN in message)
//   InvalidArgument     a poison row under on_invalid=halt (event id, LSN),
//                       Kafka's refusal of a record included
#ifndef OUTBOX_RELAY_RELAY_H_
#define OUTBOX_RELAY_RELAY_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "core/ack_tracker.h"
#include "core/commit_policy.h"
#include "core/commit_times.h"
#include "core/inflight_window.h"
#include "outbox/change.h"
#include "outbox/clock.h"
#include "outbox/decoder.h"
#include "outbox/event_sink.h"
#include "outbox/record.h"
#include "outbox/replication_stream.h"
#include "route/dead_letter.h"
#include "route/router.h"

namespace outbox {

class MessageRouter;

struct RelayOptions {
  int status_interval_ms = 1000;
  // When a pass over the stream read many messages (the relay keeps up with
  // a busy walsender, which sends one message at a time), wait this long
  // before reading again so one wake-up serves a batch instead of a handful:
  // fewer system calls and context switches per event, for at most this
  // much added latency under load. 0 reads as soon as anything arrives.
  int read_coalesce_us = 1000;
  int64_t max_inflight_events = 10000;
  // The cap of the in-flight byte window; the window itself follows what
  // Kafka's acknowledgements need (InflightWindow), from
  // min_inflight_bytes up.
  int64_t max_inflight_bytes = 4 << 20;
  int64_t min_inflight_bytes = 256 << 10;
  // The producer's linger.ms, in microseconds: part of how long a record
  // stays in flight.
  int64_t batching_delay_us = 5000;
  // Events from the oldest unacknowledged one to the newest read
  // (AckTracker::span()). Reaching it pauses reading like the in-flight
  // limits; it bounds the tracker and the commit-time index when one event
  // is stuck while later ones are delivered (the in-flight window alone
  // counts only the unacknowledged ones).
  int64_t max_tracked_events = 100000;
  bool dead_letter = false;  // on_invalid: false = halt
  // An UPDATE of an outbox row (decoded only when this is not kIgnore):
  // logged as a warning or an error, or the session halts
  // (InvalidArgument) without confirming it.
  OnUpdate on_update = OnUpdate::kIgnore;
  std::string dead_letter_topic = "outbox.dead_letter";
  int flush_timeout_ms = 30000;
  // When a pass over the stream found it quiet (fewer messages than make
  // the relay coalesce), records were produced since, and every record
  // produced before them is acknowledged, ask the producer to send them now
  // (a Flush with a 1 ms timeout; best effort, see Relay::Run) instead of
  // waiting out linger.ms. At most one such send is in flight; under load
  // passes stay busy and linger.ms batches.
  bool send_when_idle = true;
  int progress_interval_s = 10;
  // The tableless outbox (not owned; must outlive Run()): transactional
  // logical messages under its prefix are events, routed by it, tracked,
  // poisoned and dead-lettered like rows; non-transactional ones are
  // ignored and counted. nullptr: logical messages are never events.
  MessageRouter* message_router = nullptr;
  // The relay's own heartbeat messages (relay/heartbeat.h) carrying this
  // nonce are timed on their way back; 0: none expected. Heartbeats are
  // never events, whatever their content.
  uint64_t heartbeat_nonce = 0;
  // Called once when the session starts ending (stop, or an error), before
  // the final flush and status update: the supervisor's draining state.
  std::function<void()> on_draining;
};

// Counters a session accumulates; read after Run() or from the same thread.
struct RelayStats {
  int64_t events_produced = 0;
  int64_t events_delivered = 0;
  int64_t bytes_delivered = 0;
  int64_t dead_lettered = 0;
  int64_t messages_ignored = 0;  // non-transactional outbox messages
  int64_t heartbeats_seen = 0;   // this relay's, back through the slot
  int64_t updates_ignored = 0;   // UPDATEs of outbox rows (outbox.on_update)
  int64_t delivery_errors = 0;
  int64_t transactions = 0;
  int64_t status_updates = 0;
  Lsn received = kInvalidLsn;
  Lsn confirmed = kInvalidLsn;
  int64_t inflight_events = 0;
  int64_t inflight_bytes = 0;
  int64_t confirmed_commit_time_us = 0;
  bool backpressured = false;
  // The topic whose missing ACL or absence ended the session
  // (PermissionDenied / NotFound); empty otherwise.
  std::string blocked_topic;
};

// What a session's memory is proportional to (Relay::footprint()). Reading
// pauses once tracked_events reaches RelayOptions::max_tracked_events, which
// bounds the other two: tracker_entries <= 2 * tracked_events + 2, and
// commit_time_index <= max(tracked_events, 1) when the loop reads.
struct RelayFootprint {
  int64_t tracked_events = 0;    // AckTracker::span()
  size_t tracker_entries = 0;    // AckTracker::open_entries()
  size_t commit_time_index = 0;  // unconfirmed transactions with events
};

class RelayMetrics;

class Relay {
 public:
  // None of the pointers is owned; all must outlive Run(). `start` is the
  // slot's confirmed position (the watermark starts there). `metrics` may be
  // null. `policy` decides what may be confirmed and which replayed events
  // are dropped (core/commit_policy.h); null is at-least-once
  // (AckCommitPolicy).
  Relay(const RelayOptions& options, ReplicationStream* stream,
        Decoder* decoder, Router* router, EventSink* sink, Clock* clock,
        Lsn start, RelayMetrics* metrics = nullptr,
        CommitPolicy* policy = nullptr);

  // Streams until `stop` becomes true or an error; see the header comment.
  absl::Status Run(const std::atomic<bool>& stop);

  const RelayStats& stats() const { return stats_; }
  // Same thread as Run() (or after it): the session's bookkeeping now.
  RelayFootprint footprint() const {
    return {tracker_.span(), tracker_.open_entries(), commit_times_.size()};
  }

 private:
  // A record Kafka refused for good, to be dead-lettered under its ticket
  // (copied out of the report: its views die with the handler).
  struct FailedRecord {
    uint64_t ticket;
    std::string event_id, topic, key, value, error;
  };

  absl::Status HandleMessage(const StreamMessage& msg);
  // An outbox event: a row insert, or (from_message) a logical message
  // under the outbox prefix.
  absl::Status HandleEvent(const StreamMessage& msg, bool from_message);
  absl::Status HandleLogicalMessage(const StreamMessage& msg);
  absl::Status HandleUpdate(const StreamMessage& msg);
  absl::Status ProduceTracked(const Record& record, uint64_t ticket);
  absl::Status DeadLetterFailedDeliveries();
  // Produces f's dead letter under f.ticket; an error ends the session.
  absl::Status DeadLetterUndeliverable(const FailedRecord& f);
  // `what` names the kind of event: "outbox row" or "outbox message".
  absl::Status Poison(const absl::Status& why, uint64_t ticket,
                      absl::string_view event_id, Lsn lsn,
                      absl::string_view raw,
                      absl::string_view what = "outbox row");
  void OnDelivery(const DeliveryReport& report);
  absl::Status MaybeSendStatus(bool force);
  void MaybeLogProgress();
  absl::Status Shutdown(absl::Status result);
  bool ReportFailed() const;  // a delivery report came back failed
  bool Backpressured() const;
  void WaitForWork(int64_t timeout_us, bool want_stream);
  double LagSeconds();  // age of the oldest unconfirmed event; prunes
  // Metrics only: per-turn gauges and heartbeat; commit time -> latency.
  void UpdateMetrics();
  double LatencySeconds(uint64_t ticket) const;

  RelayOptions options_;
  ReplicationStream* stream_;
  Decoder* decoder_;
  Router* router_;
  EventSink* sink_;
  Clock* clock_;
  AckTracker tracker_;
  AckCommitPolicy ack_policy_;
  CommitPolicy* policy_;     // &ack_policy_ unless given
  int64_t turn_now_us_ = 0;  // NowMicros() at the top of the loop turn
  Change change_;
  Record record_;
  DeadLetter dead_letter_;
  RelayStats stats_;
  absl::Status delivery_error_;  // first fatal error seen in a report
  // Permanently failed deliveries waiting to be dead-lettered.
  std::deque<FailedRecord> failed_;
  bool in_transaction_ = false;
  Lsn last_sent_flush_ = kInvalidLsn;
  // The session's start position (the slot's confirmed_flush_lsn): no
  // flush sent is ever below it, whatever the policy answers (an
  // exactly-once checkpoint may lie behind the slot).
  Lsn start_ = kInvalidLsn;
  int64_t last_status_us_ = 0;
  bool reply_requested_ = false;
  int64_t last_progress_us_ = 0;
  int64_t last_progress_events_ = 0;
  std::atomic<bool> stopping_{false};
  const std::atomic<bool>* stop_ = nullptr;  // Run()'s, for nested waits

  RelayMetrics* metrics_;
  // Metrics and progress only: the commit time of each unconfirmed
  // transaction with events. Pruned before every read and at every status
  // update.
  CommitTimes commit_times_;
  InflightWindow window_;
  int64_t txn_commit_time_us_ = 0;  // of the open transaction
  // Wall clock read before serving reports: their delivery time.
  int64_t report_unix_us_ = 0;
  bool txn_has_events_ = false;
  int64_t unsent_ = 0;  // records produced since the last idle flush
  bool nontransactional_logged_ = false;  // said once per session
  // XLogData messages read, and the count the metrics last saw, so the
  // metrics learn once per loop turn that the stream delivered.
  int64_t xlog_messages_ = 0;
  int64_t xlog_messages_seen_ = 0;
};

}  // namespace outbox

#endif  // OUTBOX_RELAY_RELAY_H_
