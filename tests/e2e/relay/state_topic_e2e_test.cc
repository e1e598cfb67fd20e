// The Kafka slot marker (postgres.slot_marker kafka: KafkaSlotMarkerStore
// under StoredSlotMarker, and ReadLatestValue) against a real broker (issue
// 32, items 1, 2 and 4): a broker of this suite's own (scripts/kafka.sh, as
// kafka_topic_access_e2e_test.cc starts it) with the StandardAuthorizer and
// a SASL/PLAIN listener where the marker logs in as "relay"; the PLAINTEXT
// listener's ANONYMOUS is a super user.
//
//   - the marker is keyed by postgres.slot_marker_id: a server with another
//     system identifier finds it and is refused; another relay sharing the
//     topic (same slot and database names) never reads it;
//   - a marker an older relay wrote under "<system id>/<slot>" still guards;
//   - "unknown topic" once the topic was seen is Unavailable, never "no
//     marker";
//   - a write refused for a missing WRITE ACL succeeds by itself once the
//     ACL is granted, with the producer options the relay has under
//     on_invalid: halt (enable.gapless.guarantee); a fatal producer error
//     fails one write, not every later one.
//   - the pair's control records (kafka/control_records.h, issue 35): the
//     newest value per key under one pair and slot, in key order, never
//     another pair's; a pause record round-trips.
#include <librdkafka/rdkafka.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "e2e/test_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kafka/checkpoint_reader.h"
#include "kafka/control_records.h"
#include "kafka/rdkafka_sink.h"
#include "kafka/state_topic.h"
#include "pg/libpq_replication_stream.h"
#include "relay/stored_slot_marker.h"

namespace outbox::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kSlot[] = "outbox_relay";  // the default, on every cluster

class StateTopicE2ETest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const AclBroker broker = StartAclBroker(TempDir("state_topic_acl"));
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
    topic_ = UniqueName("state");
  }

  // The relay's producer options: the super user, or user "relay" over
  // SASL; with enable.gapless.guarantee, as the relay's under on_invalid:
  // halt (kafka.properties holds enable.idempotence with it).
  static KafkaOptions Options(bool as_relay_user = false) {
    KafkaOptions o;
    o.brokers = as_relay_user ? sasl_ : plaintext_;
    o.properties["enable.idempotence"] = "true";
    o.properties["enable.gapless.guarantee"] = "true";
    if (as_relay_user) {
      o.properties["security.protocol"] = "SASL_PLAINTEXT";
      o.properties["sasl.mechanisms"] = "PLAIN";
      o.properties["sasl.username"] = "relay";
      o.properties["sasl.password"] = "relay-secret";
    }
    return o;
  }

  // A relay's marker: `id` is its postgres.slot_marker_id.
  std::unique_ptr<StoredSlotMarker> Marker(const std::string& id,
                                           bool as_relay_user = false) {
    auto store = std::make_unique<KafkaSlotMarkerStore>(
        Options(as_relay_user), topic_, id, kSlot, 10000);
    auto m = StoredSlotMarker::Open(std::move(store), kSlot, kInvalidLsn);
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? std::move(*m) : nullptr;
  }

  static ServerInfo Server(const std::string& system_id, Lsn confirmed) {
    ServerInfo s;
    s.system_id = system_id;
    s.dbname = "postgres";  // the same database name on every cluster
    s.slot_confirmed_flush = confirmed;
    return s;
  }

  static void Acl(const std::string& args) {
    ASSERT_EQ(RunScript("kafka.sh acl " + *broker_dir_ +
                        " --add --allow-principal User:relay " + args +
                        " >/dev/null"),
              0);
  }

  static void DeleteTopic(const std::string& topic) {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", plaintext_.c_str(), err,
                      sizeof(err));
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    ASSERT_NE(rk, nullptr) << err;
    rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
    rd_kafka_DeleteTopic_t* del = rd_kafka_DeleteTopic_new(topic.c_str());
    rd_kafka_DeleteTopics(rk, &del, 1, nullptr, q);
    rd_kafka_DeleteTopic_destroy(del);
    rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 30000);
    ASSERT_NE(ev, nullptr);
    size_t n = 0;
    const rd_kafka_topic_result_t** res = rd_kafka_DeleteTopics_result_topics(
        rd_kafka_event_DeleteTopics_result(ev), &n);
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(rd_kafka_topic_result_error(res[0]), RD_KAFKA_RESP_ERR_NO_ERROR)
        << rd_kafka_topic_result_error_string(res[0]);
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
  }

  static std::string* broker_dir_;
  static std::string plaintext_, sasl_;
  std::string topic_;
};

std::string* StateTopicE2ETest::broker_dir_ = nullptr;
std::string StateTopicE2ETest::plaintext_;
std::string StateTopicE2ETest::sasl_;

// Item 1: pg_upgrade, a restore or a rebuilt primary gives the server a new
// system identifier; the marker, keyed by the relay's identity, still
// guards the slot. Two relays on two clusters with the default slot name
// and the same database name share the topic and never read each other's.
TEST_F(StateTopicE2ETest, ANewSystemIdentifierFindsTheMarkerAndIsRefused) {
  {
    auto a = Marker("relay-a");
    ASSERT_NE(a, nullptr);
    absl::Status created = a->CheckCreate(Server("7001", kInvalidLsn));
    ASSERT_TRUE(created.ok()) << created;
    ASSERT_TRUE(a->Record(Server("7001", 0x16B3748)).ok());
    auto b = Marker("relay-b");
    ASSERT_NE(b, nullptr);
    absl::Status first = b->CheckCreate(Server("7002", kInvalidLsn));
    EXPECT_TRUE(first.ok()) << "relay-b read another relay's marker: " << first;
    ASSERT_TRUE(b->Record(Server("7002", 0x200000028)).ok());
  }
  // Fresh processes; relay-a's server is a fresh cluster now.
  auto a = Marker("relay-a");
  ASSERT_NE(a, nullptr);
  absl::Status refused = a->CheckCreate(Server("7999", kInvalidLsn));
  ASSERT_TRUE(absl::IsFailedPrecondition(refused)) << refused;
  EXPECT_THAT(std::string(refused.message()),
              AllOf(HasSubstr("does not exist on this server (system "
                              "identifier 7999"),
                    HasSubstr("on another one (system identifier 7001"),
                    HasSubstr("events committed after 0/16B3748 are in no "
                              "slot"),
                    HasSubstr("postgres.acknowledge_slot_loss=0/16B3748"),
                    HasSubstr("relay-a/outbox_relay")));
  EXPECT_THAT(a->where(), HasSubstr("relay-a/" + std::string(kSlot)));
  // relay-b's marker names its own cluster and position only.
  auto b = Marker("relay-b");
  ASSERT_NE(b, nullptr);
  absl::Status b_refused = b->CheckCreate(Server("7002", kInvalidLsn));
  ASSERT_TRUE(absl::IsFailedPrecondition(b_refused)) << b_refused;
  EXPECT_THAT(std::string(b_refused.message()),
              HasSubstr("events committed after 2/28 are in no slot"));
  // A relay with an identity of its own starts fresh on either server.
  EXPECT_TRUE(Marker("relay-c")->CheckCreate(Server("7001", 0)).ok());
}

// Item 1: an upgrade from a relay that keyed the marker by system
// identifier keeps its guard.
TEST_F(StateTopicE2ETest, AMarkerAnOlderRelayWroteStillGuards) {
  ASSERT_TRUE(
      CreateTopic(plaintext_, topic_, 1, {{"cleanup.policy", "compact"}}).ok());
  ASSERT_TRUE(ProduceSync(plaintext_, topic_, std::string("7001/") + kSlot,
                          std::string("slot=") + kSlot +
                              "\nsystem_id=7001\ndatabase=postgres\n"
                              "confirmed_lsn=0/ABCDEF\n")
                  .ok());
  auto m = Marker("relay-a");
  ASSERT_NE(m, nullptr);
  absl::Status refused = m->CheckCreate(Server("7001", kInvalidLsn));
  ASSERT_TRUE(absl::IsFailedPrecondition(refused)) << refused;
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("events committed after 0/ABCDEF are in no slot"));
  // Rewritten under the new key by the next record.
  ASSERT_TRUE(m->Record(Server("7001", 0xABCDF0)).ok());
  KafkaOptions o = Options();
  absl::StatusOr<std::optional<std::string>> now = ReadLatestValue(
      o, topic_, std::string("relay-a/") + kSlot, 10000, "state topic", true);
  ASSERT_TRUE(now.ok()) << now.status();
  ASSERT_TRUE(now->has_value());
  EXPECT_THAT(**now, HasSubstr("confirmed_lsn=0/ABCDF0\n"));
}

// Item 2: "unknown topic" from a broker is "no marker" only for a caller
// that did not see the topic exist.
TEST_F(StateTopicE2ETest, AnUnknownTopicOnceSeenIsUnavailable) {
  KafkaOptions o = Options();
  absl::StatusOr<std::optional<std::string>> none =
      ReadLatestValue(o, topic_, "k", 10000, "state topic", false);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());
  // Known to exist, not there: asked again until the time limit, then
  // unavailable (2 s here).
  absl::StatusOr<std::optional<std::string>> doubt =
      ReadLatestValue(o, topic_, "k", 2000, "state topic", true);
  EXPECT_TRUE(absl::IsUnavailable(doubt.status())) << doubt.status();

  // The marker's store saw the topic (it created it), then the broker
  // stops knowing it (here: deleted; a restarting broker, stale metadata):
  // a read for another server is retried, not a first run.
  auto m = Marker("relay-a");
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(m->CheckCreate(Server("7001", kInvalidLsn)).ok());
  ASSERT_NO_FATAL_FAILURE(DeleteTopic(topic_));
  ASSERT_TRUE(WaitUntil(
      [&] {
        return absl::IsUnavailable(
            ReadLatestValue(o, topic_, "k", 2000, "state topic", true)
                .status());
      },
      60000));
  absl::Status s = m->CheckCreate(Server("7002", kInvalidLsn));
  EXPECT_TRUE(absl::IsUnavailable(s))
      << "a topic the broker does not know was taken for no marker: " << s;
}

// Item 4: the marker's write waits for its WRITE ACL and succeeds once it is
// granted, with no restart, though the relay's producer options ask for
// enable.gapless.guarantee (on_invalid: halt).
TEST_F(StateTopicE2ETest, AWriteAclGrantedLateIsUsed) {
  ASSERT_TRUE(
      CreateTopic(plaintext_, topic_, 1, {{"cleanup.policy", "compact"}}).ok());
  ASSERT_NO_FATAL_FAILURE(
      Acl("--operation Read --operation Describe "
          "--operation DescribeConfigs --topic " +
          topic_));
  ASSERT_NO_FATAL_FAILURE(
      Acl("--operation Read --group outbox-relay-checkpoint-reader"));
  auto m = Marker("relay-a", /*as_relay_user=*/true);
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(WaitUntil(
      [&] { return m->CheckCreate(Server("7001", kInvalidLsn)).ok(); }, 60000));
  absl::Status denied = m->Record(Server("7001", 0x16B3748));
  EXPECT_TRUE(absl::IsUnavailable(denied)) << denied;
  ASSERT_NO_FATAL_FAILURE(
      Acl("--operation Write --operation Describe --topic " + topic_));
  absl::Status last;
  EXPECT_TRUE(WaitUntil(
      [&] {
        last = m->Record(Server("7001", 0x16B3748));
        return last.ok();
      },
      90000))
      << "the marker stayed unwritable after the ACL was granted: " << last;
  absl::StatusOr<std::optional<std::string>> now =
      ReadLatestValue(Options(), topic_, std::string("relay-a/") + kSlot, 10000,
                      "state topic", true);
  ASSERT_TRUE(now.ok()) << now.status();
  ASSERT_TRUE(now->has_value());
  EXPECT_THAT(**now, HasSubstr("confirmed_lsn=0/16B3748\n"));
}

// Item 4: a fatal producer error raised between two writes (librdkafka's
// broker thread: an idempotence sequence gone wrong, a PID refused) fails
// one write, not every later one; and the marker's producer never has
// enable.gapless.guarantee, though the relay's options ask for it.
TEST_F(StateTopicE2ETest, AFatalProducerErrorDoesNotOutliveOneWrite) {
  KafkaSlotMarkerStore store(Options(), topic_, "relay-a", kSlot, 10000);
  ASSERT_TRUE(WaitUntil([&] { return store.Load("7001").ok(); }, 60000));
  ASSERT_TRUE(
      WaitUntil([&] { return store.Save("7001", "first").ok(); }, 60000));
  RdKafkaSink* producer = store.producer_for_testing();
  ASSERT_NE(producer, nullptr);
  EXPECT_EQ(producer->effective_properties().count("enable.gapless.guarantee"),
            0u);
  ASSERT_TRUE(producer
                  ->InjectFatalErrorForTesting(
                      RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                      "injected by the test")
                  .ok());
  absl::Status failed = store.Save("7001", "second");
  EXPECT_TRUE(absl::IsUnavailable(failed)) << failed;
  absl::Status next = store.Save("7001", "third");
  EXPECT_TRUE(next.ok()) << "a fatal error outlived its write: " << next;
  absl::StatusOr<std::optional<std::string>> now =
      ReadLatestValue(Options(), topic_, std::string("relay-a/") + kSlot, 10000,
                      "state topic", true);
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_EQ(now->value_or(""), "third");
}

// The control records of one pair and slot: the newest per key, in key
// order, a tombstone-free prefix read that never returns another pair's or
// another slot's records, and the topic created at the first read.
TEST_F(StateTopicE2ETest, ControlRecordsReadTheNewestOfOnePairsKeys) {
  ControlRecords a(Options(), topic_, "pair-a", kSlot, 15000);
  ControlRecords other_pair(Options(), topic_, "pair-b", kSlot, 15000);
  ControlRecords other_slot(Options(), topic_, "pair-a", "other", 15000);
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> none =
      a.Read("pause");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());

  PauseRecord p{true, "alice", "2026-11-27T16:00:00Z", "broker \"move\""};
  ASSERT_TRUE(a.Write(kPauseSuffix, p.Encode()).ok());
  p.paused = false;
  p.by = "bob";
  ASSERT_TRUE(a.Write(kPauseSuffix, p.Encode()).ok());
  ASSERT_TRUE(a.Write("operator/2-y", R"({"action":"skip"})").ok());
  ASSERT_TRUE(a.Write("operator/1-x", R"({"action":"advance"})").ok());
  ASSERT_TRUE(other_pair.Write(kPauseSuffix, R"({"paused":true})").ok());
  ASSERT_TRUE(other_slot.Write(kPauseSuffix, R"({"paused":true})").ok());

  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> pause =
      a.Read(kPauseSuffix);
  ASSERT_TRUE(pause.ok()) << pause.status();
  ASSERT_EQ(pause->size(), 1u);
  EXPECT_EQ((*pause)[0].first, "pair-a/outbox_relay/pause");
  absl::StatusOr<PauseRecord> read = PauseRecord::Parse((*pause)[0].second);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_FALSE(read->paused);
  EXPECT_EQ(read->by, "bob");
  EXPECT_EQ(read->reason, "broker \"move\"");

  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ops =
      a.Read("operator/");
  ASSERT_TRUE(ops.ok()) << ops.status();
  ASSERT_EQ(ops->size(), 2u);
  EXPECT_EQ((*ops)[0].first, "pair-a/outbox_relay/operator/1-x");
  EXPECT_EQ((*ops)[1].second, R"({"action":"skip"})");
  EXPECT_FALSE(PauseRecord::Parse("{}").ok());
}

}  // namespace
}  // namespace outbox::testing
