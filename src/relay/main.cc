// outbox-relay: publishes outbox rows from PostgreSQL's WAL to Kafka.
// See README.md; `outbox-relay --help` lists every setting.
#include <csignal>
#include <cstdio>

#include "common/logging.h"
#include "config/command_line.h"
#include "config/config.h"
#include "relay/supervisor.h"

namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop.store(true); }

}  // namespace

int main(int argc, char** argv) {
  using namespace outbox;
  absl::StatusOr<CommandLine> cl = ParseCommandLine(argc, argv);
  if (!cl.ok()) {
    fprintf(stderr, "outbox-relay: %s (see --help)\n",
            std::string(cl.status().message()).c_str());
    return kExitUsage;
  }
  if (cl->help) {
    fputs(HelpText(cl->program).c_str(), stdout);
    return kExitOk;
  }
  if (cl->version) {
    puts("outbox-relay " OUTBOX_VERSION);
    return kExitOk;
  }
  absl::StatusOr<Config> config = LoadConfig(*cl);
  if (!config.ok()) {
    fprintf(stderr, "outbox-relay: %s\n",
            std::string(config.status().message()).c_str());
    return kExitUsage;
  }
  SetLogFormat(config->log.format == LogFormat::kJson);
  SetLogSeverity(static_cast<Severity>(static_cast<int>(config->log.level)));
  if (cl->command != CommandLine::Command::kRun) {
    fprintf(stderr, "outbox-relay: the status command is not built yet\n");
    return kExitUsage;
  }
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return RunRelay(*config, g_stop);
}
