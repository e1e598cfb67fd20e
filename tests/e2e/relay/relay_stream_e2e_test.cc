// outbox-relay end to end, on what the replication stream may carry besides
// outbox rows: logical decoding messages from any session, and bytea
// payloads under a role that changes bytea_output. The real binary against
// the fixture's PostgreSQL and Kafka.
#include "e2e/relay/relay_e2e_fixture.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

// Any session may emit a logical decoding message, with any bytes in it.
// wal2json passes messages through add-tables and actions, so before the
// relay dropped them at the source (add-msg-prefixes) and tolerated bytes
// in their content, '\xfffe' stopped the relay at every restart.
TEST_F(RelayE2ETest, LogicalMessagesNeverStopTheRelay) {
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::vector<Event> committed;
  std::vector<std::string> rolled_back;
  Write(1, 3, 2, 0, &committed, &rolled_back);
  auto other = PgConn::Connect(env_->pg_conninfo());
  ASSERT_NE(other, nullptr);
  // Non-transactional, not UTF-8, from this session.
  db_->Exec("SELECT pg_logical_emit_message(false, 'x', '\\xfffe'::bytea)");
  // Transactional, from another session, in a transaction that also
  // writes an outbox row; one with the prefix the relay reserves for itself
  // reaches the decoder.
  const std::string id = "00000000-0000-4000-8000-00000000e001";
  other->Exec(
      "BEGIN; SELECT pg_logical_emit_message(true, 'x', '\\xfffe'::bytea); "
      "SELECT pg_logical_emit_message(true, 'outbox-relay.reserved', "
      "'\\xc0ff'::bytea); "
      "INSERT INTO public." +
      table_ + " (id, aggregatetype, aggregateid, type, payload) VALUES ('" +
      id + "', '" + aggtype_ +
      "', 'm', 'Created', '{\"with\": \"messages\"}'); "
      "SELECT pg_logical_emit_message(false, 'outbox-relay.reserved', "
      "'\\xfffe'::bytea); COMMIT;");
  committed.push_back(
      {id, "m", db_->Scalar("SELECT '{\"with\": \"messages\"}'::jsonb::text")});
  Write(2, 3, 2, 0, &committed, &rolled_back);
  EXPECT_EQ(Audit(committed, rolled_back, committed.size()), 0);
  EXPECT_TRUE(relay_->Running()) << relay_->Output();

  // The messages are behind the confirmed position now; a restart streams
  // on, and so does one that finds them still ahead of it.
  relay_->Signal(SIGTERM);
  ASSERT_EQ(relay_->Wait(30000), 0) << relay_->Output();
  db_->Exec("SELECT pg_logical_emit_message(false, 'x', '\\xfffe'::bytea)");
  db_->Exec(
      "SELECT pg_logical_emit_message(false, 'outbox-relay.reserved', "
      "'\\xfffe'::bytea)");
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  Write(3, 3, 2, 0, &committed, &rolled_back);
  Audit(committed, rolled_back, committed.size());
  EXPECT_TRUE(relay_->Running()) << relay_->Output();
  EXPECT_THAT(relay_->Output(), ::testing::Not(HasSubstr("cannot decode")));
}

// wal2json strips two characters ("\x") from bytea text, so a role with
// bytea_output = escape once turned payloads into wrong bytes with no error.
// The relay forces hex on its connection, and keeps the options the user
// put in the conninfo (here IntervalStyle, seen in an interval header).
TEST_F(RelayE2ETest, ByteaPayloadArrivesExactlyWhateverTheRoleSets) {
  const std::string role = UniqueName("escape_role");
  const std::string table = UniqueName("outbox_bytea");
  db_->Exec("CREATE ROLE " + role + " LOGIN REPLICATION");
  db_->Exec("ALTER ROLE " + role + " SET bytea_output = 'escape'");
  db_->Exec("CREATE TABLE public." + table +
            " (LIKE public.outbox INCLUDING ALL)");
  db_->Exec("ALTER TABLE public." + table +
            " ALTER COLUMN payload TYPE bytea USING NULL, "
            "ADD COLUMN ttl interval NOT NULL DEFAULT '90 minutes'");
  db_->Exec("GRANT SELECT ON public." + table + " TO " + role);
  auto args = RelayArgs();
  args[2] = env_->pg_conninfo() + " user=" + role +
            " options='-c IntervalStyle=iso_8601'";
  args[8] = "public." + table;  // --tables
  args.insert(args.end(), {"--set", "outbox.headers.ttl=ttl"});
  relay_ = Process::Start(args, dir_ + "/relay.log");
  ASSERT_TRUE(WaitActive()) << relay_->Output();

  // Hex-looking text (escape output "cafe0123" would lose "ca"), a
  // backslash and "x", NUL and high bytes, empty, and 4 KiB of everything.
  const std::vector<std::string> payloads = {
      "'\\x6361666530313233'", "'\\x5c78'", "'\\x00ff7f80fe0a27225c'",
      "''::bytea",
      "(SELECT string_agg(set_byte('\\x00'::bytea, 0, i % 256), ''::bytea) "
      "FROM generate_series(0, 4095) i)"};
  std::map<std::string, std::string> want;  // id -> bytes
  for (size_t i = 0; i < payloads.size(); ++i) {
    const std::string id =
        absl::StrCat("00000000-0000-4000-8000-0000000b00", 10 + i);
    db_->Exec("INSERT INTO public." + table +
              " (id, aggregatetype, aggregateid, type, payload) VALUES ('" +
              id + "', '" + aggtype_ + "', 'b', 'Bytes', " + payloads[i] + ")");
    // The expected bytes, read back in hex whatever this session's output.
    std::string hex = db_->Scalar("SELECT encode(payload, 'hex') FROM public." +
                                  table + " WHERE id = '" + id + "'");
    std::string bytes;
    for (size_t k = 0; k + 1 < hex.size(); k += 2) {
      bytes.push_back(
          static_cast<char>(std::stoi(hex.substr(k, 2), nullptr, 16)));
    }
    want[id] = bytes;
  }
  ASSERT_EQ(want.begin()->second, "cafe0123");
  auto got = ConsumeAll(env_->kafka_brokers(), {topic_}, want.size(), 30000);
  EXPECT_EQ(got.size(), want.size()) << relay_->Output();
  for (const auto& m : got) {
    const std::string id = m.Header("id");
    ASSERT_EQ(want.count(id), 1u) << id;
    EXPECT_EQ(m.value, want[id]) << id;
    EXPECT_EQ(m.Header("ttl"), "PT1H30M") << id;
  }
  EXPECT_TRUE(relay_->Running()) << relay_->Output();
  relay_.reset();
  db_->Query("SELECT pg_drop_replication_slot('" + slot_ + "')")
      .status()
      .IgnoreError();
  db_->Exec("DROP TABLE public." + table);
  db_->Exec("DROP OWNED BY " + role);
  db_->Exec("DROP ROLE " + role);
}

}  // namespace
}  // namespace outbox::testing
