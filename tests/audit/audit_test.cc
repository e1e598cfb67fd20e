#include "audit/audit.h"

#include <regex>

#include "audit/audit_sources.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

std::vector<CommittedEvent> Events() {
  return {{"e1", "k1", 1}, {"e2", "k2", 2}, {"e3", "k1", 3}, {"e4", "k1", 4}};
}

PublishedRecord Rec(const std::string& id, const std::string& key,
                    int32_t partition = 0) {
  return {id, key, "t", partition, -1};
}

TEST(AuditTest, CleanRunPasses) {
  auto r = Audit(Events(), {Rec("e1", "k1"), Rec("e2", "k2", 1),
                            Rec("e3", "k1"), Rec("e4", "k1")});
  EXPECT_TRUE(r.Passed(0)) << r.ToText();
  EXPECT_EQ(r.delivered, 4);
  EXPECT_EQ(r.missing + r.duplicates + r.unknown + r.order_violations, 0);
}

TEST(AuditTest, CountsMissing) {
  auto r = Audit(Events(), {Rec("e1", "k1"), Rec("e3", "k1")});
  EXPECT_EQ(r.missing, 2);
  EXPECT_FALSE(r.Passed());
  EXPECT_THAT(r.ToText(), ::testing::HasSubstr("missing e2"));
}

TEST(AuditTest, EventsSkippedByOperatorAreReportedNotMissing) {
  OperatorSkips skips = {
      {"e2", {"skip event e2", "alice@db1", "2026-11-27T16:00:00Z", "poison"}},
      {"e1", {"skip event e1", "bob", "2026-11-27T16:00:00Z", ""}}};
  auto r = Audit(Events(), {Rec("e1", "k1"), Rec("e3", "k1"), Rec("e4", "k1")},
                 &skips);
  EXPECT_EQ(r.missing, 0);
  EXPECT_EQ(r.skipped_by_operator, 1);  // e1 came anyway: delivered
  EXPECT_TRUE(r.Passed()) << r.ToText();
  EXPECT_THAT(r.ToText(),
              ::testing::HasSubstr("skipped by operator e2 (by alice@db1, at "
                                   "2026-11-27T16:00:00Z, reason: poison; "
                                   "skip event e2)"));
  EXPECT_THAT(r.ToJson(),
              ::testing::HasSubstr("\"skipped_by_operator\":1,\"examples\":[],"
                                   "\"skipped\":[{\"id\":\"e2\",\"action\":"
                                   "\"skip event e2\",\"by\":\"alice@db1\""));
  // Without the records the same event is missing.
  EXPECT_EQ(Audit(Events(), {Rec("e1", "k1"), Rec("e3", "k1"), Rec("e4", "k1")})
                .missing,
            1);
}

TEST(AuditTest, DuplicatesAreAllowedUpToTheBound) {
  // A replay after a crash: e3 and e4 again after e4.
  auto r = Audit(Events(), {Rec("e1", "k1"), Rec("e2", "k2"), Rec("e3", "k1"),
                            Rec("e4", "k1"), Rec("e3", "k1"), Rec("e4", "k1")});
  EXPECT_EQ(r.duplicates, 2);
  EXPECT_EQ(r.order_violations, 0);  // replays repeat, they do not reorder
  EXPECT_TRUE(r.Passed());
  EXPECT_TRUE(r.Passed(2));
  EXPECT_FALSE(r.Passed(1));
}

// A consumer that reads a record again (the same partition and offset,
// e.g. after a leader change) is not Kafka holding it twice: counted apart
// and left out, while a second copy at another offset is a duplicate, shown
// with both positions.
TEST(AuditTest, ARecordReadTwiceIsNotADuplicate) {
  auto at = [](const std::string& id, int64_t offset) {
    return PublishedRecord{id, "k1", "t", 0, offset};
  };
  auto r = Audit({{"e1", "k1", 1}, {"e3", "k1", 3}, {"e4", "k1", 4}},
                 {at("e1", 0), at("e3", 1), at("e4", 2), at("e3", 1),
                  at("e4", 2), at("e4", 7)});
  EXPECT_EQ(r.read_twice, 2);
  EXPECT_EQ(r.duplicates, 1);
  EXPECT_EQ(r.order_violations, 0);
  EXPECT_EQ(r.delivered, 3);
  EXPECT_THAT(r.ToText(),
              ::testing::HasSubstr("duplicate e4 at t/0@7, first at t/0@2"));
  EXPECT_THAT(r.ToText(), ::testing::HasSubstr("read twice         2"));
  EXPECT_THAT(r.ToJson(),
              ::testing::HasSubstr("\"duplicates\":1,\"read_twice\":2,"));
  // Offsets not known: every copy counts.
  EXPECT_EQ(
      Audit({{"e3", "k1", 3}}, {Rec("e3", "k1"), Rec("e3", "k1")}).duplicates,
      1);
}

TEST(AuditTest, UnknownIdsFail) {
  auto r = Audit(Events(), {Rec("e1", "k1"), Rec("e2", "k2"), Rec("e3", "k1"),
                            Rec("e4", "k1"), Rec("rolled-back", "k1")});
  EXPECT_EQ(r.unknown, 1);
  EXPECT_FALSE(r.Passed());
}

TEST(AuditTest, PerKeyOrderViolation) {
  auto r = Audit(Events(), {Rec("e1", "k1"), Rec("e4", "k1"), Rec("e3", "k1"),
                            Rec("e2", "k2")});
  EXPECT_EQ(r.order_violations, 1);
  EXPECT_FALSE(r.Passed());
}

TEST(AuditTest, OtherKeysMayInterleave) {
  auto r = Audit(Events(), {Rec("e2", "k2", 1), Rec("e1", "k1"),
                            Rec("e3", "k1"), Rec("e4", "k1")});
  EXPECT_EQ(r.order_violations, 0);
}

TEST(AuditTest, WrongKeyIsMisrouted) {
  auto r = Audit(Events(), {Rec("e1", "k9"), Rec("e2", "k2"), Rec("e3", "k1"),
                            Rec("e4", "k1")});
  EXPECT_EQ(r.misrouted, 1);
  EXPECT_FALSE(r.Passed());
}

TEST(MissingEventsTest, ThoseNoRecordCarriesInCreationOrder) {
  // Read from the tables out of creation order; e2 and e4 have no record.
  std::vector<CommittedEvent> committed = {
      {"e4", "k1", 4}, {"e1", "k1", 1}, {"e2", "k2", 2}, {"e3", "k1", 3}};
  // Duplicates, a record of another event and one without an id header
  // change nothing.
  std::vector<PublishedRecord> records = {Rec("e3", "k1"), Rec("e1", "k1"),
                                          Rec("e3", "k1"), Rec("x", "k1"),
                                          Rec("", "k2")};
  std::vector<size_t> missing = MissingEvents(committed, records);
  ASSERT_EQ(missing.size(), 2u);
  EXPECT_EQ(committed[missing[0]].id, "e2");
  EXPECT_EQ(committed[missing[1]].id, "e4");
}

TEST(MissingEventsTest, EqualSeqsKeepTheirOrderAndNothingMissingIsEmpty) {
  // No creation-order column: every seq is 0.
  std::vector<CommittedEvent> committed = {
      {"b", "k", 0}, {"a", "k", 0}, {"c", "k", 0}};
  std::vector<size_t> missing = MissingEvents(committed, {Rec("a", "k")});
  EXPECT_EQ(missing, (std::vector<size_t>{0, 2}));
  EXPECT_TRUE(
      MissingEvents(committed, {Rec("a", "k"), Rec("b", "k"), Rec("c", "k")})
          .empty());
  EXPECT_TRUE(MissingEvents({}, {Rec("a", "k")}).empty());
}

TEST(AuditTest, JsonHasEveryCount) {
  auto r = Audit(Events(), {Rec("e1", "k1")});
  std::string j = r.ToJson();
  for (const char* k : {"\"committed\":4", "\"missing\":3", "\"duplicates\":0",
                        "\"unknown\":0", "\"order_violations\":0"}) {
    EXPECT_THAT(j, ::testing::HasSubstr(k));
  }
}

// Selected rows (outbox-audit --since, --ids, --seq-from): the report says
// which, and that unknown records are not counted.
TEST(AuditTest, SelectedRowsAreNamedAndUnknownNotCounted) {
  auto r = Audit(Events(), {Rec("e1", "k1")});
  EXPECT_THAT(r.ToText(), ::testing::Not(::testing::HasSubstr("rows ")));
  EXPECT_THAT(r.ToJson(), ::testing::Not(::testing::HasSubstr("\"rows\"")));
  r.rows = "seq >= 3";
  EXPECT_THAT(r.ToText(),
              ::testing::StartsWith("rows               seq >= 3\n"));
  EXPECT_THAT(r.ToText(),
              ::testing::HasSubstr("unknown            not counted"));
  EXPECT_THAT(r.ToJson(), ::testing::HasSubstr(",\"rows\":\"seq >= 3\"}"));
}

}  // namespace
}  // namespace outbox

namespace outbox {
namespace {

TEST(TopicPatternTest, PlaceholdersMatchAnyNameAndLiteralsOnlyThemselves) {
  std::regex def(TopicPattern("outbox.event.{aggregatetype}"));
  EXPECT_TRUE(std::regex_match("outbox.event.order", def));
  EXPECT_FALSE(std::regex_match("outbox.eventXorder", def));
  EXPECT_FALSE(std::regex_match("outbox.event.", def));
  std::regex exact(TopicPattern("outbox.event.f_1_2_1"));
  EXPECT_TRUE(std::regex_match("outbox.event.f_1_2_1", exact));
  EXPECT_FALSE(std::regex_match("outbox.event.f_1_2_10", exact));
  EXPECT_FALSE(std::regex_match("outbox.event.f_1_2_", exact));
}

}  // namespace
}  // namespace outbox
