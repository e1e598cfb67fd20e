// A real Prometheus (Debian's 2.42, the version docker/compose.yaml pins)
// scrapes a running outbox-relay while events flow: the series come out
// with the expected values and labels, the alert rules of
// docker/prometheus/outbox-relay.rules.yml load and evaluate healthy, and
// every query of the Grafana dashboard (docker/grafana/dashboards) runs
// without error and returns data.
#include <httplib.h>

#include <regex>
#include <set>
#define SIMDJSON_EXCEPTIONS 0
#include <simdjson.h>

#include "e2e/relay/relay_e2e_fixture.h"
#include "e2e/relay_http.h"

namespace outbox::testing {
namespace {

// The string at `e`, or "" when it is absent or not a string.
std::string Str(simdjson::simdjson_result<simdjson::dom::element> e) {
  std::string_view s;
  return e.get(s) == simdjson::SUCCESS ? std::string(s) : "";
}

// One sample of an instant query's vector result.
struct Sample {
  std::map<std::string, std::string> labels;
  std::string value;  // as Prometheus writes it: "12", "NaN"
  double number() const { return std::stod(value); }
};

// An instant query's outcome: status "success" or the API's error.
struct QueryResult {
  std::string status, error;
  std::vector<Sample> samples;
};

class PrometheusE2ETest : public RelayE2ETest {
 protected:
  void TearDown() override {
    stop_writing_ = true;
    if (writer_.joinable()) writer_.join();
    prometheus_.reset();
    RelayE2ETest::TearDown();
  }

  // Starts Prometheus scraping the relay's HTTP port every second, with
  // the repository's alert rules evaluated every second. The target has a
  // database label, as docs/operations/high-availability.md tells an
  // operator scraping several pairs under one job to give each pair.
  void StartPrometheus(int relay_port) {
    const std::string root = getenv("OUTBOX_ROOT");
    const std::string config = dir_ + "/prometheus.yml";
    std::ofstream(config) << "global:\n"
                             "  scrape_interval: 1s\n"
                             "  evaluation_interval: 1s\n"
                             "rule_files:\n"
                             "  - "
                          << root
                          << "/docker/prometheus/outbox-relay.rules.yml\n"
                             "scrape_configs:\n"
                             "  - job_name: outbox-relay\n"
                             "    static_configs:\n"
                             "      - targets: ['127.0.0.1:"
                          << relay_port
                          << "']\n"
                             "        labels: {database: app}\n";
    prom_port_ = FreeLoopbackPort();
    ASSERT_GT(prom_port_, 0);
    prometheus_ = Process::Start(
        {OUTBOX_PROMETHEUS, "--config.file=" + config,
         "--storage.tsdb.path=" + dir_ + "/tsdb",
         absl::StrCat("--web.listen-address=127.0.0.1:", prom_port_)},
        dir_ + "/prometheus.log");
    client_ = std::make_unique<httplib::Client>("127.0.0.1", prom_port_);
    ASSERT_TRUE(WaitUntil(
        [&] {
          auto res = client_->Get("/-/ready");
          return res && res->status == 200;
        },
        30000))
        << prometheus_->Output();
  }

  // Inserts a transaction of 5 events every 100 ms until TearDown.
  void StartWriting() {
    writer_ = std::thread([this] {
      auto conn = PgConn::Connect(pg_conninfo_);
      if (conn == nullptr) return;
      while (!stop_writing_) {
        conn->Exec(
            absl::StrCat("INSERT INTO public.", table_,
                         " (id, aggregatetype, aggregateid, type, payload) "
                         "SELECT gen_random_uuid(), '",
                         aggtype_,
                         "', 'k' || i, 'Created', jsonb_build_object('i', i) "
                         "FROM generate_series(1, 5) i"));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }

  std::string GetJson(const std::string& path, const httplib::Params& params) {
    auto res = client_->Get(path, params, httplib::Headers{});
    return res ? res->body : "";
  }

  QueryResult Query(const std::string& expr) {
    QueryResult r;
    std::string body = GetJson("/api/v1/query", {{"query", expr}});
    simdjson::dom::element doc;
    if (parser_.parse(body).get(doc) != simdjson::SUCCESS) {
      r.error = "unparsable answer: " + body;
      return r;
    }
    std::string_view s;
    if (doc["status"].get(s) == simdjson::SUCCESS) r.status = s;
    if (doc["error"].get(s) == simdjson::SUCCESS) r.error = s;
    simdjson::dom::element data;
    if (doc["data"].get(data) != simdjson::SUCCESS) return r;
    std::string_view type;
    if (data["resultType"].get(type) != simdjson::SUCCESS) return r;
    simdjson::dom::array result;
    if (type == "scalar") {
      if (data["result"].get(result) == simdjson::SUCCESS &&
          result.at(1).get(s) == simdjson::SUCCESS) {
        r.samples.push_back({{}, std::string(s)});
      }
      return r;
    }
    if (data["result"].get(result) != simdjson::SUCCESS) return r;
    for (simdjson::dom::element e : result) {
      Sample sample;
      simdjson::dom::object metric;
      if (e["metric"].get(metric) == simdjson::SUCCESS) {
        for (auto field : metric) {
          std::string_view v;
          if (field.value.get(v) == simdjson::SUCCESS) {
            sample.labels[std::string(field.key)] = std::string(v);
          }
        }
      }
      if (e["value"].at(1).get(s) == simdjson::SUCCESS) sample.value = s;
      r.samples.push_back(std::move(sample));
    }
    return r;
  }

  // The value of a query expected to give one sample; -1 when it gives none.
  double Value(const std::string& expr) {
    QueryResult r = Query(expr);
    return r.samples.size() == 1 ? r.samples[0].number() : -1;
  }

  simdjson::dom::parser parser_;
  std::unique_ptr<Process> prometheus_;
  std::unique_ptr<httplib::Client> client_;
  int prom_port_ = 0;
  std::thread writer_;
  std::atomic<bool> stop_writing_{false};
};

TEST_F(PrometheusE2ETest, ScrapesTheRelayEvaluatesTheRulesAndTheDashboard) {
  StartRelay();
  const int relay_port = WaitRelayHttpPort(*relay_);
  ASSERT_GT(relay_port, 0) << relay_->Output();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  StartWriting();
  StartPrometheus(relay_port);
  ASSERT_FALSE(HasFatalFailure());
  const std::string instance = absl::StrCat("127.0.0.1:", relay_port);

  // The scrape works: up == 1 for the target, with its job and instance.
  ASSERT_TRUE(WaitUntil([&] { return Value("up") == 1; }, 30000))
      << prometheus_->Output();
  QueryResult up = Query("up");
  ASSERT_EQ(up.samples.size(), 1u);
  EXPECT_EQ(up.samples[0].labels["job"], "outbox-relay");
  EXPECT_EQ(up.samples[0].labels["instance"], instance);

  // Events published: the topic's counter is positive and increasing.
  const std::string delivered =
      "outbox_relay_events_delivered_total{topic=\"" + topic_ + "\"}";
  double first = -1;
  ASSERT_TRUE(WaitUntil([&] { return (first = Value(delivered)) > 0; }, 30000))
      << relay_->Output();
  ASSERT_TRUE(WaitUntil([&] { return Value(delivered) > first; }, 30000));
  QueryResult d = Query(delivered);
  ASSERT_EQ(d.samples.size(), 1u);
  EXPECT_EQ(d.samples[0].labels["job"], "outbox-relay");
  EXPECT_EQ(d.samples[0].labels["instance"], instance);
  EXPECT_EQ(d.samples[0].labels["__name__"],
            "outbox_relay_events_delivered_total");
  EXPECT_GT(Value("rate(" + delivered + "[1m])"), 0);

  // Health and slot gauges: ready, heartbeat recent, slot active and
  // 'reserved' (PostgreSQL's default max_slot_wal_keep_size is unlimited:
  // safe_wal_size is NaN).
  ASSERT_TRUE(
      WaitUntil([&] { return Value("outbox_relay_slot_active") == 1; }, 30000));
  EXPECT_EQ(Value("outbox_relay_ready"), 1);
  const double idle =
      Value("time() - outbox_relay_last_turn_timestamp_seconds");
  EXPECT_GE(idle, -5);
  EXPECT_LT(idle, 30);
  QueryResult status = Query("outbox_relay_slot_wal_status");
  std::map<std::string, std::string> by_status;
  for (const Sample& s : status.samples) {
    by_status[s.labels.at("status")] = s.value;
  }
  EXPECT_EQ(by_status, (std::map<std::string, std::string>{{"reserved", "1"},
                                                           {"extended", "0"},
                                                           {"unreserved", "0"},
                                                           {"lost", "0"}}));
  QueryResult safe = Query("outbox_relay_slot_safe_wal_size_bytes");
  ASSERT_EQ(safe.samples.size(), 1u);
  EXPECT_EQ(safe.samples[0].value, "NaN");
  EXPECT_GT(Value("outbox_relay_slot_retained_wal_bytes"), 0);
  EXPECT_GT(Value("outbox_relay_confirmed_lsn"), 0);
  EXPECT_GE(Value("outbox_relay_received_lsn"),
            Value("outbox_relay_confirmed_lsn"));

  // The alert rules: every one loaded, evaluated, healthy, and none firing
  // against a healthy relay.
  const std::string rules_file = std::string(getenv("OUTBOX_ROOT")) +
                                 "/docker/prometheus/outbox-relay.rules.yml";
  const std::string rules_yaml = ReadFile(rules_file);
  std::set<std::string> want_alerts;
  std::regex alert_re("- alert: (\\w+)");
  for (std::sregex_iterator it(rules_yaml.begin(), rules_yaml.end(), alert_re),
       end;
       it != end; ++it) {
    want_alerts.insert((*it)[1]);
  }
  ASSERT_GE(want_alerts.size(), 10u);
  std::set<std::string> healthy_alerts, firing, unhealthy, runbook_urls;
  int recording_ok = 0;
  auto read_rules = [&] {
    healthy_alerts.clear();
    firing.clear();
    unhealthy.clear();
    runbook_urls.clear();
    recording_ok = 0;
    std::string body = GetJson("/api/v1/rules", {});
    simdjson::dom::element doc;
    if (parser_.parse(body).get(doc) != simdjson::SUCCESS) return false;
    simdjson::dom::array groups;
    if (doc["data"]["groups"].get(groups) != simdjson::SUCCESS) return false;
    for (simdjson::dom::element g : groups) {
      simdjson::dom::array rules;
      if (g["rules"].get(rules) != simdjson::SUCCESS) continue;
      for (simdjson::dom::element rule : rules) {
        const std::string name = Str(rule["name"]);
        const std::string health = Str(rule["health"]);
        const std::string state = Str(rule["state"]);
        if (health != "ok") {
          unhealthy.insert(name + ": " + health);
          continue;
        }
        if (Str(rule["type"]) == "recording") {
          ++recording_ok;
          continue;
        }
        healthy_alerts.insert(name);
        // An absolute link, so Alertmanager shows one (issue 33 item 3).
        std::string_view url;
        if (rule["annotations"]["runbook_url"].get(url) == simdjson::SUCCESS) {
          runbook_urls.insert(std::string(url));
        }
        if (state != "inactive") firing.insert(name + ": " + state);
      }
    }
    return healthy_alerts == want_alerts && recording_ok == 1;
  };
  ASSERT_TRUE(WaitUntil(read_rules, 30000))
      << "unhealthy: " << ::testing::PrintToString(unhealthy)
      << "\nhealthy: " << ::testing::PrintToString(healthy_alerts) << "\n"
      << prometheus_->Output();
  EXPECT_THAT(unhealthy, ::testing::IsEmpty());
  EXPECT_THAT(firing, ::testing::IsEmpty());
  // OutboxRelayNoProgress cannot even go pending on a relay whose series
  // is younger than its 10-minute window (this Prometheus started a
  // minute ago): changes() over one or two samples is 0 while an event is
  // in flight, which once made this test flaky. Its expression, as
  // shipped, selects nothing now, whatever the lag is at this instant.
  std::smatch no_progress;
  ASSERT_TRUE(std::regex_search(
      rules_yaml, no_progress,
      std::regex("- alert: OutboxRelayNoProgress\\n\\s*expr: ([^\\n]+)")));
  const std::string no_progress_expr = no_progress[1];
  QueryResult stalled = Query(no_progress_expr);
  EXPECT_EQ(stalled.status, "success") << stalled.error;
  EXPECT_THAT(stalled.samples, ::testing::IsEmpty()) << no_progress_expr;
  // The same expression without its age guard would be judged on a window
  // of a few samples: the guard, not luck, keeps it empty.
  EXPECT_THAT(no_progress_expr,
              ::testing::HasSubstr("outbox_relay_confirmed_lsn offset 10m"));
  // The pair alerts (issue 33 item 3) count this pair's active instances
  // by its database label: one group, database="app", one active.
  for (const char* pair_alert :
       {"OutboxRelayNoActiveInstance", "OutboxRelayMultipleActive"}) {
    std::smatch m;
    ASSERT_TRUE(
        std::regex_search(rules_yaml, m,
                          std::regex(std::string("- alert: ") + pair_alert +
                                     "\\n\\s*expr: (.+) (==|>) [0-9]+\\n")))
        << pair_alert;
    QueryResult pairs = Query(m[1]);
    ASSERT_EQ(pairs.samples.size(), 1u) << pair_alert << ": " << m[1];
    EXPECT_EQ(pairs.samples[0].labels["database"], "app") << m[1];
    EXPECT_EQ(pairs.samples[0].value, "1") << m[1];
  }
  EXPECT_THAT(runbook_urls, ::testing::Each(::testing::StartsWith("https://")));
  EXPECT_EQ(runbook_urls.size(), want_alerts.size());

  // The dashboard: every panel query runs, and each returns data (by now
  // rate()s over [1m] have at least two samples).
  const std::string dashboard =
      ReadFile(std::string(getenv("OUTBOX_ROOT")) +
               "/docker/grafana/dashboards/outbox-relay.json");
  simdjson::dom::parser dash_parser;
  simdjson::dom::element dash;
  ASSERT_EQ(dash_parser.parse(dashboard).get(dash), simdjson::SUCCESS);
  simdjson::dom::array panels;
  ASSERT_EQ(dash["panels"].get(panels), simdjson::SUCCESS);
  int queries = 0;
  for (simdjson::dom::element panel : panels) {
    const std::string title = Str(panel["title"]);
    simdjson::dom::array targets;
    ASSERT_EQ(panel["targets"].get(targets), simdjson::SUCCESS) << title;
    for (simdjson::dom::element target : targets) {
      std::string_view expr_view;
      ASSERT_EQ(target["expr"].get(expr_view), simdjson::SUCCESS) << title;
      const std::string expr(expr_view);
      ++queries;
      QueryResult r;
      // A histogram quantile needs deliveries in its window: retry briefly.
      EXPECT_TRUE(WaitUntil(
          [&] {
            r = Query(expr);
            return r.status == "success" && !r.samples.empty();
          },
          15000))
          << title << ": " << expr << " -> status " << r.status << " "
          << r.error << ", " << r.samples.size() << " samples";
    }
  }
  EXPECT_GE(queries, 14);
}

}  // namespace
}  // namespace outbox::testing
