#include "core/checkpoint.h"

#include <vector>

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
