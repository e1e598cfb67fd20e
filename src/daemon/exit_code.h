// ExitCode: what the process exit status of every outbox daemon and tool
// means (outbox-relay, outbox-poller, outbox-audit). One table, so an
// operator's scripts and the README read the same codes everywhere.
#ifndef OUTBOX_DAEMON_EXIT_CODE_H_
#define OUTBOX_DAEMON_EXIT_CODE_H_

namespace outbox {

enum ExitCode : int {
  kExitOk = 0,
  kExitInternal = 1,
  kExitUsage = 2,         // bad command line or config file
  kExitPrecondition = 3,  // server not set up (the message says what to do)
  kExitHalted = 4,        // poison row with on_invalid = halt
  kExitStream = 5,        // undecodable replication stream
};

}  // namespace outbox

#endif  // OUTBOX_DAEMON_EXIT_CODE_H_
