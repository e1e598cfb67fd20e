// The words for a replication slot that lost events: one place, so every
// refusal (a dropped slot, an invalidated one) names the lost range and the
// fix the same way. Pure functions; thread safe.
#ifndef OUTBOX_PG_SLOT_LOSS_H_
#define OUTBOX_PG_SLOT_LOSS_H_

#include <string>

#include "absl/strings/string_view.h"
#include "outbox/lsn.h"

namespace outbox {

// The config key that lets the relay create a slot anew after a loss, set
// to the last confirmed LSN the refusal named.
inline constexpr char kAcknowledgeSlotLossKey[] =
    "postgres.acknowledge_slot_loss";

// What a slot streams with, for the words of a fix: the output plugin's
// name and, for pgoutput, the publication (empty otherwise).
struct SlotPlugin {
  absl::string_view name;
  absl::string_view publication;
};

// "(SELECT pg_create_logical_replication_slot('<slot>', '<plugin>');
// postgres.create_slot is false[; it streams publication "<p>", which must
// still exist])": how to create the slot by hand, for every refusal that
// needs it (a lost slot, a missing one under postgres.create_slot: false).
std::string CreateSlotByHand(absl::string_view slot, const SlotPlugin& plugin);

// "events committed after <lsn> are in no slot. <How to get a new slot>,
// then re-publish them: outbox-relay republish --since ...". `can_create`:
// the relay may create slots (postgres.create_slot); then the way to a new
// slot is a restart with kAcknowledgeSlotLossKey=<lsn>, or deleting
// `marker_path` when not empty. Otherwise it is creating the slot by hand,
// with `plugin` (and naming its publication).
// The slot comes first so that no event falls between the two.
std::string LostEventsAndFix(absl::string_view slot, const SlotPlugin& plugin,
                             Lsn last_confirmed, bool can_create,
                             absl::string_view marker_path);

// True if a server error says the slot was invalidated or its WAL removed:
// "can no longer get changes from replication slot", "can no longer access
// replication slot" (18), "requested WAL segment ... has already been
// removed", "This slot has been invalidated".
bool IsSlotInvalidatedError(absl::string_view server_message);

// The refusal for an invalidated slot: names it, its last confirmed LSN,
// the cause, the evidence (`why`: wal_status or the server's words), and
// what to do: drop it, get a new slot, re-publish. `reason` is
// pg_replication_slots.invalidation_reason (PostgreSQL 17+): wal_removed
// (or "", all 16 and older can tell), rows_removed,
// wal_level_insufficient, or 18's idle_timeout (nobody streamed for
// idle_replication_slot_timeout), each with its own words.
std::string SlotInvalidatedMessage(absl::string_view slot,
                                   const SlotPlugin& plugin, Lsn last_confirmed,
                                   bool can_create, absl::string_view why,
                                   absl::string_view reason = "");

}  // namespace outbox

#endif  // OUTBOX_PG_SLOT_LOSS_H_
