#include "common/scram_hint.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace outbox {

std::string ScramProofHint(absl::string_view reason, int librdkafka_version) {
  if (librdkafka_version >= kLibrdkafkaScramFixed ||
      !absl::StrContains(reason, "SASL mechanism SCRAM-")) {
    return "";
  }
  return absl::StrCat(
      "; if the broker is Kafka 4 or later, the password may be right: "
      "librdkafka ",
      (librdkafka_version >> 24) & 0xff, ".", (librdkafka_version >> 16) & 0xff,
      ".", (librdkafka_version >> 8) & 0xff,
      " builds SCRAM proofs Kafka 4 refuses (fixed in librdkafka 2.6.1, "
      "Debian 13's build); use that build, SASL PLAIN over SSL, or mTLS");
}

}  // namespace outbox
