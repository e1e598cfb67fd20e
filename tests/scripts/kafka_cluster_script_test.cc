// scripts/kafka_cluster.sh as the cluster cases use it (through ClusterEnv),
// on the kafka_cluster_4 fixture's cluster (kafka_cluster_script_test) and,
// lighter, on kafka_cluster_39's. What the script says is checked against
// what the cluster does, seen without the script: metadata from librdkafka,
// process ids, produce and consume with kcat, the nodes' own logs. Each
// case leaves the cluster whole (ClusterEnv::Restore in TearDown).
#include <librdkafka/rdkafka.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "e2e/test_env.h"
#include "gtest/gtest.h"

namespace outbox::testing {
namespace {

// One partition as a broker's metadata response tells it.
struct PartitionState {
  int leader = -1;
  std::vector<int> replicas;
  std::vector<int> isr;
};

// Metadata of `topic` (every topic when empty) from `brokers`, within
// timeout_ms; nullptr when no broker answered.
const rd_kafka_metadata_t* Metadata(rd_kafka_t* rk, const std::string& topic,
                                    int timeout_ms) {
  rd_kafka_topic_t* t =
      topic.empty() ? nullptr : rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t err =
      rd_kafka_metadata(rk, t == nullptr ? 1 : 0, t, &md, timeout_ms);
  if (t != nullptr) rd_kafka_topic_destroy(t);
  return err == RD_KAFKA_RESP_ERR_NO_ERROR ? md : nullptr;
}

rd_kafka_t* Client(const std::string& brokers) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  rd_kafka_conf_set(conf, "bootstrap.servers", brokers.c_str(), err,
                    sizeof(err));
  rd_kafka_conf_set(conf, "log_level", "0", err, sizeof(err));
  return rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
}

// The state of topic-partition seen from `brokers`; leader -1 and nothing
// else when it could not be had.
PartitionState State(const std::string& brokers, const std::string& topic,
                     int partition) {
  PartitionState state;
  rd_kafka_t* rk = Client(brokers);
  if (const rd_kafka_metadata_t* md = Metadata(rk, topic, 10000)) {
    for (int t = 0; t < md->topic_cnt; ++t) {
      for (int p = 0; p < md->topics[t].partition_cnt; ++p) {
        const rd_kafka_metadata_partition_t& mp = md->topics[t].partitions[p];
        if (mp.id != partition || mp.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
          continue;
        }
        state.leader = mp.leader;
        state.replicas.assign(mp.replicas, mp.replicas + mp.replica_cnt);
        state.isr.assign(mp.isrs, mp.isrs + mp.isr_cnt);
        std::sort(state.replicas.begin(), state.replicas.end());
        std::sort(state.isr.begin(), state.isr.end());
      }
    }
    rd_kafka_metadata_destroy(md);
  }
  rd_kafka_destroy(rk);
  return state;
}

// How many brokers a metadata request to `brokers` names; -1 when none
// answered within timeout_ms.
int BrokersSeen(const std::string& brokers, int timeout_ms) {
  rd_kafka_t* rk = Client(brokers);
  int n = -1;
  if (const rd_kafka_metadata_t* md = Metadata(rk, "", timeout_ms)) {
    n = md->broker_cnt;
    rd_kafka_metadata_destroy(md);
  }
  rd_kafka_destroy(rk);
  return n;
}

// Runs a shell command; its exit status.
int Shell(const std::string& cmd) {
  const int st = system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// Java's String.hashCode, as the broker hashes a transactional id.
int32_t JavaHash(const std::string& s) {
  uint32_t h = 0;
  for (unsigned char c : s) h = 31 * h + c;  // ASCII ids: one UTF-16 unit each
  return static_cast<int32_t>(h);
}

bool Contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

class KafkaClusterScriptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(env_.brokers().empty());
    ASSERT_EQ(env_.Alive(), (std::vector<int>{1, 2, 3}))
        << "the fixture's cluster is not whole at the start";
    tmp_ = TempDir("kafka_cluster_script");
  }
  void TearDown() override {
    absl::Status whole = env_.Restore();
    EXPECT_TRUE(whole.ok()) << whole;
    std::filesystem::remove_all(tmp_);
  }

  int Pid(int node) {
    int pid = 0;
    EXPECT_TRUE(absl::SimpleAtoi(
        absl::StripAsciiWhitespace(
            ReadFile(absl::StrCat(env_.dir(), "/node", node, "/pid"))),
        &pid));
    return pid;
  }

  // kcat with acks=all: `count` records "i" to topic-partition through
  // `brokers`; true when kcat confirmed them all.
  bool Produce(const std::string& brokers, const std::string& topic,
               int partition, int from, int count) {
    std::string lines;
    for (int i = from; i < from + count; ++i) absl::StrAppend(&lines, i, "\n");
    const std::string file = tmp_ + "/records";
    FILE* f = fopen(file.c_str(), "w");
    fputs(lines.c_str(), f);
    fclose(f);
    return Shell(absl::StrCat("kcat -b ", brokers, " -P -t ", topic, " -p ",
                              partition,
                              " -X acks=all -X message.timeout.ms=60000 -l ",
                              file, " 2>", tmp_, "/produce.err")) == 0;
  }

  // Every record of topic-partition, read with kcat.
  std::vector<std::string> Consume(const std::string& topic, int partition) {
    const std::string out = tmp_ + "/consumed";
    Shell(absl::StrCat("kcat -b ", env_.brokers(), " -C -t ", topic, " -p ",
                       partition, " -o beginning -e -q >", out));
    return absl::StrSplit(ReadFile(out), '\n', absl::SkipEmpty());
  }

  // A new topic of 3 partitions (the cluster's defaults), made by
  // producing to it.
  std::string NewTopic() {
    const std::string topic = UniqueName("cluster_script");
    EXPECT_TRUE(Produce(env_.brokers(), topic, 0, 0, 1));
    return topic;
  }

  const ClusterEnv& env_ = ClusterEnv::Get();
  std::string tmp_;
};

// Every topic (the internal ones too) at replication factor 3 and
// min.insync.replicas 2.
TEST_F(KafkaClusterScriptTest, EveryTopicHasThreeReplicasAndMinIsrTwo) {
  const std::string topic = NewTopic();
  for (const std::string& t : {topic, std::string("__consumer_offsets"),
                               std::string("__transaction_state")}) {
    PartitionState state = State(env_.brokers(), t, 0);
    EXPECT_EQ(state.replicas, (std::vector<int>{1, 2, 3})) << t;
    auto configs = TopicConfigs(env_.brokers(), t);
    ASSERT_TRUE(configs.ok()) << configs.status();
    EXPECT_EQ((*configs)["min.insync.replicas"], "2") << t;
  }
}

// The leader SIGKILLed: its process is gone, the ISR shrinks, acks=all
// writes and reads go on; restarted, the ISR grows back to 3.
TEST_F(KafkaClusterScriptTest, KillLeaderThenRestartRegrowsIsr) {
  const std::string topic = NewTopic();
  auto leader = env_.Leader(topic, 0);
  ASSERT_TRUE(leader.ok()) << leader.status();
  ASSERT_EQ(*leader, State(env_.brokers(), topic, 0).leader);
  const int pid = Pid(*leader);

  ASSERT_TRUE(env_.Run("kill", {std::to_string(*leader)}).ok());
  EXPECT_EQ(kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH) << "node " << *leader << " (pid " << pid
                          << ") still runs after kill";
  EXPECT_FALSE(Contains(env_.Alive(), *leader));

  // The controller fences the dead node (broker.session.timeout.ms) and
  // elects a new leader; the ISR loses the dead node.
  PartitionState state;
  EXPECT_TRUE(WaitUntil(
      [&] {
        state = State(env_.brokers(), topic, 0);
        return state.leader > 0 && state.leader != *leader &&
               state.isr.size() == 2 && !Contains(state.isr, *leader);
      },
      120000))
      << "leader " << state.leader << ", isr size " << state.isr.size();
  auto new_leader = env_.Leader(topic, 0);
  ASSERT_TRUE(new_leader.ok()) << new_leader.status();
  EXPECT_NE(*new_leader, *leader);

  ASSERT_TRUE(Produce(env_.brokers(), topic, 0, 1, 20))
      << ReadFile(tmp_ + "/produce.err");
  std::vector<std::string> got = Consume(topic, 0);
  ASSERT_EQ(got.size(), 21u);
  for (int i = 0; i < 21; ++i) EXPECT_EQ(got[i], std::to_string(i));

  auto restarted = env_.Run("restart", {std::to_string(*leader)});
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  EXPECT_TRUE(Contains(env_.Alive(), *leader));
  EXPECT_NE(Pid(*leader), pid);
  auto whole = env_.Run("wait-isr", {"180"});
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(State(env_.brokers(), topic, 0).isr, (std::vector<int>{1, 2, 3}));
}

// A partitioned node: a client that knows only it gets no answer, the
// others serve and still see it registered, and replication to it goes on
// (the ISR stays full); healed, it answers again. Only the script's own
// rules go.
TEST_F(KafkaClusterScriptTest, PartitionCutsClientsOnlyAndHealRestores) {
  const int cut = 2;
  const std::string other_rule =
      "INPUT -i lo -p tcp --dport 9 -m comment --comment "
      "kafka_cluster_script_test -j ACCEPT";
  ASSERT_EQ(Shell("iptables -w -A " + other_rule), 0);
  ASSERT_TRUE(BrokersSeen(env_.broker(cut), 10000) == 3);

  ASSERT_TRUE(env_.Run("partition", {std::to_string(cut)}).ok());
  EXPECT_EQ(BrokersSeen(env_.broker(cut), 3000), -1)
      << "a client still reaches the partitioned node " << cut;
  for (int node : {1, 3}) {
    EXPECT_EQ(BrokersSeen(env_.broker(node), 10000), 3) << "node " << node;
  }
  EXPECT_TRUE(env_.Run("wait-isr", {"30"}).ok())
      << "the partition cut replication too";
  EXPECT_EQ(env_.Alive(), (std::vector<int>{1, 2, 3}));

  ASSERT_TRUE(env_.Run("heal").ok());
  EXPECT_TRUE(WaitUntil(
      [&] { return BrokersSeen(env_.broker(cut), 3000) == 3; }, 60000))
      << "node " << cut << " unreachable after heal";
  EXPECT_EQ(Shell("iptables -w -C " + other_rule), 0)
      << "heal removed a rule that was not the script's";
  EXPECT_EQ(Shell("iptables -w -D " + other_rule), 0);
}

// The coordinator of a transactional id is the leader of the
// __transaction_state partition the id hashes to, before and after the id
// is used; the controller is a live node.
TEST_F(KafkaClusterScriptTest, CoordinatorAndControllerAreLiveNodes) {
  const std::string id = UniqueName("cluster_script_txn");
  const int32_t h = JavaHash(id);
  const int state_partition = (h == INT32_MIN ? 0 : std::abs(h)) % 3;
  const int want =
      State(env_.brokers(), "__transaction_state", state_partition).leader;
  auto before = env_.Coordinator(id);
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(*before, want);

  // A transactional producer makes the id known to its coordinator.
  ASSERT_EQ(Shell(absl::StrCat("echo x | kcat -b ", env_.brokers(), " -P -t ",
                               UniqueName("cluster_script"),
                               " -X transactional.id=", id, " 2>/dev/null")),
            0);
  auto after = env_.Coordinator(id);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, want);

  auto controller = env_.Controller();
  ASSERT_TRUE(controller.ok()) << controller.status();
  EXPECT_TRUE(Contains(env_.Alive(), *controller)) << *controller;
}

// The active controller killed: another node takes over, and the script
// names it.
TEST_F(KafkaClusterScriptTest, ControllerMovesWhenKilled) {
  auto controller = env_.Controller();
  ASSERT_TRUE(controller.ok()) << controller.status();
  ASSERT_TRUE(env_.Run("kill", {std::to_string(*controller)}).ok());
  int now = -1;
  EXPECT_TRUE(WaitUntil(
      [&] {
        auto c = env_.Controller();
        now = c.ok() ? *c : -1;
        return now > 0 && now != *controller;
      },
      120000))
      << "controller still " << now;
  EXPECT_TRUE(Contains(env_.Alive(), now));
}

// SIGTERM: a controlled shutdown to the end, the process gone.
TEST_F(KafkaClusterScriptTest, TermShutsANodeDownCleanly) {
  const int node = 3;
  const int pid = Pid(node);
  auto termed = env_.Run("term", {std::to_string(node)});
  ASSERT_TRUE(termed.ok()) << termed.status();
  EXPECT_EQ(kill(pid, 0), -1);
  EXPECT_FALSE(Contains(env_.Alive(), node));
  const std::string log =
      ReadFile(absl::StrCat(env_.dir(), "/node", node, "/server.log"));
  EXPECT_NE(log.find("PENDING_CONTROLLED_SHUTDOWN"), std::string::npos);
  EXPECT_NE(log.find(absl::StrCat("[BrokerServer id=", node,
                                  "] shut down completed")),
            std::string::npos);
}

}  // namespace
}  // namespace outbox::testing
