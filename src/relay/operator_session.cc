#include "relay/operator_session.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "kafka/operator_records.h"

namespace outbox {
namespace {

// Each Kafka call of a session's operator records waits at most this long:
// they are read before the session streams (Kafka down: this session drops
// nothing, the next one reads them), so an outage delays the stream by
// seconds, not by kafka.flush_timeout_ms per call.
constexpr int64_t kOperatorRecordsTimeoutMs = 5000;

}  // namespace

OperatorSession::OperatorSession(const Config& config,
                                 const KafkaOptions& kafka,
                                 const std::string& system_id,
                                 RelayMetrics* metrics)
    : config_(config),
      metrics_(metrics),
      records_(kafka, config.kafka.state_topic,
               ControlPair(config.postgres.slot_marker_id, system_id),
               config.postgres.slot,
               static_cast<int>(std::min<int64_t>(config.kafka.flush_timeout_ms,
                                                  kOperatorRecordsTimeoutMs)),
               config.kafka.internal_topics) {}

void OperatorSession::Load() {
  absl::StatusOr<std::vector<OperatorAction>> read =
      ReadOperatorActions(&records_);
  if (!read.ok()) {
    Log(Severity::kWarn,
        "cannot read the operator's skip and advance records; this session "
        "drops nothing",
        {{"topic", config_.kafka.state_topic},
         {"error", std::string(read.status().message())}});
    return;
  }
  for (const OperatorAction& a : actions_.Add(*read)) {
    Log(Severity::kInfo, "operator action pending",
        {{"action", a.What()},
         {"by", a.by},
         {"at", a.at},
         {"reason", a.reason},
         {"record",
          absl::StrCat(records_.key_prefix(), OperatorRequestSuffix(a.id))}});
  }
}

void OperatorSession::Attach(RelayOptions* options) {
  options->operator_actions = &actions_;
  options->on_operator_applied = [this](const OperatorAction& a) {
    Applied(a);
  };
  options->on_operator_ids = [this](const OperatorIdPage& page) {
    if (absl::Status s = WriteOperatorIds(&records_, page); !s.ok()) {
      // Those events stay dropped; the audit calls them missing.
      Log(Severity::kWarn, "cannot write a page of the operator action's ids",
          {{"record",
            absl::StrCat(records_.key_prefix(),
                         OperatorIdsSuffix(page.action_id, page.first))},
           {"events", absl::StrCat(page.event_ids.size())},
           {"error", std::string(s.message())}});
    }
  };
}

std::vector<OperatorAction> OperatorSession::pending() const {
  return actions_.pending();
}

void OperatorSession::ShowPending() {
  if (metrics_ == nullptr) return;
  std::vector<std::string> lines;
  for (const OperatorAction& a : actions_.pending()) {
    lines.push_back(absl::StrCat(a.What(), " (by ", a.by, ", at ", a.at, ")"));
  }
  metrics_->SetOperatorActionsPending(std::move(lines));
}

void OperatorSession::Applied(const OperatorAction& a) {
  ShowPending();
  if (absl::Status s = WriteOperatorApplied(&records_, a); !s.ok()) {
    // The events stay dropped and confirmed, but the request stays pending
    // and the audit calls them missing (docs/operations/skip-and-advance.md).
    Log(Severity::kWarn, "cannot write the operator action's applied record",
        {{"action", a.What()}, {"error", std::string(s.message())}});
  }
}

}  // namespace outbox
