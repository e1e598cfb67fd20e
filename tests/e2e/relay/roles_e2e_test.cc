// Roles of a pair of outbox-relay instances sharing one slot (issue 32,
// items 3, 5 and 6), against the fixture's PostgreSQL and Kafka:
//   - only the slot's holder writes the slot marker: a standby, or a stream
//     whose START_REPLICATION failed, writes nothing;
//   - exactly once, the slot is taken before init_transactions, so an
//     instance that loses the race for the slot never fences the winner;
//   - a SIGTERM while a standby takes over ends it within the grace period,
//     confirming nothing;
//   - pause and resume through the HTTP endpoint (issue 35, item 4): a
//     paused relay publishes nothing further, keeps the slot (past a short
//     wal_sender_timeout), confirms exactly what it delivered and answers
//     its probes; a pause asked of the standby pauses the active instance,
//     and the standby that takes over from it stays paused; after resume
//     every event arrives.
#include <librdkafka/rdkafka.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>

#include "e2e/relay/relay_e2e_fixture.h"
#include "e2e/relay_http.h"
#include "outbox/lsn.h"
#include "pg/libpq_replication_stream.h"
#include "pg/slot_marker.h"
#include "plugin/output_plugin.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Counts what the stream asks of the marker.
class CountingSlotMarker final : public SlotMarker {
 public:
  absl::Status CheckCreate(const ServerInfo&) override {
    ++checks;
    return absl::OkStatus();
  }
  absl::Status Record(const ServerInfo&) override {
    ++records;
    return absl::OkStatus();
  }
  absl::Status Seen(const ServerInfo&) override {
    ++seen;
    return absl::OkStatus();
  }
  int checks = 0;
  int records = 0;
  int seen = 0;
};

// How many times `text` occurs in `log`.
int Count(const std::string& log, const std::string& text) {
  int n = 0;
  for (size_t at = log.find(text); at != std::string::npos;
       at = log.find(text, at + text.size())) {
    ++n;
  }
  return n;
}

// The log lines of sessions that started streaming (LogStreaming).
int Takeovers(const Process& p) {
  static const std::regex re(" INFO streaming host=");
  const std::string out = p.Output();
  return static_cast<int>(
      std::distance(std::sregex_iterator(out.begin(), out.end(), re),
                    std::sregex_iterator()));
}

class RolesE2ETest : public RelayE2ETest {
 protected:
  std::unique_ptr<Process> StartInstance(const std::string& name,
                                         std::vector<std::string> extra = {}) {
    std::vector<std::string> args = RelayArgs();
    args.insert(args.end(), {"--set", "postgres.standby_retry_ms=200"});
    args.insert(args.end(), extra.begin(), extra.end());
    return Process::Start(args, dir_ + "/" + name + ".log");
  }
  std::string ActivePid() {
    return db_->Scalar(
        "SELECT coalesce(active_pid::text, '') FROM pg_replication_slots "
        "WHERE slot_name = '" +
        slot_ + "'");
  }
  // Whether the instance reports itself active (/activez answers 200).
  static bool Active(const Process& p) {
    int status = 0;
    RelayHttpGet(p, "/activez", &status);
    return status == 200;
  }
  std::unique_ptr<OutputPlugin> Plugin() {
    PluginOptions options;
    options.tables.push_back({"public", table_});
    absl::StatusOr<std::unique_ptr<OutputPlugin>> plugin =
        OutputPlugin::Create("wal2json", options);
    EXPECT_TRUE(plugin.ok()) << plugin.status();
    return plugin.ok() ? std::move(*plugin) : nullptr;
  }
  ReplicationOptions StreamOptions(OutputPlugin* plugin, SlotMarker* marker) {
    ReplicationOptions o;
    o.conninfo = pg_conninfo_;
    o.slot = slot_;
    o.plugin = plugin;
    o.slot_marker = marker;
    o.tables.push_back({"public", table_, {"id"}});
    return o;
  }
};

// Item 3: a stream records the slot in its marker only once its
// START_REPLICATION succeeded. On main, Connect() recorded it before the
// slot-in-use check, so every standby attempt and every loser of the race
// wrote the (shared) marker.
TEST_F(RolesE2ETest, OnlyTheStreamHoldingTheSlotRecordsTheMarker) {
  std::unique_ptr<OutputPlugin> plugin = Plugin();
  ASSERT_NE(plugin, nullptr);
  CountingSlotMarker first_marker, second_marker, standby_marker;
  // The first stream creates the slot (the marker's guard runs first) but
  // records nothing until it streams.
  auto first = LibpqReplicationStream::Connect(
      StreamOptions(plugin.get(), &first_marker));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first_marker.checks, 1);
  EXPECT_EQ(first_marker.records, 0);
  // The second finds the slot free too.
  auto second = LibpqReplicationStream::Connect(
      StreamOptions(plugin.get(), &second_marker));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second_marker.records, 0);
  ASSERT_TRUE((*first)->Start((*first)->server().slot_confirmed_flush).ok());
  EXPECT_EQ(first_marker.records, 1);
  // Starting again from the same position is a no-op (the Relay does).
  ASSERT_TRUE((*first)->Start((*first)->server().slot_confirmed_flush).ok());
  EXPECT_EQ(first_marker.records, 1);
  // The second loses the race: its failed Start() writes nothing.
  absl::Status lost =
      (*second)->Start((*second)->server().slot_confirmed_flush);
  EXPECT_TRUE(IsSlotInUse(lost)) << lost;
  EXPECT_EQ(second_marker.records, 0);
  EXPECT_EQ(second_marker.seen, 1);  // remembered, not written
  // A standby's attempt while the slot is held writes nothing either.
  auto standby = LibpqReplicationStream::Connect(
      StreamOptions(plugin.get(), &standby_marker));
  EXPECT_TRUE(IsSlotInUse(standby.status())) << standby.status();
  EXPECT_EQ(standby_marker.records, 0);
  EXPECT_EQ(standby_marker.checks, 0);
  EXPECT_EQ(standby_marker.seen, 1);
}

// Item 3, the binary, with a file marker per instance (the chart's
// StatefulSet: a volume per pod). The shared Kafka marker is the holder's
// alone (OnlyTheStreamHoldingTheSlotRecordsTheMarker, and the store's own
// test); a standby's file marker is its own, and it writes what it saw
// there, so that restarted without ever holding the slot it still refuses
// to create the slot anew (found running the StatefulSet:
// kube_play_test.sh statefulset). It records the slot once it takes over.
TEST_F(RolesE2ETest, AStandbyWritesItsOwnFileMarker) {
  const std::string standby_state = dir_ + "/standby-state";
  std::unique_ptr<Process> active = StartInstance("active");
  ASSERT_TRUE(WaitActive()) << active->Output();
  const std::string active_marker = StateDir() + "/" + slot_ + ".slot";
  ASSERT_TRUE(
      WaitUntil([&] { return std::filesystem::exists(active_marker); }, 30000))
      << active->Output();
  std::unique_ptr<Process> standby = StartInstance(
      "standby", {"--set", "postgres.state_dir=" + standby_state});
  const std::string standby_marker = standby_state + "/" + slot_ + ".slot";
  ASSERT_TRUE(
      WaitUntil([&] { return Count(standby->Output(), "in use") > 0; }, 30000))
      << standby->Output();
  ASSERT_TRUE(
      WaitUntil([&] { return std::filesystem::exists(standby_marker); }, 30000))
      << "the standby wrote no marker of its own:\n"
      << standby->Output();
  EXPECT_THAT(ReadFile(standby_marker), HasSubstr("slot=" + slot_));
  EXPECT_TRUE(standby->Running()) << standby->Output();
  active->Signal(SIGKILL);
  active->Wait(10000);
  ASSERT_TRUE(WaitUntil(
      [&] { return RelayMetric(*standby, "outbox_relay_slot_active") == 1; },
      60000))
      << standby->Output();
  // The first instance, back as a standby, moves its own marker to the
  // slot's position when it sees the slot held (its old session's position
  // would name events as lost that were delivered since).
  const std::string recorded = ConfirmedFlush();
  std::vector<Event> committed;
  std::vector<std::string> rolled_back;
  Write(1, 5, 2, 0, &committed, &rolled_back);
  ASSERT_TRUE(WaitUntil([&] { return ConfirmedFlush() != recorded; }, 30000))
      << standby->Output();
  const Lsn moved = *ParseLsn(ConfirmedFlush());
  std::unique_ptr<Process> again = StartInstance("again");
  ASSERT_TRUE(
      WaitUntil([&] { return Count(again->Output(), "in use") > 0; }, 30000))
      << again->Output();
  auto marker_lsn = [&] {
    const std::string text = ReadFile(active_marker);
    const size_t at = text.find("confirmed_lsn=");
    if (at == std::string::npos) return kInvalidLsn;
    absl::StatusOr<Lsn> lsn = ParseLsn(
        absl::string_view(text).substr(at + 14, text.find('\n', at) - at - 14));
    return lsn.ok() ? *lsn : kInvalidLsn;
  };
  EXPECT_TRUE(WaitUntil(
      [&] { return marker_lsn() != kInvalidLsn && marker_lsn() >= moved; },
      30000))
      << "want confirmed_lsn at or past " << FormatLsn(moved) << " in:\n"
      << ReadFile(active_marker);
}

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

class ExactlyOnceRolesE2ETest : public RolesE2ETest {
 protected:
  void SetUp() override {
    RolesE2ETest::SetUp();
    if (HasFatalFailure()) return;
    checkpoint_topic_ = UniqueName("cp");
    extra_relay_args_ = {"--set", "kafka.exactly_once=true", "--set",
                         "kafka.checkpoint_topic=" + checkpoint_topic_};
  }
  std::string checkpoint_topic_;
};

// Item 5: two exactly-once instances started together race for the free
// slot, while a writer commits; then the active one is SIGKILLed and the
// other takes over; then both are SIGKILLed and started together again, for
// several rounds. On main init_transactions ran before START_REPLICATION:
// both instances initialised their producers, the loser of the slot race
// fenced the winner, which went back to standby, and the roles ping-ponged.
// Now the loser never creates a producer: no instance is ever fenced, each
// round has exactly two takeovers, and read_committed consumers see every
// event once.
TEST_F(ExactlyOnceRolesE2ETest, InstancesRacingForTheSlotNeverFenceEachOther) {
  std::atomic<bool> stop{false};
  std::vector<Event> committed;
  std::vector<std::string> rolled_back;
  // Started once the slot exists (events committed before it are in no
  // slot); joined on every way out (an ASSERT too).
  std::thread writer;
  struct Joiner {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~Joiner() {
      stop = true;
      if (thread.joinable()) thread.join();
    }
  } joiner{stop, writer};
  constexpr int kRounds = 4;
  std::string logs;
  int fenced = 0, takeovers = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::unique_ptr<Process> a = StartInstance(absl::StrCat("a", round));
    std::unique_ptr<Process> b = StartInstance(absl::StrCat("b", round));
    // One is active, the other a standby refused the slot, and the active
    // one committed a transaction after that.
    Process* active = nullptr;
    ASSERT_TRUE(WaitUntil(
        [&] {
          if (Active(*a) && Count(b->Output(), " in use ") > 0)
            active = a.get();
          if (Active(*b) && Count(a->Output(), " in use ") > 0)
            active = b.get();
          return active != nullptr;
        },
        60000))
        << a->Output() << b->Output();
    Process* standby = active == a.get() ? b.get() : a.get();
    if (round == 0) {
      writer = std::thread(
          [&] { Write(1, 100000, 4, 0, &committed, &rolled_back, &stop); });
    }
    const std::string confirmed = ConfirmedFlush();
    EXPECT_TRUE(WaitUntil([&] { return ConfirmedFlush() != confirmed; }, 30000))
        << active->Output();
    // The active one dies; the standby takes over and commits.
    const std::string pid = ActivePid();
    active->Signal(SIGKILL);
    active->Wait(10000);
    ASSERT_TRUE(WaitUntil(
        [&] {
          const std::string now = ActivePid();
          return !now.empty() && now != pid && Active(*standby);
        },
        60000))
        << standby->Output();
    const std::string taken = ConfirmedFlush();
    EXPECT_TRUE(WaitUntil([&] { return ConfirmedFlush() != taken; }, 30000))
        << standby->Output();
    standby->Signal(SIGKILL);
    standby->Wait(10000);
    const std::string out = a->Output() + b->Output();
    fenced += Count(out, "fenced by another instance");
    takeovers += Takeovers(*a) + Takeovers(*b);
    logs += out;
    EXPECT_TRUE(WaitUntil([&] { return ActivePid().empty(); }, 30000));
  }
  // The last round's events: one more instance publishes them.
  stop = true;
  writer.join();
  std::unique_ptr<Process> last = StartInstance("last");
  ASSERT_TRUE(WaitActive()) << last->Output();
  ASSERT_GT(committed.size(), 0u);
  EXPECT_EQ(Audit(committed, rolled_back, committed.size()), 0)
      << last->Output();
  // No instance was fenced; every round made two takeovers (the winner of
  // the race, the standby after the SIGKILL).
  EXPECT_EQ(fenced, 0) << logs;
  EXPECT_EQ(takeovers, 2 * kRounds) << logs;
  std::cerr << "exactly-once pair, " << kRounds << " rounds: " << takeovers
            << " takeovers, " << fenced << " fenced\n";
  std::string out;
  EXPECT_EQ(RunOutboxAudit({"--json", "--read-committed"}, &out), 0) << out;
  EXPECT_EQ(AuditReportCount(out, "duplicates"), 0) << out;
  EXPECT_EQ(AuditReportCount(out, "missing"), 0) << out;
}

// Item 6: a standby stopped (SIGTERM) while it takes over. Its Kafka is a
// port nothing listens on, so once it holds the slot its init_transactions
// waits (up to 30 s): a known step of the takeover. It must give the slot
// up and exit 0 well within the grace period, activating nothing and
// confirming nothing. On main it never took the slot at all (it waited in
// init_transactions first, and again after every timeout).
TEST_F(ExactlyOnceRolesE2ETest, SigtermWhileTakingOverExitsPromptly) {
  std::unique_ptr<Process> active = StartInstance("active");
  ASSERT_TRUE(WaitActive()) << active->Output();
  std::unique_ptr<Process> standby = StartInstance(
      "standby", {"--kafka", "127.0.0.1:" + std::to_string(FreeLoopbackPort()),
                  "--set", "postgres.state_dir=" + dir_ + "/standby-state"});
  ASSERT_TRUE(
      WaitUntil([&] { return Count(standby->Output(), "in use") > 0; }, 30000))
      << standby->Output();
  const std::string pid = ActivePid();
  active->Signal(SIGKILL);
  active->Wait(10000);
  const std::string confirmed = ConfirmedFlush();
  // The standby takes the slot, and waits for Kafka.
  ASSERT_TRUE(WaitUntil(
      [&] {
        const std::string now = ActivePid();
        return !now.empty() && now != pid;
      },
      60000))
      << standby->Output();
  const auto sent = std::chrono::steady_clock::now();
  standby->Signal(SIGTERM);
  const int code = standby->Wait(20000);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - sent)
          .count();
  EXPECT_EQ(code, 0) << standby->Output();
  EXPECT_LT(took, 20.0) << standby->Output();
  std::cerr << "standby stopped during its takeover in " << took << " s\n";
  EXPECT_THAT(standby->Output(), Not(HasSubstr(" INFO streaming host=")));
  EXPECT_EQ(ConfirmedFlush(), confirmed);
  EXPECT_TRUE(WaitUntil([&] { return ActivePid().empty(); }, 30000));
}

}  // namespace
}  // namespace outbox::testing
