#include "common/scram_hint.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kScramRefused[] =
    "sasl_ssl://127.0.0.1:9093/bootstrap: SASL authentication error: "
    "Authentication failed during authentication due to invalid credentials "
    "with SASL mechanism SCRAM-SHA-512 (after 1511ms in state AUTH_REQ)";

TEST(ScramProofHintTest, OldLibrdkafkaRefusedOverScramNamesTheCause) {
  std::string hint = ScramProofHint(kScramRefused, 0x020002ff);  // 2.0.2
  EXPECT_THAT(hint, HasSubstr("librdkafka 2.0.2"));
  EXPECT_THAT(hint, HasSubstr("Kafka 4"));
  EXPECT_THAT(hint, HasSubstr("2.6.1"));
  EXPECT_EQ(hint.find('\n'), std::string::npos);
  EXPECT_THAT(ScramProofHint(kScramRefused, 0x020600ff), HasSubstr("2.6.0"));
}

TEST(ScramProofHintTest, NothingFromAFixedLibrdkafka) {
  EXPECT_THAT(ScramProofHint(kScramRefused, 0x020601ff), IsEmpty());
  EXPECT_THAT(ScramProofHint(kScramRefused, 0x020800ff), IsEmpty());
}

TEST(ScramProofHintTest, NothingForOtherMechanismsOrErrors) {
  EXPECT_THAT(ScramProofHint("SASL authentication error: Authentication "
                             "failed: Invalid username or password",
                             0x020002ff),
              IsEmpty());
  EXPECT_THAT(ScramProofHint("invalid credentials with SASL mechanism PLAIN",
                             0x020002ff),
              IsEmpty());
  EXPECT_THAT(ScramProofHint("SSL handshake failed: certificate verify failed",
                             0x020002ff),
              IsEmpty());
}

}  // namespace
}  // namespace outbox
