// ExitCode: what the process exit status of every outbox daemon and tool
// means (outbox-relay, outbox-poller, outbox-audit). One table, so an
// operator's scripts and the documentation read the same codes everywhere:
// docs/reference/exit-codes.md and the man pages are generated from
// kExitCodes (outbox-docgen), and docs/operations/runbooks.md has a section
// per code, anchor "exit-<code>".
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

struct ExitCodeDoc {
  ExitCode code;
  const char* name;
  const char* meaning;
};

// Every code, in order; a new ExitCode needs its entry here (the generated
// reference and its test read this).
inline constexpr ExitCodeDoc kExitCodes[] = {
    {kExitOk, "ok",
     "stopped by SIGTERM or SIGINT after flushing Kafka and confirming the "
     "final position; a command (status, republish, skip, advance, "
     "from-debezium, validate: every check ok) or an audit that succeeded"},
    {kExitInternal, "failed",
     "the work was not done: outbox-relay republish could not deliver every "
     "missing event or read a server, outbox-relay status could not query "
     "PostgreSQL, skip or advance could not read a server or write the "
     "record, validate --connect could not reach PostgreSQL or Kafka (and "
     "nothing else failed), from-debezium's translation did not load, or "
     "outbox-audit found a difference (the audit failed)"},
    {kExitUsage, "usage",
     "bad command line or configuration file, including kafka.properties "
     "that weaken the delivery guarantees and an HTTP listener that cannot "
     "be bound"},
    {kExitPrecondition, "precondition",
     "the server is not set up for the relay, or the slot is gone or "
     "invalidated: the one-line message says what to change and names the "
     "events no slot holds; republish or outbox-audit found a table or "
     "column missing, or a table that no longer holds the rows selected "
     "(it deletes its rows); outbox-relay skip or advance refused (a relay "
     "publishes from the slot and is not paused, or nothing to do); "
     "validate --connect: a check failed on what a server answered (its "
     "FAIL line says what)"},
    {kExitHalted, "halted",
     "a poison row or message under outbox.on_invalid: halt (or an UPDATE "
     "under outbox.on_update: halt): the message names the event id and "
     "LSN, which stays unconfirmed"},
    {kExitStream, "stream",
     "a replication record the decoder cannot read (the message gives its "
     "LSN), or a malformed replication protocol message"},
};

}  // namespace outbox

#endif  // OUTBOX_DAEMON_EXIT_CODE_H_
