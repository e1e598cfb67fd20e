#include "kafka/kafka_refusal.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

using ::testing::HasSubstr;

// The reasons are librdkafka 2.0.2's, as the TLS e2e test's relays logged
// them (tests/e2e/tls_e2e_test.cc, RefusedConnectionsExit3).
TEST(KafkaRefusalTest, RefusalsAreTheOnesNoReconnectFixes) {
  EXPECT_TRUE(IsPermanentRefusal(
      RD_KAFKA_RESP_ERR__AUTHENTICATION,
      "sasl_ssl://127.0.0.1:1/bootstrap: SASL authentication error: "
      "Authentication failed: Invalid username or password"));
  EXPECT_TRUE(IsPermanentRefusal(
      RD_KAFKA_RESP_ERR__SSL,
      "sasl_ssl://127.0.0.1:1/bootstrap: SSL handshake failed: "
      "error:0A000086:SSL routines::certificate verify failed: broker "
      "certificate could not be verified"));
  EXPECT_TRUE(IsPermanentRefusal(
      RD_KAFKA_RESP_ERR__TRANSPORT,
      "ssl://127.0.0.1:1/bootstrap: Receive failed: error:0A000416:SSL "
      "routines::sslv3 alert certificate unknown: SSL alert number 46"));
  // A broker that is down, or went away mid-handshake, is waited out.
  EXPECT_FALSE(IsPermanentRefusal(
      RD_KAFKA_RESP_ERR__TRANSPORT,
      "127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: "
      "Connection refused (after 0ms in state CONNECT)"));
  EXPECT_FALSE(IsPermanentRefusal(
      RD_KAFKA_RESP_ERR__SSL,
      "ssl://127.0.0.1:1/bootstrap: SSL handshake failed: Disconnected"));
  EXPECT_FALSE(IsPermanentRefusal(RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN,
                                  "1/1 brokers are down"));
}

TEST(KafkaRefusalTest, KeepsTheFirstRefusalAsAnExit3Error) {
  KafkaRefusal refusal("127.0.0.1:9093");
  refusal.Told(RD_KAFKA_RESP_ERR__TRANSPORT, "Connection refused");
  EXPECT_TRUE(refusal.status().ok());
  refusal.Told(RD_KAFKA_RESP_ERR__AUTHENTICATION,
               "SASL authentication error: Authentication failed");
  refusal.Told(RD_KAFKA_RESP_ERR__SSL, "certificate verify failed");
  EXPECT_TRUE(absl::IsFailedPrecondition(refusal.status()));
  EXPECT_EQ(refusal.last_error(), "certificate verify failed");
  EXPECT_EQ(refusal.status().message(),
            "cannot connect to Kafka (127.0.0.1:9093): _AUTHENTICATION: SASL "
            "authentication error: Authentication failed");
  EXPECT_THAT(std::string(RefusedConnectionError("b:1", 0, "x").message()),
              HasSubstr("cannot connect to Kafka (b:1): "));
}

}  // namespace
}  // namespace outbox
