#include "kafka/rdkafka_sink.h"

#include <fcntl.h>
#include <librdkafka/rdkafka.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "config/redact.h"
#include "kafka/kafka_refusal.h"
#include "kafka/rdkafka_log.h"
#include "outbox/clock.h"

namespace outbox {

struct RdKafkaCallbacks {
  static void Delivery(rd_kafka_t*, const rd_kafka_message_t* msg,
                       void* opaque) {
    static_cast<RdKafkaSink*>(opaque)->HandleDelivery(msg);
  }
  static void Error(rd_kafka_t*, int err, const char* reason, void* opaque) {
    static_cast<RdKafkaSink*>(opaque)->HandleError(err, reason);
  }
  static int Statistics(rd_kafka_t*, char* json, size_t len, void* opaque) {
    static_cast<RdKafkaSink*>(opaque)->HandleStatistics(
        absl::string_view(json, len));
    return 0;  // librdkafka frees the JSON
  }
};

namespace {

// "N bytes (key K + value V + headers H)" for size messages.
std::string RecordBytes(size_t key, size_t value, size_t headers) {
  return absl::StrCat(key + value + headers, " bytes (key ", key, " + value ",
                      value, " + headers ", headers, ")");
}

}  // namespace

void* const RdKafkaSink::kUntracked = reinterpret_cast<void*>(~uintptr_t{0});

absl::StatusOr<std::unique_ptr<RdKafkaSink>> RdKafkaSink::Create(
    const KafkaOptions& options) {
  std::unique_ptr<RdKafkaSink> sink(new RdKafkaSink);
  std::map<std::string, std::string> props = {
      {"enable.idempotence", "true"},
      {"acks", "all"},
      {"partitioner", "murmur2_random"},
      {"message.timeout.ms", "0"},
      // The Java producer's max.request.size (librdkafka's default is
      // 1000000): a payload Debezium publishes is published here too.
      {"message.max.bytes", absl::StrCat(kDefaultMessageMaxBytes)},
      {"linger.ms", "20"},
      {"batch.num.messages", "10000"},
      {"queue.buffering.max.messages", "1000000"},
      {"queue.buffering.max.kbytes", "1048576"},
      {"socket.keepalive.enable", "true"},
      {"reconnect.backoff.max.ms", "2000"},
      // A topic the metadata does not show is taken for missing after 5 s
      // (librdkafka's default: 30 s): the session then ends on it, and the
      // relay says so, creates it (kafka.topic_creation) or retries, losing
      // nothing; a topic only slow to propagate just costs a retry.
      {"topic.metadata.propagation.max.ms", "5000"},
      {"client.id", "outbox-relay"},
  };
  // Broker round trips and queue latencies for the metrics
  // (http/kafka_client_metrics.h): one JSON document per interval.
  if (options.on_statistics) props["statistics.interval.ms"] = "5000";
  if (!options.brokers.empty()) props["bootstrap.servers"] = options.brokers;
  for (const auto& [k, v] : options.properties) props[k] = v;
  if (!options.transactional_id.empty()) {
    props["transactional.id"] = options.transactional_id;
    // Not supported with transactions by librdkafka; a failed record
    // aborts the whole transaction there anyway.
    props.erase("enable.gapless.guarantee");
  }

  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  for (const auto& [k, v] : props) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) !=
        RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return absl::InvalidArgumentError(
          absl::StrCat("kafka property ", k, ": ", err));
    }
    sink->effective_[k] = IsSecretProperty(k) ? "****" : v;
  }
  rd_kafka_conf_set_opaque(conf, sink.get());
  rd_kafka_conf_set_dr_msg_cb(conf, &RdKafkaCallbacks::Delivery);
  rd_kafka_conf_set_error_cb(conf, &RdKafkaCallbacks::Error);
  UseRdKafkaLog(conf);
  if (options.on_statistics) {
    rd_kafka_conf_set_stats_cb(conf, &RdKafkaCallbacks::Statistics);
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    return absl::InvalidArgumentError(
        absl::StrCat("cannot create the Kafka producer: ", err));
  }
  sink->rk_ = rk;
  sink->brokers_ = options.brokers;
  sink->on_connection_state_ = options.on_connection_state;
  sink->on_statistics_ = options.on_statistics;
  char value[32];
  size_t size = sizeof(value);
  if (rd_kafka_conf_get(rd_kafka_conf(rk), "message.max.bytes", value, &size) ==
      RD_KAFKA_CONF_OK) {
    absl::SimpleAtoi(value, &sink->message_max_bytes_);
  }
  if (pipe2(sink->wake_, O_NONBLOCK | O_CLOEXEC) != 0) {
    return absl::InternalError("pipe2 failed");
  }
  rd_kafka_queue_t* main_queue = rd_kafka_queue_get_main(rk);
  rd_kafka_queue_io_event_enable(main_queue, sink->wake_[1], "1", 1);
  rd_kafka_queue_destroy(main_queue);
  sink->transaction_timeout_ms_ = options.transaction_timeout_ms;
  sink->stop_ = options.stop;
  if (!options.transactional_id.empty()) {
    absl::Status s = sink->InitTransactions(options);
    if (absl::IsCancelled(s)) return s;
    // Not reachable yet is worth waiting for like any broker outage; refused
    // credentials or certificates (told to the error callback) are not.
    rd_kafka_poll(rk, 0);
    if (!sink->refused_.ok()) return sink->refused_;
    if (!s.ok()) return absl::UnavailableError(s.message());
  }
  return sink;
}

// init_transactions in slices of a second, so a stop is seen: a call that
// timed out resumes where it was (librdkafka: call it again).
absl::Status RdKafkaSink::InitTransactions(const KafkaOptions& options) {
  constexpr int kSliceMs = 1000;
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(options.transaction_timeout_ms);
  const int64_t began_us = RealClock()->NowMicros();
  int64_t reported_us = began_us;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    rd_kafka_error_t* error = rd_kafka_init_transactions(
        rk_, static_cast<int>(
                 std::max<int64_t>(1, std::min<int64_t>(left, kSliceMs))));
    const bool timed_out = error != nullptr && rd_kafka_error_code(error) ==
                                                   RD_KAFKA_RESP_ERR__TIMED_OUT;
    if (!timed_out || left <= kSliceMs) {
      return TransactionStatus("init_transactions", error);
    }
    rd_kafka_error_destroy(error);
    if (options.stop != nullptr && options.stop->load()) {
      return absl::CancelledError("stopping: init_transactions was given up");
    }
    // A coordinator that does not answer is a stall like records not
    // acknowledged: the status page says so while this waits.
    const int64_t now_us = RealClock()->NowMicros();
    if (on_connection_state_ && now_us - reported_us >= kStallReportUs) {
      reported_us = now_us;
      ReportStall("init_transactions", began_us, kCoordinatorNeeds);
    }
  }
}

RdKafkaSink::~RdKafkaSink() {
  if (rk_ != nullptr) {
    // Whatever is still queued was never confirmed: dropping it only means
    // it is read again from the slot next time.
    rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    handler_ = nullptr;
    rd_kafka_poll(rk_, 0);
    for (auto& [name, rkt] : topics_) rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk_);
  }
  for (int fd : wake_) {
    if (fd >= 0) close(fd);
  }
}

void RdKafkaSink::SetDeliveryHandler(DeliveryHandler handler) {
  handler_ = std::move(handler);
}

rd_kafka_topic_t* RdKafkaSink::TopicHandle(const std::string& name) {
  auto it = topics_.find(name);
  if (it != topics_.end()) return it->second;
  // Only an invalid name fails here; producev then reports it for the
  // record, as it would by name.
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk_, name.c_str(), nullptr);
  if (rkt != nullptr) topics_.emplace(name, rkt);
  return rkt;
}

absl::Status RdKafkaSink::Produce(const Record& record, uint64_t ticket) {
  rd_kafka_topic_t* rkt = TopicHandle(record.topic);
  if (rkt == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("kafka rejected the record for topic ", record.topic, ": ",
                     rd_kafka_err2str(rd_kafka_last_error())));
  }
  rd_kafka_headers_t* headers = nullptr;
  size_t headers_size = 0;
  if (!record.headers.empty()) {
    headers = rd_kafka_headers_new(record.headers.size());
    for (const Header& h : record.headers) {
      headers_size += h.name.size() + (h.is_null ? 0 : h.value.size());
      rd_kafka_header_add(headers, h.name.data(),
                          static_cast<ssize_t>(h.name.size()),
                          h.is_null ? nullptr : h.value.data(),
                          h.is_null ? 0 : static_cast<ssize_t>(h.value.size()));
    }
  }
  rd_kafka_resp_err_t e = rd_kafka_producev(
      rk_, RD_KAFKA_V_RKT(rkt),
      RD_KAFKA_V_PARTITION(record.partition < 0 ? RD_KAFKA_PARTITION_UA
                                                : record.partition),
      RD_KAFKA_V_TIMESTAMP(record.timestamp_ms),
      RD_KAFKA_V_KEY(record.key_is_null ? nullptr : record.key.data(),
                     record.key_is_null ? 0 : record.key.size()),
      RD_KAFKA_V_VALUE(record.value_is_null
                           ? nullptr
                           : const_cast<char*>(record.value.data()),
                       record.value_is_null ? 0 : record.value.size()),
      RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
      RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(ticket)), RD_KAFKA_V_END);
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (outstanding_++ == 0) last_ack_us_ = RealClock()->NowMicros();
    return absl::OkStatus();
  }
  if (headers != nullptr) rd_kafka_headers_destroy(headers);
  if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
    return absl::ResourceExhaustedError("kafka producer queue full");
  }
  if (e == RD_KAFKA_RESP_ERR__FATAL) {
    // The error callback may not have run yet: ask librdkafka, never report
    // success for a record that will get no report.
    // Internal whatever the cause: this record is not the one refused.
    absl::Status h = health();
    return absl::InternalError(h.ok() ? "fatal Kafka producer error"
                                      : h.message());
  }
  if (e == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE) {
    // Refused locally, before any broker saw it.
    return absl::InvalidArgumentError(absl::StrCat(
        "record for topic ", record.topic, " too large: ",
        RecordBytes(record.key.size(), record.value.size(), headers_size),
        " exceed the producer's message.max.bytes (", message_max_bytes_,
        "); raise kafka.properties.message.max.bytes if the topic's "
        "max.message.bytes allows it"));
  }
  std::string what = absl::StrCat("kafka rejected the record for topic ",
                                  record.topic, ": ", rd_kafka_err2str(e));
  // Only errors about the record itself are poison; a missing topic or ACL
  // is waited for; anything else is worth a retry.
  if (IsPermanentRecordError(e)) return absl::InvalidArgumentError(what);
  if (absl::Status a = TopicAccessError(e, what); !a.ok()) return a;
  return absl::UnavailableError(what);
}

void RdKafkaSink::HandleDelivery(const rd_kafka_message_s* msg) {
  if (msg->err != RD_KAFKA_RESP_ERR_NO_ERROR) txn_delivery_failed_ = true;
  if (msg->_private == kUntracked) {
    // Produced outside the tickets (a checkpoint): no report to hand on.
    if (msg->err != RD_KAFKA_RESP_ERR_NO_ERROR && untracked_error_.ok()) {
      untracked_error_ = absl::AbortedError(
          absl::StrCat("delivery of a checkpoint record failed: ",
                       rd_kafka_err2str(msg->err)));
    }
    return;
  }
  --outstanding_;
  if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    last_ack_us_ = RealClock()->NowMicros();
    stall_reported_us_ = 0;
    broker_errors_.clear();
  }
  if (connection_trouble_ && msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    connection_trouble_ = all_brokers_down_ = false;
    if (on_connection_state_) {
      on_connection_state_(true, absl::StrCat("producing to ", brokers_));
    }
  }
  if (!handler_) return;
  DeliveryReport& report = report_;
  report.status = absl::OkStatus();
  report.ticket = reinterpret_cast<uint64_t>(msg->_private);
  report.partition = msg->partition;
  report.offset = msg->offset;
  Record& r = report.record;
  r.topic.assign(rd_kafka_topic_name(msg->rkt));
  r.key_is_null = msg->key == nullptr;
  r.key = r.key_is_null ? absl::string_view()
                        : absl::string_view(static_cast<const char*>(msg->key),
                                            msg->key_len);
  r.value_is_null = msg->payload == nullptr;
  r.value =
      r.value_is_null
          ? absl::string_view()
          : absl::string_view(static_cast<const char*>(msg->payload), msg->len);
  r.event_id = {};
  r.headers.clear();
  if (msg->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    report.status = TopicAccessError(msg->err, rd_kafka_err2str(msg->err));
    if (report.status.ok()) {
      report.status =
          IsPermanentRecordError(msg->err)
              ? absl::InvalidArgumentError(rd_kafka_err2str(msg->err))
              : absl::UnavailableError(rd_kafka_err2str(msg->err));
    }
    rd_kafka_headers_t* hdrs = nullptr;
    size_t headers_size = 0;
    if (rd_kafka_message_headers(msg, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      const char* name;
      const void* val;
      size_t size;
      for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &val, &size) ==
                         RD_KAFKA_RESP_ERR_NO_ERROR;
           ++i) {
        Header h;
        h.name = name;
        h.is_null = val == nullptr;
        if (val) h.value = {static_cast<const char*>(val), size};
        headers_size += h.name.size() + size;
        if (h.name == "id") r.event_id = h.value;
        r.headers.push_back(std::move(h));
      }
    }
    if (msg->err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ||
        msg->err == RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE) {
      // The producer let it through, so the limit that refused it is the
      // broker's: the topic's max.message.bytes.
      report.status = absl::InvalidArgumentError(absl::StrCat(
          rd_kafka_err2str(msg->err),
          ": the broker refused this record's batch (record: ",
          RecordBytes(msg->key_len, msg->len, headers_size),
          ") as over the topic's max.message.bytes (by default the broker's "
          "message.max.bytes), which is below the producer's "
          "message.max.bytes (",
          message_max_bytes_, ")"));
    }
  }
  handler_(report);
}

void RdKafkaSink::HandleStatistics(absl::string_view json) {
  absl::StatusOr<ProducerStatistics> stats = ParseProducerStatistics(json);
  if (!stats.ok()) {
    // Metrics only: the relay publishes on; said once.
    if (!statistics_refused_) {
      Log(Severity::kWarn, "the Kafka client metrics are not updated",
          {{"reason", std::string(stats.status().message())}});
    }
    statistics_refused_ = true;
    return;
  }
  on_statistics_(*stats);
}

void RdKafkaSink::HandleError(int err, const char* reason) {
  // Transient errors (a broker down, ...) are retried inside librdkafka and
  // show as the relay's stall; a fatal one is read by health(), which asks
  // librdkafka directly. Having this callback keeps librdkafka from logging
  // every transient error itself. Connection errors are told for the status
  // page, until a delivery succeeds again.
  switch (static_cast<rd_kafka_resp_err_t>(err)) {
    case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
      all_brokers_down_ = true;
      break;
    case RD_KAFKA_RESP_ERR__AUTHENTICATION:
    case RD_KAFKA_RESP_ERR__SSL:
    case RD_KAFKA_RESP_ERR__TRANSPORT:
      // A wrong password, CA or certificate: no retry fixes it, so health()
      // says FailedPrecondition (exit 3) instead of a reconnect loop. Other
      // transport and TLS errors (a broker down or gone mid-handshake) are
      // waited out.
      if (refused_.ok() &&
          IsPermanentRefusal(err, reason != nullptr ? reason : "")) {
        refused_ = RefusedConnectionError(brokers_, err,
                                          reason != nullptr ? reason : "");
      }
      break;
    case RD_KAFKA_RESP_ERR__RESOLVE:
      break;
    default:
      return;
  }
  if (reason != nullptr && err != RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
    // "127.0.0.1:9092/2: Connect to ... failed: Connection refused (after
    // 0ms in state CONNECT)": that broker, and its error.
    absl::string_view r(reason);
    const size_t colon = r.find(": ");
    if (colon != absl::string_view::npos) {
      absl::string_view error = r.substr(colon + 2);
      error = error.substr(0, error.find(" (after "));
      broker_errors_[std::string(r.substr(0, colon))] = std::string(error);
    }
  }
  connection_trouble_ = true;
  // While all are down, each failed reconnect says why, under that name.
  if (on_connection_state_) {
    on_connection_state_(
        false, absl::StrCat(all_brokers_down_ ? "all brokers down"
                                              : "broker connection failing",
                            ": ", reason != nullptr ? reason : ""));
  }
}

absl::Status RdKafkaSink::TopicAccessError(int e, absl::string_view what) {
  switch (static_cast<rd_kafka_resp_err_t>(e)) {
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
      return absl::PermissionDeniedError(what);
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
      return absl::NotFoundError(what);
    default:
      return absl::OkStatus();
  }
}

// A missing topic or ACL is not here: neither is a property of the record
// (TopicAccessError).
bool RdKafkaSink::IsPermanentRecordError(int e) {
  switch (static_cast<rd_kafka_resp_err_t>(e)) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_MSG:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
    case RD_KAFKA_RESP_ERR_INVALID_REQUIRED_ACKS:
    case RD_KAFKA_RESP_ERR__INVALID_ARG:
    case RD_KAFKA_RESP_ERR_POLICY_VIOLATION:
    // Only a record with an explicit partition (outbox.fields' partition
    // column) can name one the topic lacks.
    case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
    // A record timestamp outside the broker's
    // log.message.timestamp.before/after.max.ms (a commit time or timestamp
    // column too old): retrying sends the same timestamp.
    case RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP:
      return true;
    default:
      return false;
  }
}

int RdKafkaSink::Poll(int timeout_ms) {
  char drain[64];
  while (read(wake_[0], drain, sizeof(drain)) > 0) {
  }
  const int served = rd_kafka_poll(rk_, timeout_ms);
  CheckStall();
  return served;
}

void RdKafkaSink::CheckStall() {
  // With every broker down, "all brokers down: <reason>" (each failed
  // reconnect repeats it) already says why nothing is acknowledged.
  if (outstanding_ == 0 || !on_connection_state_ || all_brokers_down_) return;
  const int64_t now_us = RealClock()->NowMicros();
  if (now_us - last_ack_us_ < kStallReportUs ||
      (stall_reported_us_ != 0 &&
       now_us - stall_reported_us_ < kStallReportUs)) {
    return;
  }
  stall_reported_us_ = now_us;
  ReportStall(absl::StrCat(outstanding_, " records"), last_ack_us_,
              "acks=all: each partition needs its leader and "
              "min.insync.replicas in-sync replicas");
}

void RdKafkaSink::ReportStall(absl::string_view what, int64_t since_us,
                              absl::string_view needs) {
  std::string brokers;
  for (const auto& [broker, error] : broker_errors_) {
    absl::StrAppend(&brokers, brokers.empty() ? "" : ", ", broker, " (", error,
                    ")");
  }
  connection_trouble_ = true;  // "producing to" again at the next delivery
  on_connection_state_(
      false,
      absl::StrCat("not acknowledged by Kafka: ", what, " waiting for ",
                   (RealClock()->NowMicros() - since_us) / 1000000, " s (",
                   needs, "); ",
                   brokers.empty() ? "every broker connection is up"
                                   : absl::StrCat("failing: ", brokers)));
}

absl::Status RdKafkaSink::Flush(int timeout_ms) {
  rd_kafka_resp_err_t e = rd_kafka_flush(rk_, timeout_ms);
  if (e == RD_KAFKA_RESP_ERR__TIMED_OUT) {
    return absl::DeadlineExceededError(
        absl::StrCat(outstanding_, " Kafka deliveries still outstanding after ",
                     timeout_ms, " ms"));
  }
  return health();
}

void RdKafkaSink::Purge() {
  rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  rd_kafka_poll(rk_, 0);
}

absl::Status RdKafkaSink::health() const {
  // Asked of librdkafka rather than remembered from the error callback,
  // which runs only when reports are served.
  char reason[512];
  rd_kafka_resp_err_t e = rd_kafka_fatal_error(rk_, reason, sizeof(reason));
  if (e == RD_KAFKA_RESP_ERR__GAPLESS_GUARANTEE) {
    // enable.gapless.guarantee turned a permanent refusal of a record into
    // this: a new producer would be refused the same record.
    return absl::InvalidArgumentError(absl::StrCat(
        "Kafka refused a record permanently and the producer stopped before "
        "sending anything after it (enable.gapless.guarantee): ",
        reason));
  }
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return absl::InternalError(absl::StrCat(
        "fatal Kafka producer error: ", rd_kafka_err2name(e), ": ", reason));
  }
  return refused_;
}

absl::Status RdKafkaSink::InjectFatalErrorForTesting(int rd_kafka_resp_err,
                                                     absl::string_view reason) {
  std::string r(reason);
  if (rd_kafka_test_fatal_error(
          rk_, static_cast<rd_kafka_resp_err_t>(rd_kafka_resp_err),
          r.c_str()) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return absl::InternalError("rd_kafka_test_fatal_error failed");
  }
  return absl::OkStatus();
}

}  // namespace outbox
