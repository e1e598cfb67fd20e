// KafkaAcls (config/kafka_acls.h): the resources and operations each client
// needs per mode, and the kafka-acls lines `outbox-relay acls` prints.
#include "config/kafka_acls.h"

#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "load_config.h"

namespace outbox {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Config MustLoad(std::vector<std::string> args) {
  absl::StatusOr<Config> c = Load(std::move(args));
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : Config();
}

// "topic outbox.event.* Write,Describe" per resource, for compact asserts.
std::vector<std::string> Summary(const std::vector<KafkaAcl>& acls) {
  std::vector<std::string> out;
  for (const KafkaAcl& a : acls) {
    out.push_back(absl::StrCat(a.resource, " ", a.name, a.prefixed ? "*" : "",
                               " ", absl::StrJoin(a.operations, ",")));
  }
  return out;
}

// The state topic whatever the marker: every session reads the operator's
// records (skip, advance, pause) and writes what it applied.
TEST(KafkaAclsTest, AtLeastOnceWritesTheEventTopicsAndReadsTheOperators) {
  Config c = MustLoad({});
  EXPECT_THAT(
      Summary(KafkaAcls(c, AclClient::kRelay)),
      ::testing::ElementsAre(
          "topic outbox.event.* Write,Describe",
          "topic outbox.relay.state Read,Write,Describe,DescribeConfigs,Create",
          "group outbox-relay-checkpoint-reader Read"));
}

TEST(KafkaAclsTest, ExactlyOnceAddsCheckpointTransactionalIdAndGroup) {
  Config c = MustLoad({"--set", "kafka.exactly_once=true"});
  EXPECT_THAT(
      Summary(KafkaAcls(c, AclClient::kRelay)),
      ::testing::ElementsAre(
          "topic outbox.event.* Write,Describe",
          "topic outbox.relay.checkpoints "
          "Read,Write,Describe,DescribeConfigs,Create",
          "topic outbox.relay.state Read,Write,Describe,DescribeConfigs,Create",
          "transactional-id outbox-relay-* Write,Describe",
          "group outbox-relay-checkpoint-reader Read"));
  c = MustLoad({"--set", "kafka.exactly_once=true", "--set",
                "kafka.transactional_id=relay-a"});
  EXPECT_THAT(Summary(KafkaAcls(c, AclClient::kRelay)),
              ::testing::Contains("transactional-id relay-a Write,Describe"));
}

TEST(KafkaAclsTest, KafkaSlotMarkerDeadLetterAndTopicCreation) {
  Config c = MustLoad(
      {"--set", "postgres.slot_marker=kafka", "--set",
       "postgres.slot_marker_id=a", "--set", "outbox.on_invalid=dead_letter",
       "--set", "kafka.topic_creation.enable=true", "--topic", "orders"});
  EXPECT_THAT(
      Summary(KafkaAcls(c, AclClient::kRelay)),
      ::testing::ElementsAre(
          "topic orders Write,Describe,Create",
          "topic outbox.dead_letter Write,Describe,Create",
          "topic outbox.relay.state Read,Write,Describe,DescribeConfigs,Create",
          "group outbox-relay-checkpoint-reader Read"));
  // The poller neither creates topics nor has internal ones.
  EXPECT_THAT(
      Summary(KafkaAcls(c, AclClient::kPoller)),
      ::testing::ElementsAre("topic orders Write,Describe",
                             "topic outbox.dead_letter Write,Describe"));
}

TEST(KafkaAclsTest, TemplatesMessagesAndTopicRegex) {
  Config c = MustLoad({"--topic", "{aggregatetype}.events", "--set",
                       "outbox.messages.enabled=true", "--set",
                       "outbox.messages.topic=msg.{type}", "--set",
                       "outbox.topic_regex=(.*)", "--set",
                       "outbox.topic_replacement=routed.$1"});
  EXPECT_THAT(
      Summary(KafkaAcls(c, AclClient::kRelay)),
      ::testing::ElementsAre(
          "topic * Write,Describe", "topic msg.* Write,Describe",
          "topic routed.* Write,Describe",
          "topic outbox.relay.state Read,Write,Describe,DescribeConfigs,Create",
          "group outbox-relay-checkpoint-reader "
          "Read"));
}

TEST(KafkaAclsTest, ReadersReadTheEventTopics) {
  Config c = MustLoad({});
  EXPECT_THAT(Summary(KafkaAcls(c, AclClient::kAudit)),
              ::testing::ElementsAre("topic outbox.event.* Read,Describe",
                                     "group outbox-audit Read"));
  EXPECT_THAT(Summary(KafkaAcls(c, AclClient::kRepublish)),
              ::testing::ElementsAre("topic outbox.event.* Read,Write,Describe",
                                     "group outbox-audit Read"));
}

TEST(KafkaAclsTest, CommandLines) {
  Config c = MustLoad({"--kafka", "k1:9092,k2:9092", "--set",
                       "kafka.exactly_once=true", "--set",
                       "kafka.properties.sasl.username=relay"});
  EXPECT_EQ(DefaultAclPrincipal(c), "User:relay");
  EXPECT_EQ(DefaultAclPrincipal(MustLoad({})), "User:outbox-relay");
  const std::string out = FormatKafkaAcls(c, AclClient::kRelay, "User:relay");
  EXPECT_THAT(out, HasSubstr("# Kafka ACLs of outbox-relay for principal "
                             "User:relay (kafka.exactly_once)\n"));
  EXPECT_THAT(out,
              HasSubstr("\nkafka-acls.sh --bootstrap-server k1:9092,k2:9092 "
                        "--add --allow-principal User:relay --operation Write "
                        "--operation Describe --topic outbox.event. "
                        "--resource-pattern-type prefixed\n"));
  EXPECT_THAT(out, HasSubstr("--operation Write --operation Describe "
                             "--transactional-id outbox-relay- "
                             "--resource-pattern-type prefixed\n"));
  EXPECT_THAT(out, HasSubstr("--operation Read --group "
                             "outbox-relay-checkpoint-reader\n"));
  KafkaAcl all{"topic", "*", false, {"Write"}, ""};
  EXPECT_THAT(KafkaAclCommand(all, "b:1", "User:x"), HasSubstr("--topic '*'"));
  EXPECT_THAT(KafkaAclCommand(all, "b:1", "User:x"),
              Not(HasSubstr("prefixed")));
}

}  // namespace
}  // namespace outbox
