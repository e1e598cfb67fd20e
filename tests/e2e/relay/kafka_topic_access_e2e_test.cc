// Kafka refusing a topic rather than a record (issue 23 items 8 and 9),
// against a broker of this suite's own (scripts/kafka.sh with extra
// properties): auto-create off, the StandardAuthorizer, and a SASL/PLAIN
// listener where the relay logs in as "relay". The PLAINTEXT listener's
// ANONYMOUS is a super user: the test's own admin calls go there.
//
// A missing topic and a missing ACL stall the relay (nothing confirmed past
// the refused event, never poison: no exit 4, no dead letter), show as the
// outbox_relay_kafka_blocked gauge and the status page's last error, and
// resume by themselves once the topic or the ACL appears. With
// kafka.topic_creation the relay creates the missing topic itself.
#include <cstdlib>
#include <fstream>

#include "e2e/relay/relay_e2e_fixture.h"
#include "e2e/relay_http.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

class KafkaTopicAccessE2ETest : public RelayE2ETest {
 protected:
  static void SetUpTestSuite() {
    const AclBroker broker = StartAclBroker(TempDir("kafka_acl"));
    broker_dir_ = new std::string(broker.dir);
    plaintext_ = broker.plaintext;
    sasl_ = broker.sasl;
    ASSERT_FALSE(plaintext_.empty()) << "the suite's broker did not start";
  }

  static void TearDownTestSuite() {
    if (broker_dir_ != nullptr) RunScript("kafka.sh stop " + *broker_dir_);
  }

  void SetUp() override {
    ASSERT_FALSE(plaintext_.empty());
    ASSERT_FALSE(sasl_.empty());
    RelayE2ETest::SetUp();
  }

  // The relay on the suite's broker: the super user's listener, or (as
  // user "relay") the SASL one.
  void StartRelayOn(bool as_relay_user, std::vector<std::string> extra) {
    auto args = RelayArgs();
    args[4] = as_relay_user ? sasl_ : plaintext_;
    if (as_relay_user) {
      for (const char* p :
           {"security.protocol=SASL_PLAINTEXT", "sasl.mechanisms=PLAIN",
            "sasl.username=relay", "sasl.password=relay-secret"}) {
        args.insert(args.end(),
                    {"--set", std::string("kafka.properties.") + p});
      }
    }
    args.insert(args.end(), extra.begin(), extra.end());
    relay_ = Process::Start(args, dir_ + "/relay.log");
  }

  // One event for topic_; returns the WAL position after its commit.
  std::string InsertEvent(const std::string& id) {
    db_->Exec("INSERT INTO public." + table_ +
              " (id, aggregatetype, aggregateid, type, payload) VALUES ('" +
              id + "', '" + aggtype_ + "', 'k', 'Created', '{}')");
    return db_->Scalar("SELECT pg_current_wal_lsn()");
  }

  // A labelled series' value from /metrics; -1 while absent.
  double Series(const std::string& series) {
    int code = 0;
    const std::string body = RelayHttpGet(*relay_, "/metrics", &code);
    const size_t at = body.find("\n" + series + " ");
    if (at == std::string::npos) return -1;
    return std::strtod(body.c_str() + at + series.size() + 2, nullptr);
  }

  bool SlotBefore(const std::string& lsn) {
    return db_->Scalar("SELECT confirmed_flush_lsn < '" + lsn +
                       "'::pg_lsn FROM pg_replication_slots WHERE slot_name "
                       "= '" +
                       slot_ + "'") == "t";
  }

  static std::string* broker_dir_;
  static std::string plaintext_, sasl_;
};

std::string* KafkaTopicAccessE2ETest::broker_dir_ = nullptr;
std::string KafkaTopicAccessE2ETest::plaintext_;
std::string KafkaTopicAccessE2ETest::sasl_;

constexpr char kBlockedUnknown[] =
    "outbox_relay_kafka_blocked{reason=\"unknown_topic\"}";
constexpr char kBlockedAcl[] =
    "outbox_relay_kafka_blocked{reason=\"authorization\"}";

// Item 8: a topic created after the relay started (broker auto-create off).
TEST_F(KafkaTopicAccessE2ETest, AMissingTopicStallsUntilItIsCreated) {
  StartRelayOn(false, {});  // on_invalid: halt, the default
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  const std::string id = "00000000-0000-4000-8000-000000002301";
  const std::string after = InsertEvent(id);
  ASSERT_TRUE(WaitUntil([&] { return Series(kBlockedUnknown) == 1; }, 60000))
      << relay_->Output();
  // Waiting, not halted (exit 4), and nothing confirmed past the event.
  EXPECT_TRUE(relay_->Running()) << relay_->Output();
  EXPECT_TRUE(SlotBefore(after)) << ConfirmedFlush() << " " << after;
  int code = 0;
  EXPECT_THAT(RelayHttpGet(*relay_, "/status.json", &code),
              HasSubstr("waiting for Kafka topic " + topic_ + " to exist"));
  EXPECT_THAT(relay_->Output(),
              HasSubstr("waiting for Kafka topic " + topic_ + " to exist"));
  ASSERT_TRUE(CreateTopic(plaintext_, topic_, 1, {}).ok());
  std::vector<KafkaMessage> got = ConsumeAll(plaintext_, {topic_}, 1, 60000);
  ASSERT_EQ(got.size(), 1u) << relay_->Output();
  EXPECT_EQ(got[0].Header("id"), id);
  EXPECT_TRUE(WaitUntil([&] { return Series(kBlockedUnknown) == 0; }, 30000));
  EXPECT_TRUE(WaitUntil([&] { return !SlotBefore(after); }, 30000));
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();
}

// Item 8: an ACL granted after the relay started, under on_invalid:
// dead_letter, where the relay may write the dead-letter topic: the event
// must wait for its own topic, not become a dead letter.
TEST_F(KafkaTopicAccessE2ETest, AMissingAclStallsUntilItIsGranted) {
  const std::string dlq = UniqueName("dlq");
  ASSERT_TRUE(CreateTopic(plaintext_, topic_, 1, {}).ok());
  ASSERT_TRUE(CreateTopic(plaintext_, dlq, 1, {}).ok());
  ASSERT_EQ(RunScript("kafka.sh acl " + *broker_dir_ +
                      " --add --allow-principal User:relay --operation Write "
                      "--operation Describe --topic " +
                      dlq + " >/dev/null"),
            0);
  StartRelayOn(true, {"--set", "outbox.on_invalid=dead_letter", "--set",
                      "outbox.dead_letter_topic=" + dlq});
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  const std::string id = "00000000-0000-4000-8000-000000002302";
  const std::string after = InsertEvent(id);
  ASSERT_TRUE(WaitUntil([&] { return Series(kBlockedAcl) == 1; }, 60000))
      << relay_->Output();
  EXPECT_TRUE(relay_->Running()) << relay_->Output();
  EXPECT_TRUE(SlotBefore(after)) << ConfirmedFlush() << " " << after;
  EXPECT_THAT(relay_->Output(), HasSubstr("waiting for a Kafka ACL"));
  ASSERT_EQ(RunScript("kafka.sh acl " + *broker_dir_ +
                      " --add --allow-principal User:relay --operation Write "
                      "--operation Describe --topic " +
                      topic_ + " >/dev/null"),
            0);
  std::vector<KafkaMessage> got = ConsumeAll(plaintext_, {topic_}, 1, 90000);
  ASSERT_EQ(got.size(), 1u) << relay_->Output();
  EXPECT_EQ(got[0].Header("id"), id);
  EXPECT_TRUE(WaitUntil([&] { return Series(kBlockedAcl) == 0; }, 30000));
  // Delivered where it belongs: the dead-letter topic never saw it.
  EXPECT_EQ(ConsumeAll(plaintext_, {dlq}, 1, 2000).size(), 0u);
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();
}

// Issue 32 item 13: an instance blocked on a missing topic that another
// instance then takes over from is a standby: the block is no longer its
// to report, though it never delivers to that topic itself. Its gauge went
// on saying 1 (and the alert firing) for as long as it stayed standby.
TEST_F(KafkaTopicAccessE2ETest, ABlockedInstanceThatBecomesStandbyClearsIt) {
  // A: blocked, then waiting 20 s before it tries the slot again: B,
  // started once A let the slot go, takes it first.
  StartRelayOn(false, {"--set", "postgres.reconnect_backoff_initial_ms=20000",
                       "--set", "postgres.reconnect_backoff_max_ms=20000"});
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  const std::string id = "00000000-0000-4000-8000-000000003213";
  InsertEvent(id);
  ASSERT_TRUE(WaitUntil([&] { return Series(kBlockedUnknown) == 1; }, 60000))
      << relay_->Output();
  ASSERT_TRUE(WaitUntil(
      [&] {
        return db_->Scalar(
                   "SELECT count(*) FROM pg_replication_slots WHERE "
                   "slot_name = '" +
                   slot_ + "' AND active") == "0";
      },
      30000));
  // B takes the slot while A waits and delivers the event once the topic
  // exists.
  ASSERT_TRUE(CreateTopic(plaintext_, topic_, 1, {}).ok());
  auto args = RelayArgs();
  args[4] = plaintext_;
  auto b = Process::Start(args, dir_ + "/relay_b.log");
  std::vector<KafkaMessage> got = ConsumeAll(plaintext_, {topic_}, 1, 60000);
  ASSERT_EQ(got.size(), 1u) << b->Output();
  EXPECT_EQ(got[0].Header("id"), id);
  EXPECT_THAT(b->Output(), HasSubstr("streaming"));
  // A finds the slot held by B: a standby, no longer blocked.
  EXPECT_TRUE(WaitUntil([&] { return Series(kBlockedUnknown) == 0; }, 150000))
      << relay_->Output();
  EXPECT_THAT(relay_->Output(), HasSubstr("is in use by process"));
  b->Signal(SIGTERM);
  EXPECT_EQ(b->Wait(30000), 0) << b->Output();
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();
}

// Item 9: kafka.topic_creation creates the missing topic with the
// configured partitions and topic configs (broker auto-create off).
TEST_F(KafkaTopicAccessE2ETest, TopicCreationCreatesTheMissingTopic) {
  StartRelayOn(false, {"--set", "kafka.topic_creation.enable=true", "--set",
                       "kafka.topic_creation.partitions=2", "--set",
                       "kafka.topic_creation.configs.retention.ms=3600000"});
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  const std::string id = "00000000-0000-4000-8000-000000002303";
  InsertEvent(id);
  std::vector<KafkaMessage> got = ConsumeAll(plaintext_, {topic_}, 1, 60000);
  ASSERT_EQ(got.size(), 1u) << relay_->Output();
  EXPECT_EQ(got[0].Header("id"), id);
  absl::StatusOr<std::map<std::string, std::string>> configs =
      TopicConfigs(plaintext_, topic_);
  ASSERT_TRUE(configs.ok()) << configs.status();
  EXPECT_EQ((*configs)["retention.ms"], "3600000");
  EXPECT_THAT(relay_->Output(),
              HasSubstr("created the missing topic (kafka.topic_creation)"));
  EXPECT_THAT(relay_->Output(), HasSubstr("partitions=2"));
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();
}

}  // namespace
}  // namespace outbox::testing
