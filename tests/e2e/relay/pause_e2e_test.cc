// Pause and resume through the HTTP endpoint (issue 35, item 4), for a
// pair of outbox-relay instances sharing one slot (roles_e2e_fixture.h):
// a paused relay publishes nothing further, keeps the slot (past a short
// wal_sender_timeout), confirms exactly what it delivered and answers its
// probes; a pause asked of the standby pauses the active instance, and the
// standby that takes over from it stays paused; after resume every event
// arrives. Part of roles_e2e_test's binary.
#include <librdkafka/rdkafka.h>

#include <csignal>
#include <fstream>

#include "e2e/relay/roles_e2e_fixture.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Pause and resume (issue 35, item 4): the control endpoints of instances
// sharing one pause record (postgres.slot_marker_id names the pair).
class PauseE2ETest : public RolesE2ETest {
 protected:
  static constexpr char kToken[] = "s3cret-pause-token";

  void SetUp() override {
    RolesE2ETest::SetUp();
    if (HasFatalFailure()) return;
    token_file_ = dir_ + "/token";
    std::ofstream(token_file_) << kToken << "\n";
    pair_ = UniqueName("pair");
    state_topic_ = UniqueName("state");
  }
  std::vector<std::string> ControlArgs() {
    return {"--set", "http.control.enabled=true",
            "--set", "http.control.token_file=" + token_file_,
            "--set", "postgres.slot_marker_id=" + pair_,
            "--set", "kafka.state_topic=" + state_topic_};
  }
  // POST `path` with `token` ("": no Authorization header) as `by`; the
  // body, *status -1 when unreachable.
  static std::string Post(const Process& p, const std::string& path,
                          const std::string& token, const std::string& by,
                          const std::string& reason, int* status) {
    *status = -1;
    const int port = LoggedPort(p, RelayListenRe());
    if (port == 0) return "";
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(60, 0);
    httplib::Headers headers;
    if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
    if (!by.empty()) headers.emplace("X-Outbox-By", by);
    httplib::Params params;
    if (!reason.empty()) params.emplace("reason", reason);
    auto res = client.Post(path, headers, params);
    if (!res) return "";
    *status = res->status;
    return res->body;
  }
  static std::string StatusJson(const Process& p) {
    int status = 0;
    return RelayHttpGet(p, "/status.json", &status);
  }
  static int Probe(const Process& p, const std::string& path) {
    int status = 0;
    RelayHttpGet(p, path, &status);
    return status;
  }
  // Paused and drained: nothing in flight, and PostgreSQL has the flush
  // position the relay reports, the same 1.5 s later (the relay sends a
  // status update at least every 0.5 s while paused: the last delivery's
  // position is not still on its way).
  bool Drained(const Process& p) {
    const auto settled = [&](std::string* lsn) {
      const std::string s = StatusJson(p);
      std::smatch m;
      static const std::regex re("\"confirmed_lsn\":\"([^\"]+)\"");
      if (s.find("\"paused\":true") == std::string::npos ||
          s.find("\"inflight_events\":0") == std::string::npos ||
          !std::regex_search(s, m, re) || m[1].str() != ConfirmedFlush()) {
        return false;
      }
      *lsn = m[1].str();
      return true;
    };
    std::string first, second;
    if (!settled(&first)) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return settled(&second) && second == first;
  }
  // The records in the event topic: the sum of its partitions' high
  // watermarks (nothing is deleted from it); -1 when Kafka cannot say.
  int64_t TopicCount() {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", env_->kafka_brokers().c_str(),
                      err, sizeof(err));
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
    if (rk == nullptr) return -1;
    int64_t total = -1;
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic_.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) ==
            RD_KAFKA_RESP_ERR_NO_ERROR &&
        md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      total = 0;
      for (int p = 0; p < md->topics[0].partition_cnt; ++p) {
        int64_t low = 0, high = 0;
        if (rd_kafka_query_watermark_offsets(rk, topic_.c_str(), p, &low, &high,
                                             10000) !=
            RD_KAFKA_RESP_ERR_NO_ERROR) {
          total = -1;
          break;
        }
        total += high;
      }
    }
    if (md != nullptr) rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return total;
  }
  int64_t Rows() {
    int64_t n = 0;
    EXPECT_TRUE(absl::SimpleAtoi(
        db_->Scalar("SELECT count(*) FROM public." + table_), &n));
    return n;
  }
  // While paused for `ms` (writers inserting meanwhile): the slot stays
  // held by the same walsender, its confirmed position stays, and the
  // probes answer 200.
  void HoldPaused(const Process& p, int ms) {
    const std::string pid = ActivePid();
    const std::string confirmed = ConfirmedFlush();
    const int64_t rows = Rows();
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < until) {
      ASSERT_EQ(ActivePid(), pid) << "the slot changed hands while paused";
      ASSERT_EQ(ConfirmedFlush(), confirmed);
      ASSERT_EQ(Probe(p, "/healthz"), 200);
      ASSERT_EQ(Probe(p, "/readyz"), 200);
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    EXPECT_TRUE(WaitUntil([&] { return Rows() >= rows + 50; }, 60000))
        << "the writer wrote nothing while paused";
  }
  // One writer inserting until StopWriter() (or the test's end).
  void StartWriter(int writer) {
    writer_ = std::thread([this, writer] {
      Write(writer, 1000000, 4, 0, &committed_, &rolled_back_, &stop_writer_);
    });
  }
  void StopWriter() {
    stop_writer_ = true;
    if (writer_.joinable()) writer_.join();
  }
  void TearDown() override {
    StopWriter();
    RolesE2ETest::TearDown();
  }
  std::string token_file_, pair_, state_topic_;
  std::atomic<bool> stop_writer_{false};
  std::vector<Event> committed_;  // read once StopWriter() returned
  std::vector<std::string> rolled_back_;
  std::thread writer_;
};

// One instance: refused without or with a wrong token; paused, it
// publishes nothing further though writers insert, keeps the slot past a
// wal_sender_timeout of 2 s, confirms what it delivered and no further,
// answers its probes and shows who paused it; resumed, every event
// arrives once.
TEST_F(PauseE2ETest, PauseKeepsTheSlotAndResumeDeliversEverything) {
  std::vector<std::string> args = ControlArgs();
  // The walsender ends a connection silent for wal_sender_timeout: 2 s
  // here, for this relay's connections only, below the relay's status
  // interval (10 s): only the paused loop's own updates keep it (streaming,
  // the relay answers the walsender's keepalive requests; paused, it reads
  // none).
  args.insert(args.end(), {"--set",
                           "postgres.conninfo=" + pg_conninfo_ +
                               " options=-cwal_sender_timeout=2s",
                           "--set", "postgres.status_interval_ms=10000"});
  std::unique_ptr<Process> relay = StartInstance("relay", args);
  ASSERT_TRUE(WaitActive()) << relay->Output();
  ASSERT_GT(WaitRelayHttpPort(*relay), 0) << relay->Output();
  StartWriter(1);
  // Publishing: events reach Kafka.
  ASSERT_TRUE(WaitUntil([&] { return TopicCount() > 0; }, 60000))
      << relay->Output();

  int code = 0;
  std::string body = Post(*relay, "/pause", "", "alice", "", &code);
  EXPECT_EQ(code, 401) << body;
  body = Post(*relay, "/pause", "not-the-token", "alice", "", &code);
  EXPECT_EQ(code, 403) << body;
  EXPECT_EQ(RelayMetric(*relay, "outbox_relay_paused"), 0);
  EXPECT_THAT(StatusJson(*relay), HasSubstr("\"paused\":false"));

  body = Post(*relay, "/pause", kToken, "alice", "broker migration", &code);
  ASSERT_EQ(code, 200) << body << relay->Output();
  std::cerr << "POST /pause: " << body;
  EXPECT_THAT(body, HasSubstr("\"paused\":true,\"by\":\"alice\""));
  ASSERT_TRUE(WaitUntil([&] { return Drained(*relay); }, 60000))
      << StatusJson(*relay) << relay->Output();
  const std::string status = StatusJson(*relay);
  EXPECT_THAT(status, HasSubstr("\"paused_by\":\"alice\""));
  EXPECT_THAT(status, HasSubstr("\"paused_since\":\"20"));
  EXPECT_THAT(status, HasSubstr("\"paused_reason\":\"broker migration\""));
  EXPECT_EQ(RelayMetric(*relay, "outbox_relay_paused"), 1);
  const int64_t at_pause = TopicCount();
  ASSERT_GT(at_pause, 0);
  HoldPaused(*relay, 8000);
  if (HasFatalFailure()) return;
  const int64_t while_paused = TopicCount();
  EXPECT_EQ(while_paused, at_pause) << "events reached Kafka while paused";
  std::cerr << "paused: " << at_pause << " events in Kafka before, "
            << while_paused << " after 8 s of writes\n";
  EXPECT_EQ(Count(relay->Output(), " paused: reading nothing further"), 1)
      << relay->Output();
  EXPECT_THAT(relay->Output(), Not(HasSubstr("session ended")));

  body = Post(*relay, "/resume", kToken, "alice", "", &code);
  ASSERT_EQ(code, 200) << body;
  std::cerr << "POST /resume: " << body;
  EXPECT_THAT(body, HasSubstr("\"paused\":false"));
  EXPECT_EQ(RelayMetric(*relay, "outbox_relay_paused"), 0);
  StopWriter();
  ASSERT_GT(static_cast<int64_t>(committed_.size()), while_paused);
  EXPECT_EQ(Audit(committed_, rolled_back_, committed_.size()), 0)
      << relay->Output();
  EXPECT_THAT(relay->Output(), Not(HasSubstr(kToken)));
  EXPECT_THAT(StatusJson(*relay), Not(HasSubstr(kToken)));
}

// Two instances: a pause asked of the standby's endpoint pauses the active
// one (it re-reads the pair's record); a third instance started after the
// pause takes the slot when both are killed (-9) and comes up paused, from
// the record alone; resumed, every event arrives.
TEST_F(PauseE2ETest, AStandbyPausesThePairAndTakesOverPaused) {
  std::unique_ptr<Process> a = StartInstance("a", ControlArgs());
  ASSERT_TRUE(WaitActive()) << a->Output();
  std::unique_ptr<Process> b = StartInstance("b", ControlArgs());
  ASSERT_TRUE(
      WaitUntil([&] { return Count(b->Output(), "in use") > 0; }, 30000))
      << b->Output();
  ASSERT_GT(WaitRelayHttpPort(*b), 0) << b->Output();
  StartWriter(2);
  // Publishing: events reach Kafka.
  ASSERT_TRUE(WaitUntil([&] { return TopicCount() > 0; }, 60000))
      << a->Output();

  int code = 0;
  std::string body = Post(*b, "/pause", kToken, "bob", "", &code);
  ASSERT_EQ(code, 200) << body << b->Output();
  ASSERT_TRUE(WaitUntil([&] { return Drained(*a); }, 60000))
      << StatusJson(*a) << a->Output();
  EXPECT_THAT(StatusJson(*a), HasSubstr("\"paused_by\":\"bob\""));
  const int64_t at_pause = TopicCount();
  ASSERT_GT(at_pause, 0);

  // A third instance, started after the pause: it never handled a request,
  // so only the pair's record can tell it. A and B are killed (-9); C takes
  // the slot and must come up paused.
  std::unique_ptr<Process> c = StartInstance("c", ControlArgs());
  ASSERT_TRUE(
      WaitUntil([&] { return Count(c->Output(), "in use") > 0; }, 30000))
      << c->Output();
  ASSERT_GT(WaitRelayHttpPort(*c), 0) << c->Output();
  const std::string pid = ActivePid();
  b->Signal(SIGKILL);
  b->Wait(10000);
  a->Signal(SIGKILL);
  a->Wait(10000);
  ASSERT_TRUE(WaitUntil(
      [&] {
        const std::string now = ActivePid();
        return !now.empty() && now != pid && Active(*c);
      },
      60000))
      << c->Output();
  EXPECT_THAT(StatusJson(*c), HasSubstr("\"paused\":true"));
  EXPECT_THAT(StatusJson(*c), HasSubstr("\"paused_by\":\"bob\""));
  ASSERT_TRUE(WaitUntil([&] { return Drained(*c); }, 60000))
      << StatusJson(*c) << c->Output();
  HoldPaused(*c, 5000);
  if (HasFatalFailure()) return;
  EXPECT_EQ(TopicCount(), at_pause) << "events reached Kafka while paused";

  body = Post(*c, "/resume", kToken, "bob", "", &code);
  ASSERT_EQ(code, 200) << body;
  StopWriter();
  const int duplicates = Audit(committed_, rolled_back_, committed_.size());
  std::cerr << "pair paused through the standby, taken over paused: "
            << committed_.size() << " events, " << duplicates
            << " duplicates\n";
}

// Kafka unreachable (a port nothing listens on): a pause fails with a 503
// that says why, and nothing changes.
TEST_F(PauseE2ETest, APauseKafkaDoesNotTakeIsA503AndChangesNothing) {
  std::vector<std::string> args = ControlArgs();
  args.insert(args.end(),
              {"--kafka", "127.0.0.1:" + std::to_string(FreeLoopbackPort()),
               "--set", "kafka.flush_timeout_ms=2000"});
  std::unique_ptr<Process> relay = StartInstance("relay", args);
  ASSERT_GT(WaitRelayHttpPort(*relay), 0) << relay->Output();
  int code = 0;
  const std::string body = Post(*relay, "/pause", kToken, "carol", "", &code);
  EXPECT_EQ(code, 503) << body;
  EXPECT_THAT(body, HasSubstr("{\"error\":\"cannot write the control record "
                              "to " +
                              state_topic_ + ": "))
      << relay->Output();
  std::cerr << "POST /pause, Kafka away: " << code << " " << body;
  EXPECT_THAT(StatusJson(*relay), HasSubstr("\"paused\":false"));
  EXPECT_EQ(RelayMetric(*relay, "outbox_relay_paused"), 0);
}

}  // namespace
}  // namespace outbox::testing
