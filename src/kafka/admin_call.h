// AdminCall: one librdkafka admin request of a TopicAdmin and its result
// event, on a queue of its own. Private to src/kafka (includes rdkafka.h).
#ifndef OUTBOX_KAFKA_ADMIN_CALL_H_
#define OUTBOX_KAFKA_ADMIN_CALL_H_

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "kafka/topic_admin.h"

namespace outbox {

class AdminCall {
 public:
  explicit AdminCall(TopicAdmin* admin)
      : admin_(admin), queue_(rd_kafka_queue_new(admin->handle())) {}
  ~AdminCall() {
    if (event_ != nullptr) rd_kafka_event_destroy(event_);
    rd_kafka_queue_destroy(queue_);
  }
  AdminCall(const AdminCall&) = delete;
  AdminCall& operator=(const AdminCall&) = delete;
  rd_kafka_queue_t* queue() { return queue_; }
  // Waits for the result; Unavailable on timeout, FailedPrecondition as
  // soon as the brokers refused the client (TopicAdmin::Refused), else the
  // request's error.
  absl::StatusOr<rd_kafka_event_t*> Wait(int timeout_ms,
                                         absl::string_view what) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(timeout_ms);
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      event_ = rd_kafka_queue_poll(
          queue_, static_cast<int>(std::clamp<int64_t>(left, 0, 100)));
      if (event_ != nullptr) break;
      if (absl::Status refused = admin_->Refused(); !refused.ok()) {
        return refused;
      }
      if (left <= 0) {
        return absl::UnavailableError(absl::StrCat(
            "Kafka did not answer ", what, " in ", timeout_ms, " ms"));
      }
    }
    if (rd_kafka_event_error(event_) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return absl::UnavailableError(
          absl::StrCat(what, ": ", rd_kafka_event_error_string(event_)));
    }
    return event_;
  }

 private:
  TopicAdmin* admin_;
  rd_kafka_queue_t* queue_;
  rd_kafka_event_t* event_ = nullptr;
};

}  // namespace outbox

#endif  // OUTBOX_KAFKA_ADMIN_CALL_H_
