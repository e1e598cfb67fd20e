#include "cli/validate_command.h"

#include <algorithm>
#include <memory>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/version.h"
#include "config/kafka_acls.h"
#include "daemon/exit_code.h"
#include "kafka/rdkafka_sink.h"
#include "kafka/topic_replication.h"
#include "pg/libpq_replication_stream.h"
#include "plugin/output_plugin.h"
#include "poller/libpq_outbox_store.h"
#include "poller/supervisor.h"
#include "relay/relay_config.h"
#include "relay/stored_slot_marker.h"

namespace outbox {
namespace {

// The metadata request waits at most this long (as the relay's start-up
// replication check does).
constexpr int64_t kKafkaCheckTimeoutMs = 10000;

// The relay's read-only checks against PostgreSQL: Inspect() with a plugin
// of its own that sets nothing up.
std::vector<StartupCheck> RelayPostgresChecks(const Config& config,
                                              const RelayPlan& plan) {
  PluginOptions plugin_options = plan.derived.plugin;
  plugin_options.read_only = true;
  absl::StatusOr<std::unique_ptr<OutputPlugin>> plugin =
      OutputPlugin::Create(config.postgres.plugin, plugin_options);
  if (!plugin.ok()) return {{"plugin", plugin.status(), ""}};
  ReplicationOptions options = plan.derived.stream;
  options.plugin = plugin->get();
  options.application_name = "outbox-relay validate";
  // The slot marker (postgres.slot_marker): a missing slot the relay
  // streamed from before is refused as the relay refuses it.
  absl::StatusOr<std::unique_ptr<StoredSlotMarker>> marker =
      OpenSlotMarker(config, plan.derived.kafka);
  if (!marker.ok()) return {{"slot marker", marker.status(), ""}};
  options.slot_marker = marker->get();
  return LibpqReplicationStream::Inspect(options);
}

// The poller's start-up check: its store's Connect(), which only reads and
// prepares (the tables, the poller columns, the role's privileges).
std::vector<StartupCheck> PollerPostgresChecks(const Config& config,
                                               const Router& router) {
  StoreOptions options = MakeStoreOptions(config, router);
  options.application_name = "outbox-poller validate";
  options.notify_channel.clear();  // no LISTEN: nothing to wait for
  absl::StatusOr<std::unique_ptr<LibpqOutboxStore>> store =
      LibpqOutboxStore::Connect(options);
  if (!store.ok()) return {{"postgres", store.status(), ""}};
  std::vector<std::string> tables;
  for (const StoreOptions::Table& t : options.tables) {
    tables.push_back(absl::StrCat(t.schema, ".", t.name));
  }
  return {{"postgres", absl::OkStatus(),
           absl::StrCat("connected, PostgreSQL ", (*store)->server_version(),
                        "; ", absl::StrJoin(tables, ", "),
                        " have the mapped and poller columns, and the role "
                        "may SELECT, UPDATE",
                        options.needs_delete ? ", DELETE" : "", " them")}};
}

// Kafka: the brokers answer; each literal topic the tool writes exists or
// is one it creates (a missing one is a warning: the daemon waits for it,
// and brokers may create topics on first use); the relay's replication
// check. Read only.
std::vector<StartupCheck> KafkaChecks(const Config& config,
                                      const KafkaOptions& kafka,
                                      AclClient client) {
  std::vector<StartupCheck> out;
  absl::StatusOr<ClusterReplication> cluster = DescribeTopicReplication(
      kafka, static_cast<int>(std::min<int64_t>(config.kafka.flush_timeout_ms,
                                                kKafkaCheckTimeoutMs)));
  if (!cluster.ok()) {
    out.push_back({"kafka", cluster.status(), ""});
    return out;
  }
  out.push_back({"kafka", absl::OkStatus(),
                 absl::StrCat(cluster->brokers, " broker(s) answered at ",
                              config.kafka.brokers)});
  std::set<std::string> existing;
  for (const TopicReplicationFactor& t : cluster->topics) {
    existing.insert(t.topic);
  }
  const std::vector<KafkaAcl> acls = KafkaAcls(config, client);
  for (const KafkaAcl& acl : acls) {
    if (acl.resource != "topic") continue;
    const std::string check = absl::StrCat("topic ", acl.name);
    if (acl.prefixed || acl.name == "*") {
      const size_t n = std::count_if(
          existing.begin(), existing.end(), [&acl](const std::string& t) {
            return acl.name == "*" || absl::StartsWith(t, acl.name);
          });
      out.push_back(
          {absl::StrCat("topics ", acl.name, acl.name == "*" ? "" : "*"),
           absl::OkStatus(),
           absl::StrCat(n,
                        " exist; a topic named from the events "
                        "(outbox.topic) is checked when the first event "
                        "goes there")});
      continue;
    }
    if (existing.count(acl.name)) {
      out.push_back({check, absl::OkStatus(), "exists"});
      continue;
    }
    const bool internal = acl.name == config.kafka.checkpoint_topic ||
                          acl.name == config.kafka.state_topic;
    if (internal) {
      out.push_back({check, absl::OkStatus(),
                     "does not exist; the relay creates it (compacted) at "
                     "start"});
    } else if (config.kafka.topic_creation.enable) {
      out.push_back({check, absl::OkStatus(),
                     "does not exist; created when the first event goes "
                     "there (kafka.topic_creation.enable)"});
    } else {
      // Not a failure: the relay waits for it at its first event, and a
      // broker with auto.create.topics.enable makes it then.
      out.push_back(
          {check, absl::OkStatus(),
           absl::StrCat(
               "warning: does not exist yet, or the principal may not "
               "Describe it: unless the brokers create topics on first use "
               "(auto.create.topics.enable), the ",
               client == AclClient::kPoller ? "poller" : "relay",
               " waits at its first event there; create it (or set "
               "kafka.topic_creation.enable) and grant what `",
               client == AclClient::kPoller ? "outbox-poller" : "outbox-relay",
               " acls` prints")});
    }
  }
  const std::string warning = UnreplicatedTopicsWarning(
      UnreplicatedTopics(*cluster, acls), cluster->brokers);
  out.push_back({"replication", absl::OkStatus(),
                 warning.empty()
                     ? "no topic the tool depends on has replication factor "
                       "1 on a cluster of 3 or more brokers"
                     : absl::StrCat("warning: ", warning)});
  return out;
}

}  // namespace

int ValidateExitCode(const std::vector<StartupCheck>& checks) {
  bool unreachable = false;
  for (const StartupCheck& c : checks) {
    if (c.status.ok()) continue;
    if (absl::IsUnavailable(c.status) || absl::IsDeadlineExceeded(c.status)) {
      unreachable = true;
    } else {
      return kExitPrecondition;  // a server answered: not set up
    }
  }
  return unreachable ? kExitInternal : kExitOk;
}

int RunValidateCommand(Tool tool, const Config& config, bool connect, FILE* out,
                       FILE* err) {
  const std::string program(ToolName(tool));
  // The cross-key rules the daemon applies before it asks a server.
  absl::StatusOr<RelayPlan> plan;
  absl::StatusOr<std::unique_ptr<Router>> router;
  absl::Status planned;
  if (tool == Tool::kRelay) {
    plan = PlanRelay(config);
    planned = plan.status();
  } else {
    router = PollerRouter(config);
    planned = router.status();
  }
  if (!planned.ok()) {
    fprintf(err, "%s: %s\n", program.c_str(),
            std::string(planned.message()).c_str());
    return kExitUsage;
  }
  fprintf(out, "# %s: the effective configuration, secrets masked\n%s",
          VersionLine(program).c_str(), config.Redacted().c_str());
  std::vector<StartupCheck> checks;
  checks.push_back(
      {"config", absl::OkStatus(),
       absl::StrCat(
           "valid: ", config.outbox.tables.size(), " outbox table(s)",
           tool == Tool::kRelay
               ? absl::StrCat(", plugin ", config.postgres.plugin, ", slot ",
                              config.postgres.slot)
               : absl::StrCat(", mode ", EnumName(config.poller.mode)))});
  if (connect) {
    std::vector<StartupCheck> pg;
    KafkaOptions kafka;
    if (tool == Tool::kRelay) {
      pg = RelayPostgresChecks(config, *plan);
      kafka = plan->derived.kafka;
    } else {
      pg = PollerPostgresChecks(config, **router);
      kafka = KafkaOptions{config.kafka.brokers, config.kafka.properties};
      kafka.properties.emplace("client.id", "outbox-poller");
    }
    checks.insert(checks.end(), pg.begin(), pg.end());
    // librdkafka's own warnings (a broker down, an experimental property)
    // would interleave with the lines; the FAIL line says what failed.
    // (insert_or_assign with a std::string: GCC 12's -Wrestrict misreads
    // the inlined assignment of a literal, an error under OUTBOX_WERROR.)
    kafka.properties.insert_or_assign("log_level", std::string(1, '2'));
    std::vector<StartupCheck> k = KafkaChecks(
        config, kafka,
        tool == Tool::kRelay ? AclClient::kRelay : AclClient::kPoller);
    checks.insert(checks.end(), k.begin(), k.end());
  }
  for (const StartupCheck& c : checks) {
    fprintf(out, "%s\n", FormatStartupCheck(c).c_str());
  }
  fflush(out);
  return ValidateExitCode(checks);
}

}  // namespace outbox
