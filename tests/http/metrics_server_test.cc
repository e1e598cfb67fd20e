// MetricsServer over real loopback sockets: binds 127.0.0.1:0 and fetches
// with cpp-httplib's client.
#include "http/metrics_server.h"

#include <httplib.h>

#include <atomic>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"

namespace outbox {
namespace {

using ::testing::HasSubstr;

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
