// kafka.internal_topics on a real 3-node cluster (issue 34 item 3; the
// cluster is the kafka_cluster_4 fixture, tests/e2e/cluster.sh, every topic
// RF 3 / min.insync.replicas 2 by default): the topics the relay creates
// for itself (checkpoint, state) come out with the configured
// replication factor and min.insync.replicas, and a relay whose topics have
// replication factor 1 on 3 brokers says so in one warning line and
// outbox_relay_unreplicated_topics. (The suite's single broker, where RF 1
// is all there is, gives no warning: kafka_acls_e2e_test checks that. The
// dead-letter topic's creation is not tested here: the cluster auto-creates
// topics, so the relay never sees one missing.)
//
// Nothing here kills a node; TearDown still restores the cluster, as every
// cluster case must.
#include <algorithm>
#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "e2e/relay/relay_e2e_fixture.h"
#include "e2e/relay_http.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kWarning[] = "have replication factor 1 on a cluster of 3";

class InternalTopicsClusterTest : public RelayE2ETest {
 protected:
  void SetUp() override {
    RelayE2ETest::SetUp();
    brokers_ = ClusterEnv::Get().brokers();
    ASSERT_FALSE(brokers_.empty()) << "no cluster (OUTBOX_CLUSTER_ENV)";
    name_ = UniqueName("it");
    // A literal event topic of this case's own: the replication check then
    // covers no other case's topics on the shared cluster (the default
    // template's prefix outbox.event. would).
    extra_relay_args_ = {"--topic", topic_};
  }

  void TearDown() override {
    RelayE2ETest::TearDown();
    EXPECT_TRUE(ClusterEnv::Get().Restore().ok());
  }

  // The relay on the cluster with topics of this case's own.
  void StartOnCluster(const std::vector<std::string>& sets) {
    auto args = RelayArgs();
    args[4] = brokers_;
    for (const std::string& s : sets) args.insert(args.end(), {"--set", s});
    relay_ = Process::Start(args, dir_ + "/relay.log");
  }

  // Exactly once with the Kafka slot marker: the checkpoint and state
  // topics, created at the first session.
  std::vector<std::string> ExactlyOnce(std::vector<std::string> more) {
    std::vector<std::string> sets = {
        "kafka.exactly_once=true", "kafka.checkpoint_topic=ckpt-" + name_,
        "kafka.state_topic=state-" + name_, "postgres.slot_marker=kafka",
        "postgres.slot_marker_id=" + name_};
    sets.insert(sets.end(), more.begin(), more.end());
    return sets;
  }

  // The smallest replica count of `topic`'s partitions (kcat's metadata,
  // not the relay's code); 0 when the topic is unknown.
  int ReplicationFactor(const std::string& topic) {
    const std::string cmd =
        "kcat -b " + brokers_ + " -L -t " + topic + " 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return 0;
    std::string out;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
    pclose(p);
    // "    partition 0, leader 2, replicas: 2,3,1, isrs: 2,3,1"
    int rf = 0;
    for (absl::string_view line : absl::StrSplit(out, '\n')) {
      const size_t at = line.find("replicas: ");
      if (at == absl::string_view::npos) continue;
      absl::string_view r = line.substr(at + 10);
      r = r.substr(0, r.find(", isrs"));
      const int n = static_cast<int>(std::count(r.begin(), r.end(), ',') +
                                     (r.empty() ? 0 : 1));
      rf = rf == 0 ? n : std::min(rf, n);
    }
    return rf;
  }

  std::string MinIsr(const std::string& topic) {
    auto configs = TopicConfigs(brokers_, topic);
    if (!configs.ok()) return configs.status().ToString();
    return (*configs)["min.insync.replicas"];
  }

  std::string brokers_, name_;
};

TEST_F(InternalTopicsClusterTest, CreatedWithTheConfiguredReplication) {
  StartOnCluster(ExactlyOnce({"kafka.internal_topics.replication_factor=3",
                              "kafka.internal_topics.min_insync_replicas=1"}));
  ASSERT_TRUE(WaitActive(90000)) << relay_->Output();
  // The check runs once the session is open, the checkpoint topic created
  // (the slot is active before that): replicated, nothing to warn about.
  ASSERT_TRUE(WaitUntil(
      [&] {
        return RelayMetric(*relay_, "outbox_relay_unreplicated_topics") == 0;
      },
      90000))
      << relay_->Output();
  for (const std::string& t : {"ckpt-" + name_, "state-" + name_}) {
    EXPECT_EQ(ReplicationFactor(t), 3) << t;
    EXPECT_EQ(MinIsr(t), "1") << t;  // the cluster's is 2
  }
  EXPECT_THAT(relay_->Output(), Not(HasSubstr(kWarning)));
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();
}

TEST_F(InternalTopicsClusterTest, ReplicationFactorOneOnThreeBrokersIsWarned) {
  StartOnCluster(ExactlyOnce({"kafka.internal_topics.replication_factor=1"}));
  ASSERT_TRUE(WaitActive(90000)) << relay_->Output();
  ASSERT_TRUE(WaitUntil(
      [&] { return absl::StrContains(relay_->Output(), kWarning); }, 60000))
      << relay_->Output();
  EXPECT_EQ(ReplicationFactor("ckpt-" + name_), 1);
  EXPECT_EQ(ReplicationFactor("state-" + name_), 1);
  // One line, naming both topics (the event topic does not exist yet).
  int lines = 0;
  for (absl::string_view l : absl::StrSplit(relay_->Output(), '\n')) {
    if (!absl::StrContains(l, kWarning)) continue;
    ++lines;
    EXPECT_THAT(std::string(l), HasSubstr("ckpt-" + name_));
    EXPECT_THAT(std::string(l), HasSubstr("state-" + name_));
  }
  EXPECT_EQ(lines, 1) << relay_->Output();
  EXPECT_EQ(RelayMetric(*relay_, "outbox_relay_unreplicated_topics"), 2);
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();
}

}  // namespace
}  // namespace outbox::testing
