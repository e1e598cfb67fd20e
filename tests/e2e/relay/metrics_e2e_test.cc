// outbox-relay's HTTP endpoint and `status` and `validate` commands end to
// end: the real binary with http.listen on a free loopback port, scraped
// during a run against the fixture's PostgreSQL and Kafka
// (outbox_relay_build_info against --version and the libraries' own
// versions); `validate` and `validate --connect` as an operator runs them
// (issue 35).
#include <libpq-fe.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>

#include <filesystem>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "e2e/relay/relay_e2e_fixture.h"
#include "e2e/relay_http.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

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
  // Issue 35: build_info's labels are what --version prints and the
  // versions of the libraries this process (linked like the relay) loads.
  {
    body = Get("/metrics", &code);
    auto version = Process::Start({BinaryPath("outbox-relay"), "--version"},
                                  dir_ + "/version.log");
    ASSERT_EQ(version->Wait(10000), 0);
    std::smatch m;
    const std::string line = version->Output();
    ASSERT_TRUE(std::regex_search(
        line, m, std::regex("outbox-relay ([^ ]+) \\(git ([^)]+)\\)")))
        << line;
    const int lib = PQlibVersion();
    const std::string libpq =
        absl::StrCat(lib / 10000, ".", lib % 10000);  // 10 and later
    EXPECT_EQ(Sample(body, absl::StrCat(
                               "outbox_relay_build_info{libpq=\"", libpq,
                               "\",librdkafka=\"", rd_kafka_version_str(),
                               "\",plugin=\"wal2json\",revision=\"", m[2].str(),
                               "\",version=\"", m[1].str(), "\"}")),
              1)
        << line << body;
  }

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
  EXPECT_EQ(Sample(body, "outbox_relay_receive_latency_seconds_count"),
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

  // Issue 36: librdkafka's statistics, every statistics.interval.ms (5 s by
  // default): the interval that saw the events' produce requests has a
  // round trip, and the connection is up.
  {
    const std::string broker =
        absl::StrCat("{broker=\"", env_->kafka_brokers(), "/1\"");
    const std::string rtt = absl::StrCat(
        "outbox_relay_kafka_broker_rtt_seconds", broker, ",quantile=\"0.99\"}");
    ASSERT_TRUE(WaitUntil(
        [&] {
          body = Get("/metrics", &code);
          return Sample(body, rtt) > 0;
        },
        30000))
        << rtt << "\n"
        << body;
    EXPECT_EQ(
        Sample(body, absl::StrCat("outbox_relay_kafka_broker_up", broker, "}")),
        1)
        << body;
    EXPECT_GE(Sample(body, "outbox_relay_kafka_queue_messages"), 0) << body;
    EXPECT_GE(
        Sample(body, absl::StrCat("outbox_relay_kafka_broker_waitresp_messages",
                                  broker, "}")),
        0)
        << body;
  }

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

// `outbox-relay validate` (issue 35), as an operator runs it.
class ValidateE2ETest : public RelayE2ETest {
 protected:
  // outbox-relay validate `args` (after the relay's own, RelayArgs());
  // `env`: NAME=VALUE for its environment. Returns its exit code.
  int Validate(const std::vector<std::string>& args, std::string* output,
               const std::vector<std::string>& env = {},
               bool relay_args = true) {
    std::vector<std::string> argv = {"/usr/bin/env"};
    argv.insert(argv.end(), env.begin(), env.end());
    if (relay_args) {
      std::vector<std::string> base = RelayArgs();
      argv.push_back(base[0]);
      argv.push_back("validate");
      argv.insert(argv.end(), base.begin() + 1, base.end());
    } else {
      argv.push_back(BinaryPath("outbox-relay"));
      argv.push_back("validate");
    }
    argv.insert(argv.end(), args.begin(), args.end());
    auto p =
        Process::Start(argv, absl::StrCat(dir_, "/validate-", ++runs_, ".log"));
    int code = p->Wait(60000);
    *output = p->Output();
    return code;
  }
  // The check lines ("ok ..." / "FAIL ...") of an output.
  static std::vector<std::string> Checks(const std::string& output) {
    std::vector<std::string> out;
    std::istringstream lines(output);
    for (std::string l; std::getline(lines, l);) {
      if (l.rfind("ok ", 0) == 0 || l.rfind("FAIL ", 0) == 0) out.push_back(l);
    }
    return out;
  }
  int SlotCount() {
    return std::stoi(db_->Scalar(
        "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '" +
        slot_ + "'"));
  }
  int runs_ = 0;
};

TEST_F(ValidateE2ETest, PrintsTheConfigurationOrOneLineNamingTheKey) {
  std::string out;
  EXPECT_EQ(Validate({"--set", "kafka.properties.linger.ms=50"}, &out), 0)
      << out;
  EXPECT_THAT(out, HasSubstr("postgres.slot: " + slot_ + "\n"));
  EXPECT_THAT(out, HasSubstr("linger.ms: 50"));
  EXPECT_THAT(out, HasSubstr("\nok config: valid: 1 outbox table(s)"));
  EXPECT_EQ(Checks(out).size(), 1u) << out;  // no server asked

  EXPECT_EQ(Validate({"--set", "limits.max_inflight_events=-3"}, &out), 2);
  EXPECT_THAT(out, MatchesRegex("outbox-relay: [^\n]*limits.max_inflight_"
                                "events[^\n]*\n"));
  // A cross-key rule the daemon applies before it asks a server.
  EXPECT_EQ(Validate({"--set", "outbox.messages.enabled=true", "--set",
                      "outbox.messages.prefix=outbox-relay-heartbeat"},
                     &out),
            2)
      << out;
  EXPECT_THAT(out, MatchesRegex("outbox-relay: outbox.messages.prefix[^\n]*"
                                "heartbeat prefix\n"))
      << out;
}

// A secret given each way never appears, with or without --connect.
TEST_F(ValidateE2ETest, NoSecretIsEverPrinted) {
  const std::string secret_file = dir_ + "/pgpass";
  std::ofstream(secret_file) << "FILEPGSECRET\n";
  const std::string key_file = dir_ + "/keypass";
  std::ofstream(key_file) << "FILEKAFKASECRET\n";
  const std::string config = dir_ + "/secrets.yaml";
  std::ofstream(config) << "kafka:\n  properties:\n    sasl.password: "
                           "\"${OUTBOX_E2E_SASL}\"\n";
  std::string out;
  // Inline conninfo password, ${VAR} and a kafka _file; --connect too.
  EXPECT_EQ(Validate({"--config", config, "--pg",
                      pg_conninfo_ + " password=INLINEPGSECRET", "--set",
                      "kafka.properties.ssl.key.password_file=" + key_file,
                      "--set", "kafka.properties.sasl.username=u", "--connect"},
                     &out, {"OUTBOX_E2E_SASL=ENVKAFKASECRET"}),
            0)
      << out;
  std::string all = out;
  // The conninfo's ${VAR}, and postgres.password_file.
  const std::string config2 = dir_ + "/secrets2.yaml";
  std::ofstream(config2) << "postgres:\n  conninfo: \"" << pg_conninfo_
                         << " password=${OUTBOX_E2E_PG}\"\n";
  EXPECT_EQ(Validate({"--config", config2, "--set", "postgres.slot=" + slot_,
                      "--tables", "public." + table_},
                     &out, {"OUTBOX_E2E_PG=ENVPGSECRET"}, false),
            0)
      << out;
  all += out;
  EXPECT_EQ(Validate({"--set", "postgres.password_file=" + secret_file}, &out),
            0)
      << out;
  all += out;
  for (const char* secret :
       {"INLINEPGSECRET", "ENVKAFKASECRET", "FILEKAFKASECRET", "ENVPGSECRET",
        "FILEPGSECRET"}) {
    EXPECT_THAT(all, Not(HasSubstr(secret))) << all;
  }
  EXPECT_THAT(all, HasSubstr("password=****"));
  EXPECT_THAT(all, HasSubstr("sasl.password: ****"));
  EXPECT_THAT(all, HasSubstr("ssl.key.password: ****"));
}

TEST_F(ValidateE2ETest, ConnectChecksTheServersWithoutTakingTheSlot) {
  std::string out;
  EXPECT_EQ(Validate({"--connect"}, &out), 0) << out;
  const std::vector<std::string> checks = Checks(out);
  ASSERT_GE(checks.size(), 8u) << out;
  for (const std::string& c : checks) EXPECT_EQ(c.rfind("ok ", 0), 0u) << out;
  EXPECT_THAT(out, HasSubstr("ok slot: \"" + slot_ + "\" does not exist"));
  EXPECT_THAT(out, HasSubstr("ok wal_level: wal_level is logical"));
  EXPECT_THAT(out, HasSubstr("ok kafka: 1 broker(s) answered"));
  // librdkafka's lines go through the tools' log, and its notice that
  // enable.gapless.guarantee (set by the relay) is experimental is dropped.
  EXPECT_THAT(out, Not(HasSubstr("|CONFWARN|")));
  EXPECT_THAT(out, Not(HasSubstr("experimental")));
  EXPECT_EQ(SlotCount(), 0) << "validate created the slot";

  // pgoutput: the publication it would create is named, not created.
  const std::string pub = UniqueName("pub");
  EXPECT_EQ(Validate({"--connect", "--set", "postgres.plugin=pgoutput", "--set",
                      "postgres.publication=" + pub},
                     &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("ok plugin: pgoutput: publication \"" + pub +
                             "\" does not exist; the relay creates it"));
  EXPECT_EQ(
      db_->Scalar("SELECT count(*) FROM pg_publication WHERE pubname = '" +
                  pub + "'"),
      "0");
  EXPECT_EQ(SlotCount(), 0);

  // An existing, free slot is described, and left as it was.
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  EXPECT_EQ(Validate({"--connect"}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("ok slot: replication slot \"" + slot_ +
                             "\" is in use by process"));
  // Held by the relay, the slot is what a standby sees; validate, with a
  // state directory of its own, writes no marker there as a standby would.
  const std::string own_state = TempDir("validate_state");
  EXPECT_EQ(
      Validate({"--connect", "--set", "postgres.state_dir=" + own_state}, &out),
      0)
      << out;
  EXPECT_FALSE(std::filesystem::exists(own_state + "/" + slot_ + ".slot"))
      << "validate wrote a slot marker";
  relay_->Signal(SIGTERM);
  ASSERT_EQ(relay_->Wait(30000), 0) << relay_->Output();
  const std::string confirmed = ConfirmedFlush();
  EXPECT_EQ(Validate({"--connect"}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("exists (wal2json, database postgres), free, "
                             "confirmed_flush_lsn " +
                             confirmed));
  EXPECT_EQ(ConfirmedFlush(), confirmed);

  // The slot dropped behind the relay's back: its marker (postgres.state_dir)
  // makes the relay refuse to create it anew, and validate says so.
  db_->Exec("SELECT pg_drop_replication_slot('" + slot_ + "')");
  EXPECT_EQ(Validate({"--connect"}, &out), 3) << out;
  EXPECT_THAT(out,
              MatchesRegex("(.|\n)*\nFAIL slot: replication slot \"" + slot_ +
                           "\" does not exist, but this relay streamed "
                           "from it before[^\n]*\n(.|\n)*"));
  EXPECT_EQ(SlotCount(), 0) << "validate created the slot";
}

TEST_F(ValidateE2ETest, ConnectFailsWithOneLinePerProblem) {
  std::string out;
  // No REPLICATION privilege: exit 3 (precondition).
  const std::string role = UniqueName("norepl");
  db_->Exec("CREATE ROLE " + role + " LOGIN");
  EXPECT_EQ(
      Validate({"--connect", "--pg", pg_conninfo_ + " user=" + role}, &out), 3)
      << out;
  EXPECT_THAT(out, MatchesRegex("(.|\n)*\nFAIL postgres: [^\n]*REPLICATION"
                                "[^\n]*\n(.|\n)*"));
  // A missing table, and a publication the relay may not create.
  EXPECT_EQ(Validate({"--connect", "--tables", "public.no_such_outbox", "--set",
                      "postgres.plugin=pgoutput", "--set",
                      "postgres.publication=" + UniqueName("pub"), "--set",
                      "postgres.create_publication=false"},
                     &out),
            3)
      << out;
  EXPECT_THAT(out, MatchesRegex("(.|\n)*\nFAIL tables: outbox table "
                                "public.no_such_outbox does not exist[^\n]*\n"
                                "(.|\n)*"));
  EXPECT_THAT(out, MatchesRegex("(.|\n)*\nFAIL plugin: publication [^\n]*"
                                "does not exist and "
                                "postgres.create_publication is false[^\n]*\n"
                                "(.|\n)*"));
  // Kafka unreachable: exit 1 (unavailable), PostgreSQL's checks ok.
  EXPECT_EQ(Validate({"--connect", "--kafka", "127.0.0.1:1", "--set",
                      "kafka.flush_timeout_ms=3000"},
                     &out),
            1)
      << out;
  EXPECT_THAT(out, HasSubstr("ok tables: "));
  EXPECT_THAT(out, MatchesRegex("(.|\n)*\nFAIL kafka: [^\n]*\n"));
  // A literal topic that does not exist: a warning (the relay would wait
  // for it; brokers may create it on first use), not a failure.
  const std::string topic = UniqueName("missing_topic");
  EXPECT_EQ(Validate({"--connect", "--topic", topic}, &out), 0) << out;
  EXPECT_THAT(
      out, HasSubstr("\nok topic " + topic + ": warning: does not exist yet"));
  EXPECT_EQ(SlotCount(), 0);
}

}  // namespace
}  // namespace outbox::testing
