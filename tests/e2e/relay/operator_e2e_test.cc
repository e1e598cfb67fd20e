// `outbox-relay skip` and `advance` end to end (docs/operations/
// skip-and-advance.md): the real binaries against the test fixture's
// PostgreSQL and Kafka.
#include <csignal>
#include <regex>
#include <set>
#include <thread>

#include "audit/audit.h"
#include "core/operator_actions.h"
#include "e2e/relay/relay_e2e_fixture.h"
#include "e2e/relay_http.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

// `outbox-relay skip` and `advance` (docs/operations/skip-and-advance.md):
// refused while a relay publishes, recorded once it is stopped; the next
// session drops exactly the named events, and outbox-audit reports them
// skipped by operator, not missing.
class OperatorE2ETest : public RelayE2ETest {
 protected:
  // Runs `outbox-relay COMMAND...` with the test's configuration; returns
  // its exit code, *output what it printed.
  int RunRelayCommand(const std::vector<std::string>& command,
                      std::string* output) {
    std::vector<std::string> args = RelayArgs();
    args.insert(args.begin() + 1, command.begin(), command.end());
    auto p = Process::Start(
        args, absl::StrCat(dir_, "/command-", ++commands_, ".log"));
    int code = p->Wait(120000);
    *output = p->Output();
    return code;
  }

  bool WaitApplied() {
    return WaitUntil(
        [&] {
          return relay_->Output().find("operator action applied") !=
                 std::string::npos;
        },
        60000);
  }

  int commands_ = 0;
};

TEST_F(OperatorE2ETest, PoisonRowSkippedByOperatorOnTheRecord) {
  const std::string poison = "00000000-0000-4000-8000-0000000000cc";
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::vector<Event> committed;
  std::vector<std::string> rolled_back;
  Write(1, 3, 2, 0, &committed, &rolled_back);
  std::string out;
  // A relay publishes from the slot: refused, nothing recorded.
  EXPECT_EQ(RunRelayCommand({"skip", "--event", poison}, &out), 3) << out;
  EXPECT_THAT(out, HasSubstr("outbox-relay skip: refused: a relay is "
                             "publishing from slot \"" +
                             slot_ + "\""));
  InsertHugeEvent(poison);
  Write(2, 3, 2, 0, &committed, &rolled_back);  // held behind the poison
  EXPECT_EQ(relay_->Wait(60000), 4) << relay_->Output();
  // Stopped: recorded.
  EXPECT_EQ(RunRelayCommand({"skip", "--event", poison, "--reason",
                             "2 MB payload", "--by", "alice@ops"},
                            &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("recorded  skip event " + poison));
  EXPECT_THAT(out, HasSubstr("by        alice@ops"));
  StartRelay();
  Audit(committed, rolled_back, committed.size());
  EXPECT_TRUE(WaitApplied()) << relay_->Output();
  EXPECT_THAT(relay_->Output(),
              HasSubstr("event skipped by operator event_id=" + poison));
  EXPECT_TRUE(relay_->Running()) << relay_->Output();
  ExpectConfirmedReachesCurrentWal(60000);
  std::string report;
  EXPECT_EQ(RunOutboxAudit({"--set", "postgres.slot=" + slot_}, &report), 0)
      << report;
  EXPECT_THAT(report, HasSubstr("missing            0"));
  EXPECT_THAT(report, HasSubstr("skipped by operator 1\n"));
  EXPECT_THAT(report, HasSubstr("skipped by operator " + poison +
                                " (by alice@ops, at "));
  EXPECT_THAT(report, HasSubstr("reason: 2 MB payload; skip event " + poison));
}

// The same skip under exactly once, with pgoutput: the halt aborted the
// Kafka transaction around the poison event; the next session replays from
// the checkpoint, drops exactly that event inside its Kafka transaction and
// commits the rest. A read_committed reader sees every other event once.
TEST_F(OperatorE2ETest, ExactlyOnceWithPgoutputDropsOnlyTheSkippedEvent) {
  extra_relay_args_ = {"--set", "postgres.plugin=pgoutput",
                       "--set", "postgres.publication=" + slot_ + "_pub",
                       "--set", "kafka.exactly_once=true",
                       "--set", "kafka.checkpoint_topic=" + UniqueName("cp")};
  const std::string poison = "00000000-0000-4000-8000-0000000000ee";
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::vector<Event> committed;
  std::vector<std::string> rolled_back;
  Write(1, 3, 2, 0, &committed, &rolled_back);
  InsertHugeEvent(poison);
  Write(2, 3, 2, 0, &committed, &rolled_back);  // held behind the poison
  EXPECT_EQ(relay_->Wait(60000), 4) << relay_->Output();
  std::string out;
  EXPECT_EQ(
      RunRelayCommand({"skip", "--event", poison, "--by", "dave@ops"}, &out), 0)
      << out;
  StartRelay();
  EXPECT_TRUE(WaitApplied()) << relay_->Output();
  EXPECT_THAT(relay_->Output(),
              HasSubstr("event skipped by operator event_id=" + poison));
  ExpectConfirmedReachesCurrentWal(60000);
  EXPECT_TRUE(relay_->Running()) << relay_->Output();
  std::string report;
  EXPECT_EQ(
      RunOutboxAudit({"--set", "postgres.slot=" + slot_, "--read-committed"},
                     &report),
      0)
      << report;
  EXPECT_THAT(report, HasSubstr("missing            0"));
  EXPECT_THAT(report, HasSubstr("duplicates         0"));
  EXPECT_THAT(report, HasSubstr("skipped by operator " + poison +
                                " (by dave@ops, at "));
  std::cerr << report;
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(60000), 0) << relay_->Output();
  db_->Query("DROP PUBLICATION IF EXISTS " + slot_ + "_pub")
      .status()
      .IgnoreError();
}

// Paused, the relay holds the slot: a skip is accepted and recorded, and
// the relay applies it when it resumes (it re-reads the operator's records
// before reading further), in the same process: the poison event written
// while paused is dropped, every other event arrives.
TEST_F(OperatorE2ETest, ASkipRecordedWhilePausedAppliesAtResume) {
  const std::string poison = "00000000-0000-4000-8000-0000000000dd";
  const std::string token = "pause-token-for-skip";
  std::ofstream(dir_ + "/token") << token << "\n";
  StartRelay({"--set", "http.control.enabled=true", "--set",
              "http.control.token_file=" + dir_ + "/token"});
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  const int port = WaitRelayHttpPort(*relay_);
  ASSERT_GT(port, 0) << relay_->Output();
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(60, 0);
  const httplib::Headers auth = {{"Authorization", "Bearer " + token},
                                 {"X-Outbox-By", "carol"}};
  std::vector<Event> committed;
  std::vector<std::string> rolled_back;
  Write(1, 3, 2, 0, &committed, &rolled_back);
  Audit(committed, rolled_back, committed.size());
  auto res = client.Post("/pause", auth, httplib::Params{});
  ASSERT_TRUE(res) << relay_->Output();
  ASSERT_EQ(res->status, 200) << res->body;
  // The poison event and more, written while paused: not read yet.
  InsertHugeEvent(poison);
  Write(2, 3, 2, 0, &committed, &rolled_back);
  std::string out;
  EXPECT_EQ(RunRelayCommand({"skip", "--event", poison, "--reason", "too large",
                             "--by", "carol@ops"},
                            &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("relay     paused: applied when it resumes"));
  res = client.Post("/resume", auth, httplib::Params{});
  ASSERT_TRUE(res) << relay_->Output();
  ASSERT_EQ(res->status, 200) << res->body;
  Audit(committed, rolled_back, committed.size());
  EXPECT_TRUE(WaitApplied()) << relay_->Output();
  EXPECT_THAT(relay_->Output(),
              HasSubstr("event skipped by operator event_id=" + poison));
  EXPECT_TRUE(relay_->Running()) << relay_->Output();
  EXPECT_THAT(relay_->Output(), Not(HasSubstr("session ended")));
  std::string report;
  EXPECT_EQ(RunOutboxAudit({"--set", "postgres.slot=" + slot_}, &report), 0)
      << report;
  EXPECT_THAT(report, HasSubstr("missing            0"));
  EXPECT_THAT(report, HasSubstr("skipped by operator " + poison +
                                " (by carol@ops, at "));
}

TEST_F(OperatorE2ETest, AdvanceSkipsExactlyTheEventsCommittedBeforeTheTarget) {
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  std::vector<Event> before, skipped, after;
  std::vector<std::string> rolled_back;
  Write(1, 2, 2, 0, &before, &rolled_back);
  Audit(before, rolled_back, before.size());
  std::string out;
  EXPECT_EQ(RunRelayCommand({"advance", "--to", "FFFF/0"}, &out), 3) << out;
  EXPECT_THAT(out, HasSubstr("outbox-relay advance: refused: a relay is "
                             "publishing"));
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(60000), 0) << relay_->Output();
  // One burst, the target in its middle: more events before it than one
  // record names (kMaxAppliedIds), so the relay writes pages of their ids.
  Write(2, 400, 6, 0, &skipped, &rolled_back);
  ASSERT_GT(skipped.size(), kMaxAppliedIds);
  const std::string target = db_->Scalar("SELECT pg_current_wal_lsn()");
  Write(3, 6, 3, 0, &after, &rolled_back);
  EXPECT_EQ(
      RunRelayCommand(
          {"advance", "--to", target, "--reason", "replayed by hand"}, &out),
      0)
      << out;
  EXPECT_THAT(out, HasSubstr(".." + target));
  EXPECT_THAT(out, HasSubstr("@"));  // --by: $USER@hostname
  // A skip whose event never comes stays pending, on the status page.
  const std::string never = "00000000-0000-4000-8000-0000000000ff";
  EXPECT_EQ(RunRelayCommand({"skip", "--event", never}, &out), 0) << out;
  StartRelay();
  std::vector<Event> published = before;
  published.insert(published.end(), after.begin(), after.end());
  Audit(published, rolled_back, published.size());
  EXPECT_TRUE(WaitApplied()) << relay_->Output();
  EXPECT_THAT(relay_->Output(),
              HasSubstr(absl::StrCat("events=", skipped.size())));
  std::string report;
  EXPECT_EQ(
      RunOutboxAudit({"--json", "--set", "postgres.slot=" + slot_}, &report), 0)
      << report;
  EXPECT_EQ(AuditReportCount(report, "missing"), 0) << report;
  EXPECT_EQ(AuditReportCount(report, "skipped_by_operator"),
            static_cast<int>(skipped.size()))
      << report;
  EXPECT_EQ(AuditReportCount(report, "delivered"),
            static_cast<int>(published.size()))
      << report;
  // The report lists the first kMaxSkippedListed, each one of them.
  std::set<std::string> ids;
  for (const Event& e : skipped) ids.insert(e.id);
  const std::regex listed("\\{\"id\":\"([^\"]+)\",\"action\":\"advance ");
  size_t named = 0;
  for (std::sregex_iterator m(report.begin(), report.end(), listed), end;
       m != end; ++m, ++named) {
    EXPECT_TRUE(ids.count((*m)[1].str())) << (*m)[1].str();
  }
  EXPECT_EQ(named, kMaxSkippedListed) << report;
  EXPECT_THAT(report, HasSubstr("\"reason\":\"replayed by hand\""));
  // This run's port: the log holds the first run's too.
  const std::string log = relay_->Output();
  const std::string listen = "http_listen=127.0.0.1:";
  const size_t at = log.rfind(listen);
  ASSERT_NE(at, std::string::npos) << log;
  httplib::Client client("127.0.0.1",
                         std::stoi(log.substr(at + listen.size())));
  auto res = client.Get("/status.json");
  ASSERT_TRUE(res) << log;
  const std::string status = res->body;
  EXPECT_THAT(status, HasSubstr("\"operator_actions_pending\":[\"skip event " +
                                never + " (by "))
      << status;
  EXPECT_THAT(status, HasSubstr(absl::StrCat("\"skipped_by_operator\":",
                                             skipped.size())))
      << status;
}

}  // namespace
}  // namespace outbox::testing
