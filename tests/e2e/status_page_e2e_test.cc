// The status page (`/`) in a real headless browser (Debian's chromium)
// while outbox-relay, then outbox-poller, runs against the fixture's
// PostgreSQL and Kafka: the page's JavaScript fetches /status.json and
// renders it; the test reads the rendered DOM (--dump-dom) twice, with
// events written in between, and (relay) takes a screenshot.
//
// OUTBOX_STATUS_PAGE_SCREENSHOT=path also writes the screenshot there (how
// docs/status-page.png is made).
#include <httplib.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "e2e/poller/poller_e2e_fixture.h"
#include "e2e/relay/relay_e2e_fixture.h"
#include "e2e/relay_http.h"
#include "simdjson.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kChromium[] = "/usr/bin/chromium";

// Text of the element with id `id` in the dumped DOM ("" when absent).
std::string ElementText(const std::string& dom, const std::string& id) {
  std::smatch m;
  std::regex re("id=\"" + id + "\"[^>]*>([^<]*)<");
  return std::regex_search(dom, m, re) ? m[1].str() : "";
}

// "1,234" (the page's en-US format) as a number; -1 when it is not one.
int64_t ShownCount(const std::string& text) {
  int64_t n = -1;
  if (!absl::SimpleAtoi(absl::StrReplaceAll(text, {{",", ""}}), &n)) return -1;
  return n;
}

// "16/B374D848" as a number; 0 when it is not an LSN.
uint64_t LsnValue(const std::string& text) {
  std::vector<std::string> parts = absl::StrSplit(text, '/');
  uint64_t hi = 0, lo = 0;
  if (parts.size() != 2 || !absl::SimpleHexAtoi(parts[0], &hi) ||
      !absl::SimpleHexAtoi(parts[1], &lo)) {
    return 0;
  }
  return (hi << 32) | lo;
}

// Headless chromium against one daemon's page, http://127.0.0.1:port/.
class Browser {
 public:
  // Output files go to `dir`.
  Browser(int port, std::string dir) : port_(port), dir_(std::move(dir)) {}

  // Runs chromium on the page with `args`; its stdout goes to `out_path`.
  // Returns its exit code. A fresh profile (and HOME) each time.
  int Run(const std::vector<std::string>& args,
          const std::string& out_path) const {
    std::string profile = TempDir("chromium_profile");
    std::string cmd =
        absl::StrCat("HOME=", profile, " exec ", kChromium,
                     " --headless --no-sandbox --disable-gpu --no-first-run"
                     " --user-data-dir=",
                     profile, "/data");
    for (const std::string& a : args) absl::StrAppend(&cmd, " ", a);
    absl::StrAppend(&cmd, " http://127.0.0.1:", port_, "/ >", out_path, " 2>>",
                    log(), "");
    auto p = Process::Start({"/bin/sh", "-c", cmd}, dir_ + "/sh.log");
    int code = p->Wait(30000);
    std::filesystem::remove_all(profile);
    return code;
  }

  // The page after its script ran a few polls (virtual time: no waiting).
  std::string DumpDom(const std::string& name) const {
    std::string path = dir_ + "/" + name + ".html";
    EXPECT_EQ(Run({"--virtual-time-budget=5000", "--dump-dom"}, path), 0)
        << ReadFile(log());
    return ReadFile(path);
  }

  std::string log() const { return dir_ + "/chromium.log"; }

 private:
  const int port_;
  const std::string dir_;
};

// events_delivered in the daemon's /status.json; -1 when it cannot be read.
// With `need`, also -1 while that field is absent.
int64_t DeliveredNow(httplib::Client& client, const char* need = nullptr) {
  auto res = client.Get("/status.json");
  if (!res || res->status != 200) return -1;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  int64_t n = -1;
  if (parser.parse(res->body).get(doc) != simdjson::SUCCESS ||
      doc["events_delivered"].get(n) != simdjson::SUCCESS) {
    return -1;
  }
  simdjson::dom::element v;
  if (need != nullptr && doc[need].get(v) != simdjson::SUCCESS) return -1;
  return n;
}

class StatusPageE2ETest : public RelayE2ETest {
 protected:
  // Starts the relay, waits until it streams and finds its HTTP port.
  void StartAndFindPort(std::vector<std::string> extra = {}) {
    StartRelay(std::move(extra));
    ASSERT_TRUE(WaitActive()) << relay_->Output();
    port_ = WaitRelayHttpPort(*relay_);
    ASSERT_GT(port_, 0) << relay_->Output();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
    browser_ = std::make_unique<Browser>(port_, dir_);
  }

  // Commits `txns` transactions and waits until the relay delivered all.
  void WriteAndWaitDelivered(int txns) {
    std::vector<std::string> rolled_back;
    Write(1, txns, 3, 0, &committed_, &rolled_back);
    const int64_t want = static_cast<int64_t>(committed_.size());
    ASSERT_TRUE(
        WaitUntil([&] { return DeliveredNow(*client_) >= want; }, 30000))
        << "delivered " << DeliveredNow(*client_) << " of " << want << "\n"
        << relay_->Output();
  }

  int port_ = 0;
  std::unique_ptr<httplib::Client> client_;
  std::unique_ptr<Browser> browser_;
  std::vector<Event> committed_;
};

TEST_F(StatusPageE2ETest, RendersLiveFiguresInAHeadlessBrowser) {
  if (!std::filesystem::exists(kChromium)) {
    GTEST_SKIP() << kChromium << " is not installed (scripts/setup.sh)";
  }
  StartAndFindPort();
  WriteAndWaitDelivered(20);
  const std::string first = browser_->DumpDom("first");
  WriteAndWaitDelivered(20);
  const std::string second = browser_->DumpDom("second");

  // The script ran and rendered the relay's figures.
  EXPECT_EQ(ElementText(first, "service"), "outbox-relay") << first;
  EXPECT_EQ(ElementText(second, "health"), "ready") << second;
  EXPECT_THAT(ElementText(second, "health-detail"), HasSubstr(slot_));
  EXPECT_EQ(ElementText(second, "role"), "active") << second;
  for (const char* field :
       {"received_lsn", "lag_bytes", "lag_seconds", "slot_retained_wal_bytes",
        "inflight_events", "tracked_events", "dead_lettered", "reconnects"}) {
    EXPECT_NE(ElementText(second, absl::StrCat("v-", field)), "") << field;
  }
  EXPECT_EQ(ElementText(second, "v-slot_wal_status"), "reserved");
  EXPECT_THAT(ElementText(second, "v-postgres_state"),
              HasSubstr("streaming from slot " + slot_));
  EXPECT_THAT(ElementText(second, "v-kafka_state"),
              HasSubstr("producing to " + env_->kafka_brokers()));
  EXPECT_EQ(ElementText(second, "v-dead_lettered"), "0");
  // No error so far: the error card stays hidden.
  EXPECT_THAT(second, HasSubstr("id=\"error-card\" hidden"));
  // A relay shows no poller backlog.
  EXPECT_THAT(second, HasSubstr("id=\"backlog\" hidden"));

  // The figures follow the events.
  const int64_t events_first =
      ShownCount(ElementText(first, "v-events_delivered"));
  const int64_t events_second =
      ShownCount(ElementText(second, "v-events_delivered"));
  EXPECT_GT(events_first, 0) << first;
  EXPECT_GT(events_second, events_first);
  EXPECT_EQ(events_second, static_cast<int64_t>(committed_.size()));
  const uint64_t confirmed_first =
      LsnValue(ElementText(first, "v-confirmed_lsn"));
  const uint64_t confirmed_second =
      LsnValue(ElementText(second, "v-confirmed_lsn"));
  EXPECT_GT(confirmed_first, 0u) << first;
  EXPECT_GT(confirmed_second, confirmed_first);

  // Several polls made the charts: a line with points, under a rate.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      second, m, std::regex("id=\"rate-line\" points=\"([^\"]+)\"")))
      << second;
  EXPECT_THAT(ElementText(second, "rate-now"), HasSubstr("now "));
  EXPECT_THAT(second, Not(HasSubstr("id=\"chart-latency\" hidden")));

  // A screenshot while events flow: a non-empty PNG.
  std::atomic<bool> stop{false};
  std::vector<Event> more;
  std::vector<std::string> rolled_back;
  std::thread writer(
      [&] { Write(2, 100000, 3, 0, &more, &rolled_back, &stop); });
  const std::string png = dir_ + "/status-page.png";
  int code =
      browser_->Run({"--window-size=1200,900", "--hide-scrollbars",
                     "--virtual-time-budget=20000", "--screenshot=" + png},
                    dir_ + "/screenshot.out");
  stop = true;
  writer.join();
  EXPECT_EQ(code, 0) << ReadFile(browser_->log());
  const std::string image = ReadFile(png);
  ASSERT_GT(image.size(), 10000u) << ReadFile(browser_->log());
  EXPECT_EQ(image.substr(0, 8), "\x89PNG\r\n\x1a\n");
  if (const char* keep = getenv("OUTBOX_STATUS_PAGE_SCREENSHOT")) {
    std::filesystem::copy_file(
        png, keep, std::filesystem::copy_options::overwrite_existing);
  }
}

// A Kafka outage as an operator sees it: the producer's own view of its
// brokers, and the error with its time; then the state back to producing
// once deliveries resume.
// A SIGHUP whose configuration is refused: the page says so, and that the
// relay runs on the previous one (docs/operations/reload.md).
TEST_F(StatusPageE2ETest, ShowsARefusedReload) {
  if (!std::filesystem::exists(kChromium)) {
    GTEST_SKIP() << kChromium << " is not installed (scripts/setup.sh)";
  }
  const std::string config = dir_ + "/relay.yaml";
  std::ofstream(config) << "log:\n  level: info\n";
  StartAndFindPort({"--config", config});
  const std::string before = browser_->DumpDom("before-reload");
  EXPECT_THAT(before, HasSubstr("id=\"reload\" class=\"badge bad\" hidden"))
      << before;
  std::ofstream(config, std::ios::trunc) << "log:\n  levle: info\n";
  relay_->Signal(SIGHUP);
  ASSERT_TRUE(WaitUntil(
      [&] {
        return relay_->Output().find("configuration reload refused") !=
               std::string::npos;
      },
      60000))
      << relay_->Output();
  const std::string after = browser_->DumpDom("after-reload");
  EXPECT_THAT(ElementText(after, "reload"),
              HasSubstr("configuration reload invalid: "))
      << after;
  EXPECT_THAT(ElementText(after, "reload"), HasSubstr("levle")) << after;
  EXPECT_THAT(ElementText(after, "reload"),
              HasSubstr("(still running on the previous one)"));
  EXPECT_TRUE(relay_->Running());
}

TEST_F(StatusPageE2ETest, ShowsAKafkaOutageAndTheRecovery) {
  if (!std::filesystem::exists(kChromium)) {
    GTEST_SKIP() << kChromium << " is not installed (scripts/setup.sh)";
  }
  StartAndFindPort();
  WriteAndWaitDelivered(5);
  ASSERT_EQ(RunScript("kafka.sh kill " + env_->kafka_dir()), 0);
  std::vector<Event> during;
  std::vector<std::string> rolled_back;
  Write(2, 5, 3, 0, &during, &rolled_back);
  auto kafka_state = [&] {
    auto res = client_->Get("/status.json");
    if (!res || res->status != 200) return std::string();
    std::smatch m;
    std::regex_search(res->body, m, std::regex("\"kafka_state\":\"([^\"]*)\""));
    return m.empty() ? std::string() : std::string(m[1]);
  };
  const bool told = WaitUntil(
      [&] { return kafka_state().find("down") != std::string::npos; }, 60000);
  const std::string outage = browser_->DumpDom("outage");
  ASSERT_EQ(RunScript("kafka.sh restart " + env_->kafka_dir()), 0);
  ASSERT_TRUE(told) << kafka_state() << "\n" << relay_->Output();
  EXPECT_THAT(ElementText(outage, "v-kafka_state"),
              HasSubstr("all brokers down: "));
  EXPECT_THAT(outage, Not(HasSubstr("id=\"error-card\" hidden")));
  EXPECT_THAT(ElementText(outage, "v-last_error"),
              HasSubstr("kafka: all brokers down: "));
  EXPECT_THAT(ElementText(outage, "last-error-at"), HasSubstr("UTC"));

  committed_.insert(committed_.end(), during.begin(), during.end());
  WriteAndWaitDelivered(5);
  ASSERT_TRUE(
      WaitUntil([&] { return kafka_state().find("producing to") == 0; }, 30000))
      << kafka_state();
  const std::string back = browser_->DumpDom("back");
  EXPECT_THAT(ElementText(back, "v-kafka_state"),
              HasSubstr("producing to " + env_->kafka_brokers()));
  // The last error stays on the page, with its time.
  EXPECT_THAT(ElementText(back, "v-last_error"),
              HasSubstr("kafka: all brokers down: "));
}

// The poller's page: its own figures, and nothing that is the relay's.
TEST_F(PollerE2ETest, StatusPageShowsThePollersFigures) {
  if (!std::filesystem::exists(kChromium)) {
    GTEST_SKIP() << kChromium << " is not installed (scripts/setup.sh)";
  }
  Insert(30, 3);
  Process* poller = StartPoller();
  // The poller logs the port it bound.
  const int port =
      WaitLoggedPort(*poller, std::regex("serving metrics.* port=([0-9]+)"));
  ASSERT_GT(port, 0) << poller->Output();
  httplib::Client client("127.0.0.1", port);
  Browser browser(port, dir_);
  // Delivered, and the backlog gauges set (they follow the progress
  // interval).
  ASSERT_TRUE(
      WaitUntil([&] { return DeliveredNow(client, "backlog") >= 30; }, 60000))
      << poller->Output();
  const std::string first = browser.DumpDom("poller_first");
  Insert(20, 3, 31);
  ASSERT_TRUE(WaitUntil([&] { return DeliveredNow(client) >= 50; }, 60000))
      << poller->Output();
  const std::string second = browser.DumpDom("poller_second");

  EXPECT_EQ(ElementText(first, "service"), "outbox-poller") << first;
  EXPECT_EQ(ElementText(second, "health"), "ready") << second;
  EXPECT_EQ(ShownCount(ElementText(first, "v-events_delivered")), 30);
  EXPECT_EQ(ShownCount(ElementText(second, "v-events_delivered")), 50);
  EXPECT_EQ(ElementText(second, "v-dead_lettered"), "0");
  EXPECT_THAT(ElementText(second, "v-postgres_state"), HasSubstr("connected"));
  EXPECT_THAT(ElementText(second, "v-kafka_state"),
              HasSubstr("producing to " + env_->kafka_brokers()));
  // Its backlog table lists its outbox table.
  EXPECT_THAT(second, Not(HasSubstr("id=\"backlog\" hidden")));
  EXPECT_THAT(second, HasSubstr("<td>public." + table_ + "</td>"));
  // What is the relay's is not shown at all (no card), not shown as 0.
  for (const char* field :
       {"received_lsn", "confirmed_lsn", "lag_bytes", "slot_wal_status",
        "slot_retained_wal_bytes", "inflight_events", "reconnects"}) {
    EXPECT_THAT(second, Not(HasSubstr(absl::StrCat("id=\"card-", field))))
        << field;
  }
  EXPECT_THAT(second, HasSubstr("id=\"chart-latency\" hidden"));
}

}  // namespace
}  // namespace outbox::testing
