// A pgoutput publication the relay did not make, on the fixture's
// PostgreSQL 15 (issue 23 item 6): a row filter or a column list
// (PostgreSQL 15+) would drop events or their columns in the walsender,
// with nothing in the stream to say so. A row filter is refused, and so is
// a column list without a column the mapping reads, each in one line naming
// the ALTER PUBLICATION that fixes it; a column list that keeps every
// mapped column streams. (PostgreSQL 14 has neither, nor the catalog
// columns: pgoutput_e2e_test's 14 runs the same checks there.)
#include "e2e/relay/relay_e2e_fixture.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

class PublicationFilterE2ETest : public PreconditionTest {
 protected:
  void SetUp() override {
    PreconditionTest::SetUp();
    if (HasFatalFailure()) return;
    publication_ = slot_ + "_pub";
    extra_relay_args_ = {"--set", "postgres.plugin=pgoutput", "--set",
                         "postgres.publication=" + publication_};
  }
  void TearDown() override {
    PreconditionTest::TearDown();
    if (db_ != nullptr) {
      db_->Query("DROP PUBLICATION IF EXISTS " + publication_)
          .status()
          .IgnoreError();
    }
  }
  std::string Fix() const {
    return "run ALTER PUBLICATION " + publication_ + " SET TABLE public." +
           table_ + ";";
  }
  std::string publication_;
};

TEST_F(PublicationFilterE2ETest, ARowFilterIsRefusedNamingTheAlter) {
  db_->Exec("CREATE PUBLICATION " + publication_ + " FOR TABLE public." +
            table_ +
            " WHERE (aggregatetype <> 'hidden') WITH (publish = "
            "'insert')");
  ExpectRefusal("publication \"" + publication_ +
                "\" filters the rows of "
                "public." +
                table_ + " (WHERE (aggregatetype <> 'hidden'::text))");
  EXPECT_THAT(relay_->Output(), HasSubstr(Fix()));
  // The fix runs, and then the relay starts.
  db_->Exec("ALTER PUBLICATION " + publication_ + " SET TABLE public." +
            table_);
  StartRelay();
  EXPECT_TRUE(WaitActive()) << relay_->Output();
}

TEST_F(PublicationFilterE2ETest, AColumnListWithoutAMappedColumnIsRefused) {
  db_->Exec("CREATE PUBLICATION " + publication_ + " FOR TABLE public." +
            table_ +
            " (id, aggregatetype, aggregateid, type) WITH (publish "
            "= 'insert')");
  ExpectRefusal("publication \"" + publication_ +
                "\" has a column list on public." + table_ +
                " without payload, which the outbox mapping reads");
  EXPECT_THAT(relay_->Output(), HasSubstr(Fix()));
}

TEST_F(PublicationFilterE2ETest, AColumnListKeepingEveryMappedColumnStreams) {
  db_->Exec("CREATE PUBLICATION " + publication_ + " FOR TABLE public." +
            table_ +
            " (id, aggregatetype, aggregateid, type, payload) WITH "
            "(publish = 'insert')");
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  db_->Exec("INSERT INTO public." + table_ +
            " (id, aggregatetype, aggregateid, type, payload) VALUES "
            "('00000000-0000-4000-8000-000000000023', '" +
            aggtype_ + "', 'k1', 'Created', '{\"a\": 1}')");
  std::vector<KafkaMessage> got =
      ConsumeAll(env_->kafka_brokers(), {topic_}, 1);
  ASSERT_EQ(got.size(), 1u) << relay_->Output();
  EXPECT_EQ(got[0].key, "k1");
  EXPECT_EQ(got[0].value, "{\"a\": 1}");
  EXPECT_EQ(got[0].Header("id"), "00000000-0000-4000-8000-000000000023");
}

}  // namespace
}  // namespace outbox::testing
