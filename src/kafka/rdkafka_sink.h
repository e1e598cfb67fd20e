// RdKafkaSink: the EventSink over a librdkafka idempotent producer.
//
// Defaults set before the user's properties (which override them):
// enable.idempotence=true (acks=all, ordered retries), partitioner
// murmur2_random (the Java client's key hashing, so an aggregate lands on the
// same partition whoever produces it), message.timeout.ms=0 (retry for ever:
// a Kafka outage stalls the relay, it never fails events), message.max.bytes
// 1048576 (the Java producer's max.request.size, where librdkafka's own
// default is 1000000). With enable.gapless.guarantee=true (which outbox-relay
// sets under on_invalid: halt) a record the broker refuses permanently stops
// the producer before it sends anything after it; health() then says
// InvalidArgument. A broker that refuses the credentials (SASL) or a TLS
// certificate either way makes health() FailedPrecondition naming Kafka;
// an unreachable broker is waited for (a SCRAM refusal from a librdkafka
// older than 2.6.1 also names that cause: common/scram_hint.h). Which user
// properties are refused as unsafe is decided at configuration load
// (config/kafka_safety.h), not here.
//
// A stall is told too: once records have waited kStallReportMs with no
// acknowledgement (Kafka retries for ever; on a cluster, below
// min.insync.replicas or without a partition leader, nothing is
// acknowledged however long the relay waits), on_connection_state hears
// "not acknowledged by Kafka: N records waiting for S s ..." with the
// brokers whose connections fail and their errors, every kStallReportMs
// until a delivery succeeds (not while every broker is down: "all brokers
// down: ..." says that) (Poll() and the exactly-once commit's flush
// check).
//
// With KafkaOptions::transactional_id set the producer is transactional
// (kafka.exactly_once): Create() calls init_transactions (fencing any older
// producer with that id; given up within a second of KafkaOptions::stop),
// CommitTransaction() asks the coordinator only once every record is
// acknowledged (else Unavailable, never committed), and once asked it
// resumes a commit that timed out until Kafka answers, reporting the wait
// as a stall: an unanswered commit is given up only on a stop, after
// transaction_timeout_ms. The KafkaTransactions methods map librdkafka's
// error classes (fatal, fenced, txn_requires_abort, retriable) to the codes
// core/kafka_transactions.h documents, through its TransactionErrorClass;
// what counts as fenced is one list (IsFencingError). The transactional
// methods are in rdkafka_sink_transactions.cc.
//
// Threading: one thread calls everything; the delivery handler runs inside
// Poll() and Flush() on that thread. The only file that includes rdkafka.h
// for producing.
#ifndef OUTBOX_KAFKA_RDKAFKA_SINK_H_
#define OUTBOX_KAFKA_RDKAFKA_SINK_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/kafka_transactions.h"
#include "kafka/producer_statistics.h"
#include "outbox/event_sink.h"

struct rd_kafka_s;
struct rd_kafka_error_s;
struct rd_kafka_message_s;
struct rd_kafka_topic_s;

namespace outbox {

// The producer's default message.max.bytes: the Java producer's default
// max.request.size.
inline constexpr int64_t kDefaultMessageMaxBytes = 1048576;

struct KafkaOptions {
  std::string brokers;
  // librdkafka properties, passed through verbatim (TLS, SASL, batching...).
  std::map<std::string, std::string> properties;
  // Told, on the polling thread, when the brokers become unreachable
  // (reachable false: "all brokers down: <librdkafka's reason>", "broker
  // connection failing: <reason>"), when records wait unacknowledged
  // (reachable false: "not acknowledged by Kafka: ...", see above) and
  // when a delivery succeeds again
  // (reachable true: "producing to <brokers>"): for the status page. May be
  // empty.
  std::function<void(bool reachable, absl::string_view state)>
      on_connection_state;
  // Told, on the polling thread, librdkafka's statistics every
  // statistics.interval.ms (5000 unless kafka.properties sets it; 0 turns
  // them off). May be empty: then none are gathered.
  std::function<void(const ProducerStatistics&)> on_statistics;
  // Non-empty: a transactional producer with this transactional.id.
  std::string transactional_id;
  int transaction_timeout_ms = 30000;  // init, commit and abort calls
  // Set (e.g. by SIGTERM): Create() gives up init_transactions within a
  // second, Cancelled; an unanswered commit is given up after
  // transaction_timeout_ms. Not owned; null: never.
  const std::atomic<bool>* stop = nullptr;
};

class RdKafkaSink : public EventSink, public KafkaTransactions {
 public:
  // InvalidArgument names a property librdkafka rejected.
  static absl::StatusOr<std::unique_ptr<RdKafkaSink>> Create(
      const KafkaOptions& options);
  ~RdKafkaSink() override;

  void SetDeliveryHandler(DeliveryHandler handler) override;
  absl::Status Produce(const Record& record, uint64_t ticket) override;
  int Poll(int timeout_ms) override;
  absl::Status Flush(int timeout_ms) override;
  absl::Status health() const override;
  int64_t outstanding() const override { return outstanding_; }
  int wake_fd() const override { return wake_[0]; }

  void Purge() override;

  // KafkaTransactions; only for a transactional producer.
  absl::Status BeginTransaction() override;
  absl::Status ProduceInTransaction(absl::string_view topic,
                                    absl::string_view key,
                                    absl::string_view value) override;
  absl::Status CommitTransaction() override;
  absl::Status AbortTransaction() override;
  // Looks up `topic`'s partitions now, so that its first record (the
  // first commit's checkpoint) is sent at once: librdkafka 2.0 otherwise
  // holds a record to a topic this producer has not used until its next
  // topic scan, up to a second. Unavailable if the lookup failed (the
  // record then waits as it would have).
  absl::Status LookUpTopic(const std::string& topic, int timeout_ms);

  // Raises a fatal producer error with that librdkafka error code, as the
  // broker thread would (rd_kafka_test_fatal_error). Tests only.
  absl::Status InjectFatalErrorForTesting(int rd_kafka_resp_err,
                                          absl::string_view reason);

  // True for delivery errors that are about the record itself (too large,
  // invalid topic name), which no retry can fix: poison rows.
  static bool IsPermanentRecordError(int rd_kafka_resp_err);
  // Errors about the topic, not the record: PermissionDenied for a missing
  // ACL (topic or cluster authorization), NotFound for a topic that does not
  // exist, each with `what`; OK for any other error. The relay waits for
  // the ACL or the topic (IsTopicAccessError, outbox/event_sink.h), never
  // poisons.
  static absl::Status TopicAccessError(int rd_kafka_resp_err,
                                       absl::string_view what);

  // The properties the producer was built with, secrets masked.
  const std::map<std::string, std::string>& effective_properties() const {
    return effective_;
  }

 private:
  RdKafkaSink() = default;
  friend struct RdKafkaCallbacks;
  void HandleDelivery(const rd_kafka_message_s* msg);
  void HandleError(int err, const char* reason);
  void HandleStatistics(absl::string_view json);
  // The stall report (see the file comment), when one is due.
  void CheckStall();
  // How often a stall is reported.
  static constexpr int64_t kStallReportUs = 10'000'000;
  // What a transactional call waiting on the coordinator needs.
  static constexpr char kCoordinatorNeeds[] =
      "the transaction coordinator: the leader of the transactional.id's "
      "__transaction_state partition, with min.insync.replicas in-sync "
      "replicas";
  // Tells on_connection_state_ "not acknowledged by Kafka: <what> waiting
  // for S s (<needs>); failing: <brokers>" (S: since `since_us`).
  void ReportStall(absl::string_view what, int64_t since_us,
                   absl::string_view needs);
  // The producer's handle for a topic, made once per name (producing by
  // name would look it up under librdkafka's lock for every record).
  rd_kafka_topic_s* TopicHandle(const std::string& name);
  // The producer's fatal error in kafka_transactions.h's codes
  // (FailedPrecondition when fenced, else Internal); OK when none.
  absl::Status FatalTransactionError() const;
  // Create()'s init_transactions, watching options.stop.
  absl::Status InitTransactions(const KafkaOptions& options);
  // Takes ownership of `error` (may be null) and maps librdkafka's
  // transactional error classes to core/kafka_transactions.h's codes.
  static absl::Status TransactionStatus(absl::string_view call,
                                        rd_kafka_error_s* error);
  // The opaque of records produced outside the tickets (checkpoints). Not
  // null: ticket 0 is a ticket (outbox-relay republish numbers from 0), and
  // no ticket reaches this value.
  static void* const kUntracked;

  rd_kafka_s* rk_ = nullptr;
  absl::flat_hash_map<std::string, rd_kafka_topic_s*> topics_;
  // Reused for every report: no allocation per delivery.
  DeliveryReport report_;
  DeliveryHandler handler_;
  int64_t outstanding_ = 0;
  int wake_[2] = {-1, -1};
  int64_t message_max_bytes_ = 0;  // the producer's, for size errors
  std::string brokers_;
  std::function<void(bool, absl::string_view)> on_connection_state_;
  std::function<void(const ProducerStatistics&)> on_statistics_;
  bool statistics_refused_ = false;  // a bad one was told once
  bool connection_trouble_ = false;  // told, and no delivery since
  bool all_brokers_down_ = false;    // ... and librdkafka said all down
  // Monotonic microseconds of the last acknowledgement, or of the produce
  // that made outstanding_ non-zero; and of the last stall report (0: none
  // since the last acknowledgement).
  int64_t last_ack_us_ = 0;
  int64_t stall_reported_us_ = 0;
  // Each failing broker's last connection error (librdkafka's reason after
  // "<broker>: ", without its "(after ...)" tail), since the last
  // acknowledgement: for the stall report.
  std::map<std::string, std::string> broker_errors_;
  int transaction_timeout_ms_ = 0;
  // KafkaOptions::stop: a commit waiting for its answer gives up only then.
  const std::atomic<bool>* stop_ = nullptr;
  // The first failed delivery of a record produced outside the tickets
  // (ProduceInTransaction); CommitTransaction() fails with it.
  absl::Status untracked_error_;
  // A record of the open transaction failed delivery: it is abortable, and
  // CommitTransaction() says so without waiting for the rest to drain.
  bool txn_delivery_failed_ = false;
  // FailedPrecondition once a broker refused our credentials or a TLS
  // certificate failed (HandleError); health() returns it.
  absl::Status refused_;
  std::map<std::string, std::string> effective_;
};

}  // namespace outbox

#endif  // OUTBOX_KAFKA_RDKAFKA_SINK_H_
