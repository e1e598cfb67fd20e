#include "daemon/lifecycle.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "http/daemon_role.h"
#include "http/daemon_status.h"

namespace outbox {

Lifecycle::Lifecycle(const PostgresConfig& postgres,
                     const std::atomic<bool>& stop, DaemonRole* role,
                     DaemonStatus* status, std::function<void()> turn,
                     const Clock* clock)
    : backoff_initial_ms_(postgres.reconnect_backoff_initial_ms),
      backoff_max_ms_(postgres.reconnect_backoff_max_ms),
      standby_retry_ms_(postgres.standby_retry_ms),
      stop_(stop),
      daemon_role_(role),
      status_(status),
      turn_(std::move(turn)),
      clock_(clock),
      backoff_ms_(backoff_initial_ms_) {
  Become(Role::kStandby);
}

void Lifecycle::Become(Role next, bool slot_held_elsewhere) {
  if (next != role_) {
    Log(Severity::kInfo, absl::StrCat("role ", RoleName(next)),
        {{"was", std::string(RoleName(role_))}});
  }
  role_ = next;
  if (daemon_role_ != nullptr) daemon_role_->Set(next, slot_held_elsewhere);
}

void Lifecycle::Activate() {
  last_wait_.clear();
  Become(Role::kActive);
}

void Lifecycle::Drain() { Become(Role::kDraining); }

void Lifecycle::Progressed() { backoff_ms_ = backoff_initial_ms_; }

int Lifecycle::Stop(int exit_code) {
  Become(Role::kStopped);
  return exit_code;
}

void Lifecycle::RetryAfter(absl::string_view waiting_for,
                           const absl::Status& why, bool slot_held_elsewhere,
                           absl::string_view kafka_state) {
  Become(Role::kStandby, slot_held_elsewhere);
  const int64_t wait_ms = slot_held_elsewhere ? standby_retry_ms_ : backoff_ms_;
  if (status_ != nullptr) {
    status_->SetStates(
        slot_held_elsewhere
            ? absl::StrCat("standby: the slot is held by another instance "
                           "(retry in ",
                           wait_ms, " ms)")
            : WaitingToReconnect(wait_ms),
        kafka_state.empty() ? kNoKafkaProducer : kafka_state);
  }
  // Say it once per distinct reason, not every retry.
  if (why.message() != last_wait_) {
    Log(slot_held_elsewhere ? Severity::kInfo : Severity::kWarn,
        absl::StrCat("waiting for ", waiting_for),
        {{"reason", std::string(why.message())},
         {"retry_ms", absl::StrCat(wait_ms)}});
    last_wait_ = std::string(why.message());
  }
  Wait(wait_ms);
  if (!slot_held_elsewhere) {
    backoff_ms_ = std::min(backoff_ms_ * 2, backoff_max_ms_);
  }
}

void Lifecycle::Wait(int64_t ms) {
  const int64_t until_us = clock_->NowMicros() + ms * 1000;
  while (!stop_.load() && !(wake_ && wake_()) &&
         clock_->NowMicros() < until_us) {
    if (turn_) turn_();
    std::this_thread::sleep_for(std::chrono::milliseconds(
        std::min<int64_t>(50, std::max<int64_t>(1, ms))));
  }
}

}  // namespace outbox
