// The keys of the tableless outbox (outbox.messages.*) and the heartbeat
// (postgres.heartbeat_*): parsed, defaulted and validated.
#include "config/config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

using ::testing::HasSubstr;

TEST(ConfigMessagesTest, DefaultsAreOff) {
  Config c;
  EXPECT_FALSE(c.outbox.messages.enabled);
  EXPECT_EQ(c.outbox.messages.prefix, "outbox");
  EXPECT_EQ(c.outbox.messages.topic, "outbox.event.{aggregatetype}");
  EXPECT_EQ(c.postgres.heartbeat_interval_s, 0);
  EXPECT_EQ(c.postgres.heartbeat_timeout_s, 60);
}

TEST(ConfigMessagesTest, KeysParse) {
  auto c = ParseConfigYaml(R"(
postgres:
  heartbeat_interval_s: 5
  heartbeat_timeout_s: 20
outbox:
  messages:
    enabled: true
    prefix: app.events
    topic: "events.{type}"
)",
                           "t.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->outbox.messages.enabled);
  EXPECT_EQ(c->outbox.messages.prefix, "app.events");
  EXPECT_EQ(c->outbox.messages.topic, "events.{type}");
  EXPECT_EQ(c->postgres.heartbeat_interval_s, 5);
  EXPECT_EQ(c->postgres.heartbeat_timeout_s, 20);
}

TEST(ConfigMessagesTest, Refusals) {
  auto c = ParseConfigYaml(
      "postgres: {heartbeat_interval_s: 30, heartbeat_timeout_s: 30}", "t");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("postgres.heartbeat_timeout_s"));
  c = ParseConfigYaml("outbox: {messages: {enabled: true, prefix: ''}}", "t");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("outbox.messages.prefix"));
  c = ParseConfigYaml("postgres: {heartbeat_interval_s: -1}", "t");
  ASSERT_FALSE(c.ok());
}

}  // namespace
}  // namespace outbox
