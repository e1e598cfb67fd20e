// What outbox-poller publishes (issue 11 item 12,
// docs/concepts/polling-relay.md "What it publishes"): the row as it is when
// polled, not as it was inserted, and nothing for a row deleted before the
// poll, so the insert-then-delete pattern that outbox-relay supports publishes
// nothing through the poller. These pin the documented behaviour; they are not
// what outbox-relay does.
#include <signal.h>

#include <set>
#include <string>

#include "e2e/poller/poller_e2e_fixture.h"

namespace outbox::testing {
namespace {

TEST_F(PollerE2ETest, PublishesRowsAsPolledAndNothingDeletedBeforeThePoll) {
  const std::string updated = "00000000-0000-4000-8000-0000000000a1";
  const std::string deleted = "00000000-0000-4000-8000-0000000000a2";
  const std::string inserted_and_deleted =
      "00000000-0000-4000-8000-0000000000a3";
  const std::string untouched = "00000000-0000-4000-8000-0000000000a4";
  auto insert = [&](const std::string& id, const std::string& payload) {
    return absl::StrCat("INSERT INTO public.", table_,
                        " (id, aggregatetype, aggregateid, type, payload) "
                        "VALUES ('",
                        id, "', '", aggtype_, "', 'k', 'T', '", payload,
                        "'); ");
  };
  // All of it committed before the poller starts, so before its first poll.
  db_->Exec(insert(updated, R"({"v": "as inserted"})"));
  db_->Exec("UPDATE public." + table_ +
            R"( SET payload = '{"v": "as updated"}' WHERE id = ')" + updated +
            "'");
  db_->Exec(insert(deleted, R"({"v": "deleted"})"));
  db_->Exec("DELETE FROM public." + table_ + " WHERE id = '" + deleted + "'");
  // The no-janitor pattern: insert and delete in one transaction.
  db_->Exec("BEGIN; " + insert(inserted_and_deleted, R"({"v": "gone"})") +
            "DELETE FROM public." + table_ + " WHERE id = '" +
            inserted_and_deleted + "'; COMMIT;");
  db_->Exec(insert(untouched, R"({"v": "untouched"})"));

  Process* p = StartPoller();
  // Rows are marked only once Kafka has them: everything the poller
  // published is then in the topic.
  ASSERT_TRUE(WaitAllSent(60000)) << p->Output();
  EXPECT_EQ(Count("true"), 2);
  auto got = ConsumeAll(env_->kafka_brokers(), {topic_}, 3, 5000);
  std::map<std::string, std::string> value_by_id;
  for (const auto& m : got) value_by_id[m.Header("id")] = m.value;
  EXPECT_EQ(got.size(), 2u);
  // The UPDATE before the poll changed what was published.
  EXPECT_EQ(value_by_id[updated], R"({"v": "as updated"})");
  EXPECT_EQ(value_by_id[untouched], R"({"v": "untouched"})");
  // Rows deleted before the poll were never published.
  EXPECT_EQ(value_by_id.count(deleted), 0u);
  EXPECT_EQ(value_by_id.count(inserted_and_deleted), 0u);
  p->Signal(SIGTERM);
  EXPECT_EQ(p->Wait(30000), 0) << p->Output();
}

}  // namespace
}  // namespace outbox::testing
