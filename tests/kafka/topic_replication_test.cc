// The start-up replication check's decision (kafka/topic_replication.h) and
// the replication a created internal topic gets (ApplyInternalTopics,
// kafka/topic_admin.h); DescribeTopicReplication and the creation meet a
// real cluster in tests/e2e/relay/internal_topics_cluster_test.cc.
#include "kafka/topic_replication.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kafka/topic_admin.h"

namespace outbox {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<KafkaAcl> RelayTopics() {
  return {KafkaAcl{"topic", "outbox.event.", true, {"Write"}, ""},
          KafkaAcl{"topic", "outbox.relay.checkpoints", false, {"Write"}, ""},
          KafkaAcl{"transactional-id", "outbox.", true, {"Write"}, ""},
          KafkaAcl{"topic", "*", false, {"Write"}, ""}};
}

ClusterReplication Cluster(int brokers) {
  return ClusterReplication{
      brokers,
      {{"outbox.event.order", 1},
       {"outbox.event.user", 3},
       {"outbox.relay.checkpoints", 1},
       {"outbox.relay.checkpoints2", 1},  // not a prefix resource
       {"unrelated", 1},                  // only under '*': not checked
       {"outbox.other", 1}}};             // under the transactional id only
}

TEST(TopicReplicationTest, WarnsAboutRf1TopicsTheRelayUsesOnThreeBrokers) {
  EXPECT_THAT(UnreplicatedTopics(Cluster(3), RelayTopics()),
              ElementsAre("outbox.event.order", "outbox.relay.checkpoints"));
  EXPECT_THAT(UnreplicatedTopics(Cluster(5), RelayTopics()),
              ElementsAre("outbox.event.order", "outbox.relay.checkpoints"));
}

TEST(TopicReplicationTest, SmallClustersAreNotWarnedAbout) {
  EXPECT_THAT(UnreplicatedTopics(Cluster(1), RelayTopics()), IsEmpty());
  EXPECT_THAT(UnreplicatedTopics(Cluster(2), RelayTopics()), IsEmpty());
}

TEST(TopicReplicationTest, WarningIsOneLineNamingTheTopics) {
  EXPECT_EQ(UnreplicatedTopicsWarning({}, 3), "");
  const std::string w = UnreplicatedTopicsWarning(
      {"outbox.event.order", "outbox.relay.checkpoints"}, 3);
  EXPECT_THAT(w, HasSubstr("replication factor 1 on a cluster of 3 brokers: "
                           "outbox.event.order, outbox.relay.checkpoints;"));
  EXPECT_THAT(w, HasSubstr("kafka.internal_topics.replication_factor"));
  EXPECT_EQ(w.find('\n'), std::string::npos);
}

TEST(TopicReplicationTest, InternalTopicsSetReplicationOnlyWhenConfigured) {
  NewTopicSpec spec;
  spec.replication_factor = 2;  // kafka.topic_creation's, say
  spec.configs["min.insync.replicas"] = "1";
  ApplyInternalTopics(KafkaConfig::InternalTopics{}, &spec);
  EXPECT_EQ(spec.replication_factor, 2);
  EXPECT_EQ(spec.configs["min.insync.replicas"], "1");
  ApplyInternalTopics(KafkaConfig::InternalTopics{3, 2}, &spec);
  EXPECT_EQ(spec.replication_factor, 3);
  EXPECT_EQ(spec.configs["min.insync.replicas"], "2");
  NewTopicSpec fresh;
  ApplyInternalTopics(KafkaConfig::InternalTopics{1, -1}, &fresh);
  EXPECT_EQ(fresh.replication_factor, 1);
  EXPECT_EQ(fresh.configs.count("min.insync.replicas"), 0u);
}

}  // namespace
}  // namespace outbox
