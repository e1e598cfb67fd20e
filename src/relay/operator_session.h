// OperatorSession: the operator's skips and advances (core/operator_actions.h)
// for one replication session. Load() reads the pair's operator records
// from kafka.state_topic (kafka/operator_records.h) before the session
// produces anything; Attach() hands the pending ones to the Relay, whose
// applied actions it records (the "applied" record: how many events, which
// ids) and logs.
//
// Reading fails open: when the records cannot be read, one warning says so
// and the session drops nothing (a poison event halts it again; no event
// is lost, none skipped that was not named).
//
// Threading: the supervisor's thread, then the Relay's (the same one).
#ifndef OUTBOX_RELAY_OPERATOR_SESSION_H_
#define OUTBOX_RELAY_OPERATOR_SESSION_H_

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/operator_actions.h"
#include "kafka/control_records.h"
#include "kafka/rdkafka_sink.h"
#include "relay/relay.h"
#include "relay/relay_metrics.h"

namespace outbox {

class OperatorSession {
 public:
  // `system_id`: the server's, the pair's name without
  // postgres.slot_marker_id. `metrics` (may be null) shows the pending
  // actions on /status.json.
  OperatorSession(const Config& config, const KafkaOptions& kafka,
                  const std::string& system_id, RelayMetrics* metrics);

  // Reads the records (again: actions asked since are added; those under
  // way keep what they dropped). Logs each pending action once.
  void Load();
  // Points the Relay's options at the pending actions and their records.
  void Attach(RelayOptions* options);
  // The actions not applied yet (status.json).
  std::vector<OperatorAction> pending() const;

 private:
  void Applied(const OperatorAction& a);
  void ShowPending();

  const Config& config_;
  RelayMetrics* const metrics_;
  ControlRecords records_;
  OperatorActions actions_;
};

}  // namespace outbox

#endif  // OUTBOX_RELAY_OPERATOR_SESSION_H_
