#include "kafka/kafka_refusal.h"

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/scram_hint.h"

namespace outbox {

bool IsPermanentRefusal(int err, absl::string_view reason) {
  switch (static_cast<rd_kafka_resp_err_t>(err)) {
    case RD_KAFKA_RESP_ERR__AUTHENTICATION:
      return true;
    case RD_KAFKA_RESP_ERR__SSL:
    case RD_KAFKA_RESP_ERR__TRANSPORT:
      return absl::StrContains(reason, "certificate verify failed") ||
             (absl::StrContains(reason, "SSL") &&
              absl::StrContains(reason, " alert "));
    default:
      return false;
  }
}

absl::Status RefusedConnectionError(absl::string_view brokers, int err,
                                    absl::string_view reason) {
  return absl::FailedPreconditionError(absl::StrCat(
      "cannot connect to Kafka (", brokers,
      "): ", rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(err)), ": ",
      reason, ScramProofHint(reason, rd_kafka_version())));
}

void KafkaRefusal::Watch(rd_kafka_conf_t* conf) {
  rd_kafka_conf_set_opaque(conf, this);
  rd_kafka_conf_set_error_cb(
      conf, [](rd_kafka_t*, int err, const char* reason, void* opaque) {
        static_cast<KafkaRefusal*>(opaque)->Told(err, reason);
      });
}

void KafkaRefusal::Told(int err, const char* reason) {
  const absl::string_view r = reason != nullptr ? reason : "";
  last_error_ = std::string(r);
  if (refused_.ok() && IsPermanentRefusal(err, r)) {
    refused_ = RefusedConnectionError(brokers_, err, r);
  }
}

absl::Status KafkaRefusal::Check(rd_kafka_t* rk) {
  rd_kafka_poll(rk, 0);
  return refused_;
}

rd_kafka_resp_err_t KafkaRefusal::Metadata(rd_kafka_t* rk, bool all_topics,
                                           rd_kafka_topic_t* only,
                                           const rd_kafka_metadata_t** md,
                                           int timeout_ms) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (int64_t slice_ms = 500;; slice_ms *= 2) {
    const int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(
                             deadline - std::chrono::steady_clock::now())
                             .count();
    const rd_kafka_resp_err_t e = rd_kafka_metadata(
        rk, all_topics ? 1 : 0, only, md,
        static_cast<int>(std::clamp<int64_t>(std::min(left, slice_ms), 1,
                                             std::max(timeout_ms, 1))));
    // Both are what a request that got no answer in time returns.
    if (e != RD_KAFKA_RESP_ERR__TIMED_OUT &&
        e != RD_KAFKA_RESP_ERR__TRANSPORT) {
      return e;
    }
    if (!Check(rk).ok() || left <= slice_ms) return e;
  }
}

}  // namespace outbox
