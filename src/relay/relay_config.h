// RelayConfig: what outbox-relay derives from its Config, computed once
// before the first session so no session re-reads kafka.properties or the
// configuration's enums: the producer's options (RelayKafkaOptions), the
// exactly-once transaction options (with the producer's
// transaction.timeout.ms), the pipeline's options (with the producer's
// linger as its batching delay), the output plugin's options (with the
// binary-transfer choice and the message prefixes, the heartbeat's
// included) and the replication stream's.
//
// Threading: plain values; DeriveRelayConfig() is a pure function.
#ifndef OUTBOX_RELAY_RELAY_CONFIG_H_
#define OUTBOX_RELAY_RELAY_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "config/config.h"
#include "core/transactional_commit_policy.h"
#include "kafka/rdkafka_sink.h"
#include "pg/libpq_replication_stream.h"
#include "plugin/output_plugin.h"
#include "relay/relay.h"
#include "route/message_router.h"
#include "route/router.h"

namespace outbox {

// The producer's options for outbox-relay: config.kafka, plus
// enable.gapless.guarantee=true under on_invalid: halt (unless set), so a
// record the broker refuses stops the producer before anything after it.
KafkaOptions RelayKafkaOptions(const Config& config);

// The producer's transaction.timeout.ms: kafka.properties' or librdkafka's
// default (60000).
int64_t TransactionTimeoutMs(const Config& config);

struct RelayConfig {
  KafkaOptions kafka;  // RelayKafkaOptions(); no connection listener yet
  // kafka.exactly_once: the commit policy's options (no clock yet).
  TransactionOptions transactions;
  // Every session's pipeline options (no per-session pointers or nonce).
  RelayOptions pipeline;
  PluginOptions plugin;
  // The stream's options (no plugin or slot marker yet).
  ReplicationOptions stream;
  // "schema.table -> topic key=... value=...; ..." for the log.
  std::string mapping;
};

// InvalidArgument when the configuration cannot work (outbox.messages'
// prefix is the heartbeat's). `router` gives the tables and columns.
absl::StatusOr<RelayConfig> DeriveRelayConfig(const Config& config,
                                              const Router& router);

// What a relay process builds from its Config before it asks any server:
// the router, the derived configuration, the output plugin and, for the
// tableless outbox, the message router. The supervisor (RunRelay()) and
// `outbox-relay validate` both build it here, so validate refuses exactly
// the cross-key combinations the daemon refuses at start. InvalidArgument
// (one line) when the configuration cannot work.
struct RelayPlan {
  std::unique_ptr<Router> router;
  RelayConfig derived;
  std::unique_ptr<OutputPlugin> plugin;
  std::unique_ptr<MessageRouter> message_router;  // null: no messages
};
absl::StatusOr<RelayPlan> PlanRelay(const Config& config);

}  // namespace outbox

#endif  // OUTBOX_RELAY_RELAY_CONFIG_H_
