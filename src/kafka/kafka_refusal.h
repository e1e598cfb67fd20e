// A Kafka connection refusal that no reconnect fixes (a wrong password, CA
// or certificate), as librdkafka's error callback tells it, and the
// one-line error it becomes: the same for the relay's producer and its
// short-lived admin client, so that each stops waiting for a broker that
// will never let it in. Private to src/kafka (includes rdkafka.h).
//
// Threading: librdkafka calls the error callback from rd_kafka_poll(), on
// the thread that polls; KafkaRefusal is read on that thread.
#ifndef OUTBOX_KAFKA_KAFKA_REFUSAL_H_
#define OUTBOX_KAFKA_KAFKA_REFUSAL_H_

#include <librdkafka/rdkafka.h>

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace outbox {

// Whether a connection error (`err`, `reason` as the error callback gets
// them) is a refusal: SASL authentication failed, the broker's certificate
// failed verification, or the broker refused ours with a TLS alert (which
// librdkafka reports as __SSL during the handshake, or as __TRANSPORT
// "Receive failed: ... alert certificate unknown" after it). Other
// transport and TLS errors (a broker down, or gone mid-handshake) are not.
bool IsPermanentRefusal(int err, absl::string_view reason);

// FailedPrecondition (exit 3): "cannot connect to Kafka (BROKERS): ERRNAME:
// REASON", with the SCRAM hint where it applies (common/scram_hint.h).
absl::Status RefusedConnectionError(absl::string_view brokers, int err,
                                    absl::string_view reason);

// The first refusal one client was told. For a client whose opaque is
// free: Watch() sets the error callback and the opaque to this, which must
// outlive the client.
class KafkaRefusal {
 public:
  explicit KafkaRefusal(std::string brokers) : brokers_(std::move(brokers)) {}
  void Watch(rd_kafka_conf_t* conf);
  // Keeps the first refusal (IsPermanentRefusal) among errors told, and
  // the last error's reason.
  void Told(int err, const char* reason);
  // Serves `rk`'s pending callbacks (rd_kafka_poll), then: OK, or the
  // refusal as RefusedConnectionError.
  absl::Status Check(rd_kafka_t* rk);
  const absl::Status& status() const { return refused_; }
  // The last error's reason (a broker down: "... Connection refused").
  const std::string& last_error() const { return last_error_; }

  // rd_kafka_metadata() within timeout_ms, asked in growing slices (500 ms,
  // doubling) with Check() between them: a metadata request cannot be
  // interrupted, and a refused client would wait out all of timeout_ms.
  // After a refusal: status() is set, and the last slice's error returned.
  rd_kafka_resp_err_t Metadata(rd_kafka_t* rk, bool all_topics,
                               rd_kafka_topic_t* only,
                               const rd_kafka_metadata_t** md, int timeout_ms);

 private:
  std::string brokers_;
  absl::Status refused_;
  std::string last_error_;
};

}  // namespace outbox

#endif  // OUTBOX_KAFKA_KAFKA_REFUSAL_H_
