// Encrypted and authenticated connections end to end (issue 24, items 5
// and 6), against servers of its own (tls_servers.sh): PostgreSQL with
// ssl = on, the relay at sslmode=verify-full with a client certificate
// (clientcert=verify-full) and a password for both its replication and its
// normal connections; Kafka over SASL_SSL (SCRAM-SHA-512) and over mTLS.
// On Kafka 4 (OUTBOX_KAFKA_VERSION) with a librdkafka older than 2.6.1,
// which Kafka 4 refuses SCRAM from (common/scram_hint.h), SASL_SSL uses
// PLAIN, and SCRAM is the case that checks the error names that cause.
// Every secret reaches the daemons through a file (_file settings) or an
// environment variable (${VAR} in the YAML file), never the command line,
// and none of them reaches the log, /status.json or `outbox-relay status`.
// A wrong CA, an expired certificate or a wrong password is exit 3 with one
// line naming PostgreSQL or Kafka; an unset variable or unreadable secret
// file is exit 2 naming the key.
#include <librdkafka/rdkafka.h>
#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/scram_hint.h"
#include "e2e/relay_http.h"
#include "e2e/test_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

// How a daemon connects in one run; the defaults are the good settings.
struct Connection {
  // PostgreSQL
  std::string pg_root_cert = "ca.pem";
  std::string pg_cert = "client.pem";
  std::string pg_password;  // empty: the right one
  // Kafka: "sasl" (SASL_SSL listener) or "mtls" (SSL listener).
  std::string kafka = "sasl";
  std::string kafka_ca = "ca.pem";
  std::string kafka_cert = "client.pem";
  std::string kafka_password;   // empty: the right one
  std::string kafka_mechanism;  // empty: DefaultMechanism()
};

class TlsE2ETest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    servers_ = new std::string(TempDir("tls_servers"));
    ASSERT_EQ(RunScript(absl::StrCat("../tests/e2e/tls_servers.sh "
                                     "start ",
                                     *servers_, " >/dev/null")),
              0);
    env_ = new std::map<std::string, std::string>();
    for (absl::string_view line :
         absl::StrSplit(ReadText(*servers_ + "/env"), '\n')) {
      std::pair<std::string, std::string> kv =
          absl::StrSplit(line, absl::MaxSplits('=', 1));
      if (!kv.first.empty()) (*env_)[kv.first] = kv.second;
    }
  }
  static void TearDownTestSuite() {
    RunScript(absl::StrCat("../tests/e2e/tls_servers.sh stop ", *servers_));
    delete servers_;
    delete env_;
  }

  static std::string Env(const std::string& key) {
    auto it = env_->find(key);
    EXPECT_NE(it, env_->end()) << key;
    return it != env_->end() ? it->second : "";
  }
  // Kafka 4 refuses SCRAM from a librdkafka older than 2.6.1.
  static bool ScramRefused() {
    return absl::StartsWith(Env("OUTBOX_KAFKA_VERSION"), "4") &&
           rd_kafka_version() < kLibrdkafkaScramFixed;
  }
  static std::string DefaultMechanism() {
    return ScramRefused() ? "PLAIN" : "SCRAM-SHA-512";
  }
  static std::string Cert(const std::string& name) {
    return Env("OUTBOX_TLS_CERTS") + "/" + name;
  }
  // The secrets: none may appear in any output.
  static std::vector<std::string> Secrets() {
    return {Env("OUTBOX_TLS_PG_PASSWORD"), Env("OUTBOX_TLS_KAFKA_PASSWORD"),
            Env("OUTBOX_TLS_KEY_PASSWORD")};
  }
  static void ExpectNoSecret(const std::string& where,
                             const std::string& text) {
    for (const std::string& secret : Secrets()) {
      EXPECT_THAT(text, Not(HasSubstr(secret))) << where;
    }
  }

  void SetUp() override {
    // The test's own setup: postgres over plain TCP (trust).
    db_ = PgConn::Connect(Env("OUTBOX_PG_CONNINFO"));
    ASSERT_NE(db_, nullptr);
    db_->Exec(ReadText(std::string(getenv("OUTBOX_ROOT")) + "/sql/outbox.sql"));
    table_ = UniqueName("outbox");
    aggtype_ = UniqueName("agg");
    topic_prefix_ = UniqueName("tls");
    topic_ = topic_prefix_ + "." + aggtype_;
    db_->Exec("CREATE TABLE public." + table_ +
              " (LIKE public.outbox INCLUDING ALL)");
    dir_ = TempDir("tls_e2e");
    // The Kafka password comes through the environment, as a platform's
    // secretKeyRef would pass it.
    setenv("OUTBOX_TEST_KAFKA_PASSWORD",
           Env("OUTBOX_TLS_KAFKA_PASSWORD").c_str(), 1);
  }

  void TearDown() override {
    for (const std::string& slot : slots_) {
      db_->Query("SELECT pg_drop_replication_slot('" + slot + "')")
          .status()
          .IgnoreError();
    }
  }

  // A configuration file for `c`; secrets go to files beside it.
  std::string WriteConfig(const Connection& c, const std::string& name) {
    const std::string d = dir_ + "/" + name;
    mkdir(d.c_str(), 0700);
    WriteText(d + "/pg-password",
              (c.pg_password.empty() ? Env("OUTBOX_TLS_PG_PASSWORD")
                                     : c.pg_password) +
                  "\n");
    WriteText(d + "/key-password", Env("OUTBOX_TLS_KEY_PASSWORD") + "\n");
    std::string slot = UniqueName("slot");
    slots_.push_back(slot);
    std::string yaml = absl::StrCat(
        "postgres:\n"
        "  conninfo: >-\n"
        "    host=127.0.0.1 port=",
        Env("PGPORT"),
        " user=relay dbname=postgres sslmode=verify-full\n"
        "    sslrootcert=",
        Cert(c.pg_root_cert), " sslcert=", Cert(c.pg_cert),
        " sslkey=", Cert("client.key"),
        "\n"
        "  password_file: ",
        d,
        "/pg-password\n"
        "  slot: ",
        slot,
        "\n"
        "  state_dir: ",
        d,
        "/state\n"
        "  reconnect_backoff_initial_ms: 100\n"
        "outbox:\n"
        "  topic: \"",
        topic_prefix_,
        ".{aggregatetype}\"\n"
        "  tables: [public.",
        table_,
        "]\n"
        "http:\n"
        "  listen: 127.0.0.1:0\n"
        "kafka:\n");
    if (c.kafka == "sasl") {
      absl::StrAppend(
          &yaml, "  brokers: ", Env("OUTBOX_TLS_KAFKA_SASL_SSL"),
          "\n"
          "  properties:\n"
          "    security.protocol: SASL_SSL\n"
          "    sasl.mechanisms: ",
          c.kafka_mechanism.empty() ? DefaultMechanism() : c.kafka_mechanism,
          "\n"
          "    sasl.username: relay\n"
          "    sasl.password: ",
          c.kafka_password.empty() ? "${OUTBOX_TEST_KAFKA_PASSWORD}"
                                   : c.kafka_password,
          "\n"
          "    ssl.ca.location: ",
          Cert(c.kafka_ca), "\n");
    } else {
      absl::StrAppend(
          &yaml, "  brokers: ", Env("OUTBOX_TLS_KAFKA_MTLS"),
          "\n"
          "  properties:\n"
          "    security.protocol: SSL\n"
          "    ssl.ca.location: ",
          Cert(c.kafka_ca),
          "\n"
          "    ssl.certificate.location: ",
          Cert(c.kafka_cert),
          "\n"
          "    ssl.key.location: ",
          Cert(c.kafka_cert == "client.pem" ? "client-enc.key" : "client.key"),
          "\n");
      if (c.kafka_cert == "client.pem") {
        absl::StrAppend(&yaml, "    ssl.key.password_file: ", d,
                        "/key-password\n");
      }
    }
    std::string path = d + "/relay.yaml";
    WriteText(path, yaml);
    return path;
  }

  void InsertEvents(int n) {
    for (int i = 0; i < n; ++i) {
      db_->Exec(absl::StrCat(
          "INSERT INTO public.", table_,
          " (id, aggregatetype, aggregateid, type, payload) VALUES "
          "(gen_random_uuid(), '",
          aggtype_, "', 'key-", i, "', 'Created', '{\"n\": ", i, "}')"));
    }
  }

  // Runs `binary` with `args`; expects it to exit with `code` within 90 s.
  std::string RunToExit(const std::vector<std::string>& argv, int code,
                        const std::string& log) {
    auto p = Process::Start(argv, dir_ + "/" + log);
    int got = p->Wait(90000);
    EXPECT_EQ(got, code) << p->Output();
    return p->Output();
  }

  // The lines of `output` logged at ERROR level (text format).
  static std::vector<std::string> ErrorLines(const std::string& output) {
    std::vector<std::string> out;
    for (absl::string_view line : absl::StrSplit(output, '\n')) {
      if (absl::StrContains(line, " ERROR ")) out.emplace_back(line);
    }
    return out;
  }

  std::unique_ptr<PgConn> db_;
  std::string table_, aggtype_, topic_prefix_, topic_, dir_;
  std::vector<std::string> slots_;
  static std::string* servers_;
  static std::map<std::string, std::string>* env_;
};

std::string* TlsE2ETest::servers_ = nullptr;
std::map<std::string, std::string>* TlsE2ETest::env_ = nullptr;

// The relay streams over verify-full + client certificate + password and
// produces over SASL_SSL; the audit reads back over mTLS. No secret in any
// output, though the effective configuration and producer are logged.
TEST_F(TlsE2ETest, RelayOverVerifyFullAndSaslSsl) {
  const std::string config = WriteConfig(Connection{}, "relay");
  auto relay = Process::Start({BinaryPath("outbox-relay"), "--config", config},
                              dir_ + "/relay.log");
  ASSERT_TRUE(WaitUntil(
      [&] { return absl::StrContains(relay->Output(), "INFO streaming"); },
      60000))
      << relay->Output();
  InsertEvents(5);
  std::vector<KafkaMessage> got =
      ConsumeAll(Env("OUTBOX_KAFKA_BROKERS"), {topic_}, 5);
  EXPECT_EQ(got.size(), 5u);

  int status = 0;
  std::string json = RelayHttpGet(*relay, "/status.json", &status);
  EXPECT_EQ(status, 200);
  EXPECT_THAT(json, HasSubstr("streaming from slot"));
  ExpectNoSecret("/status.json", json);
  std::string status_out =
      RunToExit({BinaryPath("outbox-relay"), "status", "--config", config}, 0,
                "status.log");
  EXPECT_THAT(status_out, HasSubstr(slots_.back()));
  ExpectNoSecret("outbox-relay status", status_out);

  relay->Signal(SIGTERM);
  EXPECT_EQ(relay->Wait(60000), 0) << relay->Output();
  const std::string log = relay->Output();
  // The effective configuration and the producer's properties are logged,
  // masked.
  EXPECT_THAT(log, HasSubstr("config postgres.conninfo="));
  EXPECT_THAT(log, HasSubstr("password=****"));
  EXPECT_THAT(log, HasSubstr("kafka producer sasl.password=****"));
  EXPECT_THAT(log, HasSubstr("kafka producer security.protocol=SASL_SSL"));
  ExpectNoSecret("relay log", log);

  // The audit over mTLS (ssl.key.password from a file) and verify-full.
  Connection mtls;
  mtls.kafka = "mtls";
  std::string audit = RunToExit(
      {BinaryPath("outbox-audit"), "--config", WriteConfig(mtls, "audit")}, 0,
      "audit.log");
  EXPECT_THAT(audit, HasSubstr("PASS"));
  ExpectNoSecret("outbox-audit", audit);
}

// The poller over mTLS (client certificate with an encrypted key) and the
// same PostgreSQL connection; the audit over SASL_SSL.
TEST_F(TlsE2ETest, PollerOverMtls) {
  InsertEvents(5);
  Connection mtls;
  mtls.kafka = "mtls";
  auto poller = Process::Start(
      {BinaryPath("outbox-poller"), "--config", WriteConfig(mtls, "poller")},
      dir_ + "/poller.log");
  std::vector<KafkaMessage> got =
      ConsumeAll(Env("OUTBOX_KAFKA_BROKERS"), {topic_}, 5);
  EXPECT_EQ(got.size(), 5u) << poller->Output();
  int port =
      WaitLoggedPort(*poller, std::regex("serving metrics.* port=([0-9]+)"));
  ASSERT_GT(port, 0) << poller->Output();
  httplib::Client client("127.0.0.1", port);
  auto res = client.Get("/status.json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  ExpectNoSecret("poller /status.json", res->body);
  poller->Signal(SIGTERM);
  EXPECT_EQ(poller->Wait(60000), 0) << poller->Output();
  EXPECT_THAT(poller->Output(),
              HasSubstr("kafka producer ssl.key.password=****"));
  ExpectNoSecret("poller log", poller->Output());

  std::string audit = RunToExit(
      {BinaryPath("outbox-audit"), "--config", WriteConfig({}, "audit")}, 0,
      "audit.log");
  EXPECT_THAT(audit, HasSubstr("PASS"));
}

// Each refusal ends the daemon with exit 3 and one ERROR line naming the
// connection, instead of reconnecting for ever.
TEST_F(TlsE2ETest, RefusedConnectionsExit3) {
  struct Case {
    std::string name;
    Connection c;
    std::string binary;
    std::vector<std::string> want;
  };
  Connection wrong_pg_ca, expired_pg, wrong_pg_password, wrong_kafka_ca,
      wrong_kafka_password, expired_kafka;
  wrong_pg_ca.pg_root_cert = "other-ca.pem";
  expired_pg.pg_cert = "expired.pem";
  wrong_pg_password.pg_password = "not-the-password";
  wrong_kafka_ca.kafka_ca = "other-ca.pem";
  wrong_kafka_password.kafka_password = "not-the-password";
  expired_kafka.kafka = "mtls";
  expired_kafka.kafka_cert = "expired.pem";
  const std::vector<Case> cases = {
      {"pg_ca",
       wrong_pg_ca,
       "outbox-relay",
       {"cannot connect to PostgreSQL", "certificate verify failed"}},
      {"pg_expired",
       expired_pg,
       "outbox-relay",
       {"cannot connect to PostgreSQL", "certificate expired"}},
      {"pg_password",
       wrong_pg_password,
       "outbox-relay",
       {"cannot connect to PostgreSQL", "password authentication failed"}},
      {"kafka_ca",
       wrong_kafka_ca,
       "outbox-relay",
       {"cannot connect to Kafka", "certificate verify failed"}},
      {"kafka_password",
       wrong_kafka_password,
       "outbox-relay",
       {"cannot connect to Kafka", "Authentication failed"}},
      {"kafka_expired",
       expired_kafka,
       "outbox-relay",
       {"cannot connect to Kafka", "alert"}},
      {"poller_pg_ca",
       wrong_pg_ca,
       "outbox-poller",
       {"cannot connect to PostgreSQL", "certificate verify failed"}},
      {"poller_kafka_password",
       wrong_kafka_password,
       "outbox-poller",
       {"cannot connect to Kafka", "Authentication failed"}},
  };
  InsertEvents(1);  // the poller has a row to deliver
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string out =
        RunToExit({BinaryPath(c.binary), "--config", WriteConfig(c.c, c.name)},
                  3, c.name + ".log");
    std::vector<std::string> errors = ErrorLines(out);
    ASSERT_EQ(errors.size(), 1u) << out;
    for (const std::string& w : c.want) EXPECT_THAT(errors[0], HasSubstr(w));
    ExpectNoSecret(c.name, out);
  }
  // The audit refuses likewise (it always exited 3 on a server it cannot
  // read; now the line says why).
  std::string audit = RunToExit({BinaryPath("outbox-audit"), "--config",
                                 WriteConfig(wrong_pg_password, "audit_pg")},
                                3, "audit_pg.log");
  EXPECT_THAT(audit, HasSubstr("password authentication failed"));
  audit = RunToExit({BinaryPath("outbox-audit"), "--config",
                     WriteConfig(wrong_kafka_password, "audit_kafka")},
                    3, "audit_kafka.log");
  EXPECT_THAT(audit, HasSubstr("cannot connect to Kafka"));
  EXPECT_THAT(audit, HasSubstr("Authentication failed"));
}

// Kafka 4 with a librdkafka older than 2.6.1 (Debian 12's 2.0.2): SCRAM
// with the right password is refused, and the one ERROR line (relay, audit)
// says that this may be the cause and what to use instead.
TEST_F(TlsE2ETest, ScramRefusedByKafka4NamesTheLibrdkafkaCause) {
  if (!ScramRefused()) {
    GTEST_SKIP() << "Kafka " << Env("OUTBOX_KAFKA_VERSION") << ", librdkafka "
                 << rd_kafka_version_str() << " authenticate over SCRAM";
  }
  Connection scram;
  scram.kafka_mechanism = "SCRAM-SHA-512";
  std::string out = RunToExit(
      {BinaryPath("outbox-relay"), "--config", WriteConfig(scram, "scram")}, 3,
      "scram.log");
  std::vector<std::string> errors = ErrorLines(out);
  ASSERT_EQ(errors.size(), 1u) << out;
  EXPECT_THAT(errors[0], HasSubstr("cannot connect to Kafka"));
  EXPECT_THAT(errors[0], HasSubstr("SCRAM-SHA-512"));
  EXPECT_THAT(errors[0], HasSubstr("fixed in librdkafka 2.6.1"));
  ExpectNoSecret("scram", out);
  std::string audit = RunToExit(
      {BinaryPath("outbox-audit"), "--config", WriteConfig(scram, "audit")}, 3,
      "audit_scram.log");
  EXPECT_THAT(audit, HasSubstr("fixed in librdkafka 2.6.1"));
}

// An unset variable or an unreadable secret file: exit 2, one line naming
// the key, before any connection.
TEST_F(TlsE2ETest, MissingSecretsExit2) {
  std::string config = WriteConfig({}, "missing");
  std::string yaml = ReadText(config);
  unsetenv("OUTBOX_TEST_KAFKA_PASSWORD");
  std::string out = RunToExit({BinaryPath("outbox-relay"), "--config", config},
                              2, "unset.log");
  EXPECT_THAT(out, HasSubstr("\"kafka.properties.sasl.password\": environment "
                             "variable OUTBOX_TEST_KAFKA_PASSWORD is not set"));
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  setenv("OUTBOX_TEST_KAFKA_PASSWORD", "x", 1);
  out = RunToExit({BinaryPath("outbox-poller"), "--config", config, "--set",
                   "postgres.password_file=" + dir_ + "/no-such-file"},
                  2, "nofile.log");
  EXPECT_THAT(out, HasSubstr("\"postgres.password_file\": cannot read"));
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

}  // namespace
}  // namespace outbox::testing
