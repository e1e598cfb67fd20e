// Relay's end of a session (relay.h): which error ends it (EndingError()),
// the final flush (or, after a failed report, the purge), the policy's
// Finish() and the final status update.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "pipeline/ending_error.h"
#include "relay/relay.h"

namespace outbox {
namespace {

// Shutdown() flushes in slices this long, to stop at a failed report.
constexpr int kShutdownFlushSliceMs = 100;
// How many slices Shutdown() waits for the report of a record whose refusal
// stopped the producer (it is enqueued right after the stop).
constexpr int kRefusalReportPolls = 20;

}  // namespace

absl::Status Relay::Shutdown(absl::Status loop) {
  observer_->SetStreaming(false);
  if (options_.on_draining) options_.on_draining();
  ApplyReports();  // what the last Poll or a policy's Kafka commit served
  if (stopped_in_queue_wait_ && absl::IsCancelled(loop)) {
    loop = absl::OkStatus();  // SIGTERM while the producer queue was full
  }
  // After a delivery error the stream is fine, whatever the loop said.
  const bool stream_alive = !absl::IsUnavailable(loop) || !delivery_error_.ok();
  const absl::Status health = sink_->health();
  if (absl::IsInvalidArgument(health)) AwaitRefusalReport();
  absl::Status result = EndingError(loop, delivery_error_, health);
  if (!ReportFailed() && sink_->health().ok()) FinalFlush(result);
  // After a failed report, later records (some perhaps of the failed
  // record's key) wait in the producer. Delivering them would put them ahead
  // of the failed one, which is either never published (halt) or published
  // only after the restart: drop them instead; they are read again from the
  // slot. (Requests already sent are not recalled;
  // docs/concepts/delivery-guarantees.md#per-key-order, says why they cannot
  // land under halt, and when they can.)
  if (ReportFailed()) {
    report_unix_us_ = clock_->UnixMicros();
    sink_->Purge();
    ApplyReports();
    if (result.ok()) result = delivery_error_;  // failed in the final flush
  }
  const absl::Status finished = FinishPolicy(&result);
  if (stream_alive && finished.ok()) {
    absl::Status s = MaybeSendStatus(/*force=*/true);
    if (s.ok()) stream_->Stop().IgnoreError();
  }
  absl::StatusOr<Lsn> confirmed =
      policy_->Confirmable(in_flight_.confirmed(), clock_->NowMicros());
  confirmed_ = confirmed.ok() ? std::max(*confirmed, start_) : last_sent_flush_;
  Observe();
  return result;
}

void Relay::AwaitRefusalReport() {
  // The producer stopped at a record Kafka refused (gap-less guarantee):
  // a poison row, whatever ended the loop. Its own report, served now,
  // names the event; the producer's message names only its partition.
  for (int i = 0; i < kRefusalReportPolls && sink_->outstanding() > 0 &&
                  !absl::IsInvalidArgument(delivery_error_) &&
                  !IsTopicAccessError(delivery_error_);
       ++i) {
    Serve(kShutdownFlushSliceMs);
  }
}

void Relay::FinalFlush(const absl::Status& result) {
  // Let Kafka finish what it has so the final position covers it (after a
  // fatal producer error nothing more will be reported), in slices, to stop
  // at the first failed report.
  const int timeout =
      result.ok() || absl::IsInvalidArgument(result) || absl::IsDataLoss(result)
          ? options_.flush_timeout_ms
          : std::min(options_.flush_timeout_ms, 5000);
  absl::Status f = absl::OkStatus();
  for (int waited = 0; !ReportFailed(); waited += kShutdownFlushSliceMs) {
    f = FlushAndApply(std::min(kShutdownFlushSliceMs, timeout - waited));
    if (!absl::IsDeadlineExceeded(f) ||
        waited + kShutdownFlushSliceMs >= timeout) {
      break;
    }
  }
  if (!f.ok() && !ReportFailed()) {
    Log(Severity::kWarn, "shutting down with undelivered events",
        {{"error", std::string(f.message())}});
  }
  // Dead letters of the reports the flush served.
  if (result.ok() && poison_.has_queued()) {
    if (DeadLetterQueued().ok()) {
      FlushAndApply(options_.flush_timeout_ms).IgnoreError();
    }
  }
}

absl::Status Relay::FinishPolicy(absl::Status* result) {
  // Make durable what the policy can (exactly-once: commit the open Kafka
  // transaction between PostgreSQL transactions), or give it up.
  absl::Status finished = policy_->Finish(result->ok() && !ReportFailed());
  ApplyReports();  // served inside the policy's Kafka commit
  if (result->ok() && !finished.ok()) *result = finished;
  if (!finished.ok() && finished.message() != result->message()) {
    // Ending for another reason, but this one matters too (fenced: never
    // commit again).
    Log(Severity::kWarn, std::string(finished.message()));
  }
  return finished;
}

}  // namespace outbox
