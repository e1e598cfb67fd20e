// `outbox-relay republish` end to end (issue 13): the gap a lost slot left
// is closed by one command, with the records outbox-relay itself produces.
// The real binaries (outbox-relay, outbox-audit) against the fixture's
// PostgreSQL and Kafka.
#include <map>

#include "absl/strings/str_join.h"
#include "e2e/relay/relay_e2e_fixture.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class RepublishTest : public RelayE2ETest {
 protected:
  void SetUp() override {
    RelayE2ETest::SetUp();
    // Configured headers, so the comparison covers more than "id": a text
    // column and a timestamptz one (its text is the session's).
    extra_relay_args_ = {"--set", "outbox.headers.type=event_type", "--set",
                         "outbox.headers.created_at=created_at"};
  }

  // Runs `outbox-relay republish` with the relay's configuration and
  // `extra`; returns its exit code, its output in *output. `terminal`: run
  // it at a pseudo-terminal.
  int Republish(const std::vector<std::string>& extra, std::string* output,
                bool terminal = false) {
    std::vector<std::string> args = RelayArgs();
    args.insert(args.begin() + 1, "republish");
    args.insert(args.end(), extra.begin(), extra.end());
    if (terminal) args = AtATerminal(args);
    // A log of its own per run: the output is this run's only.
    auto p = Process::Start(args,
                            absl::StrCat(dir_, "/republish-", ++runs_, ".log"));
    int code = p->Wait(120000);
    *output = p->Output();
    return code;
  }

  // Stops the relay (SIGTERM: flush, confirm, exit 0); returns the slot's
  // confirmed position.
  std::string StopRelay() {
    relay_->Signal(SIGTERM);
    EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();
    return ConfirmedFlush();
  }

  std::vector<KafkaMessage> Topic(const std::string& topic, size_t want) {
    return ConsumeAll(env_->kafka_brokers(), {topic}, want, 5000);
  }

  std::string Now() { return db_->Scalar("SELECT clock_timestamp()::text"); }

  // Replaces the test's outbox table with one of the event columns and
  // `extra` (another outbox shape); the relay, Write() and the audit use it.
  void UseTable(const std::string& extra) {
    table_ = UniqueName("outbox_shape");
    db_->Exec("CREATE TABLE public." + table_ +
              " (id uuid PRIMARY KEY, aggregatetype text NOT NULL, "
              "aggregateid text NOT NULL, type text NOT NULL, payload jsonb" +
              extra + ")");
  }

  // The ids of `events` from `from` to `to` (exclusive), comma-separated.
  static std::string Ids(const std::vector<Event>& events, size_t from,
                         size_t to) {
    std::vector<std::string> ids;
    for (size_t i = from; i < to; ++i) ids.push_back(events[i].id);
    return absl::StrJoin(ids, ",");
  }

  // Waits for the statistics to show the table's deletes (they reach
  // pg_stat_user_tables a moment after the commit).
  bool WaitForDeletes(int n) {
    return WaitUntil(
        [&] {
          return db_->Scalar(absl::StrCat(
                     "SELECT coalesce(sum(n_tup_del), 0) >= ", n,
                     " FROM pg_stat_user_tables WHERE relid = 'public.", table_,
                     "'::regclass")) == "t";
        },
        60000);
  }

  std::vector<std::string> rolled_back_;
  int runs_ = 0;
};

// The runbook of docs/operations/postgresql-failover.md for a lost slot:
// the relay refuses, is started once acknowledging the loss (a new slot at
// the current position), and `republish --since` closes the gap.
TEST_F(RepublishTest, ClosesTheGapALostSlotLeftAndOnlyThat) {
  // Published before the range: not even considered.
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::vector<Event> before, published, lost, after;
  Write(1, 3, 2, 0, &before, &rolled_back_);
  const std::string since = Now();
  Write(2, 4, 2, 0, &published, &rolled_back_);
  std::vector<Event> delivered = before;
  delivered.insert(delivered.end(), published.begin(), published.end());
  Audit(delivered, rolled_back_, delivered.size());
  const std::string confirmed = StopRelay();

  // The slot is lost (as on a promoted PostgreSQL 16 standby) while the
  // application commits events.
  db_->Exec("SELECT pg_drop_replication_slot('" + slot_ + "')");
  Write(3, 5, 3, 0, &lost, &rolled_back_);
  ASSERT_GT(lost.size(), 0u);

  // Step 1: the relay refuses, naming the LSN and the new command.
  StartRelay();
  EXPECT_EQ(relay_->Wait(30000), 3) << relay_->Output();
  EXPECT_THAT(relay_->Output(), HasSubstr("outbox-relay republish --since"));
  // Step 2: started once acknowledging the loss, it streams what follows.
  StartRelay({"--set", "postgres.acknowledge_slot_loss=" + confirmed});
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  Write(4, 3, 2, 0, &after, &rolled_back_);
  Audit(after, rolled_back_, after.size());
  const size_t in_topic = Topic(topic_, 100000).size();
  ASSERT_EQ(in_topic, before.size() + published.size() + after.size());

  // Without a range the command refuses, saying why.
  std::string out;
  EXPECT_EQ(Republish({}, &out), 2) << out;
  EXPECT_THAT(out, HasSubstr("would flood consumers with old events"));

  // --dry-run counts and names, and produces nothing.
  const size_t considered = published.size() + lost.size() + after.size();
  ASSERT_EQ(Republish({"--since", since, "--dry-run"}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr(absl::StrCat("events considered   ", considered)));
  EXPECT_THAT(out, HasSubstr(absl::StrCat("already in Kafka    ",
                                          published.size() + after.size())));
  EXPECT_THAT(out, HasSubstr(absl::StrCat("would re-publish    ", lost.size(),
                                          ": ", lost[0].id)));
  // --until bounds the range: nothing published before the loss is missing.
  ASSERT_EQ(Republish({"--since", since, "--until",
                       db_->Scalar("SELECT min(created_at)::text FROM public." +
                                   table_ + " WHERE id = '" + lost[0].id + "'"),
                       "--dry-run"},
                      &out),
            0)
      << out;
  EXPECT_THAT(
      out, HasSubstr(absl::StrCat("events considered   ", published.size())));
  EXPECT_THAT(out, HasSubstr("would re-publish    0"));
  EXPECT_EQ(Topic(topic_, 100000).size(), in_topic);

  // Step 3: re-publish.
  ASSERT_EQ(Republish({"--since", since}, &out), 0) << out;
  EXPECT_THAT(out,
              HasSubstr(absl::StrCat("re-published        ", lost.size())));
  EXPECT_THAT(out, HasSubstr("failed              0"));
  std::vector<Event> all = delivered;
  all.insert(all.end(), lost.begin(), lost.end());
  all.insert(all.end(), after.begin(), after.end());
  // Every event once: nothing missing, no duplicates.
  EXPECT_EQ(Audit(all, rolled_back_, all.size()), 0);
  std::string audit_out;
  EXPECT_EQ(RunOutboxAudit({"--max-duplicates", "0"}, &audit_out), 0)
      << audit_out;
  EXPECT_THAT(audit_out, HasSubstr("missing            0"));

  // A second run finds nothing to do.
  ASSERT_EQ(Republish({"--since", since}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("re-published        0"));
  EXPECT_EQ(Topic(topic_, 100000).size(), all.size());
}

// The same rows through outbox-relay and through republish (into a topic of
// its own, where none of them is yet): key, value and headers byte for byte.
TEST_F(RepublishTest, RecordsAreTheRelaysByteForByte) {
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::vector<Event> events;
  Write(1, 6, 3, 0, &events, &rolled_back_);
  // A NULL payload and a NULL header column are part of the contract.
  const std::string null_id = "00000000-0000-4000-8000-00000000b001";
  db_->Exec("INSERT INTO public." + table_ +
            " (id, aggregatetype, aggregateid, type, payload) VALUES ('" +
            null_id + "', '" + aggtype_ + "', 'k-null', 'Nothing', NULL)");
  events.push_back({null_id, "k-null", "", 0, 0});
  Audit(events, rolled_back_, events.size());
  StopRelay();

  std::string out;
  ASSERT_EQ(Republish({"--all", "--topic", "again.{aggregatetype}"}, &out), 0)
      << out;
  EXPECT_THAT(out,
              HasSubstr(absl::StrCat("re-published        ", events.size())));
  auto relayed = Topic(topic_, events.size());
  auto republished = Topic("again." + aggtype_, events.size());
  ASSERT_EQ(relayed.size(), events.size());
  ASSERT_EQ(republished.size(), events.size());
  std::map<std::string, const KafkaMessage*> by_id;
  for (const auto& m : relayed) by_id[m.Header("id")] = &m;
  for (const auto& m : republished) {
    auto it = by_id.find(m.Header("id"));
    ASSERT_NE(it, by_id.end()) << m.Header("id");
    const KafkaMessage& r = *it->second;
    EXPECT_EQ(m.key, r.key);
    EXPECT_EQ(m.key_null, r.key_null);
    EXPECT_EQ(m.value, r.value);
    EXPECT_EQ(m.value_null, r.value_null);
    EXPECT_EQ(m.headers, r.headers);
    EXPECT_EQ(m.partition, r.partition);
  }
  EXPECT_TRUE(by_id.at(null_id)->value_null);
  EXPECT_EQ(by_id.at(null_id)->Header("event_type"), "Nothing");
  // Re-published in creation order: per key, the writer's sequence.
  std::map<std::string, int> last;
  for (const auto& m : republished) {
    for (const Event& e : events) {
      if (e.id != m.Header("id") || e.seq == 0) continue;
      EXPECT_LT(last[e.key], e.seq) << e.key;
      last[e.key] = e.seq;
    }
  }
}

// outbox.topic_regex routes (issue 23, item 11): audit and republish read
// the topics that routing gives, not the template's. One aggregate type the
// regex matches (routed.<type>.events), one it does not (the value itself is
// the topic, as Debezium's RegexRouter leaves it).
TEST_F(RepublishTest, AuditAndRepublishReadTheTopicsARegexRoutesTo) {
  const std::vector<std::string> regex_route = {
      "--set", "outbox.topic_regex=(?<kind>" + aggtype_ + ")", "--set",
      "outbox.topic_replacement=routed.${kind}.events"};
  extra_relay_args_.insert(extra_relay_args_.end(), regex_route.begin(),
                           regex_route.end());
  topic_ = "routed." + aggtype_ + ".events";  // what Audit() reads
  const std::string unmatched = aggtype_ + "x";
  auto insert_unmatched = [&](const std::string& id) {
    db_->Exec("INSERT INTO public." + table_ +
              " (id, aggregatetype, aggregateid, type, payload) VALUES ('" +
              id + "', '" + unmatched + "', 'k-u', 'Unmatched', '{}')");
  };
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::vector<Event> events;
  Write(1, 5, 3, 0, &events, &rolled_back_);
  const std::string unmatched_id =
      db_->Scalar("SELECT gen_random_uuid()::text");
  insert_unmatched(unmatched_id);
  Audit(events, rolled_back_, events.size());
  ASSERT_EQ(Topic(unmatched, 1).size(), 1u);

  // The audit, as an operator runs it: the relay's configuration (the
  // default template, which the regex overrides).
  std::vector<std::string> audit_args = regex_route;
  audit_args.insert(
      audit_args.end(),
      {"--topic", "outbox.event.{aggregatetype}", "--max-duplicates", "0"});
  std::string out;
  EXPECT_EQ(RunOutboxAudit(audit_args, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("missing            0"));

  // Nothing is missing: republish finds every event in its routed topic.
  const size_t all = events.size() + 1;
  ASSERT_EQ(Republish({"--all", "--dry-run"}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr(absl::StrCat("events considered   ", all)));
  EXPECT_THAT(out, HasSubstr(absl::StrCat("already in Kafka    ", all)));

  // Two events the slot never saw, one per kind of route: republish sends
  // exactly those, each to its routed topic.
  StopRelay();
  db_->Exec("SELECT pg_drop_replication_slot('" + slot_ + "')");
  std::vector<Event> lost;
  Write(2, 1, 1, 0, &lost, &rolled_back_);
  const std::string lost_unmatched =
      db_->Scalar("SELECT gen_random_uuid()::text");
  insert_unmatched(lost_unmatched);
  ASSERT_EQ(Republish({"--all"}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("re-published        2"));
  EXPECT_THAT(out, HasSubstr("failed              0"));
  EXPECT_EQ(Topic(topic_, 100000).size(), events.size() + 1);
  EXPECT_EQ(Topic(unmatched, 100000).size(), 2u);
  EXPECT_EQ(RunOutboxAudit(audit_args, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("missing            0"));
  EXPECT_THAT(out, HasSubstr("duplicates         0"));
}

// An event Kafka refuses (over message.max.bytes) is not delivered: exit 1
// with one line naming it, not a success.
TEST_F(RepublishTest, AnUndeliveredEventIsAFailure) {
  // An id of its own: Kafka's dead-letter topic is shared by the suite, and
  // an id found there counts as delivered.
  const std::string huge = db_->Scalar("SELECT gen_random_uuid()::text");
  InsertHugeEvent(huge);
  std::string out;
  EXPECT_EQ(Republish({"--all"}, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("events considered   1"));
  EXPECT_THAT(out, HasSubstr("re-published        0"));
  EXPECT_THAT(out, HasSubstr("failed              1"));
  EXPECT_THAT(out, HasSubstr("outbox-relay republish: 1 of 1 missing events "
                             "were not delivered (first: " +
                             huge + ": "));
}

// Long work shows its progress and an estimate to a person at a terminal,
// and nothing at all in a log (issue 16).
TEST_F(RepublishTest, ShowsProgressAtATerminalAndNothingInALog) {
  // Committed, never published: no relay runs.
  std::vector<Event> events;
  Write(1, 300, 5, 0, &events, &rolled_back_);
  const std::string n = absl::StrCat(events.size());
  ASSERT_GT(events.size(), 300u);

  std::string log;
  ASSERT_EQ(Republish({"--all", "--dry-run"}, &log), 0) << log;
  EXPECT_THAT(log, HasSubstr("would re-publish    " + n));
  EXPECT_EQ(log.find('\r'), std::string::npos) << log;

  std::string terminal;
  ASSERT_EQ(Republish({"--all"}, &terminal, /*terminal=*/true), 0) << terminal;
  // Redrawn in place (a carriage return before each drawing), ending at the
  // count and a newline.
  EXPECT_THAT(terminal, HasSubstr("\rre-publishing: "));
  EXPECT_THAT(terminal,
              HasSubstr("re-publishing: " + n + "/" + n + " events (100%)"));
  EXPECT_THAT(terminal, HasSubstr("re-published        " + n));

  std::string audit;
  ASSERT_EQ(RunOutboxAudit({}, &audit, /*terminal=*/true), 0) << audit;
  EXPECT_THAT(audit, HasSubstr("\rreading Kafka: "));
  EXPECT_THAT(audit,
              HasSubstr("reading Kafka: " + n + "/" + n + " records (100%)"));
  ASSERT_EQ(RunOutboxAudit({}, &audit), 0) << audit;
  EXPECT_THAT(audit, HasSubstr("PASS"));
  EXPECT_EQ(audit.find('\r'), std::string::npos) << audit;
  EXPECT_THAT(audit, Not(HasSubstr("reading Kafka")));
}

// Issue 35, item 6: a time column of another name (outbox.columns.time).
// `--since` on it re-publishes exactly the events the slot lost, and
// outbox-audit takes the same range; the default column is named when the
// table lacks it.
TEST_F(RepublishTest, TheConfiguredTimeColumnSelectsTheRange) {
  extra_relay_args_ = {};  // no created_at header: the table has none
  UseTable(", occurred_at timestamptz NOT NULL DEFAULT clock_timestamp()");
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::vector<Event> before, published, lost;
  Write(1, 3, 2, 0, &before, &rolled_back_);
  const std::string since = Now();
  Write(2, 3, 2, 0, &published, &rolled_back_);
  std::vector<Event> delivered = before;
  delivered.insert(delivered.end(), published.begin(), published.end());
  Audit(delivered, rolled_back_, delivered.size());
  StopRelay();
  db_->Exec("SELECT pg_drop_replication_slot('" + slot_ + "')");
  Write(3, 4, 2, 0, &lost, &rolled_back_);

  // The default column is not there: one line naming table and column.
  std::string out;
  EXPECT_EQ(Republish({"--since", since}, &out), 3) << out;
  EXPECT_THAT(
      out, HasSubstr("outbox-relay republish: outbox table public." + table_ +
                     " has no column \"created_at\" "
                     "(outbox.columns.time) to select "
                     "--since/--until on"));
  const std::vector<std::string> time = {"--set",
                                         "outbox.columns.time=occurred_at"};
  std::vector<std::string> audit_args = time;
  audit_args.insert(audit_args.end(), {"--since", since});
  EXPECT_EQ(RunOutboxAudit(audit_args, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("rows               occurred_at >= "));
  EXPECT_THAT(out, HasSubstr(absl::StrCat("missing            ", lost.size())));
  EXPECT_THAT(out, HasSubstr("FAIL"));

  std::vector<std::string> args = time;
  args.insert(args.end(), {"--since", since});
  ASSERT_EQ(Republish(args, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("range               occurred_at >= "));
  EXPECT_THAT(out, HasSubstr(absl::StrCat("events considered   ",
                                          published.size() + lost.size())));
  EXPECT_THAT(out,
              HasSubstr(absl::StrCat("re-published        ", lost.size())));
  std::vector<Event> all = delivered;
  all.insert(all.end(), lost.begin(), lost.end());
  EXPECT_EQ(Audit(all, rolled_back_, all.size()), 0);
  EXPECT_EQ(Topic(topic_, 100000).size(), all.size());
  EXPECT_EQ(RunOutboxAudit(audit_args, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("missing            0"));
  EXPECT_THAT(out, HasSubstr("PASS"));
}

// timestamp (read as UTC) and an integer of Unix milliseconds compare as
// times; a column of another type is refused naming it.
TEST_F(RepublishTest, TimeColumnsOfEachType) {
  extra_relay_args_ = {};
  for (const auto& [type, old_value] :
       std::vector<std::pair<std::string, std::string>>{
           {"timestamp", "'2020-01-01 00:00:00'"},
           {"bigint", "1577836800000"}}) {
    UseTable(", at " + type);
    for (int i = 0; i < 5; ++i) {
      db_->Exec(absl::StrCat(
          "INSERT INTO public.", table_,
          " (id, aggregatetype, aggregateid, type, payload, at) VALUES "
          "(gen_random_uuid(), '",
          aggtype_, "', 'k', 'T', '{}', ",
          i < 2
              ? old_value
              : (type == "bigint" ? "(extract(epoch FROM now()) * 1000)::bigint"
                                  : "now() AT TIME ZONE 'UTC'"),
          ")"));
    }
    std::string out;
    // 2020-01-01 00:00:00 UTC is in the range, a millisecond later is not.
    ASSERT_EQ(Republish({"--set", "outbox.columns.time=at", "--since",
                         "2020-01-01 00:00:00.001+00", "--dry-run"},
                        &out),
              0)
        << type << out;
    EXPECT_THAT(out, HasSubstr("events considered   3")) << type;
    ASSERT_EQ(Republish({"--set", "outbox.columns.time=at", "--since",
                         "2019-12-31 19:00:00-05", "--dry-run"},
                        &out),
              0)
        << type << out;
    EXPECT_THAT(out, HasSubstr("events considered   5")) << type;
  }
  std::string out;
  EXPECT_EQ(Republish({"--set", "outbox.columns.time=type", "--since",
                       "2020-01-01", "--dry-run"},
                      &out),
            3)
      << out;
  EXPECT_THAT(out, HasSubstr("column \"type\" (outbox.columns.time) of outbox "
                             "table public." +
                             table_ +
                             " is text, not timestamptz, timestamp or an "
                             "integer (Unix milliseconds)"));
}

// An outbox without any time column: events by id (--ids, --ids-file) and
// by a range of its sequence column (outbox.columns.seq); outbox-audit the
// same.
TEST_F(RepublishTest, WithoutATimeColumnByIdsAndBySequence) {
  extra_relay_args_ = {};
  UseTable(", position bigint GENERATED ALWAYS AS IDENTITY");
  // Committed, never published: no relay runs.
  std::vector<Event> events;
  Write(1, 6, 1, 0, &events, &rolled_back_);
  ASSERT_EQ(events.size(), 6u);
  std::string out;
  EXPECT_EQ(Republish({"--since", "2020-01-01"}, &out), 3) << out;
  EXPECT_THAT(out, HasSubstr("has no column \"created_at\""));

  ASSERT_EQ(Republish({"--ids", Ids(events, 0, 2)}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("range               2 ids (id)"));
  EXPECT_THAT(out, HasSubstr("re-published        2"));
  EXPECT_EQ(RunOutboxAudit({"--ids", Ids(events, 0, 2)}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("rows               2 ids (id)"));
  EXPECT_THAT(out, HasSubstr("missing            0"));
  EXPECT_THAT(out, HasSubstr("PASS"));

  // A file of ids, one a line; an id no table holds is said, exit 3.
  const std::string file = dir_ + "/ids.txt";
  const std::string absent = "00000000-0000-4000-8000-0000000000aa";
  {
    std::ofstream f(file);
    f << "# lost in the incident\n" << events[2].id << "\n" << absent << "\n";
  }
  EXPECT_EQ(Republish({"--ids-file", file}, &out), 3) << out;
  EXPECT_THAT(out, HasSubstr("re-published        1"));
  EXPECT_THAT(out, HasSubstr("outbox-relay republish: 1 of the 2 named ids "
                             "are in no outbox table (first: " +
                             absent + ")"));

  // The sequence column names positions 4 and 5 (1-based: the writer's
  // order).
  const std::vector<std::string> seq = {"--set", "outbox.columns.seq=position"};
  std::vector<std::string> audit_args = seq;
  audit_args.insert(audit_args.end(), {"--seq-from", "1"});
  EXPECT_EQ(RunOutboxAudit(audit_args, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("rows               position >= 1"));
  EXPECT_THAT(out, HasSubstr("missing            3"));
  std::vector<std::string> args = seq;
  args.insert(args.end(), {"--seq-from", "4", "--seq-to", "5"});
  ASSERT_EQ(Republish(args, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("range               position >= 4 and <= 5"));
  EXPECT_THAT(out, HasSubstr("events considered   2"));
  EXPECT_THAT(out, HasSubstr("re-published        2"));
  auto got = Topic(topic_, 5);
  std::set<std::string> ids;
  for (const auto& m : got) ids.insert(m.Header("id"));
  EXPECT_EQ(ids,
            std::set<std::string>({events[0].id, events[1].id, events[2].id,
                                   events[3].id, events[4].id}));
  EXPECT_EQ(RunOutboxAudit(audit_args, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("missing            1"));
  EXPECT_THAT(out, HasSubstr("missing " + events[5].id));
  // Without the key the default column "seq" is not there.
  EXPECT_EQ(RunOutboxAudit({"--seq-from", "1"}, &out), 3) << out;
  EXPECT_THAT(out, HasSubstr("outbox-audit: outbox table public." + table_ +
                             " has no column \"seq\" (outbox.columns.seq)"));
}

// The insert-then-delete outbox (sql/examples.sql): the rows are gone, so
// neither tool can read the events back, and both say so with exit 3
// instead of counting nothing; with a retention window, a range the table
// still holds works and one reaching before it is refused the same way.
TEST_F(RepublishTest, AnInsertThenDeleteOutboxIsSaidNotCounted) {
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  const std::string since = Now();
  std::vector<Event> events;
  for (int i = 0; i < 3; ++i) {
    Event e{db_->Scalar("SELECT gen_random_uuid()::text"), "k-del", "{}", 0,
            i + 1};
    db_->Exec("BEGIN; INSERT INTO public." + table_ +
              " (id, aggregatetype, aggregateid, type, payload) VALUES ('" +
              e.id + "', '" + aggtype_ +
              "', 'k-del', 'Deleted', '{}'); DELETE FROM public." + table_ +
              " WHERE id = '" + e.id + "'; COMMIT;");
    events.push_back(e);
  }
  EXPECT_EQ(Audit(events, rolled_back_, events.size()), 0);
  ASSERT_TRUE(WaitForDeletes(3));
  const std::string expected =
      "outbox table public." + table_ +
      " deletes its rows (3 deleted, pg_stat_user_tables.n_tup_del) and it "
      "holds no row: nothing can read deleted rows back (logical decoding "
      "cannot re-read a transaction before the slot's confirmed position); "
      "the events committed after slot \"" +
      slot_ + "\"'s confirmed position ";
  std::string out;
  EXPECT_EQ(Republish({"--since", since}, &out), 3) << out;
  EXPECT_THAT(out, HasSubstr("events considered   0"));
  EXPECT_THAT(out, HasSubstr("outbox-relay republish: " + expected));
  EXPECT_THAT(out, HasSubstr("Keep a retention window before deleting: "
                             "docs/operations/republish.md#insert-then-"
                             "delete-outboxes"));
  EXPECT_EQ(Republish({"--ids", events[0].id, "--dry-run"}, &out), 3) << out;
  EXPECT_THAT(out, HasSubstr("outbox-relay republish: " + expected));
  EXPECT_THAT(out, HasSubstr("1 of the 1 named ids are in no outbox table"));
  // outbox-audit: no PASS, no unknown records, exit 3.
  // (The audit reads the relay's configuration: its slot.)
  EXPECT_EQ(RunOutboxAudit({"--set", "postgres.slot=" + slot_}, &out), 3)
      << out;
  EXPECT_THAT(out, HasSubstr("outbox-audit: " + expected));
  EXPECT_THAT(out, HasSubstr("INCOMPLETE"));
  EXPECT_THAT(out, Not(HasSubstr("PASS")));
  EXPECT_EQ(Topic(topic_, 100000).size(), events.size());

  // A retention window: rows kept (the relay publishes them), older ones
  // deleted by a janitor.
  std::vector<Event> kept;
  Write(1, 3, 1, 0, &kept, &rolled_back_);
  Audit(kept, rolled_back_, kept.size());
  const std::string kept_from =
      db_->Scalar("SELECT min(created_at)::text FROM public." + table_);
  EXPECT_EQ(Republish({"--since", since, "--dry-run"}, &out), 3) << out;
  EXPECT_THAT(out, HasSubstr("events considered   3"));
  EXPECT_THAT(out, HasSubstr("and it holds no row at or before " + since +
                             ", where the selection starts (its oldest has "
                             "created_at " +
                             kept_from + ")"));
  ASSERT_EQ(Republish({"--since", kept_from, "--dry-run"}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("events considered   3"));
  EXPECT_THAT(out, HasSubstr("would re-publish    0"));
  EXPECT_EQ(RunOutboxAudit({"--since", kept_from}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("PASS"));
}

}  // namespace
}  // namespace outbox::testing
