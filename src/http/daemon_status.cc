#include "http/daemon_status.h"

#include "absl/strings/str_cat.h"

namespace outbox {

std::string WaitingToReconnect(int64_t backoff_ms) {
  return absl::StrCat("waiting to reconnect (retry in ", backoff_ms, " ms)");
}

std::string NoKafkaProducer(const absl::Status& why) {
  return absl::StrCat("no producer: ", why.message());
}

void DaemonStatus::SetStates(absl::string_view postgres,
                             absl::string_view kafka) {
  std::lock_guard<std::mutex> lock(mu_);
  postgres_ = std::string(postgres);
  kafka_ = std::string(kafka);
}

void DaemonStatus::SetLastError(absl::string_view what,
                                const absl::Status& error) {
  std::string text = what.empty() ? std::string(error.message())
                                  : absl::StrCat(what, ": ", error.message());
  const int64_t unix_ms = clock_->UnixMicros() / 1000;
  std::lock_guard<std::mutex> lock(mu_);
  last_error_ = std::move(text);
  last_error_unix_ms_ = unix_ms;
}

void DaemonStatus::SetKafkaState(absl::string_view kafka) {
  std::lock_guard<std::mutex> lock(mu_);
  kafka_ = std::string(kafka);
}

std::function<void(bool, absl::string_view)>
DaemonStatus::KafkaStateListener() {
  return [this](bool reachable, absl::string_view state) {
    SetKafkaState(state);
    if (!reachable) SetLastError("kafka", absl::UnavailableError(state));
  };
}

void DaemonStatus::Fill(StatusSnapshot* snapshot) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!postgres_.empty()) snapshot->postgres_state = postgres_;
  if (!kafka_.empty()) snapshot->kafka_state = kafka_;
  if (!last_error_.empty()) {
    snapshot->last_error = last_error_;
    snapshot->last_error_unix_ms = last_error_unix_ms_;
  }
}

}  // namespace outbox
