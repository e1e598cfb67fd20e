// AdminCall: one librdkafka admin request and its result event, on a queue
// of its own. Private to src/kafka (includes rdkafka.h).
#ifndef OUTBOX_KAFKA_ADMIN_CALL_H_
#define OUTBOX_KAFKA_ADMIN_CALL_H_

#include <librdkafka/rdkafka.h>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace outbox {

class AdminCall {
 public:
  explicit AdminCall(rd_kafka_t* rk) : queue_(rd_kafka_queue_new(rk)) {}
  ~AdminCall() {
    if (event_ != nullptr) rd_kafka_event_destroy(event_);
    rd_kafka_queue_destroy(queue_);
  }
  AdminCall(const AdminCall&) = delete;
  AdminCall& operator=(const AdminCall&) = delete;
  rd_kafka_queue_t* queue() { return queue_; }
  // Waits for the result; Unavailable on timeout, else the request's error.
  absl::StatusOr<rd_kafka_event_t*> Wait(int timeout_ms,
                                         absl::string_view what) {
    event_ = rd_kafka_queue_poll(queue_, timeout_ms);
    if (event_ == nullptr) {
      return absl::UnavailableError(absl::StrCat("Kafka did not answer ", what,
                                                 " in ", timeout_ms, " ms"));
    }
    if (rd_kafka_event_error(event_) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return absl::UnavailableError(
          absl::StrCat(what, ": ", rd_kafka_event_error_string(event_)));
    }
    return event_;
  }

 private:
  rd_kafka_queue_t* queue_;
  rd_kafka_event_t* event_ = nullptr;
};

}  // namespace outbox

#endif  // OUTBOX_KAFKA_ADMIN_CALL_H_
