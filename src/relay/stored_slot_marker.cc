#include "relay/stored_slot_marker.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/logging.h"
#include "kafka/state_topic.h"
#include "outbox/status_macros.h"
#include "pg/libpq_replication_stream.h"
#include "pg/slot_loss.h"
#include "relay/slot_monitor_thread.h"

namespace outbox {
namespace {

constexpr char kHeader[] =
    "# outbox-relay streamed from the replication slot below. While this\n"
    "# file exists the relay will not create the slot anew: events committed\n"
    "# after confirmed_lsn would be in no slot "
    "(docs/concepts/slots-and-markers.md).\n";

std::string Errno(absl::string_view what, const std::string& path) {
  return absl::StrCat(what, " ", path, ": ", std::strerror(errno));
}

// Writes all of `data` to `fd`.
bool WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

absl::StatusOr<std::string> DefaultStateDir() {
  const char* xdg = std::getenv("XDG_STATE_HOME");
  if (xdg != nullptr && xdg[0] == '/')
    return absl::StrCat(xdg, "/outbox-relay");
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') {
    return absl::StrCat(home, "/.local/state/outbox-relay");
  }
  return absl::FailedPreconditionError(
      "postgres.state_dir is not set and neither XDG_STATE_HOME nor HOME "
      "is: set postgres.state_dir to a directory that outlives the relay "
      "(it keeps the slot marker)");
}

absl::StatusOr<std::unique_ptr<FileSlotMarkerStore>> FileSlotMarkerStore::Open(
    const std::string& state_dir, const std::string& slot) {
  std::error_code ec;
  const bool created = std::filesystem::create_directories(state_dir, ec);
  if (created && !ec) {  // an existing directory keeps its owner's mode
    std::filesystem::permissions(state_dir, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::replace, ec);
  }
  if (ec || ::access(state_dir.c_str(), W_OK | X_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot use postgres.state_dir ", state_dir,
        " for the slot marker: ", ec ? ec.message() : std::strerror(errno),
        "; set postgres.state_dir to a writable directory that outlives the "
        "relay, or postgres.slot_marker: kafka"));
  }
  return std::unique_ptr<FileSlotMarkerStore>(
      new FileSlotMarkerStore(state_dir, state_dir + "/" + slot + ".slot"));
}

absl::StatusOr<std::optional<std::string>> FileSlotMarkerStore::Load(
    const std::string&) {
  std::ifstream in(path_);
  if (!in.is_open()) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<std::unique_ptr<StoredSlotMarker>> OpenFileSlotMarker(
    const std::string& state_dir, const std::string& slot,
    Lsn acknowledged_loss) {
  absl::StatusOr<std::unique_ptr<FileSlotMarkerStore>> store =
      FileSlotMarkerStore::Open(state_dir, slot);
  if (!store.ok()) return store.status();
  return StoredSlotMarker::Open(std::move(*store), slot, acknowledged_loss);
}

absl::StatusOr<std::unique_ptr<StoredSlotMarker>> StoredSlotMarker::Open(
    std::unique_ptr<SlotMarkerStore> store, const std::string& slot,
    Lsn acknowledged_loss) {
  std::unique_ptr<StoredSlotMarker> h(
      new StoredSlotMarker(std::move(store), slot, acknowledged_loss));
  if (!h->store_->keyed_by_system()) {
    {
      std::lock_guard<std::mutex> store_lock(h->store_mu_);
      if (absl::Status s = h->LoadLocked(""); !s.ok()) return s;
    }
    std::lock_guard<std::mutex> lock(h->mu_);
    if (h->known_.has_value()) {
      const Marker& m = *h->known_;
      if (m.unreadable.empty() && m.timeline > 0) {
        h->recorded_server_ =
            ServerIdentity{m.system_id, m.timeline, m.endpoint};
      }
    }
  }
  return h;
}

absl::Status StoredSlotMarker::LoadLocked(const std::string& system_id) {
  const std::string key = store_->keyed_by_system() ? system_id : "";
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (loaded_for_ == key) return absl::OkStatus();
  }
  // Not under mu_: a Kafka read takes up to kafka.flush_timeout_ms.
  absl::StatusOr<std::optional<std::string>> text = store_->Load(key);
  if (!text.ok()) return text.status();
  std::lock_guard<std::mutex> lock(mu_);
  // Another server's marker replaces what this process knew of the slot
  // only when the store has one for it; the memory of the slot stays.
  if (text->has_value()) {
    known_ = Parse(**text, slot_);
    saved_version_ = ++version_;
    stored_system_id_ = known_->unreadable.empty() ? known_->system_id : "";
  }
  loaded_for_ = key;
  where_ = store_->where(key);
  return absl::OkStatus();
}

std::string StoredSlotMarker::where() const {
  std::lock_guard<std::mutex> lock(mu_);
  return where_.empty() ? store_->where("") : where_;
}

StoredSlotMarker::Marker StoredSlotMarker::Parse(const std::string& text,
                                                 const std::string& slot) {
  Marker m;
  std::string marker_slot;
  std::string lsn;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits('=', 1));
    if (kv.first == "slot") marker_slot = std::string(kv.second);
    if (kv.first == "system_id") m.system_id = std::string(kv.second);
    if (kv.first == "database") m.database = std::string(kv.second);
    if (kv.first == "confirmed_lsn") lsn = std::string(kv.second);
    if (kv.first == "timeline")
      m.timeline = atoi(std::string(kv.second).c_str());
    if (kv.first == "endpoint") m.endpoint = std::string(kv.second);
  }
  absl::StatusOr<Lsn> confirmed = ParseLsn(lsn);
  if (marker_slot != slot) {
    m.unreadable = absl::StrCat("it names slot \"", marker_slot, "\"");
  } else if (m.system_id.empty() || m.database.empty() || !confirmed.ok()) {
    m.unreadable = "system_id, database or confirmed_lsn is missing";
  } else {
    m.confirmed = *confirmed;
  }
  return m;
}

std::string StoredSlotMarker::Format(const Marker& m) const {
  return absl::StrCat(kHeader, "slot=", slot_, "\nsystem_id=", m.system_id,
                      "\ndatabase=", m.database,
                      "\nconfirmed_lsn=", FormatLsn(m.confirmed), "\n",
                      m.timeline > 0
                          ? absl::StrCat("timeline=", m.timeline,
                                         "\nendpoint=", m.endpoint, "\n")
                          : "");
}

absl::Status StoredSlotMarker::WriteLocked() {
  Marker m;
  int64_t version = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!known_.has_value() || saved_version_ == version_) {
      return absl::OkStatus();  // another call saved the newest already
    }
    m = *known_;
    version = version_;
  }
  // Not under mu_: a Kafka flush takes up to kafka.flush_timeout_ms.
  absl::Status s = store_->Save(m.system_id, Format(m));
  if (s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    saved_version_ = std::max(saved_version_, version);
    stored_system_id_ = m.system_id;
  }
  return s;
}

absl::Status FileSlotMarkerStore::Save(const std::string&,
                                       const std::string& text) {
  const std::string tmp = absl::StrCat(path_, ".tmp.", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::FailedPreconditionError(Errno("cannot create", tmp));
  }
  bool ok = WriteAll(fd, text) && ::fsync(fd) == 0;
  std::string error = ok ? "" : Errno("cannot write", tmp);
  ::close(fd);
  if (ok && ::rename(tmp.c_str(), path_.c_str()) != 0) {
    ok = false;
    error = Errno("cannot rename to", path_);
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    return absl::FailedPreconditionError(error);
  }
  // The rename is durable once the directory is.
  int dir = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return absl::OkStatus();
}

absl::Status StoredSlotMarker::CheckCreate(const ServerInfo& server) {
  {
    std::lock_guard<std::mutex> store_lock(store_mu_);
    RETURN_IF_ERROR(LoadLocked(server.system_id));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!known_.has_value()) return absl::OkStatus();  // a genuine first run
  const std::string& path_ = where_;
  const Marker& m = *known_;
  if (!m.unreadable.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "replication slot \"", slot_, "\" does not exist, and its marker ",
        path_, " is unreadable (", m.unreadable,
        "): the relay streamed from that slot before, so it will not create "
        "it anew. Once the events committed since its last confirmed "
        "position are re-published from the outbox table, delete ",
        path_));
  }
  if (acknowledged_loss_ != kInvalidLsn && acknowledged_loss_ == m.confirmed) {
    Log(Severity::kWarn, "creating the replication slot anew",
        {{"slot", slot_},
         {"acknowledged_loss_after", FormatLsn(m.confirmed)},
         {"marker", path_}});
    return absl::OkStatus();
  }
  std::string where =
      m.system_id == server.system_id
          ? absl::StrCat("replication slot \"", slot_,
                         "\" does not exist, but this relay streamed from it "
                         "before (system identifier ",
                         m.system_id, ", database ", m.database,
                         ", last confirmed LSN ", FormatLsn(m.confirmed),
                         ", marker ", path_, ")")
          : absl::StrCat(
                "replication slot \"", slot_,
                "\" does not exist on this server (system identifier ",
                server.system_id, ", database ", server.dbname,
                "), and this relay last streamed from it on another one "
                "(system identifier ",
                m.system_id, ", database ", m.database, ", last confirmed LSN ",
                FormatLsn(m.confirmed), ", marker ", path_,
                "): a restored or rebuilt cluster, or a standby that was not "
                "a physical copy of the old primary");
  std::string ack;
  if (acknowledged_loss_ != kInvalidLsn) {
    ack = absl::StrCat(" (", kAcknowledgeSlotLossKey, " is ",
                       FormatLsn(acknowledged_loss_), ", not ",
                       FormatLsn(m.confirmed), ")");
  }
  return absl::FailedPreconditionError(absl::StrCat(
      where, ": ", LostEventsAndFix(slot_, {}, m.confirmed, true, path_), ack));
}

bool StoredSlotMarker::RememberLocked(Marker m) {
  if (known_.has_value() && known_->unreadable.empty()) {
    // Never backwards on the same server: the slot was read before another
    // writer (or this process's Confirmed()) recorded more.
    if (known_->system_id == m.system_id && known_->confirmed > m.confirmed) {
      m.confirmed = known_->confirmed;
    }
    if (known_->system_id == m.system_id && known_->database == m.database &&
        known_->confirmed == m.confirmed && known_->timeline == m.timeline &&
        known_->endpoint == m.endpoint) {
      return saved_version_ != version_;
    }
    if (known_->system_id != m.system_id) {
      Log(Severity::kWarn,
          "the replication slot exists on another server than the marker "
          "recorded; following it there",
          {{"slot", slot_},
           {"marker_system_id", known_->system_id},
           {"system_id", m.system_id}});
    }
  }
  known_ = std::move(m);  // remembered even if the marker cannot be written
  ++version_;
  return true;
}

StoredSlotMarker::Marker StoredSlotMarker::MarkerOf(const ServerInfo& server) {
  Marker m;
  m.system_id = server.system_id;
  m.database = server.dbname;
  m.confirmed = server.slot_confirmed_flush;
  m.timeline = server.timeline;
  m.endpoint = server.endpoint;
  return m;
}

absl::Status StoredSlotMarker::Record(const ServerInfo& server) {
  Marker m = MarkerOf(server);
  const std::string key = store_->keyed_by_system() ? server.system_id : "";
  std::unique_lock<std::mutex> store_lock(store_mu_, std::try_to_lock);
  if (!store_lock.owns_lock()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (loaded_for_ == key && stored_system_id_ == m.system_id) {
        // The store guards this server's slot already; a write is under
        // way on another thread (up to kafka.flush_timeout_ms while Kafka
        // is away): not waited for, the next call writes this.
        RememberLocked(std::move(m));
        return absl::OkStatus();
      }
    }
    // Not guarded yet (a first run, another server): the marker must be
    // written before the slot is streamed from.
    store_lock.lock();
  }
  RETURN_IF_ERROR(LoadLocked(server.system_id));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!RememberLocked(std::move(m))) return absl::OkStatus();
  }
  absl::Status s = WriteLocked();
  return s.ok() ? s : MarkerNotKept(s);
}

absl::Status StoredSlotMarker::MarkerNotKept(const absl::Status& s) const {
  if (absl::IsUnavailable(s)) return s;  // Kafka unreachable: retried
  return absl::FailedPreconditionError(absl::StrCat(
      "cannot record replication slot \"", slot_,
      "\" in its marker: ", s.message(),
      "; the relay needs the marker to tell a dropped slot from a first "
      "run (postgres.state_dir)"));
}

absl::Status StoredSlotMarker::Seen(const ServerInfo& server) {
  Marker m = MarkerOf(server);
  // A shared marker is the holder's to write: remembered only, and the
  // next Record() (this instance holding the slot) or Confirmed() writes
  // it, since its version is then unsaved. So is anything seen while a
  // write is under way on another thread.
  std::unique_lock<std::mutex> store_lock(store_mu_, std::defer_lock);
  if (store_->shared() || !store_lock.try_lock()) {
    std::lock_guard<std::mutex> lock(mu_);
    RememberLocked(std::move(m));
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(LoadLocked(server.system_id));
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    const bool guarded = stored_system_id_ == m.system_id;
    if (!RememberLocked(std::move(m))) return absl::OkStatus();
    // The store guards this server's slot already: only a newer position,
    // and not more often than the holder writes one.
    if (guarded && seen_written_.has_value() &&
        now - *seen_written_ < kSlotMonitorInterval) {
      return absl::OkStatus();
    }
  }
  absl::Status s = WriteLocked();
  if (!s.ok()) return MarkerNotKept(s);
  std::lock_guard<std::mutex> lock(mu_);
  seen_written_ = now;
  return absl::OkStatus();
}

absl::Status StoredSlotMarker::Confirmed(Lsn confirmed) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!known_.has_value() || !known_->unreadable.empty()) {
      return absl::OkStatus();
    }
    // Never backwards: an older position (read before a newer one was
    // recorded) keeps the newer.
    if (confirmed > known_->confirmed) {
      known_->confirmed = confirmed;
      ++version_;
    } else if (saved_version_ == version_) {
      return absl::OkStatus();
    }
  }
  // A write under way on another thread (up to kafka.flush_timeout_ms while
  // Kafka is away) is not waited for: the next call writes this position.
  std::unique_lock<std::mutex> store_lock(store_mu_, std::try_to_lock);
  if (!store_lock.owns_lock()) return absl::OkStatus();
  return WriteLocked();
}

absl::StatusOr<std::unique_ptr<StoredSlotMarker>> OpenSlotMarker(
    const Config& config, const KafkaOptions& kafka) {
  Lsn acknowledged = kInvalidLsn;
  if (!config.postgres.acknowledge_slot_loss.empty()) {
    ASSIGN_OR_RETURN(acknowledged,
                     ParseLsn(config.postgres.acknowledge_slot_loss));
  }
  if (config.postgres.slot_marker == SlotMarkerBackend::kKafka) {
    return StoredSlotMarker::Open(
        std::make_unique<KafkaSlotMarkerStore>(
            kafka, config.kafka.state_topic, config.postgres.slot_marker_id,
            config.postgres.slot,
            static_cast<int>(config.kafka.flush_timeout_ms),
            config.kafka.internal_topics),
        config.postgres.slot, acknowledged);
  }
  std::string dir = config.postgres.state_dir;
  if (dir.empty()) {
    ASSIGN_OR_RETURN(dir, DefaultStateDir());
  }
  return OpenFileSlotMarker(dir, config.postgres.slot, acknowledged);
}

}  // namespace outbox
