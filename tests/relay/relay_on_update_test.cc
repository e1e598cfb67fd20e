// outbox.on_update (Debezium's table.op.invalid.behavior): an UPDATE of an
// outbox row is never published; it is ignored, logged, or halts the relay
// without confirming it.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "relay/relay_fixture.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

class RelayOnUpdateTest : public RelayMetricsTest {
 protected:
  // A transaction holding one UPDATE of outbox row `id`; returns its end.
  Lsn AddUpdateTxn(const std::string& id) {
    Lsn begin = 0x1000000, commit = 0x1000100, end = 0x1000130;
    stream_.AddData(begin, absl::StrCat("{\"action\":\"B\",\"xid\":9,", kTs,
                                        ",", Lsns(commit, end), "}"));
    stream_.AddData(
        begin + 0x80,
        absl::StrCat("{\"action\":\"U\",\"xid\":9,", kTs,
                     ",\"lsn\":\"0/1000080\",\"schema\":\"public\","
                     "\"table\":\"outbox\",\"columns\":[{\"name\":\"id\","
                     "\"type\":\"uuid\",\"value\":\"",
                     id, "\"}]}"));
    stream_.AddData(commit, absl::StrCat("{\"action\":\"C\",\"xid\":9,", kTs,
                                         ",", Lsns(commit, end), "}"));
    return end;
  }
};

TEST_F(RelayOnUpdateTest, WarnPublishesNothingAndConfirmsTheUpdate) {
  options_.on_update = OnUpdate::kWarn;
  Lsn end = AddUpdateTxn("00000000-0000-4000-8000-000000000042");
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());
  EXPECT_TRUE(sink_.produced().empty());
  EXPECT_EQ(stats_.updates_ignored, 1);
  EXPECT_EQ(Get("outbox_relay_ignored_updates_total"), 1);
  EXPECT_EQ(stream_.last_flushed(), end);
}

TEST_F(RelayOnUpdateTest, IgnoreCountsNothing) {
  AddUpdateTxn("00000000-0000-4000-8000-000000000042");
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());
  EXPECT_TRUE(sink_.produced().empty());
  EXPECT_EQ(stats_.updates_ignored, 0);
  EXPECT_EQ(Get("outbox_relay_ignored_updates_total"), 0);
}

TEST_F(RelayOnUpdateTest, HaltStopsWithoutConfirmingTheUpdate) {
  options_.on_update = OnUpdate::kHalt;
  AddUpdateTxn("00000000-0000-4000-8000-000000000042");
  absl::Status s = Run([&] { DeliverAll(); });
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(),
              HasSubstr("UPDATE of outbox row "
                        "00000000-0000-4000-8000-000000000042 in public.outbox "
                        "at LSN 0/1000080; halting (outbox.on_update = halt)"));
  EXPECT_LT(stream_.last_flushed(), 0x1000130u);
}

}  // namespace
}  // namespace outbox::testing
