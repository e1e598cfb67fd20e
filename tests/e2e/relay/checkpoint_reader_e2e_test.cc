// ReadCheckpoint against the real broker (issue 23, items 1 and 2): under
// read_committed an open transaction on the checkpoint partition (another
// relay's on the shared topic) hides every newer checkpoint; the reader
// waits for it and then says Unavailable, never returning an older one. The
// furthest checkpoint wins whatever the read order, and a metadata error
// other than "no such topic" is not "no checkpoint".
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "core/checkpoint.h"
#include "e2e/test_env.h"
#include "gtest/gtest.h"
#include "kafka/checkpoint_reader.h"
#include "kafka/rdkafka_sink.h"

namespace outbox::testing {
namespace {

constexpr char kSystem[] = "7312000000000000001";
constexpr char kSlot[] = "slot_a";

class CheckpointReaderE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = &TestEnv::Get();
    topic_ = UniqueName("cp");
    ASSERT_TRUE(CreateTopic(env_->kafka_brokers(), topic_, 1,
                            {{"cleanup.policy", "compact"}})
                    .ok());
  }

  // A transactional producer, as a relay's.
  std::unique_ptr<RdKafkaSink> Producer(const std::string& id) {
    KafkaOptions o;
    o.brokers = env_->kafka_brokers();
    o.transactional_id = UniqueName(id);
    // A broker just started may still be loading its transaction
    // coordinator (the relay retries such a session; so does the test).
    absl::StatusOr<std::unique_ptr<RdKafkaSink>> sink;
    WaitUntil(
        [&] {
          sink = RdKafkaSink::Create(o);
          return sink.ok() || !absl::StrContains(sink.status().message(),
                                                 "COORDINATOR_LOAD");
        },
        60000);
    EXPECT_TRUE(sink.ok()) << sink.status();
    if (!sink.ok()) return nullptr;
    (*sink)->SetDeliveryHandler([](const DeliveryReport&) {});
    return *std::move(sink);
  }

  static std::string At(Lsn end, const std::string& system = kSystem,
                        const std::string& slot = kSlot) {
    Checkpoint c;
    c.system_identifier = system;
    c.slot = slot;
    c.end_lsn = end;
    return c.Encode();
  }

  // Commits one checkpoint record of slot_a in its own transaction.
  static void Commit(RdKafkaSink* p, const std::string& topic, Lsn end) {
    ASSERT_TRUE(p->BeginTransaction().ok());
    ASSERT_TRUE(
        p->ProduceInTransaction(topic, Checkpoint::Key(kSystem, kSlot), At(end))
            .ok());
    absl::Status s = p->CommitTransaction();
    ASSERT_TRUE(s.ok()) << s;
  }

  absl::StatusOr<Checkpoint> Read(const std::string& topic, int timeout_ms,
                                  std::string* where = nullptr) {
    KafkaOptions o;
    o.brokers = env_->kafka_brokers();
    return ReadCheckpoint(o, topic, kSystem, kSlot, timeout_ms,
                          /*topic_exists=*/false, where);
  }

  const TestEnv* env_ = nullptr;
  std::string topic_;
};

TEST_F(CheckpointReaderE2ETest, AnOpenTransactionNeverYieldsAnOlderCheckpoint) {
  auto a = Producer("relay-a");
  auto b = Producer("relay-b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_NO_FATAL_FAILURE(Commit(a.get(), topic_, 0x100));
  // Another relay sharing the topic opens a transaction and holds it.
  ASSERT_TRUE(b->BeginTransaction().ok());
  ASSERT_TRUE(b->ProduceInTransaction(topic_, Checkpoint::Key("99", "slot_b"),
                                      At(0x5000, "99", "slot_b"))
                  .ok());
  ASSERT_TRUE(b->Flush(10000).ok());
  // This relay commits a newer checkpoint behind it.
  ASSERT_NO_FATAL_FAILURE(Commit(a.get(), topic_, 0x200));
  absl::StatusOr<Checkpoint> held = Read(topic_, 3000);
  ASSERT_FALSE(held.ok()) << "read checkpoint " << FormatLsn(held->end_lsn)
                          << " while a transaction hid the newer 0/200";
  EXPECT_TRUE(absl::IsUnavailable(held.status())) << held.status();
  EXPECT_NE(held.status().message().find("open transaction"), std::string::npos)
      << held.status();
  // Once it commits, the newest checkpoint is read.
  ASSERT_TRUE(b->CommitTransaction().ok());
  absl::StatusOr<Checkpoint> got = Read(topic_, 10000);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->end_lsn, 0x200u);
}

TEST_F(CheckpointReaderE2ETest, TheFurthestCheckpointWinsNotTheLastRead) {
  auto a = Producer("relay-a");
  ASSERT_NE(a, nullptr);
  ASSERT_NO_FATAL_FAILURE(Commit(a.get(), topic_, 0x300));
  ASSERT_NO_FATAL_FAILURE(Commit(a.get(), topic_, 0x200));
  std::string where;
  absl::StatusOr<Checkpoint> got = Read(topic_, 10000, &where);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->end_lsn, 0x300u);
  // Where it was: the first record (offset 0), of the two records and
  // their two commit markers read.
  EXPECT_EQ(where, "p0@0 of p0 [0,4)");
}

TEST_F(CheckpointReaderE2ETest, OnlyAMissingTopicMeansNoCheckpoint) {
  std::string where;
  absl::StatusOr<Checkpoint> none = Read(UniqueName("missing"), 10000, &where);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->end_lsn, kInvalidLsn);
  EXPECT_EQ(where, "none in empty");
  // A name the broker refuses: a metadata error, not "none" (a start
  // from 0/0 would republish everything the slot holds).
  absl::StatusOr<Checkpoint> refused = Read("bad name?", 10000);
  EXPECT_FALSE(refused.ok()) << "read " << FormatLsn(refused->end_lsn);
}

}  // namespace
}  // namespace outbox::testing
