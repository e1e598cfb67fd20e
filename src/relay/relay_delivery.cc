// Relay's producing and delivery reports (relay.h): a record goes to the
// sink under its ticket (waiting for room in the producer's queue when it
// is full), and the reports the DeliveryQueue collected are applied here,
// after each Poll, Flush and Purge: in flight, counters, observer, and a
// failed one to the PoisonHandler.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "outbox/status_macros.h"
#include "relay/relay.h"

namespace outbox {
namespace {

// A record's bytes in the in-flight window.
int64_t WindowBytes(int64_t key_bytes, int64_t value_bytes) {
  return key_bytes + value_bytes + Relay::kRecordOverheadBytes;
}

}  // namespace

absl::Status Relay::ProduceTracked(const Record& record, uint64_t ticket) {
  for (;;) {
    absl::Status s = sink_->Produce(record, ticket);
    if (s.ok()) {
      ++unsent_;
      ++counters_.events_produced;
      in_flight_.OnProduced(
          ticket,
          WindowBytes(static_cast<int64_t>(record.key.size()),
                      static_cast<int64_t>(record.value.size())),
          in_flight_.sampling() ? clock_->NowMicros() : 0);
      return absl::OkStatus();
    }
    if (!absl::IsResourceExhausted(s)) {
      // An event's or a dead letter's: the topic the supervisor waits for.
      if (IsTopicAccessError(s)) blocked_topic_ = record.topic;
      return s;
    }
    RETURN_IF_ERROR(WaitForQueueSpace());
  }
}

absl::Status Relay::WaitForQueueSpace() {
  // The producer's queue is full: serve reports until it drains, and keep
  // PostgreSQL informed meanwhile. The record stays tracked, so stopping
  // here is safe: its transaction is never confirmed.
  observer_->Heartbeat(clock_->NowMicros());
  Serve(10);
  RETURN_IF_ERROR(MaybeSendStatus(false));
  if (!delivery_error_.ok()) {
    return absl::CancelledError("stopping after a failed delivery");
  }
  RETURN_IF_ERROR(sink_->health());
  // A queue that stays full (Kafka down) must not keep SIGTERM waiting:
  // Shutdown() takes this for an ordinary stop.
  if (stop_ != nullptr && stop_->load(std::memory_order_relaxed)) {
    stopped_in_queue_wait_ = true;
    return absl::CancelledError(
        "stop requested while the Kafka producer queue was full");
  }
  return absl::OkStatus();
}

void Relay::Serve(int timeout_ms) {
  report_unix_us_ = clock_->UnixMicros();
  sink_->Poll(timeout_ms);
  ApplyReports();
}

absl::Status Relay::FlushAndApply(int timeout_ms) {
  report_unix_us_ = clock_->UnixMicros();
  absl::Status s = sink_->Flush(timeout_ms);
  ApplyReports();
  return s;
}

void Relay::ApplyReports() {
  if (reports_.empty()) return;
  reports_.Drain([this](const DeliveryOutcome& o, FailedRecord* failed) {
    ApplyReport(o, failed);
  });
}

void Relay::ApplyReport(const DeliveryOutcome& o, FailedRecord* failed) {
  const bool delivered = o.status.ok();
  in_flight_.OnReport(o.ticket, WindowBytes(o.key_bytes, o.value_bytes),
                      delivered, o.arrived_us);
  if (delivered) {
    const bool dead_letter = poison_.IsDeadLetterTopic(*o.topic);
    ++counters_.events_delivered;
    counters_.bytes_delivered += o.value_bytes;
    observer_->OnDelivered(*o.topic, o.value_bytes);
    if (dead_letter) {
      ++counters_.dead_lettered;
      observer_->OnDeadLettered();
    }
    // The latency first: the delivery may prune the ticket's commit time.
    const int64_t committed = in_flight_.CommitTimeOf(o.ticket);
    observer_->ObserveLatency(
        committed < 0
            ? -1
            : std::max<int64_t>(0, report_unix_us_ - committed) / 1e6);
    if (absl::Status s = in_flight_.Delivered(o.ticket); !s.ok()) {
      // A report the tracker cannot place: stop rather than guess.
      if (delivery_error_.ok()) {
        delivery_error_ = absl::InternalError(s.message());
      }
    }
    return;
  }
  ++counters_.delivery_errors;
  observer_->OnDeliveryError();
  absl::Status end =
      poison_.OnFailedDelivery(o, failed, /*first=*/delivery_error_.ok());
  if (end.ok() || !delivery_error_.ok()) return;
  delivery_error_ = std::move(end);
  if (IsTopicAccessError(delivery_error_)) blocked_topic_ = *o.topic;
}

bool Relay::ReportFailed() const {
  // delivery_error_ is set by the first failed report (its permanent or
  // transient error), or Internal by a report the tracker cannot place.
  return !delivery_error_.ok() && !absl::IsInternal(delivery_error_);
}

absl::Status Relay::DeadLetterQueued() {
  return poison_.DeadLetterQueued(
      [this](const Record& r, uint64_t t) { return ProduceTracked(r, t); });
}

}  // namespace outbox
