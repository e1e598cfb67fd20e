#include "core/checkpoint.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

Checkpoint Make(Lsn end_lsn, Lsn partial = kInvalidLsn, int64_t events = 0) {
  Checkpoint c;
  c.system_identifier = "7312345678901234567";
  c.slot = "outbox_relay";
  c.end_lsn = end_lsn;
  c.partial_commit_lsn = partial;
  c.partial_events = events;
  return c;
}

TEST(CheckpointTest, EncodesTheDocumentedFormat) {
  EXPECT_EQ(Make(0x16B3748).Encode(),
            "{\"v\":1,\"system_identifier\":\"7312345678901234567\","
            "\"slot\":\"outbox_relay\",\"end_lsn\":\"0/16B3748\"}");
  EXPECT_EQ(Make(0x100, 0x1FF0000000, 5).Encode(),
            "{\"v\":1,\"system_identifier\":\"7312345678901234567\","
            "\"slot\":\"outbox_relay\",\"end_lsn\":\"0/100\","
            "\"partial\":{\"commit_lsn\":\"1F/F0000000\",\"events\":5}}");
  EXPECT_EQ(Make(1).Key(), "7312345678901234567/outbox_relay");
}

TEST(CheckpointTest, ParseReadsWhatEncodeWrites) {
  for (const Checkpoint& c :
       {Make(0), Make(0x16B3748), Make(0x100, 0x1FF0000000, 500000)}) {
    absl::StatusOr<Checkpoint> back = Checkpoint::Parse(c.Encode());
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, c) << c.Encode();
  }
}

TEST(CheckpointTest, MalformedRecordsAreDataLossNeverSkipped) {
  for (const char* bad : {
           "",
           "not json",
           "{\"v\":2,\"system_identifier\":\"1\",\"slot\":\"s\","
           "\"end_lsn\":\"0/1\"}",
           "{\"v\":1,\"slot\":\"s\",\"end_lsn\":\"0/1\"}",
           "{\"v\":1,\"system_identifier\":\"1\",\"end_lsn\":\"0/1\"}",
           "{\"v\":1,\"system_identifier\":\"1\",\"slot\":\"s\"}",
           "{\"v\":1,\"system_identifier\":\"1\",\"slot\":\"s\","
           "\"end_lsn\":\"zz\"}",
           // A partial transaction must commit after the whole ones.
           "{\"v\":1,\"system_identifier\":\"1\",\"slot\":\"s\","
           "\"end_lsn\":\"0/100\",\"partial\":{\"commit_lsn\":\"0/50\","
           "\"events\":3}}",
           "{\"v\":1,\"system_identifier\":\"1\",\"slot\":\"s\","
           "\"end_lsn\":\"0/100\",\"partial\":{\"commit_lsn\":\"0/200\","
           "\"events\":0}}",
           "{\"v\":1,\"system_identifier\":\"1\",\"slot\":\"s\","
           "\"end_lsn\":\"0/100\",\"partial\":7}",
       }) {
    absl::StatusOr<Checkpoint> c = Checkpoint::Parse(bad);
    EXPECT_TRUE(absl::IsDataLoss(c.status())) << bad << " -> " << c.status();
  }
}

// Feeds transactions (commit LSN, event count) and returns, per
// transaction, how many events the filter let through.
std::vector<int> Kept(CheckpointFilter& filter,
                      const std::vector<std::pair<Lsn, int>>& txns) {
  std::vector<int> kept;
  for (const auto& [commit_lsn, events] : txns) {
    filter.Begin(commit_lsn);
    int k = 0;
    for (int i = 0; i < events; ++i) {
      if (!filter.Drop()) ++k;
    }
    kept.push_back(k);
  }
  return kept;
}

TEST(CheckpointTest, TimelineIsWrittenAndReadAndOlderRecordsHaveNone) {
  Checkpoint c = Make(0x16B3748);
  c.timeline = 2;
  EXPECT_EQ(c.Encode(),
            "{\"v\":1,\"system_identifier\":\"7312345678901234567\","
            "\"slot\":\"outbox_relay\",\"timeline\":2,"
            "\"end_lsn\":\"0/16B3748\"}");
  absl::StatusOr<Checkpoint> back = Checkpoint::Parse(c.Encode());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, c);
  // A record an older relay wrote: no timeline, read as 0 (unknown).
  back = Checkpoint::Parse(
      "{\"v\":1,\"system_identifier\":\"1\",\"slot\":\"s\","
      "\"end_lsn\":\"0/10\"}");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->timeline, 0);
  for (const char* bad : {"0", "-1", "\"2\"", "1.5"}) {
    EXPECT_TRUE(absl::IsDataLoss(
        Checkpoint::Parse(absl::StrCat("{\"v\":1,\"system_identifier\":\"1\","
                                       "\"slot\":\"s\",\"timeline\":",
                                       bad, ",\"end_lsn\":\"0/10\"}"))
            .status()))
        << bad;
  }
}

TEST(CheckpointTest, AfterOrdersByTimelineThenPosition) {
  Checkpoint a = Make(0x200), b = Make(0x100);
  EXPECT_TRUE(a.After(b));
  EXPECT_FALSE(b.After(a));
  EXPECT_FALSE(a.After(a));
  // More of a split transaction published is further on.
  EXPECT_TRUE(Make(0x200, 0x300, 5).After(Make(0x200, 0x300, 4)));
  EXPECT_TRUE(Make(0x200, 0x300, 1).After(Make(0x200)));
  // A later timeline wins even at a lower LSN (written after the fork).
  Checkpoint t2 = Make(0x150);
  t2.timeline = 2;
  a.timeline = 1;
  EXPECT_TRUE(t2.After(a));
}

TEST(TimelineHistoryTest, ParsesPostgresHistoryFiles) {
  absl::StatusOr<std::vector<TimelineSwitch>> h = ParseTimelineHistory(
      "1\t0/3000000\tno recovery target specified\n\n"
      "# comment\n2\t0/5A0F1C8\tat restore point \"x\"\n");
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->size(), 2u);
  EXPECT_EQ((*h)[0].timeline, 1);
  EXPECT_EQ((*h)[0].end, 0x3000000u);
  EXPECT_EQ((*h)[1].timeline, 2);
  EXPECT_EQ((*h)[1].end, 0x5A0F1C8u);
  EXPECT_TRUE(absl::IsDataLoss(ParseTimelineHistory("x\t0/1\n").status()));
  EXPECT_TRUE(absl::IsDataLoss(ParseTimelineHistory("1\tnope\n").status()));
  EXPECT_TRUE(ParseTimelineHistory("").ok());
}

TEST(TrustedCheckpointTest, SameTimelineOrAnOlderRecordIsTrustedWhole) {
  Checkpoint c = Make(0x500, 0x600, 3);
  c.timeline = 2;
  std::string note = "x";
  absl::StatusOr<Checkpoint> t =
      TrustedCheckpoint(c, c.system_identifier, 2, {{1, 0x100}}, &note);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, c);
  EXPECT_EQ(note, "");
  c.timeline = 0;  // written before records carried one
  t = TrustedCheckpoint(c, c.system_identifier, 3, {{1, 0x100}, {2, 0x200}},
                        &note);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->end_lsn, 0x500u);
  EXPECT_EQ(t->timeline, 3);  // what the next commit records
}

TEST(TrustedCheckpointTest, OnALaterTimelineOnlyUpToTheForkPoint) {
  // Published up to X = 0x5000 on timeline 1; the standby promoted at
  // P = 0x3000 (timeline 2): its transactions in [P, X) were never
  // published and must not be dropped.
  Checkpoint c = Make(0x5000, 0x5100, 7);
  c.timeline = 1;
  std::string note;
  absl::StatusOr<Checkpoint> t =
      TrustedCheckpoint(c, c.system_identifier, 2, {{1, 0x3000}}, &note);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->end_lsn, 0x3000u);
  EXPECT_EQ(t->partial_commit_lsn, kInvalidLsn);
  EXPECT_EQ(t->partial_events, 0);
  EXPECT_EQ(t->timeline, 2);
  EXPECT_NE(note.find("forked off (0/3000)"), std::string::npos) << note;
  CheckpointFilter filter(*t);
  filter.Begin(0x2FF0);  // before the fork: published
  EXPECT_TRUE(filter.Drop());
  filter.Begin(0x3000);  // the new timeline's first commit: never published
  EXPECT_FALSE(filter.Drop());
  filter.Begin(0x4000);
  EXPECT_FALSE(filter.Drop());
  // A checkpoint before the fork holds whole, two forks back too.
  c = Make(0x2000, 0x2100, 2);
  c.timeline = 1;
  t = TrustedCheckpoint(c, c.system_identifier, 3, {{1, 0x3000}, {2, 0x4000}},
                        &note);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->end_lsn, 0x2000u);
  EXPECT_EQ(t->partial_commit_lsn, 0x2100u);
  EXPECT_EQ(note, "");
}

TEST(TrustedCheckpointTest, RefusesAnotherSystemAndUnrelatedTimelines) {
  Checkpoint c = Make(0x5000);
  c.timeline = 1;
  absl::Status s = TrustedCheckpoint(c, "999", 1, {}, nullptr).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(s.message().find("system 999"), std::string::npos) << s;
  EXPECT_EQ(s.message().find('\n'), std::string::npos);
  c.timeline = 3;  // a newer timeline than the server's
  s = TrustedCheckpoint(c, c.system_identifier, 2, {{1, 0x10}}, nullptr)
          .status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  c.timeline = 2;  // a sibling: not in timeline 3's history
  s = TrustedCheckpoint(c, c.system_identifier, 3, {{1, 0x10}}, nullptr)
          .status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  // No checkpoint at all: nothing to refuse.
  EXPECT_TRUE(TrustedCheckpoint(Make(kInvalidLsn), "999", 2, {}, nullptr).ok());
}

TEST(CheckpointFilterTest, DropsTransactionsCommittedAtOrBeforeTheCheckpoint) {
  // The checkpoint is the end of the commit record starting at 0x200; the
  // slot replays from before it (its confirmed position lags Kafka).
  CheckpointFilter filter(Make(/*end_lsn=*/0x230));
  EXPECT_EQ(Kept(filter, {{0x100, 3}, {0x200, 2}, {0x230, 4}, {0x300, 1}}),
            (std::vector<int>{0, 0, 4, 1}));
  EXPECT_EQ(filter.dropped(), 5);
}

TEST(CheckpointFilterTest, NoCheckpointDropsNothing) {
  CheckpointFilter filter(Make(kInvalidLsn));
  EXPECT_EQ(Kept(filter, {{0x10, 2}, {0x20, 3}}), (std::vector<int>{2, 3}));
  EXPECT_EQ(filter.dropped(), 0);
}

TEST(CheckpointFilterTest, DropsOnlyThePublishedPrefixOfASplitTransaction) {
  CheckpointFilter filter(Make(0x230, /*partial=*/0x900, /*events=*/3));
  EXPECT_EQ(Kept(filter, {{0x200, 2}, {0x900, 5}, {0x1000, 2}}),
            (std::vector<int>{0, 2, 2}));
  EXPECT_EQ(filter.dropped(), 5);
}

TEST(CheckpointFilterTest, ARestartedFilterDecidesTheSameWay) {
  // The slot may replay the same transactions twice (a reconnect before the
  // confirmed position moved): the decision depends on the LSNs only.
  CheckpointFilter filter(Make(0x230));
  EXPECT_EQ(Kept(filter, {{0x200, 2}, {0x300, 1}}), (std::vector<int>{0, 1}));
  EXPECT_EQ(Kept(filter, {{0x200, 2}, {0x300, 1}}), (std::vector<int>{0, 1}));
}

}  // namespace
}  // namespace outbox
