// Proves the environment the other integration tests stand on: the
// PostgreSQL started by scripts/pg.sh decodes outbox inserts through a
// wal2json slot, and the Kafka broker from scripts/kafka.sh round-trips a
// record.

#include "e2e/test_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

TEST(EnvironmentTest, PostgresIsReadyForLogicalDecoding) {
  auto db = PgConn::Connect(TestEnv::Get().pg_conninfo());
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(db->Scalar("SHOW wal_level"), "logical");
  // output_plugin_libraries exists from 15.19 on; scripts/pg.sh allows
  // wal2json there and leaves it out of postgresql.conf on older releases.
  if (db->Scalar("SELECT count(*) FROM pg_settings WHERE name = "
                 "'output_plugin_libraries'") == "1") {
    EXPECT_THAT(db->Scalar("SHOW output_plugin_libraries"),
                HasSubstr("wal2json"));
  } else {
    EXPECT_THAT(db->Scalar("SHOW server_version"),
                ::testing::StartsWith("15."));
    EXPECT_LT(std::stoi(db->Scalar("SHOW server_version_num")), 150019);
  }
  EXPECT_EQ(db->Scalar("SHOW fsync"), "on");
  EXPECT_THAT(db->Scalar("SELECT version()"), HasSubstr("PostgreSQL 15"));
}

TEST(EnvironmentTest, OutboxInsertIsSeenThroughWal2jsonSlot) {
  auto db = PgConn::Connect(TestEnv::Get().pg_conninfo());
  ASSERT_NE(db, nullptr);
  RunSqlFile(*db, "outbox.sql");
  RunSqlFile(*db, "roles.sql");
  std::string slot = UniqueName("env_slot");
  db->Exec("SELECT pg_create_logical_replication_slot('" + slot +
           "', 'wal2json')");
  db->Exec(
      "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) "
      "VALUES ('8d3f2c1e-0000-4000-8000-000000000001', 'order', 'o-1', "
      "'OrderCreated', '{\"total\": 42}')");
  auto rows = db->Query(
      "SELECT data FROM pg_logical_slot_get_changes('" + slot +
      "', NULL, NULL, 'format-version', '2', 'add-tables', 'public.outbox', "
      "'actions', 'insert')");
  db->Exec("SELECT pg_drop_replication_slot('" + slot + "')");
  ASSERT_TRUE(rows.ok()) << rows.status();
  // B, I, C for the insert (the slot was created after the DDL).
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_THAT((*rows)[0][0], HasSubstr("\"action\":\"B\""));
  const std::string& insert = (*rows)[1][0];
  EXPECT_THAT(insert, HasSubstr("\"action\":\"I\""));
  EXPECT_THAT(insert, HasSubstr("\"table\":\"outbox\""));
  EXPECT_THAT(insert, HasSubstr("8d3f2c1e-0000-4000-8000-000000000001"));
  EXPECT_THAT(insert, HasSubstr(R"("value":"{\"total\": 42}")"));
  EXPECT_THAT((*rows)[2][0], HasSubstr("\"action\":\"C\""));
}

TEST(EnvironmentTest, RelayRoleHasLeastPrivilege) {
  auto db = PgConn::Connect(TestEnv::Get().pg_conninfo());
  ASSERT_NE(db, nullptr);
  RunSqlFile(*db, "outbox.sql");
  RunSqlFile(*db, "roles.sql");
  EXPECT_EQ(db->Scalar("SELECT rolreplication FROM pg_roles WHERE rolname = "
                       "'outbox_relay'"),
            "t");
  EXPECT_EQ(db->Scalar("SELECT rolsuper FROM pg_roles WHERE rolname = "
                       "'outbox_relay'"),
            "f");
  EXPECT_EQ(db->Scalar("SELECT has_table_privilege('outbox_relay', "
                       "'public.outbox', 'SELECT')"),
            "t");
  EXPECT_EQ(db->Scalar("SELECT has_table_privilege('outbox_relay', "
                       "'public.outbox', 'INSERT')"),
            "f");
}

TEST(EnvironmentTest, KafkaRoundTripsARecord) {
  const std::string brokers = TestEnv::Get().kafka_brokers();
  std::string topic = UniqueName("env_topic");
  ASSERT_TRUE(ProduceSync(brokers, topic, "k1", "hello kafka").ok());
  auto got = ConsumeAll(brokers, {topic}, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].key, "k1");
  EXPECT_EQ(got[0].value, "hello kafka");
  EXPECT_EQ(got[0].topic, topic);
}

}  // namespace
}  // namespace outbox::testing
