// SlotMonitorThread: queries outbox-relay's replication slot every
// kSlotMonitorInterval on its own thread, over a normal connection (never
// the replication one: a slow query must not stall the relay loop), sets
// the slot gauges (with metrics) and moves the slot marker's confirmed
// position (with a slot marker) while this instance holds the slot: a
// standby never writes the marker another instance keeps. It queries at once
// when a session starts or ends, so the gauges show a new session holding the
// slot without waiting a whole interval.
//
// Errors are counted and logged once per distinct message; the next round
// reconnects. With postgres.failover_slot, while the slot is active (the
// session has set its failover flag), it also checks failover readiness
// every kFailoverCheckInterval (kFailoverRecheckInterval while it finds
// problems): each problem is logged once when it appears, and the gauge
// follows every check.
//
// Threading: its own thread, started by the constructor; destruction stops
// it and waits for a query or connect in progress (at most
// postgres.connect_timeout_s). Time is read from the Clock given.
#ifndef OUTBOX_RELAY_SLOT_MONITOR_THREAD_H_
#define OUTBOX_RELAY_SLOT_MONITOR_THREAD_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/stop_signal.h"
#include "config/config.h"
#include "outbox/clock.h"
#include "pg/slot_monitor.h"
#include "relay/relay_metrics.h"
#include "relay/stored_slot_marker.h"

namespace outbox {

inline constexpr std::chrono::seconds kSlotMonitorInterval{10};

class SlotMonitorThread {
 public:
  // `metrics` and `slot_marker` may each be null; both, `holds_slot` and
  // `clock` must outlive this. `holds_slot`: true while a session of this
  // instance holds the slot (the marker is moved only then).
  SlotMonitorThread(const Config& config, RelayMetrics* metrics,
                    StoredSlotMarker* slot_marker,
                    const std::atomic<bool>* holds_slot,
                    const Clock* clock = RealClock());

 private:
  void Loop(StopSignal& stop);
  void QueryOnce();
  void CheckFailover();
  void Failed(const absl::Status& s,
              absl::string_view what = "cannot query the replication slot");

  const std::string conninfo_;
  const std::string standby_conninfo_;
  const std::string slot_;
  const bool failover_slot_;
  const int connect_timeout_s_;
  RelayMetrics* const metrics_;
  StoredSlotMarker* const slot_marker_;
  const std::atomic<bool>* const holds_slot_;
  const Clock* const clock_;
  std::unique_ptr<SlotMonitor> monitor_;  // monitor thread only
  std::string last_error_;                // monitor thread only
  // Monitor thread only: when to check failover readiness next (Clock
  // microseconds), and the problems the last check logged.
  int64_t next_failover_check_us_ = 0;
  std::vector<std::string> failover_problems_;
  bool failover_unsupported_noted_ = false;
  // Last: starts after everything above, stops before it is destroyed.
  StoppableThread thread_{[this](StopSignal& stop) { Loop(stop); }};
};

}  // namespace outbox

#endif  // OUTBOX_RELAY_SLOT_MONITOR_THREAD_H_
