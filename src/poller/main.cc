// outbox-poller: publishes outbox rows to Kafka by polling the table
// (SELECT ... FOR UPDATE SKIP LOCKED), for databases where logical
// replication is not available and as outbox-relay's benchmark baseline.
// Same configuration file and flags as outbox-relay; see
// docs/concepts/polling-relay.md.
#include <prometheus/registry.h>

#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "cli/validate_command.h"
#include "common/logging.h"
#include "common/version.h"
#include "config/command_line.h"
#include "config/config.h"
#include "config/kafka_acls.h"
#include "daemon/build_info.h"
#include "daemon/config_reload.h"
#include "daemon/daemon_start.h"
#include "daemon/exit_code.h"
#include "http/metrics_server.h"
#include "outbox/clock.h"
#include "poller/poller_metrics.h"
#include "poller/supervisor.h"

namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_reload{false};  // SIGHUP (daemon/config_reload.h)

}  // namespace

int main(int argc, char** argv) {
  using namespace outbox;
  DaemonStart start =
      StartDaemon(Tool::kPoller, argc, argv, &g_stop, &g_reload);
  if (start.exit_code) return *start.exit_code;
  const Config* config = &start.config;
  if (start.command_line.command == CommandLine::Command::kValidate) {
    return RunValidateCommand(Tool::kPoller, *config,
                              start.command_line.validate_connect, stdout,
                              stderr);
  }
  if (start.command_line.command == CommandLine::Command::kAcls) {
    return RunAclsCommand(*config, AclClient::kPoller,
                          start.command_line.acl_principal, stdout);
  }

  auto registry = std::make_shared<prometheus::Registry>();
  PollerMetrics metrics(*registry);
  RegisterBuildInfo(*registry, "outbox_poller");
  std::unique_ptr<MetricsServer> server;
  if (!config->http.listen.empty()) {
    // Alive while the loop turns (an idle wait is at most interval_ms; a
    // batch waits for Kafka at most a while), ready while connected.
    const int64_t stale_us = 60'000'000 + 2 * config->poller.interval_ms * 1000;
    auto started = MetricsServer::Start(
        config->http.listen, registry,
        [&metrics, stale_us] {
          HealthState h;
          int64_t last = metrics.last_turn_us.load();
          bool ready = metrics.ready.load();
          h.alive = !ready || RealClock()->NowMicros() - last < stale_us;
          h.ready = ready;
          h.active = ready;
          h.role = std::string(RoleName(metrics.role.role()));
          h.detail = ready ? "polling" : "connecting to PostgreSQL";
          return h;
        },
        [&metrics] {
          StatusSnapshot s;
          s.service = "outbox-poller";
          s.version = Version();
          s.unix_ms = RealClock()->UnixMicros() / 1000;
          metrics.FillStatus(&s);
          return s;
        });
    if (!started.ok()) {
      Log(Severity::kError, std::string(started.status().message()));
      return kExitUsage;
    }
    server = std::move(*started);
    Log(Severity::kInfo, "serving metrics",
        {{"listen", config->http.listen},
         {"port", absl::StrCat(server->port())}});
  }
  ConfigReloader reloader(start.command_line, start.config, &g_reload,
                          &metrics.config_reload);
  int code = RunPoller(*config, &metrics, g_stop, &reloader);
  server.reset();
  return code;
}
