#include "http/metrics_server.h"

#include <httplib.h>

#include <chrono>
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
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

}  // namespace

struct MetricsServer::Impl {
  httplib::Server server;
  std::thread thread;
  int port = 0;
  std::shared_ptr<prometheus::Registry> registry;
  std::function<HealthState()> health;
  std::function<StatusSnapshot()> status;
};

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& listen, std::shared_ptr<prometheus::Registry> registry,
    std::function<HealthState()> health,
    std::function<StatusSnapshot()> status) {
  std::string host;
  int port = 0;
  if (absl::Status s = SplitListen(listen, &host, &port); !s.ok()) return s;
  auto impl = std::make_unique<Impl>();
  impl->registry = std::move(registry);
  impl->health = std::move(health);
  impl->status = std::move(status);
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
