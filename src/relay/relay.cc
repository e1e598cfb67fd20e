#include "relay/relay.h"

#include <poll.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "outbox/status_macros.h"
#include "relay/relay_metrics.h"

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
// ProduceTracked()'s answer to a stop requested while the queue was full.
constexpr absl::string_view kStopWhileQueueFull =
    "stop requested while the Kafka producer queue was full";

// Shutdown() flushes in slices this long, to stop at a failed report.
constexpr int kShutdownFlushSliceMs = 100;
// How many slices Shutdown() waits for the report of a record whose refusal
// stopped the producer (it is enqueued right after the stop).
constexpr int kRefusalReportPolls = 20;

// A dead letter that could not be produced: a refusal of the dead letter
// itself halts (the row is neither published nor dead-lettered), anything
// else (a full queue given up on a stop, an unknown dead-letter topic while
// the broker restarts, a fatal producer error) keeps its code, so the
// session restarts and the row is read again from the slot.
absl::Status DeadLetterError(const absl::Status& s, absl::string_view what) {
  std::string message =
      absl::StrCat("cannot dead-letter ", what, ": ", s.message());
  if (absl::IsInvalidArgument(s)) return absl::InvalidArgumentError(message);
  if (absl::IsCancelled(s)) return s;  // stop or failed delivery: as is
  return absl::Status(s.code(), message);
}

}  // namespace

Relay::Relay(const RelayOptions& options, ReplicationStream* stream,
             Decoder* decoder, Router* router, EventSink* sink, Clock* clock,
             Lsn start, RelayMetrics* metrics, CommitPolicy* policy)
    : options_(options),
      stream_(stream),
      decoder_(decoder),
      router_(router),
      sink_(sink),
      clock_(clock),
      tracker_(start),
      policy_(policy != nullptr ? policy : &ack_policy_),
      metrics_(metrics),
      window_(options.min_inflight_bytes, options.max_inflight_bytes,
              options.batching_delay_us) {
  stats_.confirmed = start;
  stats_.received = start;
  last_sent_flush_ = start;
  start_ = start;
  sink_->SetDeliveryHandler(
      [this](const DeliveryReport& report) { OnDelivery(report); });
}

bool Relay::Backpressured() const {
  return stats_.inflight_events >= options_.max_inflight_events ||
         stats_.inflight_bytes >= window_.bytes() ||
         tracker_.span() >= options_.max_tracked_events;
}

absl::Status Relay::Run(const std::atomic<bool>& stop) {
  stop_ = &stop;
  RETURN_IF_ERROR(stream_->Start(tracker_.confirmed()));
  if (metrics_ != nullptr) metrics_->SetStreaming(true);
  last_status_us_ = clock_->NowMicros();
  last_progress_us_ = last_status_us_;
  StreamMessage msg;
  while (!stop.load(std::memory_order_relaxed)) {
    turn_now_us_ = clock_->NowMicros();
    if (metrics_ != nullptr) report_unix_us_ = clock_->UnixMicros();
    sink_->Poll(0);
    window_.Update(turn_now_us_);
    if (!delivery_error_.ok()) return Shutdown(delivery_error_);
    if (absl::Status h = sink_->health(); !h.ok()) return Shutdown(h);
    if (absl::Status s = DeadLetterFailedDeliveries(); !s.ok()) {
      return Shutdown(s);
    }
    bool more = false;
    bool held = false;  // the pass ended at the in-flight window
    int n = 0;
    size_t bytes = 0;
    stats_.backpressured = Backpressured();
    for (;;) {
      // Drop what the watermark passed first, so the commit-time index
      // holds only unconfirmed transactions: no more than the tracked
      // events (or the one open transaction), which Backpressured() bounds.
      // One comparison when nothing goes.
      commit_times_.Prune(tracker_.confirmed());
      if (Backpressured()) {
        held = true;
        break;
      }
      absl::StatusOr<bool> got = stream_->Read(&msg);
      if (!got.ok()) return Shutdown(got.status());
      if (!*got) break;
      if (absl::Status s = HandleMessage(msg); !s.ok()) {
        return Shutdown(delivery_error_.ok() ? s : delivery_error_);
      }
      bytes += msg.payload.size();
      if (++n == kReadBatch) {
        more = true;
        break;
      }
    }
    if (absl::Status s = MaybeSendStatus(false); !s.ok()) return Shutdown(s);
    MaybeLogProgress();
    if (metrics_ != nullptr) UpdateMetrics();
    if (!more) {
      int64_t until_status_us = int64_t{options_.status_interval_ms} * 1000 -
                                (clock_->NowMicros() - last_status_us_);
      int64_t timeout_us = std::clamp<int64_t>(until_status_us, 0, 100'000);
      // An open Kafka transaction falls due on time, not at the next turn.
      if (const int64_t wake = policy_->WakeAtUs();
          wake >= 0 && !in_transaction_) {
        timeout_us =
            std::clamp<int64_t>(wake - clock_->NowMicros(), 0, timeout_us);
      }
      const bool busy = n >= kCoalesceAfter || bytes >= kCoalesceAfterBytes;
      if (!held && !busy && options_.send_when_idle && unsent_ > 0 &&
          stats_.inflight_events <= unsent_) {
        // Quiet stream (not one held at the window: that one is busy, and
        // sending each handful of reads at once would make a request of
        // each), and everything sent before is acknowledged: send
        // what the producer holds now (like Nagle's algorithm, at most one
        // such send is in flight, so a steady trickle cannot turn into a
        // request per event). Serves reports; returns when all are
        // acknowledged or about at once: librdkafka 2.0 sets its "send
        // now" flag only for the duration of the call, so the broker
        // thread may miss it and the records then wait for linger.ms.
        unsent_ = 0;
        sink_->Flush(kIdleFlushMs).IgnoreError();  // errors: next turn
        continue;
      }
      if (busy && options_.read_coalesce_us > 0) {
        // Busy stream: let the next batch accumulate in the socket buffer
        // (delivery reports still wake us).
        WaitForWork(std::min<int64_t>(timeout_us, options_.read_coalesce_us),
                    /*want_stream=*/false);
      } else {
        WaitForWork(timeout_us, !Backpressured());
      }
    }
  }
  return Shutdown(absl::OkStatus());
}

absl::Status Relay::ProduceTracked(const Record& record, uint64_t ticket) {
  for (;;) {
    absl::Status s = sink_->Produce(record, ticket);
    if (s.ok()) {
      ++unsent_;
      ++stats_.events_produced;
      ++stats_.inflight_events;
      stats_.inflight_bytes +=
          static_cast<int64_t>(record.key.size() + record.value.size());
      if (window_.sampling()) window_.OnProduced(ticket, clock_->NowMicros());
      return absl::OkStatus();
    }
    if (!absl::IsResourceExhausted(s)) {
      // An event's or a dead letter's: the topic the supervisor waits for.
      if (IsTopicAccessError(s)) stats_.blocked_topic = record.topic;
      return s;
    }
    // The producer's queue is full: serve reports until it drains, and keep
    // PostgreSQL informed meanwhile. The record stays tracked, so stopping
    // here is safe: its transaction is never confirmed.
    if (metrics_ != nullptr) {
      metrics_->Heartbeat(clock_->NowMicros());
      report_unix_us_ = clock_->UnixMicros();
    }
    sink_->Poll(10);
    RETURN_IF_ERROR(MaybeSendStatus(false));
    if (!delivery_error_.ok()) {
      return absl::CancelledError("stopping after a failed delivery");
    }
    RETURN_IF_ERROR(sink_->health());
    // A queue that stays full (Kafka down) must not keep SIGTERM waiting:
    // Shutdown() turns this into an ordinary stop.
    if (stop_ != nullptr && stop_->load(std::memory_order_relaxed)) {
      return absl::CancelledError(kStopWhileQueueFull);
    }
  }
}

absl::Status Relay::Poison(const absl::Status& why, uint64_t ticket,
                           absl::string_view event_id, Lsn lsn,
                           absl::string_view raw, absl::string_view what_kind) {
  std::string what = absl::StrCat(
      event_id.empty() ? "" : absl::StrCat("event ", event_id, " "), "at LSN ",
      FormatLsn(lsn), ": ", why.message());
  if (!options_.dead_letter) {
    tracker_.Failed(ticket).IgnoreError();
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid ", what_kind, " ", what,
        "; halting (outbox.on_invalid = halt), nothing at or past it is "
        "confirmed"));
  }
  Log(Severity::kWarn, absl::StrCat("dead-lettering invalid ", what_kind),
      {{"event_id", std::string(event_id)},
       {"lsn", FormatLsn(lsn)},
       {"error", std::string(why.message())},
       {"topic", options_.dead_letter_topic}});
  const Record& dead = dead_letter_.Build(
      options_.dead_letter_topic, event_id, raw, /*value_is_null=*/false,
      why.message(), {{"lsn", FormatLsn(lsn)}});
  absl::Status s = ProduceTracked(dead, ticket);
  if (!s.ok()) {
    tracker_.Failed(ticket).IgnoreError();
    return DeadLetterError(s, absl::StrCat("invalid ", what_kind, " ", what));
  }
  return absl::OkStatus();
}

void Relay::OnDelivery(const DeliveryReport& report) {
  const int64_t bytes = static_cast<int64_t>(report.record.key.size() +
                                             report.record.value.size());
  --stats_.inflight_events;
  stats_.inflight_bytes -= bytes;
  window_.OnReport(report.ticket, report.status.ok() ? bytes : 0,
                   window_.sampled(report.ticket) ? clock_->NowMicros() : 0);
  bool to_dlq =
      options_.dead_letter && report.record.topic == options_.dead_letter_topic;
  if (report.status.ok()) {
    ++stats_.events_delivered;
    stats_.bytes_delivered += static_cast<int64_t>(report.record.value.size());
    if (to_dlq) ++stats_.dead_lettered;
    if (metrics_ != nullptr) {
      metrics_->OnDelivered(report.record.topic,
                            static_cast<int64_t>(report.record.value.size()));
      if (to_dlq) metrics_->OnDeadLettered();
      metrics_->ObserveLatency(LatencySeconds(report.ticket));
    }
    if (absl::Status s = tracker_.Delivered(report.ticket); !s.ok()) {
      // A report the tracker cannot place: stop rather than guess.
      if (delivery_error_.ok())
        delivery_error_ = absl::InternalError(s.message());
    }
    return;
  }
  ++stats_.delivery_errors;
  if (metrics_ != nullptr) metrics_->OnDeliveryError();
  std::string what =
      absl::StrCat("delivery of event ", report.record.event_id, " to topic ",
                   report.record.topic, " failed: ", report.status.message());
  if (absl::IsInvalidArgument(report.status) && options_.dead_letter &&
      !to_dlq) {
    // Every refusal, even while winding down, so one replay covers them.
    absl::Status s = policy_->OnRefused(report.ticket, report.status.message());
    if (!s.ok()) {
      // Not here (exactly-once): the session ends, the replay dead-letters.
      tracker_.Failed(report.ticket).IgnoreError();
      if (delivery_error_.ok()) {
        delivery_error_ =
            absl::Status(s.code(), absl::StrCat(what, "; ", s.message()));
      }
      return;
    }
  }
  if (!delivery_error_.ok()) return;  // already winding down
  if (!absl::IsInvalidArgument(report.status)) {
    // Transient (timeout, purge): restart from the slot; the slot's
    // position never passed this event, so it is read again. A missing
    // topic or ACL likewise, under its own code: the supervisor waits for
    // it (it is not the event's fault, so never poison).
    tracker_.Failed(report.ticket).IgnoreError();
    if (IsTopicAccessError(report.status)) {
      stats_.blocked_topic = std::string(report.record.topic);
      delivery_error_ = absl::Status(report.status.code(), what);
    } else {
      delivery_error_ = absl::UnavailableError(what);
    }
    return;
  }
  if (!options_.dead_letter || to_dlq) {
    tracker_.Failed(report.ticket).IgnoreError();
    delivery_error_ = absl::InvalidArgumentError(absl::StrCat(
        what, "; halting (outbox.on_invalid = ",
        options_.dead_letter ? "dead_letter, and the dead letter failed"
                             : "halt",
        "), nothing at or past it is confirmed"));
    return;
  }
  // Permanent error for this record: produce it to the dead-letter topic
  // under the same ticket; only that delivery lets the watermark pass it.
  failed_.push_back(FailedRecord{
      report.ticket, std::string(report.record.event_id),
      std::string(report.record.topic), std::string(report.record.key),
      std::string(report.record.value), std::string(report.status.message())});
}

absl::Status Relay::DeadLetterFailedDeliveries() {
  while (!failed_.empty()) {
    FailedRecord f = std::move(failed_.front());
    failed_.pop_front();
    RETURN_IF_ERROR(DeadLetterUndeliverable(f));
  }
  return absl::OkStatus();
}

absl::Status Relay::DeadLetterUndeliverable(const FailedRecord& f) {
  Log(Severity::kWarn, "dead-lettering undeliverable event",
      {{"event_id", f.event_id}, {"topic", f.topic}, {"error", f.error}});
  const Record& dead = dead_letter_.Build(
      options_.dead_letter_topic, f.event_id, f.value,
      /*value_is_null=*/false, f.error, {{"topic", f.topic}, {"key", f.key}});
  absl::Status s = ProduceTracked(dead, f.ticket);
  if (!s.ok()) {
    tracker_.Failed(f.ticket).IgnoreError();
    return DeadLetterError(s, absl::StrCat("event ", f.event_id));
  }
  return absl::OkStatus();
}

absl::Status Relay::MaybeSendStatus(bool force) {
  int64_t now = clock_->NowMicros();
  ASSIGN_OR_RETURN(Lsn confirmed,
                   policy_->Confirmable(tracker_.confirmed(), now));
  // Never move the slot back: the policy's answer (an exactly-once
  // checkpoint) may lie behind where the session started.
  confirmed = std::max(confirmed, start_);
  int64_t since = now - last_status_us_;
  bool due = force || reply_requested_ ||
             since >= int64_t{options_.status_interval_ms} * 1000 ||
             (confirmed != last_sent_flush_ && since >= kEagerStatusUs);
  if (!due) return absl::OkStatus();
  stats_.confirmed = confirmed;
  stats_.confirmed_commit_time_us = tracker_.confirmed_commit_time_us();
  RETURN_IF_ERROR(stream_->SendStatus(std::max(stats_.received, confirmed),
                                      confirmed, false));
  ++stats_.status_updates;
  commit_times_.Prune(tracker_.confirmed());
  last_sent_flush_ = confirmed;
  last_status_us_ = now;
  reply_requested_ = false;
  return absl::OkStatus();
}

void Relay::MaybeLogProgress() {
  if (options_.progress_interval_s <= 0) return;
  int64_t now = clock_->NowMicros();
  int64_t elapsed = now - last_progress_us_;
  if (elapsed < int64_t{options_.progress_interval_s} * 1'000'000) return;
  int64_t events = stats_.events_delivered - last_progress_events_;
  Lsn confirmed = tracker_.confirmed();
  Log(Severity::kInfo, "progress",
      {{"events_per_s", absl::StrCat(events * 1'000'000 / elapsed)},
       {"delivered", absl::StrCat(stats_.events_delivered)},
       {"confirmed_lsn", FormatLsn(confirmed)},
       {"received_lsn", FormatLsn(stats_.received)},
       {"lag_bytes",
        absl::StrCat(stats_.received > confirmed ? stats_.received - confirmed
                                                 : 0)},
       {"lag_s", absl::StrCat(LagSeconds())},
       {"inflight", absl::StrCat(stats_.inflight_events)},
       {"inflight_window_bytes", absl::StrCat(window_.bytes())}});
  last_progress_us_ = now;
  last_progress_events_ = stats_.events_delivered;
}

void Relay::UpdateMetrics() {
  const int64_t now = clock_->NowMicros();
  metrics_->Heartbeat(now);
  if (xlog_messages_ != xlog_messages_seen_) {
    xlog_messages_seen_ = xlog_messages_;
    metrics_->OnStreamData(now);
  }
  metrics_->RefreshHeartbeatAge(now);
  metrics_->Flush();
  // Positions as PostgreSQL knows them: the last flush LSN sent.
  metrics_->SetPosition(std::max(stats_.received, last_sent_flush_),
                        last_sent_flush_, stats_.inflight_events,
                        stats_.inflight_bytes, LagSeconds());
  metrics_->SetTrackedEvents(tracker_.span());
}

double Relay::LagSeconds() {
  // The age of the oldest event not yet confirmed: now minus the commit time
  // of the oldest unconfirmed transaction with events; 0 when nothing is
  // pending. (Not the newest confirmed transaction's commit time: after a
  // quiet hour that would read as an hour of lag while the first new event
  // is in flight.)
  commit_times_.Prune(tracker_.confirmed());
  if (stats_.inflight_events <= 0) return 0;
  int64_t since =
      commit_times_.OldestCommitTimeUs(tracker_.confirmed_commit_time_us());
  if (since <= 0) return 0;
  return std::max<int64_t>(0, clock_->UnixMicros() - since) / 1e6;
}

double Relay::LatencySeconds(uint64_t ticket) const {
  int64_t committed = commit_times_.CommitTimeOf(ticket);
  if (committed < 0) return -1;
  return std::max<int64_t>(0, report_unix_us_ - committed) / 1e6;
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

bool Relay::ReportFailed() const {
  // delivery_error_ is set by the first failed report (its permanent or
  // transient error), or Internal by a report the tracker cannot place.
  return !delivery_error_.ok() && !absl::IsInternal(delivery_error_);
}

absl::Status Relay::Shutdown(absl::Status result) {
  if (metrics_ != nullptr) metrics_->SetStreaming(false);
  if (options_.on_draining) options_.on_draining();
  if (absl::IsCancelled(result) && result.message() == kStopWhileQueueFull) {
    result = absl::OkStatus();  // SIGTERM while the producer queue was full
  }
  bool stream_alive = !absl::IsUnavailable(result) ||
                      !delivery_error_.ok();  // a delivery error: stream ok
  if (absl::Status h = sink_->health(); absl::IsInvalidArgument(h)) {
    // The producer stopped at a record Kafka refused (gap-less guarantee):
    // a poison row, whatever ended the loop. Its own report, served now,
    // names the event; the producer's message names only its partition.
    for (int i = 0; i < kRefusalReportPolls && sink_->outstanding() > 0 &&
                    !absl::IsInvalidArgument(delivery_error_) &&
                    !IsTopicAccessError(delivery_error_);
         ++i) {
      sink_->Poll(kShutdownFlushSliceMs);
    }
    if (IsTopicAccessError(delivery_error_) && !absl::IsDataLoss(result)) {
      // The refusal was a missing ACL or topic: waited for, not poison.
      result = delivery_error_;
    } else if (absl::IsInvalidArgument(delivery_error_) &&
               !absl::IsDataLoss(result)) {
      result = delivery_error_;
    } else if (!absl::IsInvalidArgument(result) && !absl::IsDataLoss(result)) {
      result = h;
    }
  }
  // Let Kafka finish what it has so the final position covers it (after a
  // fatal producer error nothing more will be reported), in slices, to stop
  // at the first failed report.
  if (!ReportFailed() && sink_->health().ok()) {
    int timeout = result.ok() || absl::IsInvalidArgument(result) ||
                          absl::IsDataLoss(result)
                      ? options_.flush_timeout_ms
                      : std::min(options_.flush_timeout_ms, 5000);
    if (metrics_ != nullptr) report_unix_us_ = clock_->UnixMicros();
    absl::Status f = absl::OkStatus();
    for (int waited = 0; !ReportFailed(); waited += kShutdownFlushSliceMs) {
      f = sink_->Flush(std::min(kShutdownFlushSliceMs, timeout - waited));
      if (!absl::IsDeadlineExceeded(f) ||
          waited + kShutdownFlushSliceMs >= timeout) {
        break;
      }
    }
    if (!f.ok() && !ReportFailed()) {
      Log(Severity::kWarn, "shutting down with undelivered events",
          {{"error", std::string(f.message())}});
    }
    // Dead letters produced during the flush.
    if (result.ok() && options_.dead_letter && !failed_.empty()) {
      if (absl::Status s = DeadLetterFailedDeliveries(); s.ok()) {
        sink_->Flush(options_.flush_timeout_ms).IgnoreError();
      }
    }
  }
  // After a failed report, later records (some perhaps of the failed
  // record's key) wait in the producer. Delivering them would put them ahead
  // of the failed one, which is either never published (halt) or published
  // only after the restart: drop them instead; they are read again from the
  // slot. (Requests already sent are not recalled;
  // docs/concepts/delivery-guarantees.md#per-key-order, says why they cannot
  // land under halt, and when they can.)
  if (ReportFailed()) {
    if (metrics_ != nullptr) report_unix_us_ = clock_->UnixMicros();
    sink_->Purge();
    if (result.ok()) result = delivery_error_;  // failed in the final flush
  }
  // Make durable what the policy can (exactly-once: commit the open Kafka
  // transaction between PostgreSQL transactions), or give it up.
  absl::Status finished = policy_->Finish(result.ok() && !ReportFailed());
  if (result.ok() && !finished.ok()) result = finished;
  if (!finished.ok() && finished.message() != result.message()) {
    // Ending for another reason, but this one matters too (fenced: never
    // commit again).
    Log(Severity::kWarn, std::string(finished.message()));
  }
  if (stream_alive && finished.ok()) {
    absl::Status s = MaybeSendStatus(/*force=*/true);
    if (s.ok()) stream_->Stop().IgnoreError();
  }
  absl::StatusOr<Lsn> confirmed =
      policy_->Confirmable(tracker_.confirmed(), clock_->NowMicros());
  stats_.confirmed =
      confirmed.ok() ? std::max(*confirmed, start_) : last_sent_flush_;
  if (metrics_ != nullptr) UpdateMetrics();
  return result;
}

}  // namespace outbox
