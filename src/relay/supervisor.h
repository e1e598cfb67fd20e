// Supervisor: runs replication sessions for outbox-relay as a small state
// machine (daemon/lifecycle.h): standby (trying to take the slot), active
// (a session streams), draining (the session ends: final flush and status),
// stopped; the role it is in is what the metrics, probes and status page
// report. It decides what each error means (STYLE.md rule 5):
//   Unavailable / Internal / Cancelled  back to standby and retry: every
//                     postgres.standby_retry_ms while another instance holds
//                     the slot, else with exponential backoff (server down,
//                     connection dropped, fatal producer error: a fresh
//                     producer and stream restart from the slot's confirmed
//                     position)
//   FailedPrecondition  exit kExitPrecondition with the one-line reason
//                     (also a missing slot the relay streamed from
//                     before, see SlotMarker, and a slot the server
//                     invalidated)
//   PermissionDenied / NotFound  Kafka refused a topic (a missing ACL, a
//                     topic that does not exist): log it once, set
//                     outbox_relay_kafka_blocked and the status page's
//                     last error, retry with growing backoff (after
//                     creating the topic, under kafka.topic_creation)
//   InvalidArgument   a poison row under on_invalid=halt: kExitHalted
//   DataLoss          an undecodable stream record or a malformed
//                     replication message: kExitStream
// With a RelayMetrics, each session's Relay updates it, the supervisor counts
// reconnects and keeps the health heartbeat turning between sessions, and a
// background thread queries the slot's WAL retention every
// kSlotMonitorInterval over a normal libpq connection (SlotMonitor); the
// same thread moves the slot marker's confirmed position.
// Threading: RunRelay() runs on the calling thread (plus the slot monitor
// thread it starts and joins); `stop` may be set from a signal handler.
#ifndef OUTBOX_RELAY_SUPERVISOR_H_
#define OUTBOX_RELAY_SUPERVISOR_H_

#include <atomic>
#include <chrono>

#include "config/config.h"
#include "daemon/exit_code.h"
#include "kafka/rdkafka_sink.h"
#include "relay/relay_metrics.h"

namespace outbox {

inline constexpr std::chrono::seconds kSlotMonitorInterval{10};

// The producer's options for outbox-relay: config.kafka, plus
// enable.gapless.guarantee=true under on_invalid: halt (unless set), so a
// record the broker refuses stops the producer before anything after it.
KafkaOptions RelayKafkaOptions(const Config& config);

// `metrics` may be null (no metrics, no slot monitor).
int RunRelay(const Config& config, const std::atomic<bool>& stop,
             RelayMetrics* metrics = nullptr);

}  // namespace outbox

#endif  // OUTBOX_RELAY_SUPERVISOR_H_
