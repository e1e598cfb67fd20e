#include "relay/relay_config.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "outbox/status_macros.h"
#include "relay/heartbeat.h"

namespace outbox {
namespace {

PluginOptions::Binary BinaryChoice(PgOutputBinary binary) {
  switch (binary) {
    case PgOutputBinary::kOn:
      return PluginOptions::Binary::kOn;
    case PgOutputBinary::kOff:
      return PluginOptions::Binary::kOff;
    case PgOutputBinary::kAuto:
      break;
  }
  return PluginOptions::Binary::kAuto;
}

// The configured output plugin's options over the router's tables.
PluginOptions PluginOptionsFor(const Config& config, const Router& router) {
  PluginOptions o;
  for (const auto& t : router.RequiredColumns()) {
    o.tables.push_back({t.schema, t.table, t.columns});
  }
  o.publication = config.postgres.publication;
  o.create_publication = config.postgres.create_publication;
  o.binary = BinaryChoice(config.postgres.pgoutput_binary);
  if (config.outbox.messages.enabled) {
    o.message_prefixes.push_back(config.outbox.messages.prefix);
  }
  if (config.postgres.heartbeat_interval_s > 0) {
    o.message_prefixes.push_back(kHeartbeatPrefix);
  }
  o.decode_updates = config.outbox.on_update != OnUpdate::kIgnore;
  return o;
}

ReplicationOptions StreamOptions(const Config& config, const Router& router) {
  ReplicationOptions o;
  o.conninfo = config.postgres.conninfo;
  o.slot = config.postgres.slot;
  o.create_slot = config.postgres.create_slot;
  o.failover_slot = config.postgres.failover_slot;
  o.connect_timeout_s = static_cast<int>(config.postgres.connect_timeout_s);
  o.tcp_user_timeout_ms = static_cast<int>(config.postgres.tcp_user_timeout_ms);
  for (const auto& t : router.RequiredColumns()) {
    o.tables.push_back({t.schema, t.table, t.columns});
  }
  return o;
}

// librdkafka's linger: its alias and its name; its own default (5 ms) when
// neither is set (then the pipeline's default stays).
void SetBatchingDelay(const Config& config, RelayOptions* o) {
  for (const char* name : {"queue.buffering.max.ms", "linger.ms"}) {
    auto it = config.kafka.properties.find(name);
    double ms;
    if (it != config.kafka.properties.end() &&
        absl::SimpleAtod(it->second, &ms)) {
      o->batching_delay_us = static_cast<int64_t>(ms * 1000);
    }
  }
}

RelayOptions PipelineOptions(const Config& config) {
  RelayOptions o;
  o.status_interval_ms = static_cast<int>(config.postgres.status_interval_ms);
  o.read_coalesce_us = static_cast<int>(config.postgres.read_coalesce_us);
  o.max_inflight_events = config.limits.max_inflight_events;
  o.max_inflight_bytes = config.limits.max_inflight_bytes;
  o.min_inflight_bytes = config.limits.min_inflight_bytes;
  SetBatchingDelay(config, &o);
  o.max_tracked_events = config.limits.max_tracked_events;
  o.dead_letter = config.outbox.on_invalid == OnInvalid::kDeadLetter;
  o.dead_letter_topic = config.outbox.dead_letter_topic;
  o.on_update = config.outbox.on_update;
  o.flush_timeout_ms = static_cast<int>(config.kafka.flush_timeout_ms);
  o.send_when_idle = config.kafka.send_when_idle;
  o.progress_interval_s = static_cast<int>(config.log.progress_interval_s);
  return o;
}

TransactionOptions TransactionOptionsFor(const Config& config) {
  TransactionOptions txn;
  txn.checkpoint_topic = config.kafka.checkpoint_topic;
  txn.max_ms = config.kafka.transaction_max_ms;
  txn.max_events = config.kafka.transaction_max_events;
  txn.backlog_ms = config.kafka.transaction_backlog_ms;
  txn.split_events = config.kafka.transaction_split_events;
  txn.timeout_ms = TransactionTimeoutMs(config);
  txn.split_ms = txn.timeout_ms / 3;  // well before the broker aborts
  return txn;
}

std::string Mapping(const Config& config) {
  std::vector<std::string> parts;
  for (const OutboxTable& t : config.outbox.tables) {
    parts.push_back(absl::StrCat(t.QualifiedName(), " -> ", t.topic,
                                 " key=", t.key, " value=", t.columns.payload));
  }
  if (config.outbox.messages.enabled) {
    parts.push_back(absl::StrCat("messages '", config.outbox.messages.prefix,
                                 "' -> ", config.outbox.messages.topic));
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace

KafkaOptions RelayKafkaOptions(const Config& config) {
  KafkaOptions kafka{config.kafka.brokers, config.kafka.properties};
  // Under halt, a record the broker refuses must stop the producer before it
  // sends anything queued behind it (librdkafka would otherwise bump its
  // epoch and send the rest, some of the refused record's key, on its own
  // before the relay can purge them). Not under dead_letter: there a refused
  // record must fail alone, to be dead-lettered while the rest flows.
  if (config.outbox.on_invalid == OnInvalid::kHalt) {
    kafka.properties.emplace("enable.gapless.guarantee", "true");
  }
  return kafka;
}

int64_t TransactionTimeoutMs(const Config& config) {
  int64_t ms = 60000;
  auto it = config.kafka.properties.find("transaction.timeout.ms");
  if (it != config.kafka.properties.end() &&
      !absl::SimpleAtoi(it->second, &ms)) {
    ms = 60000;  // librdkafka refused it at Create() already
  }
  return ms;
}

absl::StatusOr<RelayConfig> DeriveRelayConfig(const Config& config,
                                              const Router& router) {
  if (config.outbox.messages.enabled &&
      config.outbox.messages.prefix == kHeartbeatPrefix) {
    return absl::InvalidArgumentError(
        absl::StrCat("outbox.messages.prefix \"", kHeartbeatPrefix,
                     "\" is the relay's heartbeat prefix"));
  }
  RelayConfig r;
  r.kafka = RelayKafkaOptions(config);
  r.transactions = TransactionOptionsFor(config);
  r.pipeline = PipelineOptions(config);
  r.plugin = PluginOptionsFor(config, router);
  r.stream = StreamOptions(config, router);
  r.mapping = Mapping(config);
  return r;
}

absl::StatusOr<RelayPlan> PlanRelay(const Config& config) {
  RelayPlan plan;
  ASSIGN_OR_RETURN(plan.router, Router::Create(config));
  ASSIGN_OR_RETURN(plan.derived, DeriveRelayConfig(config, *plan.router));
  ASSIGN_OR_RETURN(plan.plugin, OutputPlugin::Create(config.postgres.plugin,
                                                     plan.derived.plugin));
  if (config.outbox.messages.enabled) {
    ASSIGN_OR_RETURN(plan.message_router, MessageRouter::Create(config.outbox));
  }
  return plan;
}

}  // namespace outbox
