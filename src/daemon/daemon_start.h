// StartDaemon: the start-up both daemons (outbox-relay, outbox-poller)
// share: parse the command line, answer --help / --version, load and
// validate the configuration, set up logging, and make SIGTERM/SIGINT set
// a stop flag and SIGHUP a reload flag (SIGPIPE ignored). The handlers only
// set the flags; the supervisor acts on them (daemon/config_reload.h).
//
// Call once from main(), before any other thread starts.
#ifndef OUTBOX_DAEMON_DAEMON_START_H_
#define OUTBOX_DAEMON_DAEMON_START_H_

#include <atomic>
#include <optional>

#include "config/command_line.h"
#include "config/config.h"

namespace outbox {

struct DaemonStart {
  // Set when main() should return at once: 0 after --help/--version, 2 (the
  // usage exit code) after a command-line or configuration error, which
  // has been printed as one line.
  std::optional<int> exit_code;
  CommandLine command_line;
  Config config;
};

// `stop` must live for the rest of the process; signals set it. So must
// `reload` when given: SIGHUP sets it while the daemon runs (the run
// command; otherwise SIGHUP keeps its default action, ending the process).
// `tool` decides the commands, flags and help text (config/tool.h).
DaemonStart StartDaemon(Tool tool, int argc, char** argv,
                        std::atomic<bool>* stop,
                        std::atomic<bool>* reload = nullptr);

}  // namespace outbox

#endif  // OUTBOX_DAEMON_DAEMON_START_H_
