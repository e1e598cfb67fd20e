// outbox-relay with kafka.exactly_once and the checkpoint topic: a missing
// one is created compacted (one partition), an existing one that is not
// compacted gets one warning line and is left as it is. Relays on two
// databases share it (the default topic is one per Kafka cluster): a
// restart of one while the other holds a Kafka transaction open starts
// from its own newest checkpoint (issue 23 item 1). (The other's
// transaction holds the checkpoint partition only between its checkpoint
// record and its commit; the reader's wait for such a transaction is
// checkpoint_reader_e2e_test's.)
#include <algorithm>
#include <csignal>
#include <regex>

#include "core/checkpoint.h"
#include "e2e/relay/relay_e2e_fixture.h"

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

TEST_F(RelayCheckpointTopicTest,
       AnotherRelaysOpenTransactionNeverYieldsAnOlderCheckpoint) {
  // The second relay: its own database, table, slot and event topic, the
  // same checkpoint topic; it commits every 20 s, so a Kafka transaction
  // of its stays open on the checkpoint partition meanwhile.
  const std::string db2 = UniqueName("db");
  db_->Exec("CREATE DATABASE " + db2);
  const std::string conninfo2 = pg_conninfo_ + " dbname=" + db2;
  const std::string slot2 = UniqueName("slot");
  const std::string agg2 = UniqueName("agg");
  {
    auto conn2 = PgConn::Connect(conninfo2);
    ASSERT_NE(conn2, nullptr);
    conn2->Exec(
        ReadFile(std::string(getenv("OUTBOX_ROOT")) + "/sql/outbox.sql"));
  }
  std::unique_ptr<Process> other;
  auto cleanup = [&] {
    other.reset();
    db_->Query("SELECT pg_drop_replication_slot('" + slot2 + "')")
        .status()
        .IgnoreError();
    db_->Query("DROP DATABASE " + db2 + " WITH (FORCE)").status().IgnoreError();
  };

  StartRelay();
  // Streaming, past the slot's creation (writes during it are before the
  // slot's consistent point).
  ASSERT_TRUE(WaitUntil(
      [&] {
        return relay_->Output().find(" INFO streaming ") != std::string::npos;
      },
      60000))
      << relay_->Output();
  std::vector<Event> committed;
  std::vector<std::string> rolled_back;
  Write(1, 20, 3, 0, &committed, &rolled_back);
  EXPECT_EQ(Audit(committed, rolled_back, committed.size()), 0)
      << relay_->Output();

  other = Process::Start({BinaryPath("outbox-relay"),
                          "--pg",
                          conninfo2,
                          "--kafka",
                          env_->kafka_brokers(),
                          "--slot",
                          slot2,
                          "--tables",
                          "public.outbox",
                          "--set",
                          "http.listen=127.0.0.1:0",
                          "--set",
                          "postgres.state_dir=" + dir_ + "/state2",
                          "--set",
                          "kafka.exactly_once=true",
                          "--set",
                          "kafka.checkpoint_topic=" + checkpoint_topic_,
                          "--set",
                          "kafka.transaction.max_ms=20000",
                          "--set",
                          "kafka.transaction.max_events=1000000"},
                         dir_ + "/other.log");
  ASSERT_TRUE(WaitUntil(
      [&] {
        return db_->Scalar(
                   "SELECT count(*) FROM pg_replication_slots WHERE "
                   "slot_name = '" +
                   slot2 + "' AND active") == "1";
      },
      30000))
      << other->Output();
  ASSERT_TRUE(WaitUntil(
      [&] {
        return other->Output().find(" INFO streaming ") != std::string::npos;
      },
      60000))
      << other->Output();
  {
    auto conn2 = PgConn::Connect(conninfo2);
    conn2->Exec(
        "INSERT INTO public.outbox (id, aggregatetype, aggregateid, "
        "type, payload) VALUES (gen_random_uuid(), '" +
        agg2 + "', 'k', 'Created', '{}')");
  }
  // Its Kafka transaction opens with that event; a moment for it to be
  // produced. Then this relay commits newer checkpoints behind it.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  std::vector<Event> more;
  Write(2, 20, 3, 0, &more, &rolled_back);
  committed.insert(committed.end(), more.begin(), more.end());
  EXPECT_EQ(Audit(committed, rolled_back, committed.size()), 0);
  // A restart of this relay while the other's transaction is still open.
  relay_->Signal(SIGKILL);
  relay_->Wait(10000);
  relay_ = Process::Start(RelayArgs(), dir_ + "/restarted.log");
  std::smatch m;
  std::string out;
  EXPECT_TRUE(WaitUntil(
      [&] {
        out = relay_->Output();
        return std::regex_search(out, m,
                                 std::regex("exactly once .*checkpoint_lsn="
                                            "([0-9A-F]+/[0-9A-F]+)"));
      },
      90000))
      << out;
  const std::string started_from = m.size() > 1 ? std::string(m[1]) : "";
  // The newest checkpoint this relay committed before the restart, once
  // the other relay's transaction (its event with it) has committed.
  EXPECT_EQ(
      ConsumeAll(env_->kafka_brokers(), {"outbox.event." + agg2}, 1, 60000)
          .size(),
      1u)
      << other->Output();
  const std::string key =
      db_->Scalar("SELECT system_identifier::text FROM pg_control_system()") +
      "/" + slot_;
  Lsn newest = kInvalidLsn;
  // The whole topic, read to its end (and on while a transaction on it is
  // undecided, up to 5 s).
  for (const auto& msg :
       ConsumeToEnd(env_->kafka_brokers(), {checkpoint_topic_}, 60000, 5000)) {
    if (msg.key != key) continue;
    absl::StatusOr<Checkpoint> c = Checkpoint::Parse(msg.value);
    ASSERT_TRUE(c.ok()) << c.status();
    newest = std::max(newest, c->end_lsn);
  }
  EXPECT_EQ(started_from, FormatLsn(newest))
      << "restarted from an older checkpoint\n"
      << out;
  EXPECT_EQ(Audit(committed, rolled_back, committed.size()), 0);
  cleanup();
}

}  // namespace
}  // namespace outbox::testing
