// outbox-relay with postgres.plugin: pgoutput, end to end, on every
// PostgreSQL major the project supports (14 to 18): one cluster of each
// major for the binary (SharedPgClusters: scripts/pg.sh with
// OUTBOX_PG_MAJOR; Debian's 15, the npm registry's server binaries for the
// others), shared by its tests, and the fixture's Kafka. A major whose
// binaries cannot be had fails, never skips.
//
// On 15, where both plugins exist, the same rows go through a wal2json relay
// and a pgoutput relay and the records are compared byte for byte.
#include "e2e/relay/relay_e2e_fixture.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

class PgOutputE2ETest : public RelayE2ETest,
                        public ::testing::WithParamInterface<int> {
 protected:
  std::string PgConninfo() override {
    return SharedPgClusters::Conninfo(GetParam());
  }

  void SetUp() override {
    RelayE2ETest::SetUp();
    if (HasFatalFailure()) return;
    extra_relay_args_ = {"--set", "postgres.plugin=pgoutput", "--set",
                         "postgres.publication=" + slot_ + "_pub"};
    EXPECT_THAT(db_->Scalar("SHOW server_version_num"),
                ::testing::StartsWith(std::to_string(GetParam())));
  }

  void TearDown() override {
    RelayE2ETest::TearDown();
    if (db_ != nullptr) {
      db_->Query("DROP PUBLICATION IF EXISTS " + slot_ + "_pub")
          .status()
          .IgnoreError();
    }
  }
};

TEST_P(PgOutputE2ETest, ConcurrentWritersArriveExactlyAsCommitted) {
  // In binary (the other tests use the default, auto, which is binary
  // too): on refuses to start where the server cannot.
  StartRelay({"--set", "postgres.pgoutput_binary=on"});
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  EXPECT_THAT(StartReplicationCommand(slot_), HasSubstr("binary 'true'"));
  // The relay made the publication: inserts only, this table only.
  EXPECT_EQ(
      db_->Scalar("SELECT pubinsert::text || pubupdate::text || "
                  "pubdelete::text FROM pg_publication WHERE pubname = '" +
                  slot_ + "_pub'"),
      "truefalsefalse");
  EXPECT_EQ(db_->Scalar("SELECT string_agg(tablename, ',') FROM "
                        "pg_publication_tables WHERE pubname = '" +
                        slot_ + "_pub'"),
            table_);
  EXPECT_EQ(WriteConcurrentlyAndAudit(3, 30), 0);
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();
  EXPECT_THAT(relay_->Output(), HasSubstr("plugin=pgoutput"));
}

TEST_P(PgOutputE2ETest, ConfirmedLsnAdvancesWhenOnlyOtherTablesAreWritten) {
  // pgoutput sends nothing for a transaction with no published change
  // (PostgreSQL 15+), unlike wal2json's empty B/C: the position must still
  // move, or the slot would pin WAL for as long as the outbox is quiet.
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  ExpectConfirmedPassesOtherTablesWrites(60000);
}

TEST_P(PgOutputE2ETest, SigkillAtRandomMomentsLosesNothing) {
  std::vector<Event> committed;
  std::vector<std::string> rolled_back;
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  WriteThroughSigkills(4, GetParam(), &committed, &rolled_back);
  ASSERT_GT(committed.size(), 0u);
  int dups = Audit(committed, rolled_back, committed.size());
  // outbox-audit, the product's own check, agrees: nothing missing,
  // nothing unknown, per-key order kept.
  std::string out;
  int code = RunOutboxAudit({"--json"}, &out);
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("\"missing\":0"));
  EXPECT_THAT(out, HasSubstr("\"unknown\":0"));
  EXPECT_THAT(out, HasSubstr("\"order_violations\":0"));
  std::cerr << "pgoutput " << GetParam() << " sigkill: " << committed.size()
            << " events, " << dups << " duplicates\n";
}

TEST_P(PgOutputE2ETest, ASlotOfTheOtherPluginIsRefusedNamingBoth) {
  db_->Exec("SELECT pg_create_logical_replication_slot('" + slot_ +
            "', 'test_decoding')");
  relay_ = Process::Start(RelayArgs(), dir_ + "/relay.log");
  EXPECT_EQ(relay_->Wait(30000), 3) << relay_->Output();
  EXPECT_THAT(relay_->Output(),
              HasSubstr("plugin 'test_decoding', not pgoutput"));
}

TEST_P(PgOutputE2ETest, APublicationTheRoleCannotCreateIsRefusedWithTheSql) {
  std::string role = UniqueName("repl");
  db_->Exec("CREATE ROLE " + role + " LOGIN REPLICATION");
  db_->Exec("GRANT SELECT ON public." + table_ + " TO " + role);
  auto args = RelayArgs();
  args[2] = pg_conninfo_ + " user=" + role;
  relay_ = Process::Start(args, dir_ + "/relay.log");
  EXPECT_EQ(relay_->Wait(30000), 3) << relay_->Output();
  EXPECT_THAT(relay_->Output(), HasSubstr("CREATE PUBLICATION " + slot_ +
                                          "_pub FOR TABLE public." + table_ +
                                          " WITH (publish = 'insert')"));
  // A publication that misses the table is refused naming the fix.
  db_->Exec("CREATE PUBLICATION " + slot_ + "_pub FOR TABLE public.outbox");
  relay_ = Process::Start(RelayArgs(), dir_ + "/relay2.log");
  EXPECT_EQ(relay_->Wait(30000), 3) << relay_->Output();
  EXPECT_THAT(relay_->Output(), HasSubstr("ALTER PUBLICATION " + slot_ +
                                          "_pub ADD TABLE public." + table_));
  // One that covers it but does not publish inserts, too.
  db_->Exec("ALTER PUBLICATION " + slot_ + "_pub ADD TABLE public." + table_);
  db_->Exec("ALTER PUBLICATION " + slot_ + "_pub SET (publish = 'update')");
  relay_ = Process::Start(RelayArgs(), dir_ + "/relay3.log");
  EXPECT_EQ(relay_->Wait(30000), 3) << relay_->Output();
  EXPECT_THAT(relay_->Output(),
              HasSubstr("does not publish inserts: run ALTER PUBLICATION " +
                        slot_ + "_pub SET (publish = 'insert')"));
}

TEST_P(PgOutputE2ETest, Wal2JsonWhereTheServerHasNoneNamesPgOutput) {
  if (GetParam() == 15) {
    GTEST_SKIP() << "Debian's 15 has wal2json; the other majors do not";
  }
  extra_relay_args_.clear();  // postgres.plugin: wal2json, the default
  relay_ = Process::Start(RelayArgs(), dir_ + "/relay.log");
  EXPECT_EQ(relay_->Wait(30000), 3) << relay_->Output();
  EXPECT_THAT(relay_->Output(), HasSubstr("postgres.plugin: pgoutput"));
}

// The same rows through both plugins on the fixture's PostgreSQL 15: two
// relays, two slots, one table, topics "w.<type>" and "p.<type>". Every
// record must match byte for byte: key, value (null included), headers,
// and the partition murmur2 picks from the key.
TEST_F(RelayE2ETest, Wal2JsonAndPgOutputPublishTheSameBytes) {
  db_->Exec("ALTER TABLE public." + table_ + " ADD COLUMN note text");
  std::vector<std::string> base = RelayArgs();
  base.insert(base.end(), {"--set", "outbox.headers.note=note"});
  auto wal2json_args = base;
  wal2json_args.insert(wal2json_args.end(), {"--topic", "w.{aggregatetype}"});
  auto pgoutput_args = base;
  for (size_t i = 0; i + 1 < pgoutput_args.size(); ++i) {
    if (pgoutput_args[i] == "--slot") pgoutput_args[i + 1] = slot_ + "_p";
  }
  pgoutput_args.insert(
      pgoutput_args.end(),
      {"--topic", "p.{aggregatetype}", "--set", "postgres.plugin=pgoutput",
       "--set", "postgres.publication=" + slot_ + "_pub", "--set",
       "postgres.state_dir=" + StateDir() + "/p"});
  relay_ = Process::Start(wal2json_args, dir_ + "/wal2json.log");
  auto second = Process::Start(pgoutput_args, dir_ + "/pgoutput.log");
  ASSERT_TRUE(WaitUntil(
      [&] {
        return db_->Scalar(
                   "SELECT count(*) FROM pg_replication_slots WHERE "
                   "active AND slot_name IN ('" +
                   slot_ + "', '" + slot_ + "_p')") == "2";
      },
      30000))
      << relay_->Output() << second->Output();
  const std::vector<std::string> payloads = {
      "'{\"total\": 42, \"items\": [1, 2.5, -3e10, true, null]}'",
      "'{\"name\": \"Zoë 🚀 \\u00e9\", \"quote\": \"a\\\"b\\\\c\\n\"}'",
      "'\"just a string\"'",
      "'null'",
      "NULL",
      "'{\"n\": 123456789012345678901234567890.000000001}'",
      "jsonb_build_object('blob', repeat('x', 900000))"};
  int n = 0;
  for (const std::string& p : payloads) {
    ++n;
    db_->Exec("INSERT INTO public." + table_ +
              " (id, aggregatetype, aggregateid, type, payload, note) VALUES "
              "(gen_random_uuid(), '" +
              aggtype_ + "', 'key-" + std::to_string(n % 3) + " é', 'T', " + p +
              ", " +
              (n % 2 == 0 ? std::string("NULL")
                          : "'note ☃ " + std::to_string(n) + "'") +
              ")");
  }
  ExpectSameRecords("w." + aggtype_, "p." + aggtype_, payloads.size(), *relay_,
                    *second);
  second->Signal(SIGTERM);
  second->Wait(30000);
  db_->Query("SELECT pg_drop_replication_slot('" + slot_ + "_p')")
      .status()
      .IgnoreError();
}

INSTANTIATE_TEST_SUITE_P(Majors, PgOutputE2ETest,
                         ::testing::Values(14, 15, 16, 17, 18),
                         [](const ::testing::TestParamInfo<int>& param_info) {
                           return "PostgreSQL" +
                                  std::to_string(param_info.param);
                         });

}  // namespace
}  // namespace outbox::testing
