// outbox-relay: publishes outbox rows from PostgreSQL's WAL to Kafka.
// See docs/reference/outbox-relay.md; `outbox-relay --help` lists every
// setting.
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/version.h"
#include "config/command_line.h"
#include "config/config.h"
#include "daemon/daemon_start.h"
#include "http/metrics_server.h"
#include "outbox/clock.h"
#include "prometheus/registry.h"
#include "relay/from_debezium_command.h"
#include "relay/relay_metrics.h"
#include "relay/republish_command.h"
#include "relay/status_command.h"
#include "relay/supervisor.h"

namespace {

std::atomic<bool> g_stop{false};

// /healthz fails when neither the relay loop nor the supervisor has turned
// for this long. Connecting can block up to connect_timeout_s, so that
// counts on top.
constexpr int64_t kAliveSlackUs = 5'000'000;

outbox::HealthState Health(const outbox::RelayMetrics& metrics,
                           const outbox::Config& config) {
  using namespace outbox;
  HealthState h;
  int64_t idle_us = RealClock()->NowMicros() - metrics.last_turn_us();
  h.alive =
      idle_us < kAliveSlackUs + config.postgres.connect_timeout_s * 1'000'000;
  std::string slot_problem = metrics.slot_problem();
  if (slot_problem.empty() && config.postgres.heartbeat_interval_s > 0) {
    slot_problem = metrics.heartbeat_problem(
        RealClock()->NowMicros(),
        config.postgres.heartbeat_timeout_s * 1'000'000);
  }
  h.ready = h.alive && metrics.ready() && slot_problem.empty();
  if (!h.alive) {
    h.detail = absl::StrCat("relay loop has not turned for ",
                            idle_us / 1'000'000, " s");
  } else if (!slot_problem.empty()) {
    h.detail = slot_problem;
  } else if (h.ready) {
    h.detail = absl::StrCat("streaming from slot ", config.postgres.slot);
  } else {
    h.detail = absl::StrCat("not streaming from slot ", config.postgres.slot,
                            " (connecting or waiting to reconnect)");
  }
  return h;
}

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
  if (start.command_line.command == CommandLine::Command::kStatus) {
    return RunStatusCommand(*config, stdout, stderr);
  }
  if (start.command_line.command == CommandLine::Command::kFromDebezium) {
    return RunFromDebeziumCommand(start.command_line.debezium_config, stdout,
                                  stderr);
  }
  if (start.command_line.command == CommandLine::Command::kRepublish) {
    return RunRepublishCommand(*config, start.command_line.republish, stdout,
                               stderr);
  }

  auto metrics =
      std::make_unique<RelayMetrics>(std::make_shared<prometheus::Registry>());
  metrics->Heartbeat(RealClock()->NowMicros());
  std::unique_ptr<MetricsServer> http;
  std::string http_listen = "disabled";
  if (!config->http.listen.empty()) {
    const Config& c = *config;
    RelayMetrics* m = metrics.get();
    auto server = MetricsServer::Start(
        c.http.listen, metrics->registry(), [m, &c] { return Health(*m, c); },
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
