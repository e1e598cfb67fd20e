// SlotMarker: what the relay remembers of its replication slot, so that a
// slot that disappeared (dropped by hand, not carried over by a failover,
// invalidated and dropped) is never silently created anew. A new slot
// starts at the current WAL position: the events committed after the old
// slot's last confirmed position would then be in no slot, lost without a
// word.
//
// LibpqReplicationStream consults it:
//   - Connect(), the slot is missing and postgres.create_slot is on:
//     CheckCreate() decides, before creating it; OK means this is a genuine
//     first run, anything else is returned from Connect() as is
//     (FailedPrecondition, one line naming the lost range and the fix);
//   - Start(), once START_REPLICATION succeeded (this connection holds the
//     slot, found or just created): Record() with the slot's confirmed
//     position. Only the slot's holder writes a shared marker: a standby
//     (the slot held by another instance), or an instance whose
//     START_REPLICATION failed, writes none, so one instance at a time
//     writes it;
//   - Connect() or Start(), the slot held by another process: Seen(),
//     remembered, and written only to a store of this instance's own (not
//     shared());
//   - a slot found invalidated (Connect(): wal_status lost; Start(): the
//     server's refusal), and not held by another process: Record() with the
//     position the refusal names (no one can hold it any more), so that
//     postgres.acknowledge_slot_loss=<that LSN> matches the marker once the
//     slot is dropped.
// Implementations decide how they remember (StoredSlotMarker: a marker file or
// a Kafka record, plus the process's memory). Threading: as the implementation
// says.
#ifndef OUTBOX_PG_SLOT_MARKER_H_
#define OUTBOX_PG_SLOT_MARKER_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace outbox {

struct ServerInfo;

class SlotMarker {
 public:
  virtual ~SlotMarker() = default;

  // OK if the missing slot may be created on `server`.
  virtual absl::Status CheckCreate(const ServerInfo& server) = 0;
  // The slot exists on `server` at server.slot_confirmed_flush. Non-OK
  // fails Connect() (the marker could not be kept).
  virtual absl::Status Record(const ServerInfo& server) = 0;
  // The slot exists on `server`, held by another process (this instance is
  // a standby). Remembered, so that a standby which takes over after the
  // slot was dropped refuses to create it; and written when the store is
  // this instance's own (a file marker per pod), so that the standby
  // restarted or rescheduled still refuses. Non-OK fails the call that
  // saw the slot, as Record() does (the marker could not be kept).
  virtual absl::Status Seen(const ServerInfo& server) = 0;
};

// Where StoredSlotMarker (relay/stored_slot_marker.h) keeps a slot's marker
// text: FileSlotMarkerStore (relay/stored_slot_marker.h), KafkaSlotMarkerStore
// (kafka/state_topic.h). Threading: StoredSlotMarker serializes every call.
class SlotMarkerStore {
 public:
  virtual ~SlotMarkerStore() = default;
  // The marker's text; nullopt when there is none. `system_id` selects it
  // when keyed_by_system(), else is ignored. Unavailable: try again later.
  virtual absl::StatusOr<std::optional<std::string>> Load(
      const std::string& system_id) = 0;
  virtual absl::Status Save(const std::string& system_id,
                            const std::string& text) = 0;
  // Whether Load() needs the server's system identifier (then the marker is
  // read at the first CheckCreate()/Record(), not at Open()): the Kafka
  // store reads an older relay's marker, keyed by it, when its own key has
  // none.
  virtual bool keyed_by_system() const = 0;
  // Whether every instance of the relay keeps the same marker (the Kafka
  // store: one record per postgres.slot_marker_id, shared by an HA pair),
  // or each has its own (a file on its own disk). Only the slot's holder
  // writes a shared marker; a standby writes its own too (Seen()).
  virtual bool shared() const = 0;
  // For messages: "/var/lib/outbox-relay/outbox_relay.slot", "record
  // <key> of Kafka topic <topic>".
  virtual std::string where(const std::string& system_id) const = 0;
};

}  // namespace outbox

#endif  // OUTBOX_PG_SLOT_MARKER_H_
