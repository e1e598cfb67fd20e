// The pure parts of the failover readiness check: splitting a multi-host
// conninfo per host, and the rules turning settings into warning lines.
// The queries run against a real PostgreSQL 17 in
// tests/e2e/relay/failover_slot_e2e_test.cc.
#include "pg/failover_readiness.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

TEST(SplitHostsTest, OneConninfoPerHostWithItsPort) {
  auto hosts = SplitHosts(
      "host=a,b port=5432,5433 dbname=app user=relay "
      "target_session_attrs=read-write");
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  ASSERT_THAT(*hosts, SizeIs(2));
  EXPECT_EQ((*hosts)[0].node, "a:5432");
  EXPECT_EQ((*hosts)[1].node, "b:5433");
  // Each reaches its host only, whatever role it has.
  EXPECT_EQ((*hosts)[1].conninfo,
            "user='relay' dbname='app' host='b' port='5433'");
}

TEST(SplitHostsTest, OnePortServesEveryHostAndUrisSplitToo) {
  auto hosts = SplitHosts("postgresql://u@x,y:6000/db?connect_timeout=3");
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  ASSERT_THAT(*hosts, SizeIs(2));
  EXPECT_EQ((*hosts)[0].node, "x:5432");  // libpq's default
  EXPECT_EQ((*hosts)[1].node, "y:6000");
  auto one_port = SplitHosts("host=p,q port=7000");
  ASSERT_TRUE(one_port.ok());
  EXPECT_EQ((*one_port)[0].node, "p:7000");
  EXPECT_EQ((*one_port)[1].node, "q:7000");
  EXPECT_THAT((*one_port)[1].conninfo, HasSubstr("port='7000'"));
}

TEST(SplitHostsTest, QuotingSurvives) {
  auto hosts = SplitHosts("host=a,b password='it\\'s \\\\ x'");
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  EXPECT_THAT((*hosts)[0].conninfo, HasSubstr("password='it\\'s \\\\ x'"));
}

TEST(SplitHostsTest, NoHostOrOneHostIsOneEntry) {
  auto none = SplitHosts("dbname=app");
  ASSERT_TRUE(none.ok());
  ASSERT_THAT(*none, SizeIs(1));
  EXPECT_EQ((*none)[0].conninfo, "dbname=app");
  auto one = SplitHosts("host=db1 port=5433");
  ASSERT_TRUE(one.ok());
  ASSERT_THAT(*one, SizeIs(1));
  EXPECT_EQ((*one)[0].node, "db1:5433");
}

TEST(SplitHostsTest, MismatchedPortsAndUnparsableAreErrors) {
  EXPECT_TRUE(
      absl::IsInvalidArgument(SplitHosts("host=a,b,c port=1,2").status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(SplitHosts("host=a nope").status()));
}

TEST(ConninfoHasDbnameTest, KeywordAndUri) {
  EXPECT_TRUE(ConninfoHasDbname("host=p user=r dbname=postgres"));
  EXPECT_TRUE(ConninfoHasDbname("postgresql://r@p/app"));
  EXPECT_FALSE(ConninfoHasDbname("host=p user=r"));
  EXPECT_FALSE(ConninfoHasDbname(""));
}

PrimaryFacts GoodPrimary() {
  PrimaryFacts p;
  p.node = "p:5432";
  p.synchronized_standby_slots = "sb1";
  p.physical_slots = {{"sb1", true}};
  p.slot_failover = true;
  return p;
}

StandbyFacts GoodStandby() {
  StandbyFacts s;
  s.node = "s:5432";
  s.sync_replication_slots = "on";
  s.hot_standby_feedback = "on";
  s.primary_slot_name = "sb1";
  s.primary_conninfo_has_dbname = true;
  s.slot_exists = s.slot_failover = s.slot_synced = true;
  return s;
}

TEST(FailoverProblemsTest, ACorrectPairHasNone) {
  EXPECT_THAT(FailoverProblems("r", GoodPrimary(), {GoodStandby()}), IsEmpty());
  // Quoted names and spaces in the setting are the same slots.
  PrimaryFacts p = GoodPrimary();
  p.synchronized_standby_slots = " \"sb1\" ";
  EXPECT_THAT(FailoverProblems("r", p, {GoodStandby()}), IsEmpty());
}

TEST(FailoverProblemsTest, EmptySynchronizedStandbySlotsNamesTheFix) {
  PrimaryFacts p = GoodPrimary();
  p.synchronized_standby_slots = "";
  EXPECT_THAT(
      FailoverProblems("r", p, {GoodStandby()}),
      ElementsAre(
          AllOf(HasSubstr("synchronized_standby_slots is empty on primary "
                          "p:5432"),
                HasSubstr("ALTER SYSTEM SET synchronized_standby_slots = "
                          "'sb1'; SELECT pg_reload_conf();")),
          // The standby's slot is then named nowhere either.
          HasSubstr("does not name \"sb1\"")));
}

TEST(FailoverProblemsTest, PhysicalSlotsMissingOrInactive) {
  PrimaryFacts p = GoodPrimary();
  p.synchronized_standby_slots = "sb1,gone";
  p.physical_slots = {{"sb1", false}};
  EXPECT_THAT(
      FailoverProblems("r", p, {GoodStandby()}),
      ElementsAre(HasSubstr("physical slot \"sb1\" in "
                            "synchronized_standby_slots on primary p:5432 is "
                            "not active"),
                  HasSubstr("names \"gone\", which is no physical slot")));
}

TEST(FailoverProblemsTest, SlotWithoutFailover) {
  PrimaryFacts p = GoodPrimary();
  p.slot_failover = false;
  EXPECT_THAT(FailoverProblems("r", p, {GoodStandby()}),
              ElementsAre(HasSubstr("has failover=false")));
}

TEST(FailoverProblemsTest, EachStandbySettingIsOneLine) {
  StandbyFacts s = GoodStandby();
  s.sync_replication_slots = "off";
  s.hot_standby_feedback = "off";
  s.primary_conninfo_has_dbname = false;
  s.slot_exists = false;
  EXPECT_THAT(
      FailoverProblems("r", GoodPrimary(), {s}),
      ElementsAre(
          AllOf(HasSubstr("sync_replication_slots is off on standby s:5432"),
                HasSubstr("ALTER SYSTEM SET sync_replication_slots = on")),
          AllOf(HasSubstr("hot_standby_feedback is off on standby s:5432"),
                HasSubstr("ALTER SYSTEM SET hot_standby_feedback = on")),
          HasSubstr("primary_conninfo on standby s:5432 has no dbname"),
          HasSubstr("replication slot \"r\" is not on standby s:5432")));
}

TEST(FailoverProblemsTest, PrimarySlotNameMissingOrNotSynchronized) {
  StandbyFacts s = GoodStandby();
  s.primary_slot_name = "";
  EXPECT_THAT(FailoverProblems("r", GoodPrimary(), {s}),
              ElementsAre(HasSubstr("primary_slot_name is not set on standby "
                                    "s:5432")));
  s.primary_slot_name = "sb2";
  EXPECT_THAT(
      FailoverProblems("r", GoodPrimary(), {s}),
      ElementsAre(AllOf(HasSubstr("does not name \"sb2\""),
                        HasSubstr("synchronized_standby_slots = 'sb1,sb2'"))));
}

TEST(FailoverProblemsTest, LocalSlotOnStandbyAndUnreadableConninfo) {
  StandbyFacts s = GoodStandby();
  s.slot_synced = false;
  s.primary_conninfo_has_dbname.reset();
  EXPECT_THAT(FailoverProblems("r", GoodPrimary(), {s}),
              ElementsAre(HasSubstr("pg_read_all_settings"),
                          HasSubstr("has synced=false failover=true")));
}

TEST(FailoverProblemsTest, UnreachableStandbyIsOneWarning) {
  StandbyFacts s;
  s.node = "s:5432";
  s.error = "connection refused";
  EXPECT_THAT(FailoverProblems("r", GoodPrimary(), {s}),
              ElementsAre(AllOf(HasSubstr("standby s:5432 not checked"),
                                HasSubstr("connection refused"))));
}

TEST(FailoverProblemsTest, OldOrNonStandbyNodes) {
  StandbyFacts old = GoodStandby();
  old.sync_replication_slots.reset();
  StandbyFacts primary_too = GoodStandby();
  primary_too.node = "q:5432";
  primary_too.in_recovery = false;
  EXPECT_THAT(FailoverProblems("r", GoodPrimary(), {old, primary_too}),
              ElementsAre(HasSubstr("sync_replication_slots does not exist"),
                          HasSubstr("q:5432 is not a standby")));
}

TEST(FailoverProblemsTest, NoStandbyIsOneWarning) {
  EXPECT_THAT(FailoverProblems("r", GoodPrimary(), {}),
              ElementsAre(HasSubstr("no standby checked")));
}

TEST(FailoverProblemsTest, ConnectedToAStandby) {
  PrimaryFacts p = GoodPrimary();
  p.in_recovery = true;
  EXPECT_THAT(FailoverProblems("r", p, {}),
              ElementsAre(HasSubstr("target_session_attrs=primary")));
}

}  // namespace
}  // namespace outbox
