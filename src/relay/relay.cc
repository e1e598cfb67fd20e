// Relay's loop (relay.h): one turn serves the delivery reports, reads a
// batch of the stream, sends a status update when one is due, tells the
// observer, and waits. Each decoded change is in relay_changes.cc,
// producing and the reports in relay_delivery.cc, the end in
// relay_shutdown.cc.
#include "relay/relay.h"

#include <poll.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "outbox/status_macros.h"

namespace outbox {
namespace {

constexpr int kReadBatch = 512;
// A pass that read at least this many messages, or this many bytes of them,
// means the stream is busy: coalesce before the next read
// (RelayOptions::read_coalesce_us), and send no idle flush. The bytes count
// for large rows: the walsender's 2.5 KB rows arrive a few at a time however
// busy it is, and taking those passes for a quiet stream flushed a small
// request per acknowledgement (bench/RESULTS.md, issue 26, shape C: 9.2 us
// of relay CPU per event and 0.81x the walsender's drain, 8.2 us and 0.87x
// with the bytes counted; medians of 5 runs).
constexpr int kCoalesceAfter = 16;
constexpr size_t kCoalesceAfterBytes = 8 << 10;
// The timeout of an idle flush (RelayOptions::send_when_idle).
constexpr int kIdleFlushMs = 1;
constexpr int64_t kEagerStatusUs = 100'000;  // status soon after progress
// Paused, the walsender's keepalive requests go unread (they wait in the
// socket): a status update at least this often answers them, whatever
// wal_sender_timeout is (1 s is its smallest useful setting).
constexpr int64_t kPausedStatusUs = 500'000;

InFlight::Limits LimitsOf(const RelayOptions& o) {
  InFlight::Limits l;
  l.max_events = o.max_inflight_events;
  l.max_tracked_events = o.max_tracked_events;
  l.min_bytes = o.min_inflight_bytes;
  l.max_bytes = o.max_inflight_bytes;
  l.batching_delay_us = o.batching_delay_us;
  return l;
}

// The observer of a Relay given none.
PipelineObserver* NoObserver() {
  static PipelineObserver* const none = new PipelineObserver();
  return none;
}

}  // namespace

Relay::Relay(const RelayOptions& options, ReplicationStream* stream,
             Decoder* decoder, Router* router, EventSink* sink, Clock* clock,
             Lsn start, PipelineObserver* observer, CommitPolicy* policy)
    : options_(options),
      stream_(stream),
      decoder_(decoder),
      router_(router),
      sink_(sink),
      clock_(clock),
      observer_(observer != nullptr ? observer : NoObserver()),
      policy_(policy != nullptr ? policy : &ack_policy_),
      in_flight_(start, LimitsOf(options)),
      reports_(clock, &in_flight_, policy_,
               options.dead_letter ? options.dead_letter_topic : ""),
      poison_(options.dead_letter, options.dead_letter_topic, &in_flight_),
      received_(start),
      start_(start),
      last_sent_flush_(start),
      confirmed_(start) {
  reports_.Attach(sink_);
}

absl::Status Relay::Run(const std::atomic<bool>& stop) {
  stop_ = &stop;
  RETURN_IF_ERROR(stream_->Start(in_flight_.confirmed()));
  observer_->SetStreaming(true);
  last_status_us_ = clock_->NowMicros();
  last_progress_us_ = last_status_us_;
  while (!stop.load(std::memory_order_relaxed)) {
    if (!ending_ && options_.end_session && options_.end_session()) {
      ending_ = true;
    }
    if (ending_ && !in_transaction_) break;
    BeginTurn();
    if (absl::Status s = ActOnReports(); !s.ok()) return Shutdown(s);
    ReadPass pass;
    if (absl::Status s = ReadBatch(&pass); !s.ok()) return Shutdown(s);
    // Read to the end of what the walsender had sent: caught up.
    if (pass.messages == 0 && !pass.held && !Paused()) policy_->OnBacklog(0);
    if (absl::Status s = MaybeSendStatus(false); !s.ok()) return Shutdown(s);
    EndTurn();
    if (!pass.more) WaitAfter(pass);
  }
  return Shutdown(absl::OkStatus());
}

void Relay::BeginTurn() {
  turn_now_us_ = clock_->NowMicros();
  Serve(0);
  in_flight_.UpdateWindow(turn_now_us_);
}

absl::Status Relay::ActOnReports() {
  if (!delivery_error_.ok()) return delivery_error_;
  RETURN_IF_ERROR(sink_->health());
  return DeadLetterQueued();
}

absl::Status Relay::ReadBatch(ReadPass* pass) {
  // Paused: the messages wait in the socket (and in the walsender), which
  // keeps reading our status updates while its sends block.
  if (Paused()) {
    was_paused_ = true;
    return absl::OkStatus();
  }
  if (was_paused_) {
    was_paused_ = false;
    if (options_.on_resume) options_.on_resume();
  }
  for (;;) {
    if (in_flight_.Backpressured()) {
      pass->held = true;
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(bool got, stream_->Read(&msg_));
    if (!got) return absl::OkStatus();
    if (absl::Status s = HandleMessage(msg_); !s.ok()) {
      // A failed report collected meanwhile (inside a Kafka commit the
      // policy made) is the better reason: it names the event.
      ApplyReports();
      return delivery_error_.ok() ? s : delivery_error_;
    }
    pass->bytes += msg_.payload.size();
    // Ending: nothing past the transaction that just committed.
    if (ending_ && !in_transaction_) return absl::OkStatus();
    if (++pass->messages == kReadBatch) {
      pass->more = true;
      return absl::OkStatus();
    }
  }
}

absl::Status Relay::MaybeSendStatus(bool force) {
  int64_t now = clock_->NowMicros();
  // Amid an event (waiting for room in the producer's queue) the last
  // answer stands.
  Lsn confirmed = last_sent_flush_;
  if (!in_event_) {
    ASSIGN_OR_RETURN(confirmed,
                     policy_->Confirmable(in_flight_.confirmed(), now));
  }
  // Never move the slot back: the policy's answer (an exactly-once
  // checkpoint) may lie behind where the session started.
  confirmed = std::max(confirmed, start_);
  int64_t since = now - last_status_us_;
  int64_t interval_us = int64_t{options_.status_interval_ms} * 1000;
  if (Paused()) interval_us = std::min(interval_us, kPausedStatusUs);
  bool due = force || reply_requested_ || since >= interval_us ||
             (confirmed != last_sent_flush_ && since >= kEagerStatusUs);
  if (!due) return absl::OkStatus();
  confirmed_ = confirmed;
  confirmed_commit_time_us_ = in_flight_.confirmed_commit_time_us();
  RETURN_IF_ERROR(
      stream_->SendStatus(std::max(received_, confirmed), confirmed, false));
  ++counters_.status_updates;
  last_sent_flush_ = confirmed;
  last_status_us_ = now;
  reply_requested_ = false;
  ApplyOperatorActions();
  return absl::OkStatus();
}

void Relay::ApplyOperatorActions() {
  OperatorActions* actions = options_.operator_actions;
  if (actions == nullptr || actions->empty()) return;
  // PostgreSQL has the flush LSN now: what the actions dropped will not be
  // sent again (a crash of PostgreSQL may move the slot back; the record
  // says what was dropped, and a replay delivers it).
  for (const OperatorAction& a : actions->Complete(last_sent_flush_)) {
    Log(Severity::kInfo, "operator action applied",
        {{"action", a.What()},
         {"events", absl::StrCat(a.events)},
         {"by", a.by},
         {"at", a.at},
         {"confirmed_lsn", FormatLsn(last_sent_flush_)}});
    if (options_.on_operator_applied) options_.on_operator_applied(a);
  }
}

void Relay::EndTurn() {
  MaybeLogProgress();
  Observe();
}

void Relay::WaitAfter(const ReadPass& pass) {
  const int64_t timeout_us = WaitTimeoutUs();
  const bool busy =
      pass.messages >= kCoalesceAfter || pass.bytes >= kCoalesceAfterBytes;
  // Held at the in-flight window, nothing more is read until
  // acknowledgements come, and records waiting out linger.ms bring none:
  // lingering then only idles the window. Once per hold (unsent_), so a
  // request carries what was read since the last one, not a handful
  // (measured: bench/RESULTS.md, "Goal 3: a send when the window is
  // full").
  const bool window_full = pass.held;
  // A quiet stream, and everything sent before is acknowledged: like
  // Nagle's algorithm, at most one such send is in flight, so a steady
  // trickle cannot turn into a request per event. A busy pass (many
  // messages, or a few large rows) leaves batching to linger.ms.
  const bool quiet = !pass.held && !busy && in_flight_.events() <= unsent_;
  if (options_.send_when_idle && unsent_ > 0 && (window_full || quiet)) {
    // Send what the producer holds now; serves reports and returns when
    // all are acknowledged or about at once. librdkafka 2.0 raises its
    // "send now" flag only for the duration of the call, so the broker
    // thread may miss it and the records then wait for linger.ms.
    unsent_ = 0;
    FlushAndApply(kIdleFlushMs).IgnoreError();  // errors: next turn
    return;
  }
  if (busy && options_.read_coalesce_us > 0) {
    // Busy stream: let the next batch accumulate in the socket buffer
    // (delivery reports still wake us).
    WaitForWork(std::min<int64_t>(timeout_us, options_.read_coalesce_us),
                /*want_stream=*/false);
  } else {
    WaitForWork(timeout_us, !in_flight_.Backpressured() && !Paused());
  }
}

bool Relay::Paused() const {
  return options_.paused != nullptr &&
         options_.paused->load(std::memory_order_relaxed);
}

int64_t Relay::WaitTimeoutUs() const {
  int64_t interval_us = int64_t{options_.status_interval_ms} * 1000;
  if (Paused()) interval_us = std::min(interval_us, kPausedStatusUs);
  int64_t until_status_us =
      interval_us - (clock_->NowMicros() - last_status_us_);
  int64_t timeout_us = std::clamp<int64_t>(until_status_us, 0, 100'000);
  // An open Kafka transaction falls due on time, not at the next turn.
  if (const int64_t wake = policy_->WakeAtUs(); wake >= 0 && !in_transaction_) {
    timeout_us = std::clamp<int64_t>(wake - clock_->NowMicros(), 0, timeout_us);
  }
  return timeout_us;
}

void Relay::WaitForWork(int64_t timeout_us, bool want_stream) {
  pollfd fds[2];
  nfds_t n = 0;
  if (want_stream && stream_->socket() >= 0) {
    fds[n++] = {stream_->socket(), POLLIN, 0};
  }
  if (sink_->wake_fd() >= 0) {
    fds[n++] = {sink_->wake_fd(), POLLIN, 0};
  } else {
    timeout_us = std::min<int64_t>(timeout_us, 10'000);
  }
  timespec timeout = {static_cast<time_t>(timeout_us / 1'000'000),
                      static_cast<long>(timeout_us % 1'000'000 * 1000)};
  ppoll(fds, n, &timeout, nullptr);
}

RelayStats Relay::stats() const {
  RelayStats s;
  static_cast<RelayCounters&>(s) = counters_;
  s.received = received_;
  s.confirmed = confirmed_;
  s.inflight_events = in_flight_.events();
  s.inflight_bytes = in_flight_.bytes();
  s.confirmed_commit_time_us = confirmed_commit_time_us_;
  s.backpressured = in_flight_.Backpressured();
  s.blocked_topic = blocked_topic_;
  return s;
}

void Relay::MaybeLogProgress() {
  if (options_.progress_interval_s <= 0) return;
  int64_t now = clock_->NowMicros();
  int64_t elapsed = now - last_progress_us_;
  if (elapsed < int64_t{options_.progress_interval_s} * 1'000'000) return;
  int64_t events = counters_.events_delivered - last_progress_events_;
  Lsn confirmed = in_flight_.confirmed();
  Log(Severity::kInfo, "progress",
      {{"events_per_s", absl::StrCat(events * 1'000'000 / elapsed)},
       {"delivered", absl::StrCat(counters_.events_delivered)},
       {"confirmed_lsn", FormatLsn(confirmed)},
       {"received_lsn", FormatLsn(received_)},
       {"lag_bytes",
        absl::StrCat(received_ > confirmed ? received_ - confirmed : 0)},
       {"lag_s", absl::StrCat(LagSeconds())},
       {"inflight", absl::StrCat(in_flight_.events())},
       {"inflight_window_bytes", absl::StrCat(in_flight_.window_bytes())}});
  last_progress_us_ = now;
  last_progress_events_ = counters_.events_delivered;
}

void Relay::Observe() {
  const int64_t now = clock_->NowMicros();
  observer_->Heartbeat(now);
  if (xlog_messages_ != xlog_messages_seen_) {
    xlog_messages_seen_ = xlog_messages_;
    observer_->OnStreamData(now);
  }
  observer_->RefreshHeartbeatAge(now);
  observer_->Flush();
  // Positions as PostgreSQL knows them: the last flush LSN sent.
  observer_->SetPosition(std::max(received_, last_sent_flush_),
                         last_sent_flush_, in_flight_.events(),
                         in_flight_.bytes(), LagSeconds());
  observer_->SetTrackedEvents(in_flight_.span());
}

double Relay::LagSeconds() const {
  // The age of the oldest event not yet confirmed; 0 when nothing is
  // pending.
  const int64_t since = in_flight_.OldestUnconfirmedCommitTimeUs();
  if (since <= 0) return 0;
  return std::max<int64_t>(0, clock_->UnixMicros() - since) / 1e6;
}

}  // namespace outbox
