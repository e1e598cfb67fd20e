#include "daemon/daemon_start.h"

#include <csignal>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "common/logging.h"
#include "common/version.h"
#include "config/kafka_safety.h"
#include "daemon/exit_code.h"

namespace outbox {
namespace {

std::atomic<bool>* g_stop = nullptr;
std::atomic<bool>* g_reload = nullptr;

void OnSignal(int) {
  if (g_stop != nullptr) g_stop->store(true);
}

// Only the flag: the supervisor re-reads on its own thread.
void OnHangup(int) {
  if (g_reload != nullptr) g_reload->store(true);
}

}  // namespace

DaemonStart StartDaemon(Tool tool, int argc, char** argv,
                        std::atomic<bool>* stop, std::atomic<bool>* reload) {
  DaemonStart out;
  const std::string program(ToolName(tool));
  absl::StatusOr<CommandLine> cl = ParseCommandLine(argc, argv, tool);
  if (!cl.ok()) {
    fprintf(stderr, "%s: %s\n", program.c_str(),
            std::string(cl.status().message()).c_str());
    out.exit_code = kExitUsage;
    return out;
  }
  if (cl->help) {
    fputs(HelpText(tool).c_str(), stdout);
    out.exit_code = 0;
    return out;
  }
  if (cl->version) {
    printf("%s\n", VersionLine(program).c_str());
    out.exit_code = 0;
    return out;
  }
  absl::StatusOr<Config> config = LoadConfig(*cl);
  if (!config.ok()) {
    fprintf(stderr, "%s: %s\n", program.c_str(),
            std::string(config.status().message()).c_str());
    out.exit_code = kExitUsage;
    return out;
  }
  SetLogFormat(config->log.format == LogFormat::kJson);
  SetLogSeverity(static_cast<Severity>(static_cast<int>(config->log.level)));
  if (cl->command == CommandLine::Command::kRun) {
    // Secrets masked (Config::RedactedEntries): the log may be shipped
    // anywhere.
    std::vector<std::pair<std::string, std::string>> entries =
        config->RedactedEntries();
    for (auto& [key, value] : entries) {
      if (value == "\"\"") value.clear();  // the logger quotes it
    }
    LogEntries(Severity::kInfo, "config", entries);
  }
  if (config->kafka.allow_unsafe) {
    for (const UnsafeKafkaProperty& u :
         UnsafeKafkaProperties(config->kafka.properties)) {
      Log(Severity::kWarn,
          "unsafe Kafka property accepted (kafka.allow_unsafe: true)",
          {{"property", u.name}, {"value", u.value}, {"risk", u.reason}});
    }
  }
  g_stop = stop;
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  // Only the daemon reloads; a command (status, republish, ...) keeps
  // SIGHUP's default.
  if (reload != nullptr && cl->command == CommandLine::Command::kRun) {
    g_reload = reload;
    struct sigaction hup = {};
    hup.sa_handler = OnHangup;
    sigaction(SIGHUP, &hup, nullptr);
  }
  signal(SIGPIPE, SIG_IGN);
  out.command_line = *std::move(cl);
  out.config = *std::move(config);
  return out;
}

}  // namespace outbox
