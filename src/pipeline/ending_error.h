// EndingError: which error ends a relay session, when several are at hand
// as Relay::Shutdown() begins. A pure function of three statuses:
//
//   loop           what ended the loop (OK: a stop was requested)
//   failed_report  the first failed delivery report's error (OK: none)
//   health         the producer's health (EventSink::health())
//
// Precedence, first match wins:
//   1. the producer is healthy, or not stopped at a refused record
//      (health not InvalidArgument)                     -> loop
//   2. the loop hit a record the decoder cannot read (DataLoss)
//                                                        -> loop
//   3. the refused record's own report, served: a missing ACL or topic
//      (waited for, not poison), or its refusal naming the event
//                                                        -> failed_report
//   4. the loop's own poison halt (InvalidArgument)      -> loop
//   5. otherwise the producer's refusal (gapless guarantee: a poison row,
//      whatever ended the loop; its message names only the partition)
//                                                        -> health
//
// Thread-compatible; no state.
#ifndef OUTBOX_PIPELINE_ENDING_ERROR_H_
#define OUTBOX_PIPELINE_ENDING_ERROR_H_

#include "absl/status/status.h"

namespace outbox {

absl::Status EndingError(const absl::Status& loop,
                         const absl::Status& failed_report,
                         const absl::Status& health);

}  // namespace outbox

#endif  // OUTBOX_PIPELINE_ENDING_ERROR_H_
