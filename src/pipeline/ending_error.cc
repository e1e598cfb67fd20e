#include "pipeline/ending_error.h"

#include "outbox/event_sink.h"

namespace outbox {

absl::Status EndingError(const absl::Status& loop,
                         const absl::Status& failed_report,
                         const absl::Status& health) {
  if (!absl::IsInvalidArgument(health)) return loop;
  if (absl::IsDataLoss(loop)) return loop;
  if (IsTopicAccessError(failed_report) ||
      absl::IsInvalidArgument(failed_report)) {
    return failed_report;
  }
  if (absl::IsInvalidArgument(loop)) return loop;
  return health;
}

}  // namespace outbox
