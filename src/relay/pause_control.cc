#include "relay/pause_control.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "relay/slot_monitor_thread.h"

namespace outbox {

PauseControl::PauseControl(const Config& config,
                           std::function<void(bool)> on_change)
    : config_(config), on_change_(std::move(on_change)) {
  std::lock_guard<std::mutex> lock(io_mu_);
  pair_ = config.postgres.slot_marker_id;
}

PauseControl::~PauseControl() { thread_.reset(); }

void PauseControl::Attach(const KafkaOptions& kafka) {
  {
    std::lock_guard<std::mutex> lock(io_mu_);
    kafka_ = std::make_unique<KafkaOptions>(kafka);
    kafka_->on_connection_state = nullptr;
    kafka_->on_statistics = nullptr;
  }
  if (thread_ != nullptr) return;
  thread_ = std::make_unique<StoppableThread>([this](StopSignal& stop) {
    do {
      absl::Status s = Refresh();
      std::lock_guard<std::mutex> lock(mu_);
      if (s.ok()) {
        last_error_.clear();
      } else if (s.message() != last_error_) {
        last_error_ = std::string(s.message());
        Log(Severity::kWarn, "cannot read the pause record",
            {{"error", last_error_}});
      }
    } while (!stop.WaitFor(kSlotMonitorInterval));
  });
}

void PauseControl::SetSystemId(const std::string& system_id) {
  std::lock_guard<std::mutex> lock(io_mu_);
  const std::string pair =
      ControlPair(config_.postgres.slot_marker_id, system_id);
  if (pair == pair_) return;
  pair_ = pair;
  records_.reset();
}

ControlRecords* PauseControl::Records() {
  if (records_ == nullptr && kafka_ != nullptr && !pair_.empty()) {
    records_ = std::make_unique<ControlRecords>(
        *kafka_, config_.kafka.state_topic, pair_, config_.postgres.slot,
        static_cast<int>(config_.kafka.flush_timeout_ms),
        config_.kafka.internal_topics);
  }
  return records_.get();
}

absl::Status PauseControl::Refresh() {
  std::lock_guard<std::mutex> lock(io_mu_);
  ControlRecords* records = Records();
  if (records == nullptr) {
    return absl::UnavailableError(
        "the pair is not known yet (no postgres.slot_marker_id, and no "
        "session has read the system identifier)");
  }
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> values =
      records->Read(kPauseSuffix);
  if (!values.ok()) return values.status();
  PauseRecord r;
  const std::string key = absl::StrCat(records->key_prefix(), kPauseSuffix);
  for (const auto& [k, v] : *values) {
    if (k != key) continue;
    absl::StatusOr<PauseRecord> parsed = PauseRecord::Parse(v);
    if (!parsed.ok()) return parsed.status();
    r = *std::move(parsed);
  }
  Apply(r);
  return absl::OkStatus();
}

absl::Status PauseControl::Request(bool paused, const std::string& by,
                                   const std::string& reason) {
  std::lock_guard<std::mutex> lock(io_mu_);
  ControlRecords* records = Records();
  if (records == nullptr) {
    return absl::UnavailableError(
        kafka_ == nullptr
            ? "the relay has not started its first session yet"
            : "the pair is not known yet: set postgres.slot_marker_id, or "
              "wait for this instance's first session");
  }
  PauseRecord r{paused, by, Rfc3339Now(), reason};
  if (absl::Status s = records->Write(kPauseSuffix, r.Encode()); !s.ok()) {
    return s;
  }
  Apply(r);
  return absl::OkStatus();
}

PauseRecord PauseControl::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

void PauseControl::Apply(const PauseRecord& r) {
  bool changed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    changed = r.paused != current_.paused;
    current_ = r;
  }
  paused_.store(r.paused, std::memory_order_relaxed);
  if (!changed) return;
  if (on_change_) on_change_(r.paused);
  if (r.paused) {
    Log(Severity::kWarn,
        "paused: reading nothing further from the replication stream (the "
        "slot stays held; POST /resume continues)",
        {{"by", r.by}, {"since", r.at}, {"reason", r.reason}});
  } else {
    Log(Severity::kInfo, "resumed: streaming continues",
        {{"by", r.by}, {"at", r.at}});
  }
}

}  // namespace outbox
