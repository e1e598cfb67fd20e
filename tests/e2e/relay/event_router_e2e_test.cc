// Issue 15 end to end, on the fixture's PostgreSQL 15 and Kafka: the
// record timestamp is the commit time by default, outbox.fields places a
// header and picks the partition, and outbox.on_update decodes UPDATEs of
// outbox rows (wal2json's actions, pgoutput's publication) to log or halt.
// (Byte-for-byte equality with Debezium: debezium_compare_test.)
#include <signal.h>

#include <chrono>
#include <thread>

#include "absl/strings/numbers.h"
#include "e2e/relay/relay_e2e_fixture.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

class EventRouterE2ETest : public RelayE2ETest {
 protected:
  // Milliseconds since the epoch, as the server's clock reads them now.
  int64_t ServerNowMs() {
    int64_t ms = 0;
    EXPECT_TRUE(absl::SimpleAtoi(
        db_->Scalar("SELECT (extract(epoch FROM clock_timestamp()) * "
                    "1000)::bigint"),
        &ms));
    return ms;
  }

  void InsertShard(const std::string& id, int shard) {
    db_->Exec("INSERT INTO public." + table_ +
              " (id, aggregatetype, aggregateid, type, payload, shard) "
              "VALUES ('" +
              id + "', '" + aggtype_ + "', 'k', 'Placed', '{}', " +
              std::to_string(shard) + ")");
  }

  // Rows committed while the relay is down reach Kafka stamped with their
  // commit time, in the partition their shard column names, with their
  // type in header eventType. `plugin_args` pick the output plugin.
  void ExpectCommitTimesAndPlacements(std::vector<std::string> plugin_args) {
    db_->Exec("ALTER TABLE public." + table_ + " ADD COLUMN shard int");
    extra_relay_args_ = {"--set",
                         "outbox.fields=type:header:eventType,shard:partition"};
    extra_relay_args_.insert(extra_relay_args_.end(), plugin_args.begin(),
                             plugin_args.end());
    StartRelay();  // creates the slot
    ASSERT_TRUE(WaitActive()) << relay_->Output();
    relay_->Signal(SIGTERM);
    ASSERT_EQ(relay_->Wait(30000), 0) << relay_->Output();

    // Committed while the relay is down, then a pause: produce times would
    // come after `committed`, commit times lie before it.
    int64_t before = ServerNowMs();
    db_->Exec("BEGIN");
    for (int shard = 0; shard < 3; ++shard) {
      InsertShard("00000000-0000-4000-8000-00000000000" + std::to_string(shard),
                  shard);
    }
    db_->Exec("COMMIT");
    int64_t committed = ServerNowMs();
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    StartRelay();
    auto got = ConsumeAll(env_->kafka_brokers(), {topic_}, 3, 30000);
    ASSERT_EQ(got.size(), 3u) << relay_->Output();
    for (const KafkaMessage& m : got) {
      int shard = m.Header("id").back() - '0';
      EXPECT_EQ(m.partition, shard);
      EXPECT_EQ(m.Header("eventType"), "Placed");
      EXPECT_GE(m.timestamp_ms, before);
      EXPECT_LE(m.timestamp_ms, committed)
          << "a produce time, not the commit's";
      EXPECT_EQ(m.timestamp_ms, got[0].timestamp_ms) << "one transaction";
    }
  }
};

TEST_F(EventRouterE2ETest, CommitTimeAndPlacementsWithWal2Json) {
  ExpectCommitTimesAndPlacements({});
}

TEST_F(EventRouterE2ETest, CommitTimeAndPlacementsWithPgOutput) {
  std::string pub = slot_ + "_pub";
  ExpectCommitTimesAndPlacements({"--set", "postgres.plugin=pgoutput", "--set",
                                  "postgres.publication=" + pub});
  relay_.reset();
  db_->Exec("DROP PUBLICATION " + pub);
}

TEST_F(EventRouterE2ETest, OnUpdateWarnLogsAnUpdateWithWal2Json) {
  extra_relay_args_ = {"--set", "outbox.on_update=warn"};
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::string id = "00000000-0000-4000-8000-0000000000a1";
  db_->Exec("INSERT INTO public." + table_ +
            " (id, aggregatetype, aggregateid, type, payload) VALUES ('" + id +
            "', '" + aggtype_ + "', 'k', 'Created', '{}')");
  db_->Exec("UPDATE public." + table_ + " SET type = 'Changed' WHERE id = '" +
            id + "'");
  EXPECT_TRUE(WaitUntil(
      [&] {
        return relay_->Output().find("UPDATE of an outbox row ignored") !=
               std::string::npos;
      },
      30000))
      << relay_->Output();
  EXPECT_THAT(relay_->Output(), HasSubstr(id));
  auto got = ConsumeAll(env_->kafka_brokers(), {topic_}, 2, 5000);
  ASSERT_EQ(got.size(), 1u) << "the UPDATE is never published";
  EXPECT_TRUE(relay_->Running());
}

TEST_F(EventRouterE2ETest, OnUpdateHaltStopsWithExitFourWithPgOutput) {
  std::string pub = slot_ + "_pub";
  extra_relay_args_ = {"--set", "postgres.plugin=pgoutput",
                       "--set", "postgres.publication=" + pub,
                       "--set", "outbox.on_update=halt"};
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  // The relay created its publication for inserts and updates.
  EXPECT_EQ(
      db_->Scalar("SELECT pubinsert::text || pubupdate::text || "
                  "pubdelete::text FROM pg_publication WHERE pubname = '" +
                  pub + "'"),
      "truetruefalse");
  db_->Exec("INSERT INTO public." + table_ +
            " (id, aggregatetype, aggregateid, type, payload) VALUES "
            "('00000000-0000-4000-8000-0000000000b1', '" +
            aggtype_ + "', 'k', 'Created', '{}')");
  db_->Exec("UPDATE public." + table_ + " SET type = 'Changed'");
  EXPECT_EQ(relay_->Wait(30000), 4) << relay_->Output();
  EXPECT_THAT(relay_->Output(),
              HasSubstr("UPDATE of outbox row "
                        "00000000-0000-4000-8000-0000000000b1 in public." +
                        table_));
  db_->Exec("DROP PUBLICATION " + pub);
}

TEST_F(PreconditionTest, OnUpdateRefusesAnInsertOnlyPublication) {
  std::string pub = slot_ + "_pub";
  db_->Exec("CREATE PUBLICATION " + pub + " FOR TABLE public." + table_ +
            " WITH (publish = 'insert')");
  ExpectRefusal(
      "SET (publish = 'insert, update')",
      {"--set", "postgres.plugin=pgoutput", "--set",
       "postgres.publication=" + pub, "--set", "outbox.on_update=warn"});
  db_->Exec("DROP PUBLICATION " + pub);
}

}  // namespace
}  // namespace outbox::testing
