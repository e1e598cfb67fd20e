// Lifecycle: the states a daemon's sessions move through, in the one place
// outbox-relay's and outbox-poller's supervisors share, and the waits
// between them:
//
//             +--------- transient error: RetryAfter() ---------+
//             v                                                  |
//   start -> standby --Activate()--> active --Drain()--> draining
//             |                                               |
//             +------- stop, or an error to exit on: Stop() --+--> stopped
//
//   standby   connecting, or waiting: another instance holds the slot
//             (retried every postgres.standby_retry_ms, a healthy standby),
//             or PostgreSQL / Kafka is unreachable (retried with the
//             reconnect backoff, doubling up to its maximum)
//   active    the session holds the slot (or connection) and streams
//   draining  the session is ending: flushing Kafka, the final status
//   stopped   the supervisor is returning its exit code
//
// Every transition sets the DaemonRole the metrics, probes and status page
// read, so what they report is the state the supervisor is in.
//
// Threading: the supervisor's thread only (the DaemonRole it sets is safe
// to read anywhere); `stop` may be set from a signal handler.
#ifndef OUTBOX_DAEMON_LIFECYCLE_H_
#define OUTBOX_DAEMON_LIFECYCLE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "config/config.h"
#include "daemon/role.h"
#include "outbox/clock.h"

namespace outbox {

class DaemonRole;    // http/daemon_role.h
class DaemonStatus;  // http/daemon_status.h

class Lifecycle {
 public:
  // `role` and `status` may be null (no metrics); `turn`, when set, is
  // called at least every 50 ms while waiting (the health heartbeat: a
  // waiting supervisor is alive). Waits are timed by `clock`. All must
  // outlive this.
  Lifecycle(const PostgresConfig& postgres, const std::atomic<bool>& stop,
            DaemonRole* role, DaemonStatus* status,
            std::function<void()> turn = nullptr,
            const Clock* clock = RealClock());

  Role role() const { return role_; }
  bool stopping() const { return stop_.load(); }

  // standby -> active: the session holds what it needs and streams.
  void Activate();
  // active -> draining: the session is ending (flush, final status).
  void Drain();
  // -> standby, then waits before the next attempt (returns early on stop):
  // postgres.standby_retry_ms when another instance holds the slot
  // (`slot_held_elsewhere`), else the reconnect backoff, doubled for the
  // next time. `waiting_for` ("PostgreSQL", "Kafka") and `why` are logged
  // once per distinct reason. `kafka_state` is the status page's Kafka
  // state meanwhile ("": kNoKafkaProducer, http/daemon_status.h).
  void RetryAfter(absl::string_view waiting_for, const absl::Status& why,
                  bool slot_held_elsewhere = false,
                  absl::string_view kafka_state = {});
  // The session made progress: the next backoff starts from the initial one.
  void Progressed();
  // -> stopped; returns `exit_code`.
  int Stop(int exit_code);
  // RetryAfter()'s wait also ends early when `wake` answers true (a
  // SIGHUP or a SessionRestart: daemon/session_restart.h).
  void WakeWhen(std::function<bool()> wake) { wake_ = std::move(wake); }

 private:
  void Become(Role next, bool slot_held_elsewhere = false);
  void Wait(int64_t ms);

  const int64_t backoff_initial_ms_;
  const int64_t backoff_max_ms_;
  const int64_t standby_retry_ms_;
  const std::atomic<bool>& stop_;
  DaemonRole* const daemon_role_;
  DaemonStatus* const status_;
  const std::function<void()> turn_;
  const Clock* const clock_;
  std::function<bool()> wake_;
  Role role_ = Role::kStandby;
  int64_t backoff_ms_;
  std::string last_wait_;  // the reason logged last
};

}  // namespace outbox

#endif  // OUTBOX_DAEMON_LIFECYCLE_H_
