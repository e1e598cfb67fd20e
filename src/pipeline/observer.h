// PipelineObserver: what the relay's loop (relay/relay.h) tells whoever
// watches it: per loop turn the loop's heartbeat and positions, per
// delivery report the outcome, per change the few things it ignored.
//
// Every method has a no-op default, so a Relay without metrics (most unit
// tests) passes none and the loop never asks whether anyone listens.
// RelayMetrics (relay/relay_metrics.h) is the production observer: the
// Prometheus metrics, the health heartbeat and the status page.
//
// Threading: the loop's thread calls everything, at most a few plain adds
// or stores per delivery (implementations buffer and publish in Flush()).
// Times are monotonic microseconds unless named unix.
#ifndef OUTBOX_PIPELINE_OBSERVER_H_
#define OUTBOX_PIPELINE_OBSERVER_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "outbox/lsn.h"

namespace outbox {

class PipelineObserver {
 public:
  virtual ~PipelineObserver() = default;

  // The session holds the slot and streams (true), or is ending (false).
  virtual void SetStreaming(bool /*streaming*/) {}

  // Per loop turn, and per wait for room in the producer's queue: the loop
  // is alive at `now_us`.
  virtual void Heartbeat(int64_t /*now_us*/) {}
  // Once per loop turn that read XLogData: the stream delivered.
  virtual void OnStreamData(int64_t /*now_us*/) {}
  // Per loop turn: refresh the heartbeat-age gauge, publish what the
  // per-delivery calls buffered, and the positions.
  virtual void RefreshHeartbeatAge(int64_t /*now_us*/) {}
  virtual void Flush() {}
  virtual void SetPosition(Lsn /*received*/, Lsn /*confirmed*/,
                           int64_t /*inflight_events*/,
                           int64_t /*inflight_bytes*/, double /*lag_seconds*/) {
  }
  virtual void SetTrackedEvents(int64_t /*events*/) {}

  // Per delivery report: delivered to `topic` (a dead letter also counts
  // OnDeadLettered()), `seconds` since its transaction committed (< 0:
  // unknown); or failed.
  virtual void OnDelivered(absl::string_view /*topic*/,
                           int64_t /*value_bytes*/) {}
  virtual void ObserveLatency(double /*seconds*/) {}
  // Per event read: `seconds` from its transaction's commit to the relay
  // reading the transaction's Begin (< 0: unknown).
  virtual void ObserveReceiveLatency(double /*seconds*/) {}
  virtual void OnDeadLettered() {}
  virtual void OnDeliveryError() {}

  // Per change: a non-transactional logical message under the outbox
  // prefix, an UPDATE of an outbox row (on_update warn|error), one of this
  // relay's heartbeats back through the slot after `round_trip_s`.
  virtual void OnMessageIgnored() {}
  virtual void OnUpdateIgnored() {}
  // An event an operator's skip or advance named, dropped.
  virtual void OnSkippedByOperator() {}
  virtual void OnHeartbeatReturned(double /*round_trip_s*/,
                                   int64_t /*now_us*/) {}
};

}  // namespace outbox

#endif  // OUTBOX_PIPELINE_OBSERVER_H_
