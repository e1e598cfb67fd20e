// outbox-poller end to end (the fixture is in poller_e2e_fixture.h): record
// parity with outbox-relay, order, several instances, crashes, retries and
// dead letters, delete mode, the janitor, LISTEN/NOTIFY, build_info and
// `outbox-poller validate` (issue 35).
#include <libpq-fe.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>

#include <fstream>
#include <iostream>
#include <regex>

#include "absl/strings/str_replace.h"
#include "e2e/poller/poller_e2e_fixture.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

TEST_F(PollerE2ETest, RecordsMatchOutboxRelayByteForByte) {
  // Both relays on the same table, each to its own topic; every record
  // must be the same but for the topic.
  std::string slot = UniqueName("slot");
  std::string relay_topic = "relayed." + aggtype_;
  std::string poller_topic = "polled." + aggtype_;
  auto relay = Process::Start(
      {BinaryPath("outbox-relay"), "--pg", env_->pg_conninfo(), "--kafka",
       env_->kafka_brokers(), "--slot", slot, "--tables", "public." + table_,
       "--topic", "relayed.{aggregatetype}", "--set",
       "outbox.headers.type=event_type", "--set", "http.listen="},
      dir_ + "/relay.log");
  ASSERT_TRUE(WaitUntil(
      [&] {
        return db_->Scalar(
                   "SELECT count(*) FROM pg_replication_slots WHERE "
                   "slot_name = '" +
                   slot + "' AND active") == "1";
      },
      30000))
      << relay->Output();
  Insert(200, 7);
  db_->Exec("INSERT INTO public." + table_ +
            " (id, aggregatetype, aggregateid, type, payload) VALUES "
            "(gen_random_uuid(), '" +
            aggtype_ + "', 'k-null', 'Empty', NULL), (gen_random_uuid(), '" +
            aggtype_ +
            "', 'k-json', 'Odd', '{\"b\": [1, 2.50, null], \"a\": "
            "\"\\u00e9\\n\\\"\", \"z\": {}}')");
  Process* poller = StartPoller({"--topic", "polled.{aggregatetype}", "--set",
                                 "outbox.headers.type=event_type"});
  auto rows = Rows();
  ASSERT_EQ(rows.size(), 202u);
  auto relayed = ConsumeIds(relay_topic, rows);
  auto polled = ConsumeIds(poller_topic, rows);
  std::map<std::string, const KafkaMessage*> by_id;
  for (const auto& m : relayed) by_id.emplace(m.Header("id"), &m);
  ASSERT_EQ(by_id.size(), rows.size()) << relay->Output();
  std::set<std::string> seen;
  for (const auto& m : polled) {
    std::string id = m.Header("id");
    ASSERT_TRUE(by_id.count(id)) << id;
    if (!seen.insert(id).second) continue;
    const KafkaMessage& r = *by_id[id];
    EXPECT_EQ(m.key, r.key);
    EXPECT_EQ(m.key_null, r.key_null);
    EXPECT_EQ(m.value, r.value) << id;
    EXPECT_EQ(m.value_null, r.value_null) << id;
    EXPECT_EQ(m.headers, r.headers) << id;
    // And the value is the payload's text output.
    EXPECT_EQ(m.value, rows[id].payload);
    EXPECT_EQ(m.value_null, rows[id].payload_null);
  }
  EXPECT_EQ(seen.size(), rows.size()) << poller->Output();
  EXPECT_FALSE(by_id.empty());
  EXPECT_EQ(by_id.begin()->second->Header("event_type").empty(), false);
  ASSERT_TRUE(WaitAllSent()) << poller->Output();
  // SIGTERM: finish, exit 0.
  poller->Signal(SIGTERM);
  EXPECT_EQ(poller->Wait(30000), 0) << poller->Output();
  EXPECT_THAT(poller->Output(), HasSubstr("polling"));
  relay->Signal(SIGTERM);
  relay->Wait(30000);
  db_->Query("SELECT pg_drop_replication_slot('" + slot + "')")
      .status()
      .IgnoreError();
}

TEST_F(PollerE2ETest, OneInstanceKeepsEachKeysSeqOrder) {
  Process* poller = StartPoller({"--set", "poller.batch_size=50"});
  // Backlog plus rows written while it runs, one writer (seq order is
  // commit order).
  Insert(1000, 5, 1);
  for (int i = 0; i < 20; ++i) Insert(50, 5, 1001 + 50 * i);
  auto rows = Rows();
  ASSERT_EQ(rows.size(), 2000u);
  auto got = ConsumeIds(topic_, rows);
  EXPECT_EQ(Audit(rows, got, /*check_order=*/true), 0);
  ASSERT_TRUE(WaitAllSent()) << poller->Output();
  EXPECT_EQ(Count("attempts <> 0"), 0);
  poller->Signal(SIGTERM);
  EXPECT_EQ(poller->Wait(30000), 0) << poller->Output();
  EXPECT_EQ(Delivered(poller->Output()), 2000);
}

TEST_F(PollerE2ETest, TwoInstancesPublishEachRowOnce) {
  Insert(6000, 16);
  Process* a = StartPoller({"--set", "poller.batch_size=100"});
  Process* b = StartPoller({"--set", "poller.batch_size=100"});
  auto rows = Rows();
  ASSERT_TRUE(WaitAllSent()) << a->Output() << b->Output();
  auto got = ConsumeIds(topic_, rows);
  EXPECT_EQ(Audit(rows, got, /*check_order=*/false), 0);
  EXPECT_EQ(got.size(), rows.size());
  a->Signal(SIGTERM);
  b->Signal(SIGTERM);
  EXPECT_EQ(a->Wait(30000), 0) << a->Output();
  EXPECT_EQ(b->Wait(30000), 0) << b->Output();
  int64_t da = Delivered(a->Output()), db = Delivered(b->Output());
  EXPECT_EQ(da + db, 6000);
  std::cerr << "two instances: " << da << " + " << db << " rows\n";
}

TEST_F(PollerE2ETest, SigkillMidBatchLosesNothing) {
  Insert(30000, 32);
  auto rows = Rows();
  int64_t before = 0;
  for (int cycle = 0; cycle < 3; ++cycle) {
    Process* p = StartPoller({"--set", "poller.batch_size=500"});
    // Kill once this instance has settled at least one more batch: it is
    // then in the middle of another one.
    ASSERT_TRUE(
        WaitUntil([&] { return Count("sent_at IS NOT NULL") > before; }, 60000))
        << p->Output();
    p->Signal(SIGKILL);
    p->Wait(10000);
    before = Count("sent_at IS NOT NULL");
  }
  ASSERT_LT(before, 30000) << "drained before the last kill";
  Process* p = StartPoller({"--set", "poller.batch_size=500"});
  ASSERT_TRUE(WaitAllSent()) << p->Output();
  auto got = ConsumeIds(topic_, rows, 120000);
  int dups = Audit(rows, got, /*check_order=*/true);
  std::cerr << "sigkill: " << rows.size() << " rows, " << dups
            << " duplicates\n";
  RecordProperty("duplicates", dups);
}

TEST_F(PollerE2ETest, FailedRowIsRetriedThenDeadLetteredWhileOthersFlow) {
  std::string dlq = UniqueName("dlq");
  Process* p = StartPoller({"--set", "poller.max_attempts=3", "--set",
                            "poller.backoff_initial_ms=50", "--set",
                            "poller.backoff_max_ms=200", "--set",
                            "outbox.on_invalid=dead_letter", "--set",
                            "outbox.dead_letter_topic=" + dlq});
  Insert(20, 3, 1);
  const std::string huge = "00000000-0000-4000-8000-0000000000cc";
  InsertHuge(huge);
  Insert(20, 3, 21);
  ASSERT_TRUE(WaitUntil(
      [&] { return Count("dead_lettered_at IS NOT NULL") == 1; }, 60000))
      << p->Output();
  auto dead = db_->Query(
      "SELECT id, attempts, last_error, sent_at IS NULL "
      "FROM public." +
      table_ + " WHERE dead_lettered_at IS NOT NULL");
  ASSERT_TRUE(dead.ok()) << dead.status();
  ASSERT_EQ(dead->size(), 1u);
  EXPECT_EQ((*dead)[0][0], huge);
  EXPECT_EQ((*dead)[0][1], "3");
  EXPECT_THAT((*dead)[0][2], HasSubstr("too large"));
  EXPECT_EQ((*dead)[0][3], "t");
  auto rows = Rows("id <> '" + huge + "'");
  ASSERT_TRUE(WaitAllSent()) << p->Output();
  auto got = ConsumeIds(topic_, rows);
  EXPECT_EQ(Audit(rows, got, /*check_order=*/true), 0);
  auto dl = ConsumeAll(env_->kafka_brokers(), {dlq}, 1, 30000);
  ASSERT_EQ(dl.size(), 1u) << p->Output();
  EXPECT_EQ(dl[0].Header("id"), huge);
  EXPECT_EQ(dl[0].Header("topic"), topic_);
  EXPECT_EQ(dl[0].Header("attempts"), "3");
  EXPECT_THAT(dl[0].Header("error"), HasSubstr("too large"));
  EXPECT_FALSE(dl[0].Header("truncated").empty());
  EXPECT_THAT(p->Output(), HasSubstr("dead-lettered outbox row"));
  EXPECT_THAT(p->Output(), HasSubstr("will retry"));

  // The operator signals, on the metrics endpoint.
  std::string metrics;
  ASSERT_TRUE(WaitUntil(
      [&] {
        metrics = ScrapeMetrics(*p);
        return metrics.find("outbox_poller_unsent_rows{table=\"public." +
                            table_ + "\"} 0") != std::string::npos;
      },
      30000))
      << metrics;
  EXPECT_THAT(metrics, HasSubstr("outbox_poller_dead_lettered_total 1"));
  EXPECT_THAT(metrics, HasSubstr("outbox_poller_failures_total 3"));
  EXPECT_THAT(metrics, HasSubstr("outbox_poller_events_delivered_total 40"));
  EXPECT_THAT(metrics, HasSubstr("outbox_poller_oldest_unsent_age_seconds"));
  // build_info: --version's version and revision, the libraries' versions
  // (this process loads the same libpq and librdkafka).
  {
    auto version = Process::Start({BinaryPath("outbox-poller"), "--version"},
                                  dir_ + "/version.log");
    ASSERT_EQ(version->Wait(10000), 0);
    std::smatch m;
    const std::string line = version->Output();
    ASSERT_TRUE(std::regex_search(
        line, m, std::regex("outbox-poller ([^ ]+) \\(git ([^)]+)\\)")))
        << line;
    const int lib = PQlibVersion();
    EXPECT_THAT(
        metrics,
        HasSubstr(absl::StrCat(
            "outbox_poller_build_info{libpq=\"", lib / 10000, ".", lib % 10000,
            "\",librdkafka=\"", rd_kafka_version_str(), "\",revision=\"",
            m[2].str(), "\",version=\"", m[1].str(), "\"} 1\n")))
        << metrics;
  }
  // Issue 36: librdkafka's statistics (statistics.interval.ms, 5 s by
  // default) as the broker's gauges.
  const std::string up = absl::StrCat("outbox_poller_kafka_broker_up{broker=\"",
                                      env_->kafka_brokers(), "/1\"} 1\n");
  ASSERT_TRUE(WaitUntil(
      [&] {
        metrics = ScrapeMetrics(*p);
        return metrics.find(up) != std::string::npos;
      },
      30000))
      << metrics;
  EXPECT_THAT(metrics, HasSubstr("outbox_poller_kafka_queue_messages "));
  p->Signal(SIGTERM);
  EXPECT_EQ(p->Wait(30000), 0) << p->Output();
}

TEST_F(PollerE2ETest, DeleteModeDeletesDeliveredRows) {
  Insert(300, 4);
  auto rows = Rows();
  Process* p = StartPoller({"--set", "poller.mode=delete"});
  auto got = ConsumeIds(topic_, rows);
  EXPECT_EQ(Audit(rows, got, /*check_order=*/true), 0);
  ASSERT_TRUE(WaitUntil([&] { return Count("true") == 0; }, 60000))
      << p->Output();
}

TEST_F(PollerE2ETest, JanitorRemovesOldSentRows) {
  Insert(300, 4);
  auto rows = Rows();
  // An old sent row and a recent one; the janitor keeps rows for 60 s.
  db_->Exec("UPDATE public." + table_ +
            " SET sent_at = now() - interval '1 hour' WHERE seq = (SELECT "
            "min(seq) FROM public." +
            table_ + ")");
  Process* p = StartPoller({"--set", "poller.retention_s=60"});
  ASSERT_TRUE(WaitAllSent()) << p->Output();
  ASSERT_TRUE(WaitUntil([&] { return Count("true") == 299; }, 60000))
      << p->Output();
  // Only the old one went; the fresh ones stay for the retention.
  EXPECT_EQ(Count("sent_at < now() - interval '1 minute'"), 0);
  p->Signal(SIGTERM);
  EXPECT_EQ(p->Wait(30000), 0) << p->Output();
  // With a 1 s retention everything goes, in bounded batches.
  p = StartPoller({"--set", "poller.retention_s=1"});
  ASSERT_TRUE(WaitUntil([&] { return Count("true") == 0; }, 60000))
      << p->Output();
}

TEST_F(PollerE2ETest, NotifyWakesTheIdlePoller) {
  std::string channel = UniqueName("chan");
  std::string sql =
      absl::StrReplaceAll(ReadFile(Root() + "/sql/poller_notify.sql"),
                          {{"ON public.outbox", "ON public." + table_},
                           {"'outbox_relay'", "'" + channel + "'"}});
  db_->Exec(sql);
  Insert(1, 1, 1);
  // A minute between polls: only the NOTIFY can bring the second row
  // within this test's waits.
  Process* p = StartPoller({"--set", "poller.interval_ms=60000", "--set",
                            "poller.notify=true", "--set",
                            "poller.notify_channel=" + channel});
  auto first = Rows();
  ConsumeIds(topic_, first);
  ASSERT_TRUE(WaitAllSent(30000)) << p->Output();
  Insert(1, 1, 2);
  auto rows = Rows();
  auto got = ConsumeIds(topic_, rows, 20000);
  EXPECT_EQ(Audit(rows, got, /*check_order=*/true), 0) << p->Output();
  p->Signal(SIGTERM);
  EXPECT_EQ(p->Wait(30000), 0) << p->Output();
}

// (d) SIGHUP: an invalid file is refused (the poller keeps polling, the
// metric counts it); a changed topic template drains the session between
// batches and the next one publishes to the new topic. Rows inserted just
// before the reload land once on one of the two topics, rows after it on
// the new one.
TEST_F(PollerE2ETest, SighupReloadsTheConfiguration) {
  const std::string config = dir_ + "/poller.yaml";
  const std::string topic2 = "outbox.reloaded." + aggtype_;
  auto write_config = [&](const std::string& topic, const std::string& more) {
    std::ofstream(config, std::ios::trunc)
        << "outbox:\n  topic: \"" << topic << "\"\n"
        << more;
  };
  write_config("outbox.event.{aggregatetype}", "");
  Process* poller = StartPoller({"--config", config});
  Insert(100, 5);
  ASSERT_TRUE(WaitAllSent()) << poller->Output();

  write_config("outbox.event.{aggregatetype}", "poller:\n  batch_size: -3\n");
  poller->Signal(SIGHUP);
  ASSERT_TRUE(WaitUntil(
      [&] {
        return poller->Output().find("configuration reload refused") !=
               std::string::npos;
      },
      60000))
      << poller->Output();
  const std::string refused = ScrapeMetrics(*poller);
  EXPECT_THAT(refused,
              HasSubstr("outbox_poller_config_reload_failures_total 1"));
  EXPECT_THAT(refused,
              HasSubstr("outbox_poller_config_last_reload_successful 0"));

  Insert(2000, 5, 101);
  write_config("outbox.reloaded.{aggregatetype}", "");
  poller->Signal(SIGHUP);
  ASSERT_TRUE(WaitUntil(
      [&] {
        return poller->Output().find("configuration reload: applied") !=
               std::string::npos;
      },
      60000))
      << poller->Output();
  EXPECT_THAT(ScrapeMetrics(*poller),
              HasSubstr("outbox_poller_config_last_reload_successful 1"));
  const auto before = Rows();
  Insert(100, 5, 2101);
  ASSERT_TRUE(WaitAllSent()) << poller->Output();
  ASSERT_TRUE(poller->Running());
  const auto rows = Rows();
  ASSERT_EQ(rows.size(), 2200u);
  std::set<std::string> seen;
  size_t scanned = 0;
  auto got = ConsumeUntil(
      env_->kafka_brokers(), {topic_, topic2},
      [&](const std::vector<KafkaMessage>& msgs) {
        for (; scanned < msgs.size(); ++scanned) {
          seen.insert(msgs[scanned].Header("id"));
        }
        return seen.size() >= rows.size();
      },
      60000);
  std::set<std::string> ids;
  int duplicates = 0, on_new = 0;
  for (const KafkaMessage& m : got) {
    const std::string id = m.Header("id");
    if (!ids.insert(id).second) ++duplicates;
    ASSERT_EQ(rows.count(id), 1u);
    if (m.topic == topic2) ++on_new;
    // Inserted after the reload was applied: only the new topic.
    if (before.count(id) == 0) {
      EXPECT_EQ(m.topic, topic2) << id;
    }
  }
  EXPECT_EQ(ids.size(), rows.size()) << "rows missing from Kafka";
  EXPECT_EQ(duplicates, 0);
  EXPECT_GE(on_new, 100);
  std::cerr << "poller reload: " << rows.size() << " rows, " << on_new << " on "
            << topic2 << ", " << duplicates << " duplicates\n";
  poller->Signal(SIGTERM);
  EXPECT_EQ(poller->Wait(30000), 0) << poller->Output();
}

// `outbox-poller validate --connect`: its store's start-up checks (tables,
// poller columns, privileges) and Kafka, one line each.
TEST_F(PollerE2ETest, ValidateConnectChecksTablesAndPrivileges) {
  auto validate = [&](const std::vector<std::string>& extra, std::string* out) {
    std::vector<std::string> args = PollerArgs();
    args.insert(args.begin() + 1, "validate");
    args.insert(args.end(), extra.begin(), extra.end());
    auto p = Process::Start(args, dir_ + "/validate.log");
    int code = p->Wait(60000);
    *out = p->Output();
    return code;
  };
  std::string out;
  EXPECT_EQ(validate({"--connect"}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("\nok config: valid: 1 outbox table(s), mode "
                             "mark\n"));
  EXPECT_THAT(out, HasSubstr("\nok postgres: connected, PostgreSQL "));
  EXPECT_THAT(out, HasSubstr("public." + table_ +
                             " have the mapped and poller columns, and the "
                             "role may SELECT, UPDATE, DELETE them\n"));
  EXPECT_THAT(out, HasSubstr("\nok kafka: 1 broker(s) answered"));
  // A role that may read the table but not update it: exit 3.
  const std::string role = UniqueName("reader");
  db_->Exec("CREATE ROLE " + role + " LOGIN");
  db_->Exec("GRANT SELECT ON public." + table_ + " TO " + role);
  EXPECT_EQ(
      validate({"--connect", "--pg", env_->pg_conninfo() + " user=" + role},
               &out),
      3)
      << out;
  EXPECT_THAT(out, HasSubstr("\nFAIL postgres: this role lacks UPDATE on "
                             "public." +
                             table_));
  // A configuration the poller cannot run: one line, exit 2.
  EXPECT_EQ(validate({"--set", "poller.mode=sometimes"}, &out), 2) << out;
  EXPECT_THAT(out, HasSubstr("outbox-poller: --set: \"poller.mode\""));
}

}  // namespace
}  // namespace outbox::testing
