// outbox-relay with kafka.exactly_once and the checkpoint topic: a missing
// one is created compacted (one partition), an existing one that is not
// compacted gets one warning line and is left as it is.
#include <algorithm>

#include "integration/relay_e2e_fixture.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

class RelayCheckpointTopicTest : public ExactlyOnceRelayE2ETest {
 protected:
  // Starts the relay and waits until it has published one event.
  void PublishOne() {
    StartRelay();
    ASSERT_TRUE(WaitActive()) << relay_->Output();
    db_->Exec(SizedEventSql(db_->Scalar("SELECT gen_random_uuid()"), "k", 50));
    EXPECT_EQ(ConsumeAll(env_->kafka_brokers(), {topic_}, 1, 30000).size(), 1u)
        << relay_->Output();
  }
};

TEST_F(RelayCheckpointTopicTest, MissingTopicIsCreatedCompacted) {
  PublishOne();
  auto configs = TopicConfigs(env_->kafka_brokers(), checkpoint_topic_);
  ASSERT_TRUE(configs.ok()) << configs.status();
  EXPECT_EQ((*configs)["cleanup.policy"], "compact");
  EXPECT_THAT(relay_->Output(), HasSubstr("created the checkpoint topic"));
  EXPECT_THAT(relay_->Output(), ::testing::Not(HasSubstr("not compacted")));
}

TEST_F(RelayCheckpointTopicTest, TopicThatIsNotCompactedGetsOneWarning) {
  ASSERT_TRUE(CreateTopic(env_->kafka_brokers(), checkpoint_topic_, 1,
                          {{"cleanup.policy", "delete"}})
                  .ok());
  PublishOne();
  std::string out = relay_->Output();
  const std::string warning = "the checkpoint topic is not compacted";
  size_t first = out.find(warning);
  EXPECT_NE(first, std::string::npos) << out;
  EXPECT_EQ(out.find(warning, first + 1), std::string::npos) << out;
  EXPECT_THAT(out, HasSubstr("cleanup.policy=delete"));
  // Left as the operator made it.
  auto configs = TopicConfigs(env_->kafka_brokers(), checkpoint_topic_);
  ASSERT_TRUE(configs.ok()) << configs.status();
  EXPECT_EQ((*configs)["cleanup.policy"], "delete");
  EXPECT_TRUE(relay_->Running()) << out;
}

}  // namespace
}  // namespace outbox::testing
