// MetricsServer over real loopback sockets: binds 127.0.0.1:0 and fetches
// with cpp-httplib's client.
#include "http/metrics_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"

namespace outbox {
namespace {

using ::testing::HasSubstr;

// Sends `request` as is; the whole answer.
std::string RawRequest(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      write(fd, request.data(), request.size()) ==
          static_cast<ssize_t>(request.size())) {
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, n);
  }
  close(fd);
  return out;
}

class MetricsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_ = std::make_shared<prometheus::Registry>();
    auto& family = prometheus::BuildCounter()
                       .Name("test_events_total")
                       .Help("Events seen by the test.")
                       .Register(*registry_);
    counter_ = &family.Add({{"topic", "orders"}});
    auto server = MetricsServer::Start("127.0.0.1:0", registry_, [this] {
      HealthState h;
      h.alive = alive_.load();
      h.ready = ready_.load();
      h.detail = "holding slot test_slot";
      return h;
    });
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    ASSERT_GT(server_->port(), 0);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Counter* counter_ = nullptr;
  std::atomic<bool> alive_{true};
  std::atomic<bool> ready_{false};
  std::unique_ptr<MetricsServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(MetricsServerTest, MetricsServesTheRegistryInTextFormat) {
  counter_->Increment(42);
  auto res = client_->Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_THAT(res->get_header_value("Content-Type"),
              HasSubstr("text/plain; version=0.0.4"));
  EXPECT_THAT(res->body, HasSubstr("# TYPE test_events_total counter"));
  EXPECT_THAT(res->body, HasSubstr("test_events_total{topic=\"orders\"} 42"));
  // A later scrape sees later values.
  counter_->Increment();
  res = client_->Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_THAT(res->body, HasSubstr("test_events_total{topic=\"orders\"} 43"));
}

TEST_F(MetricsServerTest, HealthzFollowsAliveAndReadyzNeedsBoth) {
  auto res = client_->Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_THAT(res->body, HasSubstr("holding slot test_slot"));
  res = client_->Get("/readyz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);

  ready_ = true;
  res = client_->Get("/readyz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);

  alive_ = false;
  res = client_->Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  res = client_->Get("/readyz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
}

TEST_F(MetricsServerTest, UnknownPathIs404) {
  auto res = client_->Get("/nope");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
}

TEST_F(MetricsServerTest, NoControlEndpointsWithoutAnHttpControl) {
  auto res =
      client_->Post("/pause", httplib::Headers{{"Authorization", "Bearer x"}},
                    "", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_THAT(RawRequest(server_->port(),
                         "POST /pause HTTP/1.1\r\nHost: x\r\nConnection: "
                         "close\r\n\r\n"),
              HasSubstr("HTTP/1.1 404"));
}

// POST /pause and /resume: the token is required (401), must match (403),
// and only then is the handler asked, with `by` and `reason`; its error is
// a 503 with the message.
TEST(MetricsServerControlTest, AuthenticatesThenHandsTheRequestOn) {
  auto registry = std::make_shared<prometheus::Registry>();
  std::vector<std::string> calls;
  bool fail = false;
  HttpControl control;
  control.token = "t0ken";
  control.handle =
      [&](const std::string& action, const std::string& by,
          const std::string& reason) -> absl::StatusOr<std::string> {
    calls.push_back(action + "|" + by + "|" + reason);
    if (fail) return absl::UnavailableError("kafka is away");
    return std::string("{\"paused\":true}");
  };
  auto server = MetricsServer::Start(
      "127.0.0.1:0", registry, [] { return HealthState{}; }, nullptr, control);
  ASSERT_TRUE(server.ok()) << server.status();
  httplib::Client client("127.0.0.1", (*server)->port());

  auto res = client.Post("/pause", "", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_EQ(res->get_header_value("WWW-Authenticate"), "Bearer");
  for (const char* wrong : {"t0ke", "t0ken2", "T0KEN", " t0ken"}) {
    res = client.Post(
        "/pause",
        httplib::Headers{{"Authorization", std::string("Bearer ") + wrong}}, "",
        "text/plain");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 403) << wrong;
  }
  EXPECT_TRUE(calls.empty());

  res = client.Post("/pause?reason=migration",
                    httplib::Headers{{"Authorization", "Bearer t0ken"},
                                     {"X-Outbox-By", "alice"}},
                    "", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "{\"paused\":true}\n");
  httplib::Params form{{"by", "bob"}, {"reason", "done"}};
  res = client.Post("/resume",
                    httplib::Headers{{"Authorization", "Bearer t0ken"}}, form);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_THAT(calls, ::testing::ElementsAre("pause|alice|migration",
                                            "resume|bob|done"));
  fail = true;
  res =
      client.Post("/pause", httplib::Headers{{"Authorization", "Bearer t0ken"}},
                  "", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_EQ(res->body, "{\"error\":\"kafka is away\"}\n");
  EXPECT_THAT(calls.back(), HasSubstr("pause|unnamed (127.0.0.1)|"));
  res = client.Get("/pause");
  ASSERT_TRUE(res);
  EXPECT_NE(res->status, 200);
  // As `curl -X POST` sends it: no body, no Content-Length.
  fail = false;
  EXPECT_THAT(RawRequest((*server)->port(),
                         "POST /resume?reason=q HTTP/1.1\r\nHost: x\r\n"
                         "Authorization: Bearer t0ken\r\nConnection: "
                         "close\r\n\r\n"),
              HasSubstr("HTTP/1.1 200"));
  EXPECT_EQ(calls.back(), "resume|unnamed (127.0.0.1)|q");
  EXPECT_THAT(RawRequest((*server)->port(),
                         "POST /pause HTTP/1.1\r\nHost: x\r\nConnection: "
                         "close\r\n\r\n"),
              HasSubstr("HTTP/1.1 401"));
}

TEST(MetricsServerStartTest, RejectsMalformedAddress) {
  auto registry = std::make_shared<prometheus::Registry>();
  auto health = [] { return HealthState{}; };
  for (const char* bad :
       {"", "localhost", "127.0.0.1:http", ":9187", "127.0.0.1:70000"}) {
    auto s = MetricsServer::Start(bad, registry, health);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(MetricsServerStartTest, PortInUseIsUnavailable) {
  auto registry = std::make_shared<prometheus::Registry>();
  auto health = [] { return HealthState{}; };
  auto first = MetricsServer::Start("127.0.0.1:0", registry, health);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = MetricsServer::Start(
      "127.0.0.1:" + std::to_string((*first)->port()), registry, health);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
}

TEST(MetricsServerStartTest, StopsPromptlyWhenDestroyed) {
  auto registry = std::make_shared<prometheus::Registry>();
  for (int i = 0; i < 20; ++i) {
    auto s = MetricsServer::Start("127.0.0.1:0", registry,
                                  [] { return HealthState{}; });
    ASSERT_TRUE(s.ok()) << s.status();
  }  // each destructor must stop and join its server thread
}

}  // namespace
}  // namespace outbox
