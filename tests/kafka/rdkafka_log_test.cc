#include "kafka/rdkafka_log.h"

#include "gtest/gtest.h"

namespace outbox {
namespace {

TEST(RdKafkaLogTest, WarningsAndWorseExceptTheGaplessNotice) {
  EXPECT_TRUE(RdKafkaLogShown(3, "FAIL", "127.0.0.1:9092: Connect failed"));
  EXPECT_TRUE(RdKafkaLogShown(4, "CONFWARN",
                              "Configuration property "
                              "sasl.mechanism is deprecated"));
  EXPECT_FALSE(RdKafkaLogShown(6, "BROKER", "Added 127.0.0.1:9092"));
  EXPECT_FALSE(RdKafkaLogShown(
      4, "CONFWARN",
      "[thrd:app]: Configuration property enable.gapless.guarantee is "
      "experimental: When set to `true`, any error ..."));
}

}  // namespace
}  // namespace outbox
