#include "http/metrics_server.h"

#include <httplib.h>

#include <chrono>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "http/status_page.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace outbox {
namespace {

constexpr char kMetricsContentType[] =
    "text/plain; version=0.0.4; charset=utf-8";
constexpr int kServerThreads = 2;

// Splits "host:port" ("[::1]:9187" for IPv6).
absl::Status SplitListen(const std::string& listen, std::string* host,
                         int* port) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(absl::string_view(listen).substr(colon + 1), port) ||
      *port < 0 || *port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("http.listen \"", listen, "\" is not host:port"));
  }
  *host = listen.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  return absl::OkStatus();
}

void ServeHealth(bool ok, const std::string& detail, httplib::Response& res) {
  res.status = ok ? 200 : 503;
  res.set_content(absl::StrCat(ok ? "ok" : "unavailable",
                               detail.empty() ? "" : ": ", detail, "\n"),
                  "text/plain; charset=utf-8");
}

// Equal without an early exit on the first difference: the time taken
// tells nothing of how much of the token a guess got right.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < b.size(); ++i) {
    const unsigned char x = a.empty() ? 0 : a[i % a.size()];
    diff |= x ^ static_cast<unsigned char>(b[i]);
  }
  return diff == 0;
}

void ServeJson(int status, const std::string& body, httplib::Response& res) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(body + "\n", "application/json; charset=utf-8");
}

void ServeError(int status, absl::string_view message, httplib::Response& res) {
  std::string body = "{\"error\":";
  AppendJsonString(&body, message);
  body += "}";
  ServeJson(status, body, res);
}

// POST /pause and /resume: authenticates, then hands the request on.
void ServeControl(const HttpControl& control, const std::string& action,
                  const httplib::Request& req, httplib::Response& res) {
  const std::string auth = req.get_header_value("Authorization");
  constexpr absl::string_view kBearer = "Bearer ";
  if (!absl::StartsWith(auth, kBearer)) {
    res.set_header("WWW-Authenticate", "Bearer");
    return ServeError(
        401, "an Authorization: Bearer <token> header is required", res);
  }
  if (!ConstantTimeEquals(absl::string_view(auth).substr(kBearer.size()),
                          control.token)) {
    Log(Severity::kWarn, "refused a control request: wrong token",
        {{"action", action}, {"remote", req.remote_addr}});
    return ServeError(403, "wrong token", res);
  }
  std::string by = req.get_header_value("X-Outbox-By");
  if (by.empty()) by = req.get_param_value("by");
  if (by.empty()) by = absl::StrCat("unnamed (", req.remote_addr, ")");
  const std::string reason = req.get_param_value("reason");
  absl::StatusOr<std::string> state = control.handle(action, by, reason);
  if (!state.ok()) {
    Log(Severity::kWarn, absl::StrCat("cannot ", action),
        {{"by", by}, {"error", std::string(state.status().message())}});
    return ServeError(503, state.status().message(), res);
  }
  ServeJson(200, *state, res);
}

}  // namespace

struct MetricsServer::Impl {
  httplib::Server server;
  std::thread thread;
  int port = 0;
  std::shared_ptr<prometheus::Registry> registry;
  std::function<HealthState()> health;
  std::function<StatusSnapshot()> status;
  HttpControl control;
};

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& listen, std::shared_ptr<prometheus::Registry> registry,
    std::function<HealthState()> health, std::function<StatusSnapshot()> status,
    HttpControl control) {
  std::string host;
  int port = 0;
  if (absl::Status s = SplitListen(listen, &host, &port); !s.ok()) return s;
  auto impl = std::make_unique<Impl>();
  impl->registry = std::move(registry);
  impl->health = std::move(health);
  impl->status = std::move(status);
  impl->control = std::move(control);
  Impl* p = impl.get();
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, which would let
  // a second process bind the same port and get half the scrapes.
  p->server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  p->server.new_task_queue = [] {
    return new httplib::ThreadPool(kServerThreads);
  };
  p->server.Get("/metrics",
                [p](const httplib::Request&, httplib::Response& res) {
                  prometheus::TextSerializer serializer;
                  res.set_content(serializer.Serialize(p->registry->Collect()),
                                  kMetricsContentType);
                });
  p->server.Get("/healthz",
                [p](const httplib::Request&, httplib::Response& res) {
                  HealthState h = p->health();
                  ServeHealth(h.alive, h.detail, res);
                });
  p->server.Get("/readyz",
                [p](const httplib::Request&, httplib::Response& res) {
                  HealthState h = p->health();
                  ServeHealth(h.alive && h.ready, h.detail, res);
                });
  p->server.Get("/activez",
                [p](const httplib::Request&, httplib::Response& res) {
                  HealthState h = p->health();
                  ServeHealth(h.alive && h.active, h.detail, res);
                });
  if (p->status) {
    p->server.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(kStatusPageHtml, "text/html; charset=utf-8");
    });
    p->server.Get(
        "/status.json", [p](const httplib::Request&, httplib::Response& res) {
          StatusSnapshot snapshot = p->status();
          HealthState h = p->health();
          snapshot.alive = h.alive;
          snapshot.ready = h.alive && h.ready;
          snapshot.health_detail = h.detail;
          if (!h.role.empty()) {
            snapshot.role = h.role;
            snapshot.active = h.alive && h.active;
          }
          res.set_header("Cache-Control", "no-store");
          res.set_content(ToJson(snapshot), "application/json; charset=utf-8");
        });
  }
  const bool controlled = !p->control.token.empty() && p->control.handle;
  if (controlled) {
    for (const char* action : {"pause", "resume"}) {
      p->server.Post(
          absl::StrCat("/", action),
          [p, action](const httplib::Request& req, httplib::Response& res) {
            ServeControl(p->control, action, req, res);
          });
    }
  }
  // cpp-httplib answers 400 to a POST without a body (no Content-Length,
  // not chunked) before routing it, and `curl -X POST` sends none: such a
  // control request is served here, before that check (404 without an
  // HttpControl, as with a body).
  p->server.set_pre_routing_handler(
      [p, controlled](const httplib::Request& req, httplib::Response& res) {
        using Handled = httplib::Server::HandlerResponse;
        if (req.method != "POST" || req.has_header("Content-Length") ||
            req.has_header("Transfer-Encoding") ||
            (req.path != "/pause" && req.path != "/resume")) {
          return Handled::Unhandled;
        }
        if (!controlled) {
          res.status = 404;
        } else {
          ServeControl(p->control, req.path.substr(1), req, res);
        }
        return Handled::Handled;
      });
  if (port == 0) {
    p->port = p->server.bind_to_any_port(host);
    if (p->port < 0) p->port = 0;
  } else if (p->server.bind_to_port(host, port)) {
    p->port = port;
  }
  if (p->port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", listen,
                     " for http.listen (address in use or not local?)"));
  }
  p->thread = std::thread([p] { p->server.listen_after_bind(); });
  // stop() is a no-op until the accept loop runs; wait for it so the
  // destructor can always stop it. The socket already listens, so clients
  // connecting meanwhile just queue.
  while (!p->server.is_running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

MetricsServer::~MetricsServer() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

int MetricsServer::port() const { return impl_->port; }

}  // namespace outbox
