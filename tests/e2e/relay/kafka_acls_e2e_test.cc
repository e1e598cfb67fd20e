// `outbox-relay acls` (config/kafka_acls.h, docs/operations/kafka-acls.md)
// against a broker of this suite's own with the StandardAuthorizer and a
// SASL/PLAIN listener (StartAclBroker): the relay, logged in as "relay",
// gets exactly the ACLs the command prints for its configuration, granted
// with kafka-acls through the super user's PLAINTEXT listener, and runs at
// least once and exactly once (with the Kafka slot marker, dead letters and
// topic creation, so every resource kind is exercised); with one printed
// ACL left out it fails with one line naming what is missing. On this one
// broker (replication factor 1 is all there is) the start-up replication
// check finds nothing to warn about.
//
// Each case names its own topics, transactional id and group-free
// resources, so the ACLs one case grants never cover another's.
#include <cstdio>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "e2e/relay/relay_e2e_fixture.h"
#include "e2e/relay_http.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class KafkaAclsE2ETest : public RelayE2ETest {
 protected:
  static void SetUpTestSuite() {
    const AclBroker broker = StartAclBroker(TempDir("kafka_acls"));
    broker_dir_ = new std::string(broker.dir);
    plaintext_ = broker.plaintext;
    sasl_ = broker.sasl;
  }

  static void TearDownTestSuite() {
    if (broker_dir_ != nullptr) RunScript("kafka.sh stop " + *broker_dir_);
  }

  void SetUp() override {
    ASSERT_FALSE(plaintext_.empty()) << "the test's broker did not start";
    ASSERT_FALSE(sasl_.empty());
    RelayE2ETest::SetUp();
    // A literal topic of this case's own (no placeholder): its ACL covers
    // no other case's topic.
    extra_relay_args_ = {"--topic", topic_};
  }

  // The relay's arguments as user "relay" on the SASL listener.
  std::vector<std::string> AsRelay(const std::vector<std::string>& extra) {
    auto args = RelayArgs();
    args[4] = sasl_;
    for (const char* p :
         {"security.protocol=SASL_PLAINTEXT", "sasl.mechanisms=PLAIN",
          "sasl.username=relay", "sasl.password=relay-secret"}) {
      args.insert(args.end(), {"--set", std::string("kafka.properties.") + p});
    }
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  // `outbox-relay acls` with `args` (the run's): its kafka-acls lines.
  std::vector<std::string> PrintedAcls(std::vector<std::string> args) {
    args.insert(args.begin() + 1, "acls");
    std::string cmd;
    for (const std::string& a : args) {
      absl::StrAppend(&cmd, "'", a, "' ");  // no quote in any argument
    }
    FILE* p = popen(cmd.c_str(), "r");
    EXPECT_NE(p, nullptr);
    std::string out;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
    EXPECT_EQ(pclose(p), 0) << out;
    std::vector<std::string> lines;
    for (absl::string_view l : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
      if (absl::StartsWith(l, "kafka-acls.sh ")) lines.emplace_back(l);
    }
    return lines;
  }

  // Grants each line but those containing `except` ("" : none), through
  // the super user's listener: the line after its --bootstrap-server.
  void Grant(const std::vector<std::string>& lines,
             const std::string& except = "") {
    for (const std::string& line : lines) {
      if (!except.empty() && absl::StrContains(line, except)) continue;
      const std::string prefix = "kafka-acls.sh --bootstrap-server " + sasl_;
      ASSERT_TRUE(absl::StartsWith(line, prefix)) << line;
      ASSERT_EQ(RunScript("kafka.sh acl " + *broker_dir_ + " " +
                          line.substr(prefix.size()) + " >/dev/null"),
                0)
          << line;
    }
  }

  // Writes a few transactions and checks every committed event reached
  // topic_ (read through the super user's listener).
  void WriteAndExpectDelivered() {
    std::vector<Event> committed;
    std::vector<std::string> rolled_back;
    Write(1, 8, 3, 0, &committed, &rolled_back);
    std::set<std::string> want;
    for (const Event& e : committed) want.insert(e.id);
    std::set<std::string> seen;
    ConsumeUntil(
        plaintext_, {topic_},
        [&](const std::vector<KafkaMessage>& msgs) {
          for (const KafkaMessage& m : msgs) {
            if (want.count(m.Header("id"))) seen.insert(m.Header("id"));
          }
          return seen.size() == want.size();
        },
        90000);
    EXPECT_EQ(seen.size(), want.size()) << relay_->Output();
  }

  static std::string* broker_dir_;
  static std::string plaintext_, sasl_;
};

std::string* KafkaAclsE2ETest::broker_dir_ = nullptr;
std::string KafkaAclsE2ETest::plaintext_;
std::string KafkaAclsE2ETest::sasl_;

TEST_F(KafkaAclsE2ETest, AtLeastOnceRunsWithExactlyThePrintedAcls) {
  const std::string state = "state-" + UniqueName("alo");
  const std::vector<std::string> args =
      AsRelay({"--set", "kafka.state_topic=" + state});
  const std::vector<std::string> acls = PrintedAcls(args);
  // The event topic, the state topic (the operator's records, read at every
  // session start) and its reader's group.
  const std::string all = absl::StrJoin(acls, "\n");
  ASSERT_EQ(acls.size(), 3u) << all;
  EXPECT_THAT(acls[0], HasSubstr("--allow-principal User:relay --operation "
                                 "Write --operation Describe --topic " +
                                 topic_));
  EXPECT_THAT(all, HasSubstr("--topic " + state));
  EXPECT_THAT(all, HasSubstr("--group outbox-relay-checkpoint-reader"));
  ASSERT_TRUE(CreateTopic(plaintext_, topic_, 1, {}).ok());
  Grant(acls);
  relay_ = Process::Start(args, dir_ + "/relay.log");
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  WriteAndExpectDelivered();
  // It could read the operator's records with exactly these ACLs.
  EXPECT_THAT(relay_->Output(),
              Not(HasSubstr("cannot read the operator's skip and advance")));
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();
}

// Exactly once, the HA pair's Kafka slot marker, dead letters on and topic
// creation on: the checkpoint and state topics are created by the relay
// (Create on the topic, no cluster ACL).
std::vector<std::string> ExactlyOnceArgs(const std::string& name) {
  return {"--set", "kafka.exactly_once=true",
          "--set", "kafka.transactional_id=txn-" + name,
          "--set", "kafka.checkpoint_topic=ckpt-" + name,
          "--set", "kafka.state_topic=state-" + name,
          "--set", "postgres.slot_marker=kafka",
          "--set", "postgres.slot_marker_id=" + name,
          "--set", "outbox.on_invalid=dead_letter",
          "--set", "outbox.dead_letter_topic=dlq-" + name,
          "--set", "kafka.topic_creation.enable=true",
          "--set", "kafka.flush_timeout_ms=10000"};
}

TEST_F(KafkaAclsE2ETest, ExactlyOnceRunsWithExactlyThePrintedAcls) {
  const std::string name = UniqueName("eo");
  const std::vector<std::string> args = AsRelay(ExactlyOnceArgs(name));
  const std::vector<std::string> acls = PrintedAcls(args);
  const std::string all = absl::StrJoin(acls, "\n");
  // Event topic, dead-letter, checkpoint and state topics, transactional
  // id, the readers' group.
  EXPECT_EQ(acls.size(), 6u) << all;
  for (const std::string& want :
       {"--topic " + topic_, "--topic dlq-" + name, "--topic ckpt-" + name,
        "--topic state-" + name, "--transactional-id txn-" + name,
        std::string("--group outbox-relay-checkpoint-reader")}) {
    EXPECT_THAT(all, HasSubstr(want));
  }
  Grant(acls);
  // The event topic exists: under exactly once a missing one is not created
  // (its records time out in the transaction; see the report of issue 34).
  ASSERT_TRUE(CreateTopic(plaintext_, topic_, 1, {}).ok());
  relay_ = Process::Start(args, dir_ + "/relay.log");
  ASSERT_TRUE(WaitActive(60000)) << relay_->Output();
  WriteAndExpectDelivered();
  EXPECT_THAT(relay_->Output(), HasSubstr("created the state topic"));
  EXPECT_THAT(relay_->Output(), HasSubstr("created the checkpoint topic"));
  EXPECT_THAT(relay_->Output(), HasSubstr("exactly once"));
  // One broker, every topic RF 1: nothing better is possible, no warning
  // (kafka.internal_topics; internal_topics_cluster_test has 3 brokers).
  EXPECT_TRUE(WaitUntil(
      [&] {
        return RelayMetric(*relay_, "outbox_relay_unreplicated_topics") == 0;
      },
      30000))
      << relay_->Output();
  EXPECT_THAT(relay_->Output(), Not(HasSubstr("replication factor 1")));
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();
}

// One printed ACL left out (Write on the transactional id): the relay does
// not stream, and says so in one line naming the transactional id and what
// to grant (and retries, as for a topic's ACL). Before issue 34 the line was
// librdkafka's alone ("init_transactions: TRANSACTIONAL_ID_AUTHORIZATION_
// FAILED ..."), naming neither.
TEST_F(KafkaAclsE2ETest, AMissingAclIsOneLineNamingIt) {
  const std::string name = UniqueName("miss");
  const std::vector<std::string> args = AsRelay(ExactlyOnceArgs(name));
  const std::vector<std::string> acls = PrintedAcls(args);
  Grant(acls, "--transactional-id txn-" + name);
  relay_ = Process::Start(args, dir_ + "/relay.log");
  ASSERT_TRUE(WaitUntil(
      [&] {
        return absl::StrContains(relay_->Output(), "txn-" + name) &&
               absl::StrContains(absl::AsciiStrToLower(relay_->Output()),
                                 "authoriz");
      },
      90000))
      << relay_->Output();
  relay_->Signal(SIGTERM);
  relay_->Wait(30000);
  // The line that says it: the transactional id and the authorization.
  int lines = 0;
  for (absl::string_view l :
       absl::StrSplit(relay_->Output(), '\n', absl::SkipEmpty())) {
    if (absl::StrContains(l, "txn-" + name) &&
        absl::StrContains(absl::AsciiStrToLower(l), "authoriz")) {
      ++lines;
      EXPECT_THAT(std::string(l),
                  HasSubstr("waiting for a Kafka ACL: the relay's principal "
                            "may not use transactional id txn-" +
                            name));
    }
  }
  EXPECT_GE(lines, 1) << relay_->Output();
  // Nothing reached the topic.
  EXPECT_EQ(ConsumeAll(plaintext_, {topic_}, 1, 2000).size(), 0u);
}

}  // namespace
}  // namespace outbox::testing
