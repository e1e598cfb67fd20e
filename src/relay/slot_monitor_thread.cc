#include "relay/slot_monitor_thread.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "pg/failover_readiness.h"

namespace outbox {
namespace {

constexpr std::chrono::milliseconds kSlotMonitorTick{500};
// Failover readiness connects to every standby: a slower round than the
// slot's, and at once when a session starts. While a check finds problems
// the next comes sooner, so that a slot the standby synchronizes a few
// seconds after its creation, or a setting an operator just fixed, is seen
// ready without waiting a whole round.
constexpr std::chrono::seconds kFailoverCheckInterval{60};
constexpr std::chrono::seconds kFailoverRecheckInterval{10};

constexpr int64_t Micros(std::chrono::microseconds d) { return d.count(); }

}  // namespace

SlotMonitorThread::SlotMonitorThread(const Config& config,
                                     RelayMetrics* metrics,
                                     StoredSlotMarker* slot_marker,
                                     const std::atomic<bool>* holds_slot,
                                     const Clock* clock)
    : conninfo_(config.postgres.conninfo),
      standby_conninfo_(config.postgres.standby_conninfo),
      slot_(config.postgres.slot),
      failover_slot_(config.postgres.failover_slot),
      connect_timeout_s_(static_cast<int>(config.postgres.connect_timeout_s)),
      metrics_(metrics),
      slot_marker_(slot_marker),
      holds_slot_(holds_slot),
      clock_(clock) {}

// Every kSlotMonitorInterval, and at once when a session starts or ends
// (checked every kSlotMonitorTick).
void SlotMonitorThread::Loop(StopSignal& stop) {
  int64_t next_us = clock_->NowMicros();
  bool streaming = false;
  while (!stop.stopped()) {
    const int64_t now_us = clock_->NowMicros();
    const bool now_streaming = metrics_ != nullptr && metrics_->streaming();
    if (now_us >= next_us || now_streaming != streaming) {
      if (now_streaming && !streaming) next_failover_check_us_ = now_us;
      streaming = now_streaming;
      QueryOnce();
      next_us = clock_->NowMicros() + Micros(kSlotMonitorInterval);
    }
    stop.WaitFor(kSlotMonitorTick);
  }
}

void SlotMonitorThread::QueryOnce() {
  if (monitor_ == nullptr) {
    auto m = SlotMonitor::Connect(conninfo_, connect_timeout_s_);
    if (!m.ok()) return Failed(m.status());
    monitor_ = std::move(*m);
  }
  absl::StatusOr<SlotStatus> s = monitor_->Query(slot_);
  if (!s.ok()) {
    if (absl::IsUnavailable(s.status())) monitor_.reset();
    // The supervisor creates a missing slot; nothing to report until then.
    if (!absl::IsNotFound(s.status())) Failed(s.status());
    return;
  }
  if (metrics_ != nullptr) metrics_->SetSlot(*s);
  if (failover_slot_ && s->active) CheckFailover();
  // Only the slot's holder writes the marker: a standby's query sees the
  // other instance's position, which that instance records itself.
  if (slot_marker_ != nullptr && holds_slot_->load()) {
    if (absl::Status h = slot_marker_->Confirmed(s->confirmed_flush_lsn);
        !h.ok()) {
      return Failed(h, "cannot update the slot marker");
    }
  }
  last_error_.clear();
}

void SlotMonitorThread::CheckFailover() {
  const int64_t now_us = clock_->NowMicros();
  if (now_us < next_failover_check_us_) return;
  next_failover_check_us_ = now_us + Micros(kFailoverCheckInterval);
  absl::StatusOr<FailoverReport> r = CheckFailoverReadiness(
      {conninfo_, standby_conninfo_, slot_, connect_timeout_s_});
  if (!r.ok()) return Failed(r.status(), "cannot check failover readiness");
  if (!r->supported) {
    // Said once; checked again only when a session starts.
    next_failover_check_us_ = std::numeric_limits<int64_t>::max();
    if (failover_unsupported_noted_) return;
    failover_unsupported_noted_ = true;
    Log(Severity::kInfo,
        "postgres.failover_slot has no effect: PostgreSQL 16 and older have "
        "no failover slots",
        {{"server_version_num", absl::StrCat(r->version_num)}});
    return;
  }
  if (!r->problems.empty()) {
    next_failover_check_us_ = now_us + Micros(kFailoverRecheckInterval);
  }
  if (metrics_ != nullptr) metrics_->SetFailoverProblems(r->problems.size());
  for (const std::string& p : r->problems) {
    if (std::find(failover_problems_.begin(), failover_problems_.end(), p) ==
        failover_problems_.end()) {
      Log(Severity::kWarn, absl::StrCat("failover not safe: ", p));
    }
  }
  if (r->problems.empty() && !failover_problems_.empty()) {
    Log(Severity::kInfo, "failover ready: every check passed",
        {{"standbys", absl::StrCat(r->standbys.size())}});
  }
  failover_problems_ = std::move(r->problems);
}

void SlotMonitorThread::Failed(const absl::Status& s, absl::string_view what) {
  if (metrics_ != nullptr) metrics_->OnSlotMonitorError();
  if (metrics_ != nullptr) metrics_->daemon_status().SetLastError(what, s);
  if (s.message() == last_error_) return;
  last_error_ = std::string(s.message());
  Log(Severity::kWarn, what, {{"slot", slot_}, {"error", last_error_}});
}

}  // namespace outbox
