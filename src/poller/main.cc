// outbox-poller: publishes outbox rows to Kafka by polling the table
// (SELECT ... FOR UPDATE SKIP LOCKED), for databases where logical
// replication is not available and as outbox-relay's benchmark baseline.
// Same configuration file and flags as outbox-relay; see README.md.
#include <prometheus/registry.h>

#include <csignal>
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "config/command_line.h"
#include "config/config.h"
#include "http/metrics_server.h"
#include "outbox/clock.h"
#include "poller/poller_metrics.h"
#include "poller/supervisor.h"
#include "relay/supervisor.h"  // ExitCode

namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop.store(true); }

}  // namespace

int main(int argc, char** argv) {
  using namespace outbox;
  absl::StatusOr<CommandLine> cl = ParseCommandLine(argc, argv);
  if (!cl.ok()) {
    fprintf(stderr, "outbox-poller: %s (see --help)\n",
            std::string(cl.status().message()).c_str());
    return kExitUsage;
  }
  if (cl->help) {
    fputs(HelpText(cl->program).c_str(), stdout);
    return kExitOk;
  }
  if (cl->version) {
    puts("outbox-poller " OUTBOX_VERSION);
    return kExitOk;
  }
  absl::StatusOr<Config> config = LoadConfig(*cl);
  if (!config.ok()) {
    fprintf(stderr, "outbox-poller: %s\n",
            std::string(config.status().message()).c_str());
    return kExitUsage;
  }
  SetLogFormat(config->log.format == LogFormat::kJson);
  SetLogSeverity(static_cast<Severity>(static_cast<int>(config->log.level)));
  if (cl->command != CommandLine::Command::kRun) {
    fprintf(stderr, "outbox-poller: the status command is not built yet\n");
    return kExitUsage;
  }
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto registry = std::make_shared<prometheus::Registry>();
  PollerMetrics metrics(*registry);
  std::unique_ptr<MetricsServer> server;
  if (!config->http.listen.empty()) {
    // Alive while the loop turns (an idle wait is at most interval_ms; a
    // batch waits for Kafka at most a while), ready while connected.
    const int64_t stale_us = 60'000'000 + 2 * config->poller.interval_ms * 1000;
    auto started = MetricsServer::Start(
        config->http.listen, registry, [&metrics, stale_us] {
          HealthState h;
          int64_t last = metrics.last_turn_us.load();
          bool ready = metrics.ready.load();
          h.alive = !ready || RealClock()->NowMicros() - last < stale_us;
          h.ready = ready;
          h.detail = ready ? "polling" : "connecting to PostgreSQL";
          return h;
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
  int code = RunPoller(*config, &metrics, g_stop);
  server.reset();
  return code;
}
