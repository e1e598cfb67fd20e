// ScramProofHint: the cause to add to a Kafka SASL refusal that a wrong
// password does not explain.
//
// librdkafka before 2.6.1 (Debian 12 packages 2.0.2) appends the client
// nonce twice when it builds the SCRAM client-final-message; Kafka 3.x
// brokers let it pass, Kafka 4.x brokers check the nonce as RFC 5802 says
// and refuse the proof, so even the right password fails with "invalid
// credentials with SASL mechanism SCRAM-SHA-...". The fix is librdkafka
// 2.6.1 (confluentinc/librdkafka#4895); Debian 13's 2.8.0 has it.
//
// Pure (the librdkafka version is an argument), so any thread may call it.
#ifndef OUTBOX_COMMON_SCRAM_HINT_H_
#define OUTBOX_COMMON_SCRAM_HINT_H_

#include <string>

#include "absl/strings/string_view.h"

namespace outbox {

// The first librdkafka whose SCRAM Kafka 4.x accepts, in rd_kafka_version()'s
// 0xMMmmrrpp form.
inline constexpr int kLibrdkafkaScramFixed = 0x020601ff;

// For `reason`, librdkafka's text of an authentication error, and
// `librdkafka_version` (rd_kafka_version()): when the reason is a SCRAM
// refusal and the version is older than 2.6.1, the sentence to append
// ("; if the broker is Kafka 4 or later: ..."); empty otherwise.
std::string ScramProofHint(absl::string_view reason, int librdkafka_version);

}  // namespace outbox

#endif  // OUTBOX_COMMON_SCRAM_HINT_H_
