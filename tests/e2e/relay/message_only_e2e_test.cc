// The tableless outbox alone (outbox.tables empty, outbox.messages.enabled),
// end to end with each plugin on the fixture's PostgreSQL 15 and Kafka: an
// application publishes through pg_logical_emit_message only, and no row of
// any table, outbox-shaped or not, becomes a record. wal2json is asked for
// no row action; pgoutput gets a publication of no table. A pgoutput
// publication that covers other tables is refused at start, and the
// commands that read outbox rows (outbox-audit) refuse the configuration.
#include "e2e/relay/message_outbox_fixture.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class MessageOnlyE2ETest : public MessageOutboxTest {
 protected:
  void SetUp() override {
    MessageOutboxTest::SetUp();
    if (HasFatalFailure()) return;
    orders_ = UniqueName("orders");
    db_->Exec("CREATE TABLE public." + orders_ +
              " (id bigint PRIMARY KEY, total numeric)");
    // No outbox table: the fixture's table stays in the database, written
    // to below, and must not be streamed.
    extra_relay_args_.insert(extra_relay_args_.end(), {"--tables", ""});
  }

  void TearDown() override {
    MessageOutboxTest::TearDown();
    if (db_ != nullptr) {
      db_->Query("DROP TABLE IF EXISTS public." + orders_)
          .status()
          .IgnoreError();
    }
  }

  std::string Emit(int n, const std::string& key) {
    return MessageOutboxTest::Emit(Id(n), key, absl::StrCat("{\"n\": ", n, "}"),
                                   "NULL", "OrderPlaced");
  }
  std::string Id(int n) {
    return absl::StrCat("00000000-0000-4000-8000-", 200000000000 + n);
  }
  // An outbox-shaped row in the fixture's table, which is not configured.
  std::string OutboxRow(int n) {
    return absl::StrCat("INSERT INTO public.", table_,
                        " (id, aggregatetype, aggregateid, type, payload) "
                        "VALUES ('",
                        Id(n), "', '", aggtype_, "', 'k', 'Row', '{}');");
  }
  std::string Order(int n) {
    return absl::StrCat("INSERT INTO public.", orders_, " VALUES (", n,
                        ", 9.5);");
  }

  std::string orders_;
};

TEST_P(MessageOnlyE2ETest, MessagesAreTheOnlyEventsAndRowsAreNotStreamed) {
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  // Each order with its event, in one transaction, as an application would.
  std::vector<std::string> want;
  for (int n = 1; n <= 20; ++n) {
    db_->Exec("BEGIN;" + Order(n) + Emit(n, "k") + "COMMIT;");
    want.push_back(Id(n));
  }
  // Rows only: an outbox-shaped row and an order, no message.
  db_->Exec("BEGIN;" + OutboxRow(100) + Order(100) + "COMMIT;");
  db_->Exec("UPDATE public." + orders_ + " SET total = 1");
  db_->Exec("BEGIN;" + Emit(21, "k") + "COMMIT;");
  want.push_back(Id(21));

  auto got = ConsumeUntil(
      env_->kafka_brokers(), {topic_},
      [&](const std::vector<KafkaMessage>& m) {
        return m.size() >= want.size();
      },
      60000);
  std::vector<std::string> ids;
  for (const auto& m : got) ids.push_back(m.Header("id"));
  EXPECT_EQ(ids, want) << relay_->Output();
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got[0].key, "k");
  EXPECT_EQ(got[0].value, "{\"n\": 1}");

  // The slot passes the row-only transactions: nothing waits on them.
  ExpectConfirmedReachesCurrentWal(30000);
  EXPECT_TRUE(relay_->Running()) << relay_->Output();
  if (GetParam() == "pgoutput") {
    // Created by the relay, publishing no table.
    EXPECT_EQ(db_->Scalar("SELECT count(*) FROM pg_publication WHERE "
                          "pubname = '" +
                          publication_ + "'"),
              "1");
    EXPECT_EQ(db_->Scalar("SELECT count(*) FROM pg_publication_tables WHERE "
                          "pubname = '" +
                          publication_ + "'"),
              "0");
  }
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();
  // Nothing behind them either (the outbox-shaped row 100).
  EXPECT_EQ(
      ConsumeAll(env_->kafka_brokers(), {topic_}, want.size() + 1, 3000).size(),
      want.size());
}

// outbox-audit, republish and the poller read outbox rows: each refuses a
// configuration without tables in one line.
TEST_P(MessageOnlyE2ETest, RowReadersRefuseAConfigurationWithoutTables) {
  std::string output;
  EXPECT_EQ(
      RunOutboxAudit({"--tables", "", "--set", "outbox.messages.enabled=true"},
                     &output),
      2)
      << output;
  EXPECT_THAT(output, HasSubstr("outbox-audit compares the outbox tables with "
                                "Kafka, but outbox.tables is empty"));
  std::vector<std::string> republish = RelayArgs();
  republish.insert(republish.begin() + 1, "republish");
  republish.push_back("--all");
  auto command = Process::Start(republish, dir_ + "/republish.log");
  EXPECT_EQ(command->Wait(30000), 2) << command->Output();
  EXPECT_THAT(command->Output(),
              HasSubstr("republish produces the outbox tables' rows again, "
                        "but outbox.tables is empty"));
  std::vector<std::string> poller = RelayArgs();
  poller[0] = BinaryPath("outbox-poller");
  // The poller has no slot: it refuses --slot before anything else.
  auto slot = std::find(poller.begin(), poller.end(), "--slot");
  poller.erase(slot, slot + 2);
  auto polling = Process::Start(poller, dir_ + "/poller.log");
  EXPECT_EQ(polling->Wait(30000), 2) << polling->Output();
  EXPECT_THAT(polling->Output(),
              HasSubstr("outbox-poller polls the outbox tables (logical "
                        "messages need outbox-relay), but outbox.tables is "
                        "empty"));
  // And without messages, the configuration itself is refused.
  StartRelay({"--set", "outbox.messages.enabled=false"});
  EXPECT_EQ(relay_->Wait(30000), 2) << relay_->Output();
  EXPECT_THAT(relay_->Output(),
              HasSubstr("\"outbox.tables\": is empty and "
                        "outbox.messages.enabled is false: nothing to relay"));
}

INSTANTIATE_TEST_SUITE_P(Plugins, MessageOnlyE2ETest,
                         ::testing::Values("wal2json", "pgoutput"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return p.param;
                         });

// pgoutput publishes every row of the publication's tables: one that covers
// a table that is not an outbox table would turn its rows into poison
// events. Refused at start, with the publication to use instead.
using PublicationE2ETest = MessageOnlyE2ETest;

TEST_P(PublicationE2ETest, APublicationOfOtherTablesIsRefused) {
  db_->Exec("CREATE PUBLICATION " + publication_ + " FOR TABLE public." +
            orders_);
  StartRelay();
  EXPECT_EQ(relay_->Wait(30000), 3) << relay_->Output();
  EXPECT_THAT(relay_->Output(),
              HasSubstr(absl::StrCat("publication \"", publication_,
                                     "\" also publishes public.", orders_,
                                     ", which is not an outbox table")));
  // Statements that can run (issue 23 item 14): dropping the table, or a
  // publication under a new name, never CREATE PUBLICATION of the same one.
  EXPECT_THAT(relay_->Output(),
              HasSubstr("run ALTER PUBLICATION " + publication_ +
                        " DROP TABLE public." + orders_ + ";"));
  EXPECT_THAT(relay_->Output(),
              HasSubstr("CREATE PUBLICATION " + publication_ +
                        "_outbox WITH (publish = 'insert');"));
  EXPECT_THAT(relay_->Output(),
              Not(HasSubstr("CREATE PUBLICATION " + publication_ + " ")));
}

TEST_P(PublicationE2ETest, AForAllTablesPublicationGetsANewNameNotAnAlter) {
  db_->Exec("CREATE PUBLICATION " + publication_ + " FOR ALL TABLES");
  StartRelay();
  EXPECT_EQ(relay_->Wait(30000), 3) << relay_->Output();
  EXPECT_THAT(relay_->Output(),
              HasSubstr("(the publication is FOR ALL TABLES): create a "
                        "publication of the outbox tables only and set "
                        "postgres.publication to it: CREATE PUBLICATION " +
                        publication_ + "_outbox WITH (publish = 'insert');"));
  EXPECT_THAT(relay_->Output(), Not(HasSubstr("DROP TABLE")));
  db_->Exec("DROP PUBLICATION " + publication_);
}

INSTANTIATE_TEST_SUITE_P(PgOutput, PublicationE2ETest,
                         ::testing::Values("pgoutput"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return p.param;
                         });

}  // namespace
}  // namespace outbox::testing
