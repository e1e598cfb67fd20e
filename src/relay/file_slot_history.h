// FileSlotHistory: outbox-relay's SlotHistory (pg/slot_history.h): a marker
// file per slot in a state directory, plus this process's memory, so a slot
// that disappeared is never silently created anew.
//
// The marker <state_dir>/<slot>.slot records the slot, the server's system
// identifier, the database, the slot's last confirmed LSN, and the timeline
// and host:port of the server it was last recorded on (markers without them,
// from older relays, still read). It is written
// when the relay first finds or creates the slot (Record()), and again when
// Confirmed() reports a new position (the slot monitor, every
// kSlotMonitorInterval), always atomically: a temporary file, fsync,
// rename, fsync of the directory.
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
// exists again) or it is deleted.
//
// Threading: thread safe (the supervisor calls CheckCreate()/Record(), the
// slot monitor thread Confirmed()).
#ifndef OUTBOX_RELAY_FILE_SLOT_HISTORY_H_
#define OUTBOX_RELAY_FILE_SLOT_HISTORY_H_

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "outbox/lsn.h"
#include "pg/slot_history.h"
#include "relay/server_change.h"

namespace outbox {

class FileSlotHistory final : public SlotHistory {
 public:
  // Creates `state_dir` (mode 0700, parents too) when missing and reads the
  // marker of `slot` if there is one. `acknowledged_loss`: kInvalidLsn, or
  // the LSN of postgres.acknowledge_slot_loss. FailedPrecondition when the
  // directory cannot be created or written.
  static absl::StatusOr<std::unique_ptr<FileSlotHistory>> Open(
      const std::string& state_dir, const std::string& slot,
      Lsn acknowledged_loss);

  // postgres.state_dir's default: $XDG_STATE_HOME/outbox-relay, else
  // $HOME/.local/state/outbox-relay. FailedPrecondition when neither
  // variable is set.
  static absl::StatusOr<std::string> DefaultStateDir();

  absl::Status CheckCreate(const ServerInfo& server) override;
  absl::Status Record(const ServerInfo& server) override;

  // The slot's confirmed position as the server reports it; rewrites the
  // marker when it moved. Ignored until Record() was called. An error only
  // means the marker kept its older position (the caller logs it).
  absl::Status Confirmed(Lsn confirmed);

  const std::string& path() const { return path_; }

  // The server the marker recorded when Open() read it, for the supervisor's
  // first session to compare with (a promotion while the relay was down);
  // nullopt when there was no readable marker or it had no timeline.
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
    std::string unreadable;  // why, when the file could not be read
  };

  FileSlotHistory(std::string slot, std::string dir, Lsn acknowledged_loss)
      : slot_(std::move(slot)),
        dir_(std::move(dir)),
        path_(dir_ + "/" + slot_ + ".slot"),
        acknowledged_loss_(acknowledged_loss) {}
  static Marker Parse(const std::string& text, const std::string& slot);
  absl::Status Write(const Marker& m) const;

  const std::string slot_;
  const std::string dir_;
  const std::string path_;
  const Lsn acknowledged_loss_;
  std::mutex mu_;
  std::optional<Marker> known_ ABSL_GUARDED_BY(mu_);
  std::optional<ServerIdentity> recorded_server_;  // set by Open() only
};

}  // namespace outbox

#endif  // OUTBOX_RELAY_FILE_SLOT_HISTORY_H_
