// Heartbeat: the relay's own logical decoding message, emitted over a
// normal connection every postgres.heartbeat_interval_s and timed when the
// walsender sends it back through the slot.
//
//   HeartbeatEmitter thread:  SELECT pg_logical_emit_message(true,
//                               'outbox-relay-heartbeat', '<nonce> <sent>')
//   Relay (stream thread):    the M record with that prefix and nonce ->
//                             RelayMetrics::OnHeartbeatReturned(round trip)
//
// Transactional, so it comes back in commit order, after everything
// committed before it: its round trip is the time the walsender takes to
// deliver, and one that does not come back while nothing else arrives
// either means the walsender stopped delivering (stuck, or SIGSTOPped),
// which /readyz reports (RelayMetrics::heartbeat_problem()). Its commit also
// gives an idle database WAL to confirm, so the slot moves.
//
// The nonce, random per process, tells this relay's heartbeats from those
// of another instance on the same database (a standby relay waiting for the
// slot emits its own) or of any session that writes the prefix: only a
// matching one is timed, and no heartbeat is ever an event.
//
// Threading: the emitter owns its thread and connection; destruction stops
// it, waiting for a statement in progress (at most connect_timeout_s to
// connect).
#ifndef OUTBOX_RELAY_HEARTBEAT_H_
#define OUTBOX_RELAY_HEARTBEAT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "common/stop_signal.h"

namespace outbox {

class PgConnection;
class RelayMetrics;

// The prefix of heartbeat messages; never an outbox prefix.
inline constexpr char kHeartbeatPrefix[] = "outbox-relay-heartbeat";

struct HeartbeatContent {
  uint64_t nonce = 0;
  int64_t sent_unix_us = 0;  // the emitter's wall clock
};

// "<nonce in hex> <sent_unix_us>".
std::string FormatHeartbeatContent(const HeartbeatContent& content);
// False for anything else (any session may write the prefix).
bool ParseHeartbeatContent(absl::string_view text, HeartbeatContent* out);

// A random non-zero nonce for this process.
uint64_t NewHeartbeatNonce();

class HeartbeatEmitter {
 public:
  struct Options {
    std::string conninfo;
    int connect_timeout_s = 10;
    int64_t interval_s = 10;
    uint64_t nonce = 0;
  };
  // Starts emitting at once, then every interval. `metrics` may be null.
  HeartbeatEmitter(Options options, RelayMetrics* metrics);
  HeartbeatEmitter(const HeartbeatEmitter&) = delete;
  HeartbeatEmitter& operator=(const HeartbeatEmitter&) = delete;

 private:
  void Loop(StopSignal& stop);
  void EmitOnce();

  const Options options_;
  RelayMetrics* metrics_;
  std::unique_ptr<PgConnection> conn_;  // emitter thread only
  std::string last_error_;              // emitter thread only
  // Last: starts after everything above, stops before it is destroyed.
  StoppableThread thread_{[this](StopSignal& stop) { Loop(stop); }};
};

}  // namespace outbox

#endif  // OUTBOX_RELAY_HEARTBEAT_H_
