#include "audit/operator_skips.h"

#include "core/operator_actions.h"
#include "kafka/control_records.h"
#include "kafka/operator_records.h"
#include "pg/pg_connection.h"

namespace outbox {
namespace {

absl::StatusOr<std::string> SystemIdentifier(const Config& config) {
  absl::StatusOr<std::unique_ptr<PgConnection>> pg =
      ConnectPostgres(config, "outbox-audit");
  if (!pg.ok()) return pg.status();
  absl::StatusOr<PgResult> r =
      (*pg)->Query("SELECT system_identifier::text FROM pg_control_system()");
  if (!r.ok()) return r.status();
  return PgConnection::Value(*r, 0, 0);
}

}  // namespace

absl::StatusOr<std::unique_ptr<PgConnection>> ConnectPostgres(
    const Config& config, const std::string& application_name) {
  PgConnectOptions connect;
  connect.conninfo = config.postgres.conninfo;
  connect.application_name = application_name;
  connect.connect_timeout_s =
      static_cast<int>(config.postgres.connect_timeout_s);
  return PgConnection::Connect(connect);
}

std::unique_ptr<ControlRecords> OpenControlRecords(
    const Config& config, const std::string& system_id) {
  return std::make_unique<ControlRecords>(
      KafkaOptions{config.kafka.brokers, config.kafka.properties},
      config.kafka.state_topic,
      ControlPair(config.postgres.slot_marker_id, system_id),
      config.postgres.slot, static_cast<int>(config.kafka.flush_timeout_ms),
      config.kafka.internal_topics);
}

absl::StatusOr<OperatorSkips> ReadOperatorSkips(const Config& config) {
  std::string pair = config.postgres.slot_marker_id;
  if (pair.empty()) {
    absl::StatusOr<std::string> id = SystemIdentifier(config);
    if (!id.ok()) return id.status();
    pair = *id;
  }
  std::unique_ptr<ControlRecords> records = OpenControlRecords(config, pair);
  absl::StatusOr<std::vector<OperatorAction>> actions =
      ReadOperatorActions(records.get());
  if (!actions.ok()) return actions.status();
  OperatorSkips skips;
  for (const OperatorAction& a : *actions) {
    if (!a.applied) continue;
    for (const std::string& id : a.event_ids) {
      skips[id] = OperatorSkip{a.What(), a.by, a.at, a.reason};
    }
  }
  return skips;
}

}  // namespace outbox
