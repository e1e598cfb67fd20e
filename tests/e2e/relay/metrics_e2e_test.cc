// outbox-relay's HTTP endpoint and `status` command end to end: the real
// binary with http.listen on a free loopback port, scraped during a run
// against the fixture's PostgreSQL and Kafka.
#include <signal.h>

#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "e2e/relay/relay_e2e_fixture.h"
#include "e2e/relay_http.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

// The value of the sample line `series` ("name{labels}" exactly as the text
// format writes it), or -1 when the body has no such line.
double Sample(const std::string& body, const std::string& series) {
  std::istringstream lines(body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.size() > series.size() &&
        line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ') {
      double v = -1;
      if (absl::SimpleAtod(line.substr(series.size() + 1), &v)) return v;
    }
  }
  return -1;
}

class MetricsE2ETest : public RelayE2ETest {
 protected:
  // Runs `outbox-relay status` for `slot`; returns its exit code.
  int Status(const std::string& slot, std::string* output) {
    std::string log = dir_ + "/status-" + slot + ".log";
    auto p = Process::Start({BinaryPath("outbox-relay"), "status", "--pg",
                             env_->pg_conninfo(), "--slot", slot},
                            log);
    int code = p->Wait(30000);
    *output = p->Output();
    return code;
  }

  // GET on the relay's HTTP port.
  std::string Get(const std::string& path, int* status) {
    return RelayHttpGet(*relay_, path, status);
  }
};

TEST_F(MetricsE2ETest, ScrapesMetricsHealthAndStatusDuringARun) {
  StartRelay();

  // Port 0: the relay logs the port it bound in its startup line.
  ASSERT_GT(WaitRelayHttpPort(*relay_), 0) << relay_->Output();

  int code = 0;
  ASSERT_TRUE(
      WaitUntil([&] { return Get("/readyz", &code), code == 200; }, 30000))
      << code << "\n"
      << relay_->Output();
  std::string body = Get("/healthz", &code);
  EXPECT_EQ(code, 200);
  EXPECT_THAT(body, HasSubstr(slot_));
  // Issue 25: the role, in the metric, /activez and /status.json.
  body = Get("/activez", &code);
  EXPECT_EQ(code, 200) << body;
  body = Get("/metrics", &code);
  EXPECT_EQ(Sample(body, "outbox_relay_role{role=\"active\"}"), 1) << body;
  EXPECT_EQ(Sample(body, "outbox_relay_role{role=\"standby\"}"), 0) << body;
  body = Get("/status.json", &code);
  EXPECT_THAT(body, HasSubstr("\"role\":\"active\",\"active\":true"));

  // 20 transactions of 10 events.
  constexpr int kEvents = 200;
  for (int t = 0; t < kEvents / 10; ++t) {
    db_->Exec(
        absl::StrCat("INSERT INTO public.", table_,
                     " (id, aggregatetype, aggregateid, type, payload) "
                     "SELECT gen_random_uuid(), '",
                     aggtype_,
                     "', 'order-' || (i % 7), 'OrderCreated', "
                     "jsonb_build_object('n', i, 'pad', repeat('x', 100)) "
                     "FROM generate_series(",
                     t * 10, ", ", t * 10 + 9, ") AS i"));
  }
  const std::string delivered = absl::StrCat(
      "outbox_relay_events_delivered_total{topic=\"", topic_, "\"}");
  // Until every event is delivered and the slot monitor has queried the
  // slot while the relay holds it (it queries when a session starts).
  ASSERT_TRUE(WaitUntil(
      [&] {
        body = Get("/metrics", &code);
        return code == 200 && Sample(body, delivered) == kEvents &&
               Sample(body,
                      "outbox_relay_slot_wal_status{status=\"reserved\"}") ==
                   1 &&
               Sample(body, "outbox_relay_slot_active") == 1;
      },
      60000))
      << body << "\n"
      << relay_->Output();
  EXPECT_GT(Sample(body, absl::StrCat("outbox_relay_bytes_delivered_total{"
                                      "topic=\"",
                                      topic_, "\"}")),
            kEvents * 100);
  EXPECT_EQ(Sample(body, "outbox_relay_delivery_latency_seconds_count"),
            kEvents);
  EXPECT_EQ(Sample(body, "outbox_relay_delivery_errors_total"), 0);
  EXPECT_EQ(Sample(body, "outbox_relay_dead_lettered_total"), 0);
  EXPECT_EQ(Sample(body, "outbox_relay_reconnects_total"), 0);
  for (const char* gauge :
       {"outbox_relay_lag_bytes", "outbox_relay_lag_seconds",
        "outbox_relay_inflight_events", "outbox_relay_inflight_bytes",
        "outbox_relay_slot_retained_wal_bytes",
        "outbox_relay_slot_lag_bytes"}) {
    EXPECT_GE(Sample(body, gauge), 0) << gauge << " missing\n" << body;
  }
  EXPECT_GT(Sample(body, "outbox_relay_received_lsn"), 0);
  // The relay confirms soon after the last delivery.
  ASSERT_TRUE(WaitUntil(
      [&] {
        body = Get("/metrics", &code);
        return Sample(body, "outbox_relay_confirmed_lsn") ==
                   Sample(body, "outbox_relay_received_lsn") &&
               Sample(body, "outbox_relay_inflight_events") == 0;
      },
      30000))
      << body;
  EXPECT_EQ(Sample(body, "outbox_relay_lag_seconds"), 0);

  // The status command, while the relay holds the slot.
  std::string status;
  ASSERT_EQ(Status(slot_, &status), 0) << status;
  EXPECT_THAT(status, HasSubstr("slot                 " + slot_));
  EXPECT_THAT(status, HasSubstr("plugin               wal2json"));
  EXPECT_THAT(status,
              ::testing::ContainsRegex("active +true \\(pid [0-9]+\\)"));
  EXPECT_THAT(status, ::testing::ContainsRegex(
                          "confirmed_flush_lsn +[0-9A-F]+/[0-9A-F]+\n"));
  EXPECT_THAT(status, ::testing::ContainsRegex("retained_wal_bytes +[0-9]+"));
  EXPECT_THAT(status, ::testing::ContainsRegex("wal_status +reserved"));
  // It did not take the slot: the relay still streams.
  body = Get("/readyz", &code);
  EXPECT_EQ(code, 200);

  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();
}

TEST_F(MetricsE2ETest, StatusOfAMissingSlotExits3WithOneLine) {
  std::string status;
  EXPECT_EQ(Status("no_such_slot_here", &status), 3) << status;
  EXPECT_THAT(status, MatchesRegex("[^\n]*no_such_slot_here[^\n]*does not "
                                   "exist[^\n]*\n"));
}

}  // namespace
}  // namespace outbox::testing
