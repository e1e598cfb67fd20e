// Relay: the CDC pipeline loop for one replication session.
//
//   stream --Read--> Decoder --Change--> Router --Record--> EventSink
//      ^                                                       |
//      |                                         DeliveryQueue | reports
//      +-- SendStatus(flush = InFlight::confirmed()) <- apply -+
//
// The loop (Run(), relay.cc) reads like pg_recvlogical's StreamLog: each
// turn serves the delivery reports, reads a batch of the stream, sends a
// status update when one is due, and waits for the stream or the sink.
// The parts it owns (src/pipeline/): InFlight (the watermark, the commit
// times, the byte window, the in-flight counters), DeliveryQueue (the
// sink's reports, applied at one point of the turn), PoisonHandler
// (on_invalid: halt or dead letters), EndingError() (which error ends the
// session) and a PipelineObserver (metrics; a no-op one by default).
//
// Threading: one thread runs everything: Run() polls the stream socket and
// the sink's wake fd together, so no state is shared and nothing is
// locked. The sink's delivery handler only queues (DeliveryQueue): nothing
// re-enters the Relay from inside the sink (Poll during a produce, a Kafka
// commit the policy makes); the reports are applied after each Poll,
// Flush and Purge the loop makes, and at the top of each turn.
//
// Invariant: the flush LSN sent to PostgreSQL never reaches past an event
// whose Kafka delivery report has not come back successful (InFlight's
// AckTracker). Applying a report later only confirms later.
// Backpressure: when in-flight events or bytes reach their limits, or the
// tracked events do (from the oldest unacknowledged one on: a report that
// never comes, say from a partition without a leader, while later events
// are acknowledged), the loop stops reading the stream but keeps serving
// the sink and sending status updates, so memory stays bounded whatever the
// backlog, outage or stuck event. The session's memory is proportional to
// the tracked events (footprint()).
//
// Implemented in relay.cc (the loop and status updates), relay_changes.cc
// (each decoded change), relay_delivery.cc (producing, applying reports)
// and relay_shutdown.cc (the session's end).
//
// Run() returns:
//   OK                  stop was requested (also while the producer's queue
//                       was full), or options.end_session ended the session
//                       at a transaction boundary; everything deliverable
//                       was flushed and the final position sent
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
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "core/commit_policy.h"
#include "core/operator_actions.h"
#include "outbox/change.h"
#include "outbox/clock.h"
#include "outbox/decoder.h"
#include "outbox/event_sink.h"
#include "outbox/record.h"
#include "outbox/replication_stream.h"
#include "pipeline/delivery_queue.h"
#include "pipeline/in_flight.h"
#include "pipeline/observer.h"
#include "pipeline/poison.h"
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
  int64_t max_inflight_bytes = 2 << 20;
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
  // Ask the producer to send what it holds now (a Flush with a 1 ms
  // timeout; best effort, see Relay::WaitAfter) instead of waiting out
  // linger.ms, when nothing more would join it: a pass over the stream
  // found it quiet (fewer messages than make the relay coalesce), records
  // were produced since, and every record produced before them is
  // acknowledged (at most one such send in flight); or a pass stopped at
  // the in-flight window (once per hold). Busy passes the window does not
  // stop leave batching to linger.ms.
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
  // Asked once per turn, on Run()'s thread, until it answers true: then the
  // session ends as a stop ends it (every produced event flushed, the final
  // status update confirming what was delivered), at the next transaction
  // boundary: the transaction being read is read to its commit first, so
  // the next session, started from the confirmed position, repeats no event
  // of this one. The supervisor's "end this session cleanly" (SIGHUP).
  std::function<bool()> end_session;
  // While set (relay/pause_control.h: POST /pause), the loop reads nothing
  // further from the stream: what was read is still delivered and
  // confirmed, and status updates go on at status_interval_ms (the slot
  // stays held, wal_sender_timeout never ends the connection). nullptr:
  // never paused. Not owned; must outlive Run().
  const std::atomic<bool>* paused = nullptr;
  // The operator's pending skips and advances (core/operator_actions.h; not
  // owned, may be null): the events they name are dropped, never produced
  // or tracked, and confirmed past like a transaction without outbox rows.
  OperatorActions* operator_actions = nullptr;
  // Called on Run()'s thread with each of those actions once it is applied
  // (the flush LSN sent covers what it dropped): writes its record.
  std::function<void(const OperatorAction&)> on_operator_applied;
  // Called on Run()'s thread with each full page of the ids an action
  // dropped, as it fills (before the action is applied): writes it.
  std::function<void(const OperatorIdPage&)> on_operator_ids;
  // Called on Run()'s thread when a pause ends, before anything further is
  // read: the supervisor re-reads the operator's records there, so a skip
  // or advance recorded while paused applies from the resume on.
  std::function<void()> on_resume;
};

// What a session did: counters the loop adds to (Relay's own).
struct RelayCounters {
  int64_t events_produced = 0;
  int64_t events_delivered = 0;
  int64_t bytes_delivered = 0;
  int64_t dead_lettered = 0;
  int64_t skipped_by_operator = 0;  // dropped on an operator's action
  int64_t messages_ignored = 0;     // non-transactional outbox messages
  int64_t heartbeats_seen = 0;      // this relay's, back through the slot
  int64_t updates_ignored = 0;      // UPDATEs of outbox rows (outbox.on_update)
  int64_t delivery_errors = 0;
  int64_t transactions = 0;
  int64_t status_updates = 0;
};

// What a session did and where it stands: a snapshot Relay::stats()
// builds (the counters, positions, in-flight figures); read after Run() or
// from the same thread.
struct RelayStats : RelayCounters {
  Lsn received = kInvalidLsn;
  // The flush position last sent; once Run() returned, what the policy
  // holds durable (never below the start).
  Lsn confirmed = kInvalidLsn;
  int64_t inflight_events = 0;
  int64_t inflight_bytes = 0;
  int64_t confirmed_commit_time_us = 0;
  bool backpressured = false;
  // The topic whose missing ACL or absence ended the session
  // (PermissionDenied / NotFound); empty otherwise.
  std::string blocked_topic;
};

class Relay {
 public:
  // What a record in flight holds beside its key and value, counted in the
  // in-flight window (limits.max_inflight_bytes) so that the window bounds
  // memory for small records as well as large ones: librdkafka's message
  // and its copy of the headers, the request buffer's framing, and the
  // relay's ticket.
  static constexpr int64_t kRecordOverheadBytes = 512;

  // None of the pointers is owned; all must outlive Run(). `start` is the
  // slot's confirmed position (the watermark starts there). `observer` may
  // be null (nothing watches; RelayMetrics in the daemon). `policy`
  // decides what may be confirmed and which replayed events are dropped
  // (core/commit_policy.h); null is at-least-once (AckCommitPolicy).
  Relay(const RelayOptions& options, ReplicationStream* stream,
        Decoder* decoder, Router* router, EventSink* sink, Clock* clock,
        Lsn start, PipelineObserver* observer = nullptr,
        CommitPolicy* policy = nullptr);

  // Streams until `stop` becomes true or an error; see the header comment.
  absl::Status Run(const std::atomic<bool>& stop);

  // Same thread as Run() (or after it): the session's figures now.
  RelayStats stats() const;
  // Same thread as Run() (or after it): the session's bookkeeping now.
  RelayFootprint footprint() const { return in_flight_.footprint(); }

 private:
  // One pass over the stream (ReadBatch()), for the wait after it.
  bool Paused() const;  // RelayOptions::paused
  struct ReadPass {
    int messages = 0;
    size_t bytes = 0;
    bool more = false;  // stopped at kReadBatch: read again at once
    bool held = false;  // stopped at the in-flight limits
  };

  // The loop (relay.cc), one call per step of a turn. BeginTurn() serves
  // the sink and applies its reports; ActOnReports() ends the session on a
  // failed one or a broken producer, and dead-letters what was refused.
  void BeginTurn();
  absl::Status ActOnReports();
  absl::Status ReadBatch(ReadPass* pass);
  absl::Status MaybeSendStatus(bool force);
  void EndTurn();
  void WaitAfter(const ReadPass& pass);
  int64_t WaitTimeoutUs() const;
  void WaitForWork(int64_t timeout_us, bool want_stream);

  // Each decoded change (relay_changes.cc).
  absl::Status HandleMessage(const StreamMessage& msg);
  absl::Status HandleKeepalive(const StreamMessage& msg);
  absl::Status HandleBegin(const StreamMessage& msg);
  absl::Status HandleCommit(const StreamMessage& msg);
  // An outbox event: a row insert, or (from_message) a logical message
  // under the outbox prefix.
  absl::Status HandleEvent(const StreamMessage& msg, bool from_message);
  absl::Status AdmitAndProduce(const StreamMessage& msg, bool from_message);
  absl::Status HandleLogicalMessage(const StreamMessage& msg);
  absl::Status HandleUpdate(const StreamMessage& msg);
  // True when an operator's action names this event: dropped and logged.
  bool SkippedByOperator(bool from_message);
  void ApplyOperatorActions();

  // Producing and the delivery reports (relay_delivery.cc).
  absl::Status ProduceTracked(const Record& record, uint64_t ticket);
  absl::Status WaitForQueueSpace();
  // Serve the sink (Poll, Flush, Purge) and apply what it reported.
  void Serve(int timeout_ms);
  absl::Status FlushAndApply(int timeout_ms);
  void ApplyReports();
  void ApplyReport(const DeliveryOutcome& o, FailedRecord* failed);
  bool ReportFailed() const;  // a delivery report came back failed
  absl::Status DeadLetterQueued();

  // The session's end (relay_shutdown.cc).
  absl::Status Shutdown(absl::Status loop);
  void AwaitRefusalReport();
  void FinalFlush(const absl::Status& result);
  // Returns what the policy's Finish() said; `result` may become it.
  absl::Status FinishPolicy(absl::Status* result);

  // Observer and progress only.
  void MaybeLogProgress();
  void Observe();
  double LagSeconds() const;  // age of the oldest unconfirmed event

  // What the session works with (not owned, but for the options).
  const RelayOptions options_;
  ReplicationStream* const stream_;
  Decoder* const decoder_;
  Router* const router_;
  EventSink* const sink_;
  Clock* const clock_;
  PipelineObserver* const observer_;  // a no-op one unless given
  AckCommitPolicy ack_policy_;
  CommitPolicy* const policy_;               // &ack_policy_ unless given
  const std::atomic<bool>* stop_ = nullptr;  // Run()'s, for nested waits

  // What is in flight, the reports on their way back, the poison.
  InFlight in_flight_;
  DeliveryQueue reports_;
  PoisonHandler poison_;

  // The stream: the message and change being handled, the transaction.
  StreamMessage msg_;
  Change change_;
  Record record_;
  bool in_transaction_ = false;
  // Inside HandleEvent(): the event is admitted but maybe not produced
  // (waiting for room in the producer's queue), so the policy is not
  // asked what is confirmable: it could split the PostgreSQL transaction
  // there, and its checkpoint would count the event as published.
  bool in_event_ = false;
  bool was_paused_ = false;  // Paused() at the last ReadBatch()
  bool ending_ = false;      // end_session answered true: end at a boundary
  // Where the open transaction's commit record starts (from its Begin).
  Lsn txn_commit_lsn_ = kInvalidLsn;
  // Seconds from the open transaction's commit to reading its Begin (< 0:
  // unknown): each of its events' receive latency.
  double txn_receive_s_ = -1;
  Lsn received_ = kInvalidLsn;
  int64_t turn_now_us_ = 0;  // NowMicros() at the top of the loop turn
  int64_t unsent_ = 0;       // records produced since the last send now

  // Status updates. The session's start position (the slot's
  // confirmed_flush_lsn): no flush sent is ever below it, whatever the
  // policy answers (an exactly-once checkpoint may lie behind the slot).
  Lsn start_ = kInvalidLsn;
  Lsn last_sent_flush_ = kInvalidLsn;
  Lsn confirmed_ = kInvalidLsn;  // RelayStats::confirmed
  int64_t confirmed_commit_time_us_ = 0;
  int64_t last_status_us_ = 0;
  bool reply_requested_ = false;

  // How the session ends. delivery_error_: the first fatal error seen in a
  // report. stopped_in_queue_wait_: a stop was requested while waiting for
  // room in the producer's queue (an ordinary stop, not an error).
  absl::Status delivery_error_;
  bool stopped_in_queue_wait_ = false;
  std::string blocked_topic_;

  // Counters, the observer's and the progress lines' state.
  RelayCounters counters_;
  int64_t report_unix_us_ = 0;  // wall clock before serving reports
  int64_t last_progress_us_ = 0;
  int64_t last_progress_events_ = 0;
  bool nontransactional_logged_ = false;  // said once per session
  // XLogData messages read, and the count the observer last saw, so it
  // learns once per loop turn that the stream delivered.
  int64_t xlog_messages_ = 0;
  int64_t xlog_messages_seen_ = 0;
};

}  // namespace outbox

#endif  // OUTBOX_RELAY_RELAY_H_
