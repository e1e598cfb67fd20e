#include "pg/slot_loss.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace outbox {

std::string CreateSlotByHand(absl::string_view slot, const SlotPlugin& plugin) {
  std::string out =
      absl::StrCat("(SELECT pg_create_logical_replication_slot('", slot, "', '",
                   plugin.name, "'); postgres.create_slot is false");
  if (!plugin.publication.empty()) {
    absl::StrAppend(&out, "; it streams publication \"", plugin.publication,
                    "\", which must still exist");
  }
  out.push_back(')');
  return out;
}

std::string LostEventsAndFix(absl::string_view slot, const SlotPlugin& plugin,
                             Lsn last_confirmed, bool can_create,
                             absl::string_view marker_path) {
  const std::string lsn = FormatLsn(last_confirmed);
  // The slot first, then the re-publish: every event committed after the
  // new slot exists is in it, every one before is in the table when
  // republish reads it, so none falls in between.
  std::string out =
      absl::StrCat("events committed after ", lsn, " are in no slot. ");
  if (!can_create) {
    absl::StrAppend(&out, "Create the slot again ",
                    CreateSlotByHand(slot, plugin));
  } else {
    absl::StrAppend(&out, "Start the relay once with --set ",
                    kAcknowledgeSlotLossKey, "=", lsn,
                    " to create the slot anew");
    if (!marker_path.empty()) {
      absl::StrAppend(&out, " (or delete ", marker_path, ")");
    }
  }
  absl::StrAppend(&out,
                  ", then re-publish them from the outbox tables: "
                  "outbox-relay republish --since <a time before the loss> "
                  "(consumers de-duplicate on the id header; "
                  "docs/operations/postgresql-failover.md)");
  return out;
}

bool IsSlotInvalidatedError(absl::string_view server_message) {
  return absl::StrContains(server_message,
                           "can no longer get changes from replication slot") ||
         absl::StrContains(server_message,
                           "can no longer access replication slot") ||
         absl::StrContains(server_message, "This slot has been invalidated") ||
         (absl::StrContains(server_message, "requested WAL segment") &&
          absl::StrContains(server_message, "has already been removed"));
}

namespace {

// What made the server invalidate a slot, by invalidation_reason.
std::string InvalidationCause(absl::string_view reason) {
  if (reason.empty() || reason == "wal_removed") {
    return "the server removed WAL it still needed (max_slot_wal_keep_size)";
  }
  if (reason == "idle_timeout") {
    return "nobody streamed from it for longer than "
           "idle_replication_slot_timeout, so every relay instance was down "
           "that long (raise the setting above postgres.expected_outage_s, or "
           "set it to 0; docs/operations/runbooks.md#slot-idle-timeout)";
  }
  if (reason == "rows_removed") {
    return "the server removed catalog rows it still needed (on a standby: "
           "hot_standby_feedback off or no physical slot on the primary)";
  }
  if (reason == "wal_level_insufficient") {
    return "the primary's wal_level fell below logical";
  }
  return absl::StrCat("invalidation_reason ", reason);
}

}  // namespace

std::string SlotInvalidatedMessage(absl::string_view slot,
                                   const SlotPlugin& plugin, Lsn last_confirmed,
                                   bool can_create, absl::string_view why,
                                   absl::string_view reason) {
  return absl::StrCat(
      "replication slot \"", slot,
      "\" was invalidated: ", InvalidationCause(reason), " [", why,
      "]. Its last confirmed LSN is ", FormatLsn(last_confirmed),
      ": drop it (SELECT pg_drop_replication_slot('", slot, "')); ",
      LostEventsAndFix(slot, plugin, last_confirmed, can_create, ""));
}

}  // namespace outbox
