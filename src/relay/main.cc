// outbox-relay: publishes outbox rows from PostgreSQL's WAL to Kafka.
// See docs/reference/outbox-relay.md; `outbox-relay --help` lists every
// setting.
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "cli/from_debezium_command.h"
#include "cli/operator_command.h"
#include "cli/republish_command.h"
#include "cli/status_command.h"
#include "cli/validate_command.h"
#include "common/logging.h"
#include "common/version.h"
#include "config/command_line.h"
#include "config/config.h"
#include "config/kafka_acls.h"
#include "daemon/build_info.h"
#include "daemon/config_reload.h"
#include "daemon/daemon_start.h"
#include "http/metrics_server.h"
#include "outbox/clock.h"
#include "prometheus/registry.h"
#include "relay/pause_control.h"
#include "relay/relay_health.h"
#include "relay/relay_metrics.h"
#include "relay/supervisor.h"

namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_reload{false};  // SIGHUP (daemon/config_reload.h)

// /status.json: the metrics' figures, the configured limits, and the pause
// (with http.control.enabled).
outbox::StatusSnapshot Status(const outbox::RelayMetrics& metrics,
                              const outbox::Config& config,
                              const outbox::PauseControl* pause) {
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
  if (pause != nullptr) {
    const PauseRecord r = pause->current();
    s.paused = r.paused;
    if (r.paused) {
      s.paused_by = r.by;
      s.paused_since = r.at;
      s.paused_reason = r.reason;
    }
  }
  return s;
}

// POST /pause and /resume: the new state, as /status.json has it.
absl::StatusOr<std::string> PauseRequest(outbox::PauseControl& pause,
                                         const std::string& action,
                                         const std::string& by,
                                         const std::string& reason) {
  using namespace outbox;
  if (absl::Status s = pause.Request(action == "pause", by, reason); !s.ok()) {
    return s;
  }
  const PauseRecord r = pause.current();
  std::string out =
      absl::StrCat("{\"paused\":", r.paused ? "true" : "false", ",\"by\":");
  AppendJsonString(&out, r.by);
  out += r.paused ? ",\"since\":" : ",\"at\":";
  AppendJsonString(&out, r.at);
  if (r.paused) {
    out += ",\"reason\":";
    AppendJsonString(&out, r.reason);
  }
  out += "}";
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace outbox;
  DaemonStart start = StartDaemon(Tool::kRelay, argc, argv, &g_stop, &g_reload);
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
  if (start.command_line.command == CommandLine::Command::kSkip ||
      start.command_line.command == CommandLine::Command::kAdvance) {
    return RunOperatorCommand(*config, start.command_line.command,
                              start.command_line.operator_action, stdout,
                              stderr);
  }
  if (start.command_line.command == CommandLine::Command::kRepublish) {
    return RunRepublishCommand(*config, start.command_line.rows,
                               start.command_line.republish, stdout, stderr);
  }

  auto metrics =
      std::make_unique<RelayMetrics>(std::make_shared<prometheus::Registry>());
  metrics->Heartbeat(RealClock()->NowMicros());
  // The configuration in force, start-up's until a SIGHUP changes it.
  ConfigReloader reloader(start.command_line, start.config, &g_reload,
                          &metrics->config_reload());
  std::unique_ptr<PauseControl> pause;
  if (config->http.control_enabled) {
    RelayMetrics* m = metrics.get();
    m->SetPaused(false);
    pause = std::make_unique<PauseControl>(
        *config, [m](bool paused) { m->SetPaused(paused); });
  }
  RegisterBuildInfo(*metrics->registry(), "outbox_relay",
                    {{"plugin", config->postgres.plugin}});
  std::unique_ptr<MetricsServer> http;
  std::string http_listen = "disabled";
  if (!config->http.listen.empty()) {
    RelayMetrics* m = metrics.get();
    ConfigReloader* r = &reloader;
    PauseControl* p = pause.get();
    HttpControl control;
    if (p != nullptr) {
      control.token = config->http.control_token;
      control.handle = [p](const std::string& action, const std::string& by,
                           const std::string& reason) {
        return PauseRequest(*p, action, by, reason);
      };
    }
    auto server = MetricsServer::Start(
        config->http.listen, metrics->registry(),
        [m, r] {
          return RelayHealth(*m, *r->current(), RealClock()->NowMicros());
        },
        [m, r, p] { return Status(*m, *r->current(), p); }, std::move(control));
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
  int code = RunRelay(*config, g_stop, metrics.get(), RealClock(), &reloader,
                      /*restart=*/nullptr, pause.get());
  http.reset();   // before the metrics and the pause it serves
  pause.reset();  // before the metrics it sets
  return code;
}
