// PostgreSQL 17 failover slots, the relay's side (issue 13): each test
// starts its own PostgreSQL 17 (scripts/pg.sh, pgoutput) and shares the
// fixture's Kafka. The relay makes its slot a failover slot (created so, or
// altered), checks what a failover needs and says what is missing: one
// warning per unsafe setting, the outbox_relay_failover_ready gauge, and
// `outbox-relay status`; /readyz stays up throughout.
#include "e2e/relay/relay_e2e_fixture.h"
#include "e2e/relay_http.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kMajor = 17;

class FailoverSlotE2ETest : public RelayE2ETest {
 protected:
  std::string PgConninfo() override {
    pg_dir_ = TempDir("pg17") + "/pg";
    return StartPgCluster(kMajor, pg_dir_);
  }

  void SetUp() override {
    RelayE2ETest::SetUp();
    if (HasFatalFailure()) return;
    extra_relay_args_ = {"--set", "postgres.plugin=pgoutput", "--set",
                         "postgres.publication=" + slot_ + "_pub"};
  }

  void TearDown() override {
    RelayE2ETest::TearDown();
    db_.reset();
    if (!standby_dir_.empty()) RunScript("pg.sh stop " + standby_dir_);
    if (!pg_dir_.empty()) RunScript("pg.sh stop " + pg_dir_);
  }

  std::string SlotFailover() {
    return db_->Scalar(
        "SELECT failover FROM pg_replication_slots WHERE slot_name = '" +
        slot_ + "'");
  }

  // Waits until the relay's output holds `text`.
  bool WaitOutput(const std::string& text, int timeout_ms = 30000) {
    return WaitUntil(
        [&] { return relay_->Output().find(text) != std::string::npos; },
        timeout_ms);
  }

  // `outbox-relay status` against `conninfo`; its output.
  std::string Status(const std::string& conninfo) {
    auto p = Process::Start({BinaryPath("outbox-relay"), "status", "--pg",
                             conninfo, "--slot", slot_},
                            dir_ + "/status.log");
    EXPECT_EQ(p->Wait(60000), 0) << p->Output();
    return p->Output();
  }

  // The port of the server in `dir` (the primary's by default).
  std::string Port(const std::string& dir = "") {
    std::string port = ReadFile((dir.empty() ? pg_dir_ : dir) + "/port");
    while (!port.empty() && port.back() == '\n') port.pop_back();
    return port;
  }

  // Starts the relay on a two-host conninfo, the primary then `second_port`
  // (target_session_attrs=read-write); returns the conninfo.
  std::string StartRelayOnPair(const std::string& second_port) {
    std::string pair = "host=127.0.0.1,127.0.0.1 port=" + Port() + "," +
                       second_port +
                       " user=postgres dbname=postgres "
                       "target_session_attrs=read-write";
    auto args = RelayArgs();
    args[2] = pair;
    relay_ = Process::Start(args, dir_ + "/relay.log");
    return pair;
  }

  std::string pg_dir_;
  std::string standby_dir_;  // AHealthyPairIsReportedReady only
};

TEST_F(FailoverSlotE2ETest, TheSlotIsCreatedWithFailoverAndGapsAreWarned) {
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  EXPECT_EQ(SlotFailover(), "t");
  // The session's line comes after the slot is active: wait for it.
  EXPECT_TRUE(WaitOutput("failover_slot=true")) << relay_->Output();
  // A lone primary: no synchronized_standby_slots, no standby to check.
  ASSERT_TRUE(
      WaitOutput("failover not safe: synchronized_standby_slots is "
                 "empty on primary 127.0.0.1:" +
                 Port()))
      << relay_->Output();
  ASSERT_TRUE(WaitOutput("failover not safe: no standby checked"))
      << relay_->Output();
  ASSERT_TRUE(WaitUntil(
      [&] { return RelayMetric(*relay_, "outbox_relay_failover_ready") == 0; },
      30000))
      << relay_->Output();
  EXPECT_EQ(RelayMetric(*relay_, "outbox_relay_failover_problems"), 2);
  int code = 0;
  RelayHttpGet(*relay_, "/readyz", &code);
  EXPECT_EQ(code, 200);  // the relay works: unsafe is not unready
  // Events still flow.
  EXPECT_EQ(WriteConcurrentlyAndAudit(2, 10), 0);

  std::string status = Status(pg_conninfo_);
  EXPECT_THAT(status, HasSubstr("failover             true\n"));
  EXPECT_THAT(status, HasSubstr("failover_ready       false (2 problems)\n"));
  EXPECT_THAT(status, HasSubstr("problem              "
                                "synchronized_standby_slots is empty"));
}

TEST_F(FailoverSlotE2ETest, AnExistingSlotWithoutFailoverGetsIt) {
  db_->Exec("SELECT pg_create_logical_replication_slot('" + slot_ +
            "', 'pgoutput')");
  ASSERT_EQ(SlotFailover(), "f");
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  EXPECT_EQ(SlotFailover(), "t");
  // The slot is active before the relay's next log line is written.
  WaitUntil(
      [&] {
        return relay_->Output().find(
                   "enabled failover on the replication slot") !=
               std::string::npos;
      },
      10000);
  EXPECT_THAT(relay_->Output(),
              HasSubstr("enabled failover on the replication slot"));
  // Restarted, it finds the flag set and alters nothing.
  relay_->Signal(SIGTERM);
  ASSERT_EQ(relay_->Wait(30000), 0) << relay_->Output();
  relay_ = Process::Start(RelayArgs(), dir_ + "/relay2.log");
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  ASSERT_TRUE(WaitOutput("INFO streaming")) << relay_->Output();
  EXPECT_THAT(relay_->Output(), Not(HasSubstr("enabled failover")));
}

TEST_F(FailoverSlotE2ETest, FailoverSlotFalseLeavesTheSlotAlone) {
  StartRelay({"--set", "postgres.failover_slot=false"});
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  ASSERT_TRUE(WaitOutput("failover_slot=false")) << relay_->Output();
  EXPECT_EQ(SlotFailover(), "f");
  int code = 0;
  ASSERT_TRUE(WaitUntil(
      [&] { return RelayHttpGet(*relay_, "/readyz", &code), code == 200; },
      30000));
  EXPECT_THAT(relay_->Output(), Not(HasSubstr("failover not safe")));
}

// Issue 32 item 10: a conninfo libpq cannot parse, reached while the relay
// runs (the failover check reads postgres.standby_conninfo), must not put
// libpq's words in the log or the status page's last error: they quote
// the conninfo around the fault, here the password ("invalid
// percent-encoded token: \"...\"").
TEST_F(FailoverSlotE2ETest, AnUnparsableStandbyConninfoShowsNoPassword) {
  StartRelay({"--set",
              "postgres.standby_conninfo=postgresql://postgres:"
              "FIRSTPART%zzSECONDPART@127.0.0.1:1/postgres"});
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  ASSERT_TRUE(WaitOutput("cannot check failover readiness"))
      << relay_->Output();
  int code = 0;
  std::string status;
  ASSERT_TRUE(WaitUntil(
      [&] {
        status = RelayHttpGet(*relay_, "/status.json", &code);
        return status.find("cannot check failover readiness") !=
               std::string::npos;
      },
      30000))
      << status;
  EXPECT_THAT(status, HasSubstr("invalid postgres.standby_conninfo: libpq "
                                "cannot parse it"));
  const std::string out = relay_->Output();
  for (const char* part : {"FIRSTPART", "SECONDPART", "%zz"}) {
    EXPECT_THAT(status, Not(HasSubstr(part))) << status;
    EXPECT_THAT(out, Not(HasSubstr(part))) << out;
  }
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();
}

TEST_F(FailoverSlotE2ETest, StandbysOfAMultiHostConninfoAreChecked) {
  // A second host that is down, and a physical slot named in
  // synchronized_standby_slots that no standby streams from.
  db_->Exec("SELECT pg_create_physical_replication_slot('" + slot_ + "_sb')");
  db_->Exec("ALTER SYSTEM SET synchronized_standby_slots = '" + slot_ + "_sb'");
  db_->Exec("SELECT pg_reload_conf()");
  std::string down_port = std::to_string(FreeLoopbackPort());
  std::string multi = StartRelayOnPair(down_port);
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  ASSERT_TRUE(WaitOutput("failover not safe: standby 127.0.0.1:" + down_port +
                         " not checked"))
      << relay_->Output();
  ASSERT_TRUE(WaitOutput("physical slot \"" + slot_ +
                         "_sb\" in synchronized_standby_slots on primary "
                         "127.0.0.1:" +
                         Port() + " is not active"))
      << relay_->Output();
  EXPECT_THAT(relay_->Output(), Not(HasSubstr("no standby checked")));
  std::string status = Status(multi);
  EXPECT_THAT(status, HasSubstr("standby              127.0.0.1:" + down_port +
                                " not reached"));
  db_->Exec("ALTER SYSTEM RESET synchronized_standby_slots");
  db_->Exec("SELECT pg_reload_conf()");
  db_->Exec("SELECT pg_drop_replication_slot('" + slot_ + "_sb')");
}

// A healthy pair (scripts/pg.sh standby: the standby streams through a
// physical slot named in synchronized_standby_slots, with slot sync, hot
// standby feedback and a dbname in primary_conninfo): once the standby has
// synchronized the relay's new slot, every check passes.
TEST_F(FailoverSlotE2ETest, AHealthyPairIsReportedReady) {
  standby_dir_ = pg_dir_ + "-standby";
  ASSERT_EQ(RunScript("pg.sh standby " + pg_dir_ + " " + standby_dir_ +
                      " >/dev/null"),
            0);
  const std::string standby_port = Port(standby_dir_);
  db_ = PgConn::Connect(pg_conninfo_);  // the primary was restarted
  ASSERT_NE(db_, nullptr);
  std::string pair = StartRelayOnPair(standby_port);
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  EXPECT_EQ(SlotFailover(), "t");
  // Slot sync copies the new slot within its nap (at most 30 s); the relay
  // re-checks every 10 s while a check finds problems.
  ASSERT_TRUE(WaitUntil(
      [&] { return RelayMetric(*relay_, "outbox_relay_failover_ready") == 1; },
      120000))
      << relay_->Output();
  EXPECT_EQ(RelayMetric(*relay_, "outbox_relay_failover_problems"), 0);
  EXPECT_EQ(WriteConcurrentlyAndAudit(2, 10), 0);
  std::string status = Status(pair);
  EXPECT_THAT(status,
              HasSubstr("standby              127.0.0.1:" + standby_port +
                        " slot synced=true "
                        "failover=true\n"));
  EXPECT_THAT(status, HasSubstr("failover_ready       true\n"));
  // Problems the first check may have logged (the slot not synchronized
  // yet) are followed by the all-clear.
  if (relay_->Output().find("failover not safe") != std::string::npos) {
    EXPECT_TRUE(WaitOutput("failover ready: every check passed"))
        << relay_->Output();
  }
  EXPECT_THAT(relay_->Output(),
              Not(HasSubstr("synchronized_standby_slots is empty")));
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();
}

}  // namespace
}  // namespace outbox::testing
