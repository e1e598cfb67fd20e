// outbox-poller through a Kafka outage (issue 11 item 11): the claim
// transaction must not stay open while the broker is down (it would hold the
// batch's row locks and the database's xmin horizon for the whole outage),
// and every row must still reach Kafka once the broker is back.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <string>
#include <thread>

#include "e2e/poller/poller_e2e_fixture.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

TEST_F(PollerE2ETest, KafkaOutageDoesNotKeepTheClaimTransactionOpen) {
  constexpr int kBatchTimeoutMs = 2000;
  // Margin for a loaded machine: the rollback is due at the deadline.
  constexpr double kSlackS = 4;
  constexpr int kOutageS = 15;
  // Its own application_name tells this poller's session apart.
  const std::string app = UniqueName("outage_poller");
  Process* p = StartPoller(
      {"--pg", env_->pg_conninfo() + " application_name=" + app, "--set",
       absl::StrCat("poller.batch_timeout_ms=", kBatchTimeoutMs), "--set",
       "poller.backoff_initial_ms=200", "--set", "poller.backoff_max_ms=1000",
       "--set", "poller.batch_size=50"});
  Insert(100, 4, 1);
  ASSERT_TRUE(WaitAllSent(60000)) << p->Output();

  ASSERT_EQ(RunScript("kafka.sh kill " + env_->kafka_dir()), 0);
  Insert(200, 4, 101);  // claimed while Kafka is down
  // The age of the poller's open transaction, 0 when it has none.
  const std::string age_sql =
      "SELECT coalesce(max(extract(epoch FROM clock_timestamp() - "
      "xact_start)), 0)::float8 FROM pg_stat_activity WHERE "
      "application_name = '" +
      app + "'";
  double oldest_s = 0;
  int samples_in_transaction = 0;
  const auto outage_end =
      std::chrono::steady_clock::now() + std::chrono::seconds(kOutageS);
  while (std::chrono::steady_clock::now() < outage_end) {
    double age_s = std::stod(db_->Scalar(age_sql));
    samples_in_transaction += age_s > 0;
    oldest_s = std::max(oldest_s, age_s);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const int64_t unsent_during = Count("sent_at IS NULL");
  const std::string log_during = p->Output();
  ASSERT_EQ(RunScript("kafka.sh restart " + env_->kafka_dir()), 0);

  std::cerr << "outage " << kOutageS << " s: oldest poller transaction "
            << oldest_s << " s, " << samples_in_transaction
            << " samples in a transaction\n";
  EXPECT_LT(oldest_s, kBatchTimeoutMs / 1000.0 + kSlackS) << log_during;
  // A batch was claimed during the outage and rolled back, not marked.
  EXPECT_THAT(log_during, HasSubstr("batch rolled back"));
  EXPECT_EQ(unsent_during, 200);

  Insert(50, 4, 301);
  auto rows = Rows();
  ASSERT_EQ(rows.size(), 350u);
  ASSERT_TRUE(WaitAllSent()) << p->Output();
  auto got = ConsumeIds(topic_, rows, 120000);
  // Every row, each key's first deliveries in seq order; duplicates are the
  // rolled-back batch published again.
  int dups = Audit(rows, got, /*check_order=*/true);
  std::cerr << "outage: " << rows.size() << " rows, " << dups
            << " duplicates\n";
  EXPECT_LE(dups, 50 * 2);
  EXPECT_THAT(
      ScrapeMetrics(*p),
      ::testing::ContainsRegex("outbox_poller_batches_abandoned_total [1-9]"));
  EXPECT_TRUE(p->Running()) << p->Output();
  p->Signal(SIGTERM);
  EXPECT_EQ(p->Wait(30000), 0) << p->Output();
}

}  // namespace
}  // namespace outbox::testing
