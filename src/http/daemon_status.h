// DaemonStatus: the few facts the status page shows that no metric holds:
// the PostgreSQL and Kafka connection states, as short phrases, and the last
// error a daemon met, with its time.
//
// Threading: safe for concurrent use. The daemon's supervisor, loop and
// monitor threads set; the HTTP server's threads read through Fill().
#ifndef OUTBOX_HTTP_DAEMON_STATUS_H_
#define OUTBOX_HTTP_DAEMON_STATUS_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "http/status_snapshot.h"
#include "outbox/clock.h"

namespace outbox {

// The phrases both daemons use.
inline constexpr char kNoKafkaProducer[] = "no producer (no session)";
// "no producer: <why>": Kafka would not start one.
std::string NoKafkaProducer(const absl::Status& why);
std::string WaitingToReconnect(int64_t backoff_ms);  // "... (retry in N ms)"

class DaemonStatus {
 public:
  // `clock` (not owned, must outlive this) dates the errors.
  explicit DaemonStatus(const Clock* clock = RealClock()) : clock_(clock) {}

  // E.g. "connecting", "streaming from slot s", "waiting to reconnect";
  // "producing to host:9092", "no producer (no session)".
  void SetStates(absl::string_view postgres, absl::string_view kafka);
  // The Kafka state alone, e.g. as the producer sees its brokers ("all
  // brokers down: ...", then "producing to host:9092" again).
  void SetKafkaState(absl::string_view kafka);
  // A listener for KafkaOptions::on_connection_state: sets the Kafka state,
  // and the last error ("kafka: <state>") when the brokers are unreachable.
  // This must outlive the producer it is given to.
  std::function<void(bool reachable, absl::string_view state)>
  KafkaStateListener();
  // The newest error wins: "what: message" ("message" when `what` is
  // empty), dated now.
  void SetLastError(absl::string_view what, const absl::Status& error);

  // Sets the snapshot's postgres_state, kafka_state and last_error fields
  // from what was set; fields never set stay unset.
  void Fill(StatusSnapshot* snapshot) const;

 private:
  const Clock* const clock_;
  mutable std::mutex mu_;
  std::string postgres_ ABSL_GUARDED_BY(mu_);
  std::string kafka_ ABSL_GUARDED_BY(mu_);
  std::string last_error_ ABSL_GUARDED_BY(mu_);
  int64_t last_error_unix_ms_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace outbox

#endif  // OUTBOX_HTTP_DAEMON_STATUS_H_
