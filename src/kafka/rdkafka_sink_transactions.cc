// RdKafkaSink's transactional half (KafkaTransactions, kafka.exactly_once):
// librdkafka's transactional errors classed once (TransactionErrorClass,
// IsFencingError), and begin, produce-in, commit and abort.
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "kafka/rdkafka_sink.h"
#include "outbox/clock.h"

namespace outbox {
namespace {

// The one list of fencing codes: this producer's epoch is superseded and it
// may never use its transactional.id again. librdkafka turns a broker's
// PRODUCER_FENCED (and, for a transactional producer, INVALID_PRODUCER_EPOCH)
// into its own fatal __FENCED, but older brokers and versions surface the
// broker's codes as they are, from a call or as the fatal error.
bool IsFencingError(rd_kafka_resp_err_t code) {
  return code == RD_KAFKA_RESP_ERR__FENCED ||
         code == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
         code == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH;
}

// Slices of the flush before a commit: how soon a failed record stops it.
constexpr int kCommitFlushSliceMs = 50;
// Slices of commit_transaction: how often a stop and the stall are looked at.
constexpr int kCommitSliceMs = 1000;

}  // namespace

absl::Status RdKafkaSink::TransactionStatus(absl::string_view call,
                                            rd_kafka_error_t* error) {
  if (error == nullptr) return absl::OkStatus();
  std::string what =
      absl::StrCat("Kafka ", call, ": ", rd_kafka_error_name(error), ": ",
                   rd_kafka_error_string(error));
  TransactionErrorClass error_class = ClassifyTransactionError(
      IsFencingError(rd_kafka_error_code(error)),
      rd_kafka_error_is_fatal(error), rd_kafka_error_txn_requires_abort(error),
      rd_kafka_error_is_retriable(error));
  rd_kafka_error_destroy(error);
  return TransactionError(error_class, what);
}

absl::Status RdKafkaSink::FatalTransactionError() const {
  char reason[512];
  rd_kafka_resp_err_t e = rd_kafka_fatal_error(rk_, reason, sizeof(reason));
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR) return absl::OkStatus();
  std::string what =
      absl::StrCat("Kafka producer: ", rd_kafka_err2name(e), ": ", reason);
  return TransactionError(
      ClassifyTransactionError(IsFencingError(e),
                               /*fatal=*/true, false, false),
      what);
}

absl::Status RdKafkaSink::BeginTransaction() {
  untracked_error_ = absl::OkStatus();
  txn_delivery_failed_ = false;
  return TransactionStatus("begin_transaction",
                           rd_kafka_begin_transaction(rk_));
}

absl::Status RdKafkaSink::ProduceInTransaction(absl::string_view topic,
                                               absl::string_view key,
                                               absl::string_view value) {
  rd_kafka_topic_t* rkt = TopicHandle(std::string(topic));
  if (rkt == nullptr) {
    return absl::AbortedError(
        absl::StrCat("cannot produce the checkpoint to ", topic, ": ",
                     rd_kafka_err2str(rd_kafka_last_error())));
  }
  rd_kafka_resp_err_t e = rd_kafka_producev(
      rk_, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_KEY(key.data(), key.size()),
      RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE(kUntracked),
      RD_KAFKA_V_END);
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR) return absl::OkStatus();
  if (absl::Status f = FatalTransactionError(); !f.ok()) return f;
  return absl::AbortedError(absl::StrCat("cannot produce the checkpoint to ",
                                         topic, ": ", rd_kafka_err2str(e)));
}

absl::Status RdKafkaSink::CommitTransaction() {
  // commit_transaction flushes first, but once a record has failed the
  // transaction is abortable and the rest of it never drains: its flush
  // would wait out the whole timeout. Flush here in slices instead, serving
  // the delivery reports on this thread, and stop at the first failure.
  const Clock* clock = RealClock();
  const int64_t deadline_us =
      clock->NowMicros() + int64_t{transaction_timeout_ms_} * 1000;
  while (!txn_delivery_failed_ && rd_kafka_outq_len(rk_) > 0 &&
         clock->NowMicros() < deadline_us) {
    rd_kafka_flush(rk_, kCommitFlushSliceMs);
    CheckStall();
  }
  if (txn_delivery_failed_) {
    // Failed reports also come from a fatal error (fenced): say that.
    if (absl::Status f = FatalTransactionError(); !f.ok()) return f;
    return absl::AbortedError(
        "a record of the Kafka transaction failed delivery");
  }
  if (const int left = rd_kafka_outq_len(rk_); left > 0) {
    // Not asked to commit: no EndTxn was sent, so Kafka can only abort it
    // (the next producer's init_transactions does). Retriable.
    return absl::UnavailableError(
        absl::StrCat("Kafka commit_transaction: not started: ", left,
                     " record(s) of the transaction not acknowledged within ",
                     transaction_timeout_ms_, " ms"));
  }
  // Everything is acknowledged: ask the coordinator. Once EndTxn is sent
  // only Kafka knows the outcome until it answers, so a call that times
  // out is resumed (librdkafka: "retry call to resume") until it does,
  // never given up with the producer: a new producer would start from
  // whatever checkpoint it reads while the commit may still complete.
  // Only a stop gives up, after the flush timeout; the next start's
  // init_transactions then settles it first.
  const int64_t began_us = clock->NowMicros();
  const int64_t give_up_us =
      std::max(deadline_us, began_us + kCommitSliceMs * 1000);
  int64_t reported_us = began_us;
  int resumed = 0;
  for (;;) {
    rd_kafka_error_t* error = rd_kafka_commit_transaction(rk_, kCommitSliceMs);
    const bool timed_out =
        error != nullptr &&
        rd_kafka_error_code(error) == RD_KAFKA_RESP_ERR__TIMED_OUT &&
        rd_kafka_error_is_retriable(error);
    if (!timed_out) {
      absl::Status s = TransactionStatus("commit_transaction", error);
      if (resumed > 0) {
        Log(s.ok() ? Severity::kInfo : Severity::kWarn,
            "the resumed Kafka commit was answered",
            {{"after_ms", absl::StrCat((clock->NowMicros() - began_us) / 1000)},
             {"resumed", absl::StrCat(resumed)},
             {"result", s.ok() ? "committed" : std::string(s.message())}});
      }
      if (s.ok() && !untracked_error_.ok()) return untracked_error_;
      return s;
    }
    const int64_t now_us = clock->NowMicros();
    if (resumed++ == 0) {
      Log(Severity::kWarn,
          "the Kafka commit is unanswered: resuming it until Kafka answers "
          "(the transaction coordinator decides it; given up only on a stop)",
          {{"after_ms", absl::StrCat((now_us - began_us) / 1000)},
           {"error", rd_kafka_error_string(error)}});
    }
    if (stop_ != nullptr && stop_->load() && now_us >= give_up_us) {
      absl::Status s = absl::UnavailableError(
          absl::StrCat("stopping with the Kafka commit unanswered after ",
                       (now_us - began_us) / 1000,
                       " ms (the next start's init_transactions settles it): ",
                       rd_kafka_error_string(error)));
      rd_kafka_error_destroy(error);
      return s;
    }
    rd_kafka_error_destroy(error);
    if (on_connection_state_ && now_us - reported_us >= kStallReportUs) {
      reported_us = now_us;
      ReportStall("commit_transaction", began_us, kCoordinatorNeeds);
    }
  }
}

absl::Status RdKafkaSink::LookUpTopic(const std::string& topic,
                                      int timeout_ms) {
  rd_kafka_topic_t* rkt = TopicHandle(topic);
  const rd_kafka_metadata_t* md = nullptr;
  const rd_kafka_resp_err_t e =
      rkt == nullptr ? rd_kafka_last_error()
                     : rd_kafka_metadata(rk_, 0, rkt, &md, timeout_ms);
  if (md != nullptr) rd_kafka_metadata_destroy(md);
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR) return absl::OkStatus();
  return absl::UnavailableError(
      absl::StrCat("cannot look up topic ", topic, ": ", rd_kafka_err2str(e)));
}

absl::Status RdKafkaSink::AbortTransaction() {
  // abort_transaction purges what is queued but waits for what is in
  // flight, and after a refused record the rest of the transaction's
  // requests never complete: it would wait out its whole timeout. Nothing
  // of an aborted transaction is wanted, so purge in-flight records too
  // (their reports come back failed, as for Purge()).
  Purge();
  return TransactionStatus(
      "abort_transaction",
      rd_kafka_abort_transaction(rk_, transaction_timeout_ms_));
}

}  // namespace outbox
