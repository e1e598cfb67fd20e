// StoredSlotMarker: outbox-relay's SlotMarker (pg/slot_marker.h): a marker per
// slot, kept by a SlotMarkerStore, plus this process's memory, so a slot that
// disappeared is never silently created anew.
//
// The marker records the slot, the server's system identifier, the
// database, the slot's last confirmed LSN, and the timeline and host:port of
// the server it was last recorded on (markers without them, from older
// relays, still read). It is written when the relay first finds or creates
// the slot (Record()), and again when Confirmed() reports a new position
// (the slot monitor, every kSlotMonitorInterval). A standby (the slot held
// by another instance: Seen()) writes a store of its own (the file) too, at
// its first sight of the slot and then at most every kSlotMonitorInterval;
// a shared store (Kafka) only in memory.
//
// Two stores (postgres.slot_marker):
//   file   FileSlotMarkerStore: <state_dir>/<slot>.slot, written atomically (a
//          temporary file, fsync, rename, fsync of the directory); one per
//          instance, on its disk.
//   kafka  KafkaSlotMarkerStore (kafka/state_topic.h): the record keyed
//          "<postgres.slot_marker_id>/<slot>" in the compacted
//          kafka.state_topic, shared by every instance, so an instance needs
//          no disk of its own (a rescheduled pod keeps the guard). It is
//          read when the first session knows the server (a marker of an
//          older relay, keyed by system identifier, needs it).
//
// CheckCreate() allows creating a missing slot only on a genuine first run:
// no marker, and nothing recorded by this process. Otherwise it refuses
// with FailedPrecondition, one line naming the slot, the lost range
// ("events committed after <last confirmed LSN> are in no slot"), and the
// fix: start once with postgres.acknowledge_slot_loss=<that LSN> (it
// matches only that loss: a new slot records a new position) or delete the
// marker, then re-publish those events (`outbox-relay republish`). When the
// server's system identifier differs from the recorded one the refusal names
// both. An unreadable marker refuses too, until Record() rewrites it (the slot
// exists again) or it is deleted. A store that cannot be read (Kafka
// unreachable) makes CheckCreate()/Record() Unavailable: retried.
//
// Threading: thread safe (the supervisor's thread calls CheckCreate() and
// Record() through LibpqReplicationStream::Connect(), the supervisor and the
// slot monitor thread Confirmed()).
#ifndef OUTBOX_RELAY_STORED_SLOT_MARKER_H_
#define OUTBOX_RELAY_STORED_SLOT_MARKER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "config/config.h"
#include "kafka/rdkafka_sink.h"
#include "outbox/lsn.h"
#include "pg/slot_marker.h"
#include "relay/server_change.h"

namespace outbox {

// postgres.slot_marker file.
class FileSlotMarkerStore final : public SlotMarkerStore {
 public:
  // Creates `state_dir` (mode 0700, parents too) when missing.
  // FailedPrecondition when it cannot be created or written.
  static absl::StatusOr<std::unique_ptr<FileSlotMarkerStore>> Open(
      const std::string& state_dir, const std::string& slot);

  absl::StatusOr<std::optional<std::string>> Load(
      const std::string& system_id) override;
  absl::Status Save(const std::string& system_id,
                    const std::string& text) override;
  bool keyed_by_system() const override { return false; }
  bool shared() const override { return false; }
  std::string where(const std::string&) const override { return path_; }

 private:
  FileSlotMarkerStore(std::string dir, std::string path)
      : dir_(std::move(dir)), path_(std::move(path)) {}
  const std::string dir_;
  const std::string path_;
};

// postgres.state_dir's default: $XDG_STATE_HOME/outbox-relay, else
// $HOME/.local/state/outbox-relay. FailedPrecondition when neither
// variable is set.
absl::StatusOr<std::string> DefaultStateDir();

class StoredSlotMarker final : public SlotMarker {
 public:
  // Reads the marker of `slot` now unless the store is read once the server
  // is known (keyed_by_system()). `acknowledged_loss`: kInvalidLsn, or the LSN
  // of postgres.acknowledge_slot_loss. Errors: the store's Load().
  static absl::StatusOr<std::unique_ptr<StoredSlotMarker>> Open(
      std::unique_ptr<SlotMarkerStore> store, const std::string& slot,
      Lsn acknowledged_loss);

  absl::Status CheckCreate(const ServerInfo& server) override;
  absl::Status Record(const ServerInfo& server) override;
  absl::Status Seen(const ServerInfo& server) override;

  // The slot's confirmed position as the server reports it; rewrites the
  // marker when it moved forward. Ignored until Record() was called, and
  // for an older position than the marker's. Does not wait for a write
  // under way on another thread: then the position is remembered and
  // written by the next call. An error only means the marker kept its older
  // position (the caller logs it).
  absl::Status Confirmed(Lsn confirmed);

  // Where the marker is, for logs (the file; the topic and key once known).
  std::string where() const;

  // The server the marker recorded when Open() read it, for the first
  // session to compare with (SessionFactory, relay/session_factory.h: a
  // promotion while the relay was down);
  // nullopt when there was no readable marker, it had no timeline, or the
  // store is read later.
  const std::optional<ServerIdentity>& RecordedServer() const {
    return recorded_server_;
  }

 private:
  struct Marker {
    std::string system_id;
    std::string database;
    Lsn confirmed = kInvalidLsn;
    int timeline = 0;        // 0: not recorded
    std::string endpoint;    // host:port; "" when not recorded
    std::string unreadable;  // why, when the marker could not be read
  };

  StoredSlotMarker(std::unique_ptr<SlotMarkerStore> store, std::string slot,
                   Lsn acknowledged_loss)
      : store_(std::move(store)),
        slot_(std::move(slot)),
        acknowledged_loss_(acknowledged_loss) {}
  // What `server` says of the slot, as a marker.
  static Marker MarkerOf(const ServerInfo& server);
  static Marker Parse(const std::string& text, const std::string& slot);
  std::string Format(const Marker& m) const;
  // Reads the marker of `system_id` unless it was read for it already.
  absl::Status LoadLocked(const std::string& system_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(store_mu_) ABSL_LOCKS_EXCLUDED(mu_);
  // Makes `m` known_ (keeping a newer confirmed LSN of the same server);
  // whether the store is behind known_ then.
  bool RememberLocked(Marker m) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A failed write's status, for Record() and Seen(): Unavailable as is
  // (retried), else FailedPrecondition naming the slot.
  absl::Status MarkerNotKept(const absl::Status& s) const;
  // Writes known_ unless the store has its newest version already.
  absl::Status WriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(store_mu_)
      ABSL_LOCKS_EXCLUDED(mu_);

  const std::unique_ptr<SlotMarkerStore> store_;
  const std::string slot_;
  const Lsn acknowledged_loss_;
  // Serializes the store's calls; taken before mu_, never under it.
  std::mutex store_mu_;
  // Guards what follows; never held across a call of the store.
  mutable std::mutex mu_;
  std::optional<Marker> known_ ABSL_GUARDED_BY(mu_);
  // The system identifier the store was read for ("" for an unkeyed
  // store); nullopt until read.
  std::optional<std::string> loaded_for_ ABSL_GUARDED_BY(mu_);
  std::string where_ ABSL_GUARDED_BY(mu_);
  // known_'s version (each change counts one) and the store's: the store
  // is behind while they differ (a save failed, or is under way).
  int64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t saved_version_ ABSL_GUARDED_BY(mu_) = 0;
  // The system identifier of the readable marker the store holds (read or
  // written); "" when none.
  std::string stored_system_id_ ABSL_GUARDED_BY(mu_);
  // When Seen() last wrote the store; a standby rewrites its own marker
  // for a new position at most every kSlotMonitorInterval, as the
  // holder's slot monitor does.
  std::optional<std::chrono::steady_clock::time_point> seen_written_
      ABSL_GUARDED_BY(mu_);
  std::optional<ServerIdentity> recorded_server_;  // set by Open() only
};

// The file store and its marker, as postgres.slot_marker file opens them.
absl::StatusOr<std::unique_ptr<StoredSlotMarker>> OpenFileSlotMarker(
    const std::string& state_dir, const std::string& slot,
    Lsn acknowledged_loss);

// The slot marker where postgres.slot_marker keeps it (a file under
// postgres.state_dir, or the Kafka state topic over `kafka`), knowing
// postgres.acknowledge_slot_loss. Errors: the store's.
absl::StatusOr<std::unique_ptr<StoredSlotMarker>> OpenSlotMarker(
    const Config& config, const KafkaOptions& kafka);

}  // namespace outbox

#endif  // OUTBOX_RELAY_STORED_SLOT_MARKER_H_
