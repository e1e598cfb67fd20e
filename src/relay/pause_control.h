// PauseControl: outbox-relay's paused state (docs/operations/pause.md),
// shared by the two instances of a pair through the control record
// "<pair>/<slot>/pause" in kafka.state_topic (kafka/control_records.h).
//
//   Request()  POST /pause and /resume (http.control.enabled): writes the
//              record (acks=all) and, once Kafka has it, applies it here;
//              Kafka unreachable: Unavailable, nothing changes.
//   Refresh()  reads the record and applies it: at every session start (a
//              standby taking over starts paused when the pair is) and
//              every kSlotMonitorInterval on the control's own thread (the
//              active instance applies a pause the other instance wrote).
//   paused()   what the Relay's loop reads each turn (RelayOptions::paused):
//              while set it reads nothing further from the stream.
//
// <pair> is postgres.slot_marker_id when set, else the system identifier
// the first session learns (SetSystemId()); until then Request() is
// Unavailable and nothing is read. No record: not paused. A change is
// logged once ("paused" / "resumed", with who, when and why) and given to
// `on_change` (the outbox_relay_paused gauge).
//
// Threading: thread safe. Kafka I/O is serialized (a refresh never applies
// a record older than a request that completed before it started).
#ifndef OUTBOX_RELAY_PAUSE_CONTROL_H_
#define OUTBOX_RELAY_PAUSE_CONTROL_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "common/stop_signal.h"
#include "config/config.h"
#include "kafka/control_records.h"
#include "kafka/rdkafka_sink.h"

namespace outbox {

class PauseControl {
 public:
  // `config` must outlive this.
  PauseControl(const Config& config,
               std::function<void(bool paused)> on_change = nullptr);
  ~PauseControl();

  // The supervisor: the producer options (brokers, TLS, SASL), once, before
  // the first session; starts the re-reading thread.
  void Attach(const KafkaOptions& kafka);
  // The supervisor: the server's system identifier, at each session start.
  void SetSystemId(const std::string& system_id);

  // Reads the record and applies it; Unavailable when Kafka cannot be read
  // (the state stays what it was) or the pair is not known yet.
  absl::Status Refresh();
  // Writes {"paused":paused,"by":by,"at":now,"reason":reason} and applies
  // it. Unavailable (one line) when the record cannot be written.
  absl::Status Request(bool paused, const std::string& by,
                       const std::string& reason);

  bool paused() const { return paused_.load(std::memory_order_relaxed); }
  const std::atomic<bool>* paused_flag() const { return &paused_; }
  // The record applied last (paused false, the rest empty, before any).
  PauseRecord current() const;

 private:
  // The records of the pair; null while the pair or Kafka is not known.
  ControlRecords* Records() ABSL_EXCLUSIVE_LOCKS_REQUIRED(io_mu_);
  void Apply(const PauseRecord& r);

  const Config& config_;
  const std::function<void(bool)> on_change_;
  std::atomic<bool> paused_{false};

  std::mutex io_mu_;  // serializes Kafka I/O and the apply after it
  std::unique_ptr<KafkaOptions> kafka_ ABSL_GUARDED_BY(io_mu_);
  std::string pair_ ABSL_GUARDED_BY(io_mu_);
  std::unique_ptr<ControlRecords> records_ ABSL_GUARDED_BY(io_mu_);

  mutable std::mutex mu_;
  PauseRecord current_ ABSL_GUARDED_BY(mu_);
  std::string last_error_ ABSL_GUARDED_BY(mu_);  // logged once each

  std::unique_ptr<StoppableThread> thread_;  // last: stopped first
};

}  // namespace outbox

#endif  // OUTBOX_RELAY_PAUSE_CONTROL_H_
