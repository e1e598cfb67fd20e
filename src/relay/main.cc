// outbox-relay: publishes outbox rows from PostgreSQL's WAL to Kafka.
// See docs/reference/outbox-relay.md; `outbox-relay --help` lists every
// setting.
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "cli/from_debezium_command.h"
#include "cli/republish_command.h"
#include "cli/status_command.h"
#include "cli/validate_command.h"
#include "common/logging.h"
#include "common/version.h"
#include "config/command_line.h"
#include "config/config.h"
#include "config/kafka_acls.h"
#include "daemon/build_info.h"
#include "daemon/daemon_start.h"
#include "http/metrics_server.h"
#include "outbox/clock.h"
#include "prometheus/registry.h"
#include "relay/relay_health.h"
#include "relay/relay_metrics.h"
#include "relay/supervisor.h"

namespace {

std::atomic<bool> g_stop{false};

// /status.json: the metrics' figures and the configured limits.
outbox::StatusSnapshot Status(const outbox::RelayMetrics& metrics,
                              const outbox::Config& config) {
  using namespace outbox;
  StatusSnapshot s;
  s.service = "outbox-relay";
  s.version = Version();
  s.unix_ms = RealClock()->UnixMicros() / 1000;
  metrics.FillStatus(&s);
  if (s.inflight_events.has_value()) {
    s.max_inflight_events = config.limits.max_inflight_events;
    s.max_inflight_bytes = config.limits.max_inflight_bytes;
    s.max_tracked_events = config.limits.max_tracked_events;
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace outbox;
  DaemonStart start = StartDaemon(Tool::kRelay, argc, argv, &g_stop);
  if (start.exit_code) return *start.exit_code;
  const Config* config = &start.config;
  if (start.command_line.command == CommandLine::Command::kValidate) {
    return RunValidateCommand(Tool::kRelay, *config,
                              start.command_line.validate_connect, stdout,
                              stderr);
  }
  if (start.command_line.command == CommandLine::Command::kStatus) {
    return RunStatusCommand(*config, stdout, stderr);
  }
  if (start.command_line.command == CommandLine::Command::kFromDebezium) {
    return RunFromDebeziumCommand(start.command_line.debezium_config,
                                  start.command_line.debezium_version, stdout,
                                  stderr);
  }
  if (start.command_line.command == CommandLine::Command::kAcls) {
    return RunAclsCommand(*config, AclClient::kRelay,
                          start.command_line.acl_principal, stdout);
  }
  if (start.command_line.command == CommandLine::Command::kRepublish) {
    return RunRepublishCommand(*config, start.command_line.republish, stdout,
                               stderr);
  }

  auto metrics =
      std::make_unique<RelayMetrics>(std::make_shared<prometheus::Registry>());
  metrics->Heartbeat(RealClock()->NowMicros());
  RegisterBuildInfo(*metrics->registry(), "outbox_relay",
                    {{"plugin", config->postgres.plugin}});
  std::unique_ptr<MetricsServer> http;
  std::string http_listen = "disabled";
  if (!config->http.listen.empty()) {
    const Config& c = *config;
    RelayMetrics* m = metrics.get();
    auto server = MetricsServer::Start(
        c.http.listen, metrics->registry(),
        [m, &c] { return RelayHealth(*m, c, RealClock()->NowMicros()); },
        [m, &c] { return Status(*m, c); });
    if (!server.ok()) {
      Log(Severity::kError, std::string(server.status().message()));
      return kExitUsage;
    }
    http = std::move(*server);
    std::string host =
        config->http.listen.substr(0, config->http.listen.rfind(':'));
    http_listen = absl::StrCat(host, ":", http->port());
  }
  Log(Severity::kInfo, "starting",
      {{"version", Version()},
       {"revision", GitRevision()},
       {"slot", config->postgres.slot},
       {"http_listen", http_listen}});
  int code = RunRelay(*config, g_stop, metrics.get());
  http.reset();  // before the metrics it serves
  return code;
}
