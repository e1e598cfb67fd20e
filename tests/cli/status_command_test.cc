// The `outbox-relay status` report format (the query itself runs against a
// real server in tests/e2e/relay/metrics_e2e_test.cc).
#include "cli/status_command.h"

#include "cli/validate_command.h"
#include "daemon/exit_code.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

TEST(StatusCommandTest, HumanBytes) {
  EXPECT_EQ(HumanBytes(0), "0 (0 B)");
  EXPECT_EQ(HumanBytes(1023), "1023 (1023 B)");
  EXPECT_EQ(HumanBytes(3184), "3184 (3.1 KiB)");
  EXPECT_EQ(HumanBytes(int64_t{5} << 30), "5368709120 (5.0 GiB)");
}

TEST(StatusCommandTest, ReportsEveryField) {
  SlotStatus s;
  s.slot_name = "outbox_relay";
  s.database = "app";
  s.plugin = "wal2json";
  s.active = true;
  s.active_pid = 4242;
  s.confirmed_flush_lsn = 0x1A2B3C8;
  s.restart_lsn = 0x1A2B390;
  s.current_wal_lsn = 0x1A2C000;
  s.lag_bytes = 3128;
  s.retained_bytes = 3184;
  s.wal_status = "reserved";
  EXPECT_EQ(FormatSlotStatus(s),
            "slot                 outbox_relay\n"
            "database             app\n"
            "plugin               wal2json\n"
            "active               true (pid 4242)\n"
            "confirmed_flush_lsn  0/1A2B3C8\n"
            "restart_lsn          0/1A2B390\n"
            "current_wal_lsn      0/1A2C000\n"
            "lag_bytes            3128 (3.1 KiB)\n"
            "retained_wal_bytes   3184 (3.1 KiB)\n"
            "wal_status           reserved\n"
            "safe_wal_size        unlimited\n"
            "failover             n/a (PostgreSQL 16 or older)\n");
  s.failover = true;
  EXPECT_THAT(FormatSlotStatus(s),
              ::testing::HasSubstr("\nfailover             true\n"));
}

TEST(StatusCommandTest, FailoverReportPerStandby) {
  FailoverReport r;
  r.supported = true;
  StandbyFacts synced;
  synced.node = "s1:5432";
  synced.slot_exists = synced.slot_synced = synced.slot_failover = true;
  StandbyFacts missing;
  missing.node = "s2:5433";
  StandbyFacts down;
  down.node = "s3:5432";
  down.error = "connection refused";
  r.standbys = {synced, missing, down};
  r.problems = {"one", "two"};
  EXPECT_EQ(FormatFailoverReport(r),
            "standby              s1:5432 slot synced=true failover=true\n"
            "standby              s2:5433 slot missing\n"
            "standby              s3:5432 not reached: connection refused\n"
            "failover_ready       false (2 problems)\n"
            "problem              one\n"
            "problem              two\n");
  r.standbys = {synced};
  r.problems.clear();
  EXPECT_EQ(FormatFailoverReport(r),
            "standby              s1:5432 slot synced=true failover=true\n"
            "failover_ready       true\n");
}

TEST(StatusCommandTest, InactiveLostSlotWithLimit) {
  SlotStatus s;
  s.slot_name = "outbox_relay";
  s.wal_status = "lost";
  s.safe_wal_size = -2048;
  std::string out = FormatSlotStatus(s);
  EXPECT_THAT(out, ::testing::HasSubstr("active               false\n"));
  EXPECT_THAT(out, ::testing::HasSubstr("restart_lsn          none\n"));
  EXPECT_THAT(out, ::testing::HasSubstr("wal_status           lost\n"));
  EXPECT_THAT(out,
              ::testing::HasSubstr("safe_wal_size        -2048 (-2.0 KiB)\n"));
}

// Issue 35: validate --connect's exit code: a server's refusal (3) before
// an unreachable server (1).
TEST(ValidateCommandTest, ExitCodeOfTheChecks) {
  const StartupCheck ok{"config", absl::OkStatus(), "valid"};
  const StartupCheck down{"kafka", absl::UnavailableError("down"), ""};
  const StartupCheck refused{"postgres", absl::FailedPreconditionError("no"),
                             ""};
  EXPECT_EQ(ValidateExitCode({ok}), kExitOk);
  EXPECT_EQ(ValidateExitCode({ok, down}), kExitInternal);
  EXPECT_EQ(ValidateExitCode({down, refused}), kExitPrecondition);
  EXPECT_EQ(ValidateExitCode({refused, down}), kExitPrecondition);
}

}  // namespace
}  // namespace outbox
