// The words for a slot that lost events, on the server's own messages.
#include "pg/slot_loss.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(SlotLossTest, RecognisesTheServersInvalidationErrors) {
  // PostgreSQL 15: START_REPLICATION on an invalidated slot, and a
  // walsender whose WAL was removed under it.
  EXPECT_TRUE(IsSlotInvalidatedError(
      "START_REPLICATION failed: can no longer get changes from replication "
      "slot \"outbox_relay\" DETAIL:  This slot has been invalidated because "
      "it exceeded the maximum reserved size."));
  EXPECT_TRUE(IsSlotInvalidatedError(
      "server ended the replication stream: requested WAL segment "
      "000000010000000000000003 has already been removed"));
  EXPECT_FALSE(IsSlotInvalidatedError(
      "replication connection lost: server closed the connection "
      "unexpectedly"));
  EXPECT_FALSE(IsSlotInvalidatedError(
      "START_REPLICATION failed: replication slot \"s\" is active for PID 42"));
  EXPECT_FALSE(IsSlotInvalidatedError("requested WAL segment"));
  // PostgreSQL 18's words for any invalidated slot (issue 32 item 11).
  EXPECT_TRUE(IsSlotInvalidatedError(
      "START_REPLICATION failed: can no longer access replication slot "
      "\"outbox_relay\" DETAIL: This replication slot has been invalidated "
      "due to \"idle_timeout\"."));
}

// Issue 32 item 11: each invalidation_reason says its own cause; an idle
// timeout is not WAL removal.
TEST(SlotLossTest, EachInvalidationReasonHasItsOwnWords) {
  std::string idle =
      SlotInvalidatedMessage("s", {"wal2json", ""}, 0x10, true,
                             "wal_status is 'lost'", "idle_timeout");
  EXPECT_THAT(idle,
              AllOf(HasSubstr("replication slot \"s\" was invalidated: "
                              "nobody streamed from it for longer than "
                              "idle_replication_slot_timeout"),
                    HasSubstr("postgres.expected_outage_s"),
                    HasSubstr("docs/operations/runbooks.md#slot-idle-timeout"),
                    HasSubstr("events committed after 0/10 are in no "
                              "slot"),
                    Not(HasSubstr("max_slot_wal_keep_size"))));
  EXPECT_EQ(idle.find('\n'), std::string::npos);
  for (const char* wal : {"", "wal_removed"}) {
    EXPECT_THAT(
        SlotInvalidatedMessage("s", {"wal2json", ""}, 0x10, true, "x", wal),
        HasSubstr("removed WAL it still needed "
                  "(max_slot_wal_keep_size)"));
  }
  EXPECT_THAT(SlotInvalidatedMessage("s", {"wal2json", ""}, 0x10, true, "x",
                                     "rows_removed"),
              HasSubstr("removed catalog rows"));
}

// Issue 32 item 13: the way to create the slot by hand, shared by the
// lost-slot refusal and the missing slot under create_slot: false.
TEST(SlotLossTest, CreateSlotByHandNamesPluginAndPublication) {
  EXPECT_EQ(CreateSlotByHand("s", {"wal2json", ""}),
            "(SELECT pg_create_logical_replication_slot('s', 'wal2json'); "
            "postgres.create_slot is false)");
  EXPECT_EQ(CreateSlotByHand("s", {"pgoutput", "pub"}),
            "(SELECT pg_create_logical_replication_slot('s', 'pgoutput'); "
            "postgres.create_slot is false; it streams publication \"pub\", "
            "which must still exist)");
}

TEST(SlotLossTest, InvalidatedMessageNamesSlotLsnAndFix) {
  std::string msg =
      SlotInvalidatedMessage("outbox_relay", {"wal2json", ""}, 0x16B3748, true,
                             "wal_status is 'lost'");
  EXPECT_THAT(msg, AllOf(HasSubstr("replication slot \"outbox_relay\" was "
                                   "invalidated"),
                         HasSubstr("[wal_status is 'lost']"),
                         HasSubstr("last confirmed LSN is 0/16B3748"),
                         HasSubstr("SELECT pg_drop_replication_slot("
                                   "'outbox_relay')"),
                         HasSubstr("events committed after 0/16B3748 are "
                                   "in no slot"),
                         HasSubstr("--set postgres.acknowledge_slot_loss="
                                   "0/16B3748")));
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST(SlotLossTest, WithoutCreateSlotTheFixIsToCreateItByHand) {
  std::string fix =
      LostEventsAndFix("s", {"wal2json", ""}, 0x10, false, "/m/s.slot");
  EXPECT_THAT(fix, AllOf(HasSubstr("pg_create_logical_replication_slot('s', "
                                   "'wal2json')"),
                         Not(HasSubstr("publication")),
                         Not(HasSubstr("acknowledge_slot_loss")),
                         Not(HasSubstr("/m/s.slot"))));
  EXPECT_THAT(LostEventsAndFix("s", {"wal2json", ""}, 0x10, true, "/m/s.slot"),
              HasSubstr("(or delete /m/s.slot)"));
}

// Issue 23 item 7: the slot to create by hand is one of the configured
// plugin, never wal2json for a pgoutput relay, and names its publication.
TEST(SlotLossTest, TheSlotToCreateByHandUsesTheConfiguredPlugin) {
  std::string fix =
      LostEventsAndFix("s", {"pgoutput", "outbox_pub"}, 0x10, false, "");
  EXPECT_THAT(fix, AllOf(HasSubstr("pg_create_logical_replication_slot('s', "
                                   "'pgoutput')"),
                         HasSubstr("publication \"outbox_pub\""),
                         Not(HasSubstr("wal2json"))));
  EXPECT_THAT(SlotInvalidatedMessage("s", {"pgoutput", "outbox_pub"}, 0x10,
                                     false, "lost"),
              AllOf(HasSubstr("'pgoutput'"), Not(HasSubstr("wal2json"))));
}

TEST(SlotLossTest, TheFixNamesTheRepublishCommandAfterTheNewSlot) {
  for (bool can_create : {true, false}) {
    std::string fix =
        LostEventsAndFix("s", {"wal2json", ""}, 0x10, can_create, "");
    size_t slot = fix.find(can_create ? "acknowledge_slot_loss=0/10"
                                      : "pg_create_logical_replication_slot");
    size_t republish =
        fix.find("outbox-relay republish --since <a time before the loss>");
    ASSERT_NE(slot, std::string::npos) << fix;
    ASSERT_NE(republish, std::string::npos) << fix;
    // The new slot first: then no event falls between the two.
    EXPECT_LT(slot, republish) << fix;
  }
}

}  // namespace
}  // namespace outbox
