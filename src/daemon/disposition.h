// Disposition: the one place that decides what the end of an outbox-relay
// session means (STYLE.md rule 5): exit with a code, retry after a wait
// (and what the wait is for), restart at once, or create the missing topic
// first. The supervisor (relay/supervisor.h) hands every way a session can
// end here, from the start-up steps (building the configuration, opening
// the slot marker, taking the slot, creating the producer, reading the
// exactly-once checkpoint) to the end of streaming, and acts on the answer.
//
//   status                 stage            disposition
//   OK                     stream           stop, kExitOk (stopped)
//   any, plugin restart    stream           restart now (no backoff)
//   InvalidArgument        stream           exit kExitHalted (poison, halt)
//   DataLoss               stream, ckpt     exit kExitStream
//   FailedPrecondition     stream, ckpt     exit kExitPrecondition
//   FailedPrecondition,    connect          exit kExitPrecondition
//     InvalidArgument
//   NotFound, a blocked    stream           create the topic, then
//     topic, topic_creation                 AfterTopicCreation()
//   PermissionDenied /     stream           retry, waiting for the topic or
//     NotFound                              its ACL (growing backoff)
//   not Unavailable        producer         exit kExitUsage
//   any                    configure        exit kExitUsage
//   any                    slot marker      exit kExitPrecondition
//   anything else          any              retry: the standby interval
//                                           while another instance holds the
//                                           slot, else the backoff (reset
//                                           when the session made progress)
//
// Pure: no I/O, no clock; the caller logs and waits.
#ifndef OUTBOX_DAEMON_DISPOSITION_H_
#define OUTBOX_DAEMON_DISPOSITION_H_

#include <string>

#include "absl/status/status.h"
#include "daemon/exit_code.h"

namespace outbox {

// Where in a session's life it ended.
enum class SessionStage {
  kConfigure,       // router, plugin, message routes: the configuration
  kOpenSlotMarker,  // postgres.slot_marker could not be opened
  kConnect,         // taking the slot (the replication connection)
  kCreateProducer,  // the Kafka producer (and init_transactions)
  kReadCheckpoint,  // exactly once: the checkpoint topic and checkpoint
  kStream,          // the session streamed, then ended
};

// How a session ended: its status and what it knew then.
struct SessionEnd {
  SessionStage stage = SessionStage::kStream;
  absl::Status status;
  // The topic Kafka refused (a missing ACL or topic); "" when none.
  std::string blocked_topic;
  // kafka.topic_creation.enable: a missing topic may be created.
  bool topic_creation = false;
  // The output plugin asked for a new session at once (pgoutput's fallback
  // from binary to text).
  bool restart_requested = false;
  // Another instance holds the slot (IsSlotInUse): a healthy standby.
  bool slot_held_elsewhere = false;
  // The session delivered an event or confirmed a position.
  bool progressed = false;
};

struct Disposition {
  enum class Action {
    kStop,         // return exit_code (OK: stopped, or an error to exit on)
    kRetry,        // back to standby, wait, connect again
    kRestartNow,   // connect again at once
    kCreateTopic,  // create the blocked topic, then Dispose() its outcome
  };
  // What a retry waits for.
  enum class Wait {
    kNone,
    kBackoff,          // the reconnect backoff (doubling)
    kStandbyInterval,  // postgres.standby_retry_ms: the slot is held
    kBlockedTopic,     // the backoff, never reset: a topic or ACL is missing
  };

  Action action = Action::kStop;
  int exit_code = kExitOk;  // kStop only
  Wait wait = Wait::kNone;  // kRetry only
  // kRetry: what the wait is logged as waiting for ("PostgreSQL", "Kafka").
  const char* waiting_for = "PostgreSQL";
  // kRetry: the next backoff starts from the initial one.
  bool reset_backoff = false;

  bool operator==(const Disposition& o) const {
    return action == o.action && exit_code == o.exit_code && wait == o.wait &&
           std::string(waiting_for) == o.waiting_for &&
           reset_backoff == o.reset_backoff;
  }
};

Disposition Dispose(const SessionEnd& end);

// After kCreateTopic: created (`created` OK), a retry soon (the backoff
// reset: the next session produces to it); not created, `end` disposed of
// again as waiting for the topic, with `created` saying why (a missing ACL
// stays PermissionDenied, anything else becomes NotFound with its message).
// `status_out` (not null) receives the status the retry waits on.
Disposition AfterTopicCreation(const SessionEnd& end,
                               const absl::Status& created,
                               absl::Status* status_out);

}  // namespace outbox

#endif  // OUTBOX_DAEMON_DISPOSITION_H_
