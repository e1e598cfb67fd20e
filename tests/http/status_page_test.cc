// The status page and /status.json over real loopback sockets, with a fake
// owner (a lambda returning a StatusSnapshot); ToJson and DaemonStatus on
// their own.
#include "http/status_page.h"

#include <httplib.h>

#include <atomic>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "http/daemon_status.h"
#include "http/metrics_server.h"
#include "http/status_snapshot.h"
#include "outbox/clock.h"
#include "prometheus/registry.h"
#include "simdjson.h"

namespace outbox {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The value of `field` in the JSON object `json` as text ("" when absent).
std::string Field(const std::string& json, const char* field) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc) != simdjson::SUCCESS) {
    ADD_FAILURE() << "not JSON: " << json;
    return "";
  }
  simdjson::dom::element v;
  if (doc[field].get(v) != simdjson::SUCCESS) return "";
  std::string_view s;
  if (v.get_string().get(s) == simdjson::SUCCESS) return std::string(s);
  return simdjson::minify(v);
}

class StatusPageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = MetricsServer::Start(
        "127.0.0.1:0", std::make_shared<prometheus::Registry>(),
        [this] {
          HealthState h;
          h.alive = true;
          h.ready = ready_.load();
          h.detail = "streaming from slot s1";
          return h;
        },
        [this] {
          StatusSnapshot s;
          s.service = "outbox-relay";
          s.unix_ms = 1700000000123;
          s.events_delivered = events_.load();
          s.confirmed_lsn = "0/16B3748";
          s.lag_seconds = 0.25;
          s.slot_safe_wal_size_bytes = std::nullopt;  // unlimited
          daemon_status_.Fill(&s);
          return s;
        });
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }

  std::atomic<bool> ready_{false};
  std::atomic<int64_t> events_{7};
  FakeClock clock_;
  DaemonStatus daemon_status_{&clock_};
  std::unique_ptr<MetricsServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(StatusPageTest, StatusJsonIsTheOwnersSnapshotWithHealth) {
  auto res = client_->Get("/status.json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_THAT(res->get_header_value("Content-Type"),
              HasSubstr("application/json"));
  EXPECT_EQ(res->get_header_value("Cache-Control"), "no-store");
  EXPECT_EQ(Field(res->body, "service"), "outbox-relay");
  EXPECT_EQ(Field(res->body, "events_delivered"), "7");
  EXPECT_EQ(Field(res->body, "confirmed_lsn"), "0/16B3748");
  EXPECT_EQ(Field(res->body, "lag_seconds"), "0.25");
  EXPECT_EQ(Field(res->body, "unix_ms"), "1700000000123");
  // Health comes from the health callback, as /readyz.
  EXPECT_EQ(Field(res->body, "alive"), "true");
  EXPECT_EQ(Field(res->body, "ready"), "false");
  EXPECT_EQ(Field(res->body, "health_detail"), "streaming from slot s1");
  // What the owner did not set is absent, not zero.
  for (const char* absent :
       {"received_lsn", "lag_bytes", "inflight_events", "slot_wal_status",
        "slot_safe_wal_size_bytes", "reconnects", "backlog", "last_error",
        "postgres_state"}) {
    EXPECT_EQ(Field(res->body, absent), "") << absent;
  }

  // Each request asks the owner again.
  ready_ = true;
  events_ = 9;
  daemon_status_.SetStates("streaming", "producing to k:9092");
  daemon_status_.SetLastError("session ended",
                              absl::UnavailableError("a \"quoted\"\nline"));
  res = client_->Get("/status.json");
  ASSERT_TRUE(res);
  EXPECT_EQ(Field(res->body, "ready"), "true");
  EXPECT_EQ(Field(res->body, "events_delivered"), "9");
  EXPECT_EQ(Field(res->body, "postgres_state"), "streaming");
  EXPECT_EQ(Field(res->body, "kafka_state"), "producing to k:9092");
  EXPECT_EQ(Field(res->body, "last_error"),
            "session ended: a \"quoted\"\nline");
  EXPECT_EQ(Field(res->body, "last_error_unix_ms"),
            std::to_string(clock_.UnixMicros() / 1000));
}

TEST_F(StatusPageTest, RootServesTheSelfContainedPage) {
  auto res = client_->Get("/");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_THAT(res->get_header_value("Content-Type"), HasSubstr("text/html"));
  EXPECT_EQ(res->body, kStatusPageHtml);
  EXPECT_THAT(res->body, HasSubstr("fetch(\"status.json\""));
  // Air-gapped: nothing loaded from elsewhere (no URL with a scheme or a
  // protocol-relative one, no external script, stylesheet or font).
  for (const char* external :
       {"http://", "https://", "src=\"//", "<link", "@import", "url("}) {
    EXPECT_THAT(res->body, Not(HasSubstr(external))) << external;
  }
}

TEST(StatusPageStartTest, WithoutAStatusSourceThePageIsNotServed) {
  auto server = MetricsServer::Start("127.0.0.1:0",
                                     std::make_shared<prometheus::Registry>(),
                                     [] { return HealthState{}; });
  ASSERT_TRUE(server.ok()) << server.status();
  httplib::Client client("127.0.0.1", (*server)->port());
  for (const char* path : {"/", "/status.json"}) {
    auto res = client.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 404) << path;
  }
}

TEST(StatusSnapshotTest, ToJsonLeavesOutUnsetAndNonFiniteValues) {
  StatusSnapshot s;
  s.service = "outbox-poller";
  s.lag_seconds = std::numeric_limits<double>::quiet_NaN();
  s.backlog.push_back({"public.outbox", 12, 3.5});
  const std::string json = ToJson(s);
  EXPECT_EQ(Field(json, "lag_seconds"), "");
  EXPECT_EQ(Field(json, "events_delivered"), "");
  EXPECT_EQ(Field(json, "backlog"),
            "[{\"table\":\"public.outbox\",\"unsent_rows\":12,"
            "\"oldest_unsent_age_seconds\":3.5}]");
}

TEST(DaemonStatusTest, FillsOnlyWhatWasSet) {
  FakeClock clock;
  DaemonStatus status(&clock);
  StatusSnapshot s;
  status.Fill(&s);
  EXPECT_FALSE(s.postgres_state.has_value());
  EXPECT_FALSE(s.kafka_state.has_value());
  EXPECT_FALSE(s.last_error.has_value());
  status.SetLastError("", absl::UnavailableError("first"));
  clock.Advance(2'000'000);
  status.SetLastError("cannot query the replication slot",
                      absl::UnavailableError("second"));
  status.Fill(&s);
  EXPECT_EQ(s.last_error, "cannot query the replication slot: second");
  EXPECT_EQ(s.last_error_unix_ms, clock.UnixMicros() / 1000);
}

TEST(DaemonStatusTest, KafkaListenerSetsTheStateAndAnOutageIsTheLastError) {
  FakeClock clock;
  DaemonStatus status(&clock);
  status.SetStates("streaming from slot s", "producing to k:9092");
  auto listener = status.KafkaStateListener();
  clock.Advance(1'000'000);
  listener(false, "all brokers down: 1/1 brokers are down");
  StatusSnapshot s;
  status.Fill(&s);
  EXPECT_EQ(s.postgres_state, "streaming from slot s");
  EXPECT_EQ(s.kafka_state, "all brokers down: 1/1 brokers are down");
  EXPECT_EQ(s.last_error, "kafka: all brokers down: 1/1 brokers are down");
  EXPECT_EQ(s.last_error_unix_ms, clock.UnixMicros() / 1000);
  // Back: the state says so; the last error stays, with its time.
  const int64_t outage_ms = clock.UnixMicros() / 1000;
  clock.Advance(5'000'000);
  listener(true, "producing to k:9092");
  status.Fill(&s);
  EXPECT_EQ(s.kafka_state, "producing to k:9092");
  EXPECT_EQ(s.last_error, "kafka: all brokers down: 1/1 brokers are down");
  EXPECT_EQ(s.last_error_unix_ms, outage_ms);
}

}  // namespace
}  // namespace outbox
