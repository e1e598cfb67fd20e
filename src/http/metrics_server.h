// MetricsServer: the HTTP endpoint both relays serve (loopback by default).
//
//   GET /          the status page (http/status_page.h): one self-contained
//                  HTML page that polls /status.json and draws it
//   GET /status.json  the owner's StatusSnapshot as JSON (ToJson)
//   GET /metrics   Prometheus text format of the registry (prometheus-cpp's
//                  TextSerializer; never hand-formatted)
//   GET /healthz   200 while the owner's loop is turning (alive)
//   GET /readyz    200 while the owner is healthy in its role: active and
//                  producing, or a healthy standby (outbox-relay: another
//                  instance holds the slot; docs/operations/
//                  high-availability.md)
//   GET /activez   200 only while active and streaming (the instance that
//                  holds the slot); 503 otherwise
//   POST /pause, POST /resume  with an HttpControl only (outbox-relay's
//                  http.control.enabled; 404 without): `Authorization:
//                  Bearer <token>` required (401 without, 403 for another
//                  token, compared in constant time); `by` from the
//                  X-Outbox-By header or the by parameter, `reason` from the
//                  reason parameter (query or form body). The answer is
//                  HttpControl::handle's JSON (200), or {"error": ...} with
//                  503 when it fails. The token is never logged or served.
//
// Threading: the server answers on its own threads (cpp-httplib). It only
// reads the registry (prometheus-cpp metrics are thread safe) and calls the
// health and status callbacks, which must be thread safe (read atomics,
// take locks).
#ifndef OUTBOX_HTTP_METRICS_SERVER_H_
#define OUTBOX_HTTP_METRICS_SERVER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "http/status_snapshot.h"

namespace prometheus {
class Registry;
}

namespace outbox {

struct HealthState {
  bool alive = false;   // /healthz
  bool ready = false;   // /readyz
  bool active = false;  // /activez
  std::string role;     // http/daemon_role.h; "" when the owner has none
  std::string detail;   // body text, e.g. "holding slot outbox_relay"
};

// The control endpoints (POST /pause, /resume).
struct HttpControl {
  std::string token;  // the bearer token; empty: no control endpoints
  // action "pause" or "resume": the new state as a JSON object, or the
  // error (one line) that kept it from changing.
  std::function<absl::StatusOr<std::string>(const std::string& action,
                                            const std::string& by,
                                            const std::string& reason)>
      handle;
};

class MetricsServer {
 public:
  // Binds `listen` ("host:port"; port 0 picks a free one) and starts serving.
  // InvalidArgument for a malformed address, Unavailable if it cannot bind.
  // `status` builds the snapshot /status.json serves; without one, / and
  // /status.json are 404.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      const std::string& listen, std::shared_ptr<prometheus::Registry> registry,
      std::function<HealthState()> health,
      std::function<StatusSnapshot()> status = nullptr,
      HttpControl control = {});
  ~MetricsServer();  // stops and joins the server thread

  int port() const;  // the bound port

 private:
  struct Impl;
  explicit MetricsServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace outbox

#endif  // OUTBOX_HTTP_METRICS_SERVER_H_
