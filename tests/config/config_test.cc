#include "config/config.h"

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "config/command_line.h"
#include "config/config_keys.h"
#include "config/load_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

Config ParseOrDie(absl::string_view yaml) {
  absl::StatusOr<Config> c = ParseConfigYaml(yaml, "relay.yaml");
  if (!c.ok()) {
    ADD_FAILURE() << c.status();
    return Config();
  }
  return *std::move(c);
}

std::string ErrorOf(absl::string_view yaml) {
  auto c = ParseConfigYaml(yaml, "relay.yaml");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << yaml;
  return std::string(c.status().message());
}

TEST(ConfigTest, Defaults) {
  for (const Config& c : {ParseOrDie(""), ParseOrDie("{}"), Config{}}) {
    EXPECT_EQ(c.postgres.conninfo, "");
    EXPECT_EQ(c.postgres.slot, "outbox_relay");
    EXPECT_TRUE(c.postgres.create_slot);
    EXPECT_EQ(c.postgres.status_interval_ms, 1000);
    EXPECT_EQ(c.postgres.reconnect_backoff_initial_ms, 500);
    EXPECT_EQ(c.postgres.reconnect_backoff_max_ms, 30000);
    ASSERT_EQ(c.outbox.tables.size(), 1u);
    const OutboxTable& t = c.outbox.tables[0];
    EXPECT_EQ(t.QualifiedName(), "public.outbox");
    EXPECT_EQ(t.columns.id, "id");
    EXPECT_EQ(t.columns.aggregatetype, "aggregatetype");
    EXPECT_EQ(t.columns.aggregateid, "aggregateid");
    EXPECT_EQ(t.columns.type, "type");
    EXPECT_EQ(t.columns.payload, "payload");
    EXPECT_EQ(t.topic, "outbox.event.{aggregatetype}");
    EXPECT_EQ(t.key, "aggregateid");
    EXPECT_TRUE(t.headers.empty());
    EXPECT_EQ(c.outbox.on_invalid, OnInvalid::kHalt);
    EXPECT_EQ(c.outbox.dead_letter_topic, "outbox.dead_letter");
    EXPECT_EQ(c.kafka.brokers, "127.0.0.1:9092");
    EXPECT_THAT(c.kafka.properties,
                UnorderedElementsAre(
                    Pair("enable.idempotence", "true"), Pair("acks", "all"),
                    Pair("partitioner", "murmur2_random"),
                    Pair("linger.ms", "20"), Pair("compression.type", "none")));
    EXPECT_EQ(c.kafka.flush_timeout_ms, 30000);
    EXPECT_EQ(c.limits.max_inflight_events, 10000);
    EXPECT_EQ(c.limits.max_inflight_bytes, 2 * 1024 * 1024);
    EXPECT_EQ(c.limits.max_tracked_events, 100000);
    EXPECT_EQ(c.http.listen, "127.0.0.1:9187");
    EXPECT_EQ(c.log.format, LogFormat::kText);
    EXPECT_EQ(c.log.level, LogLevel::kInfo);
    EXPECT_EQ(c.log.progress_interval_s, 10);
    EXPECT_EQ(c.poller.interval_ms, 500);
    EXPECT_EQ(c.poller.batch_size, 500);
    EXPECT_EQ(c.poller.max_attempts, 10);
    EXPECT_EQ(c.poller.backoff_initial_ms, 1000);
    EXPECT_EQ(c.poller.backoff_max_ms, 300000);
    EXPECT_EQ(c.poller.batch_timeout_ms, 30000);
    EXPECT_EQ(c.poller.retention_s, 86400);
    EXPECT_EQ(c.poller.mode, PollerMode::kMark);
    EXPECT_FALSE(c.poller.notify);
    EXPECT_EQ(c.poller.notify_channel, "outbox_relay");
  }
}

TEST(ConfigTest, ExampleFileLoadsAndMatchesDefaults) {
  auto c = Load({"--config", OUTBOX_EXAMPLE_CONFIG});
  ASSERT_TRUE(c.ok()) << c.status();
  // Everything but the example conninfo is the default: the example
  // documents the defaults, so rendering both must agree.
  Config expected;
  expected.postgres.conninfo = c->postgres.conninfo;
  EXPECT_EQ(c->Redacted(), expected.Redacted());
  EXPECT_THAT(c->postgres.conninfo, HasSubstr("dbname=app"));
}

TEST(ConfigTest, FullFileParses) {
  Config c = ParseOrDie(R"(
postgres:
  conninfo: "host=db dbname=app"
  slot: relay_2
  create_slot: false
  status_interval_ms: 250
  connect_timeout_s: 3
  reconnect_backoff_initial_ms: 100
  reconnect_backoff_max_ms: 1000
outbox:
  on_invalid: dead_letter
  dead_letter_topic: dlq
  tables: [public.outbox, app.events]
kafka:
  brokers: "k1:9092,k2:9092"
  properties: {linger.ms: 50, security.protocol: SASL_SSL, compression.type: ""}
  flush_timeout_ms: 5000
limits: {max_inflight_events: 10, max_inflight_bytes: 2KiB,
         max_tracked_events: 30}
http: {listen: ""}
log: {format: json, level: warn, progress_interval_s: 0}
poller: {interval_ms: 1, batch_size: 2, max_attempts: 3, backoff_initial_ms: 4,
         backoff_max_ms: 5, batch_timeout_ms: 6, retention_s: 0, mode: delete,
         notify: yes, notify_channel: ch}
)");
  EXPECT_EQ(c.postgres.conninfo, "host=db dbname=app");
  EXPECT_EQ(c.postgres.slot, "relay_2");
  EXPECT_FALSE(c.postgres.create_slot);
  EXPECT_EQ(c.postgres.status_interval_ms, 250);
  EXPECT_EQ(c.postgres.connect_timeout_s, 3);
  EXPECT_EQ(c.outbox.on_invalid, OnInvalid::kDeadLetter);
  EXPECT_EQ(c.outbox.dead_letter_topic, "dlq");
  ASSERT_EQ(c.outbox.tables.size(), 2u);
  EXPECT_EQ(c.outbox.tables[1].schema, "app");
  EXPECT_EQ(c.outbox.tables[1].name, "events");
  EXPECT_EQ(c.kafka.brokers, "k1:9092,k2:9092");
  EXPECT_EQ(c.kafka.properties.at("linger.ms"), "50");
  EXPECT_EQ(c.kafka.properties.at("security.protocol"), "SASL_SSL");
  EXPECT_EQ(c.kafka.properties.count("compression.type"), 0u);
  EXPECT_EQ(c.kafka.properties.at("acks"), "all");
  EXPECT_EQ(c.limits.max_inflight_bytes, 2048);
  EXPECT_EQ(c.limits.max_tracked_events, 30);
  EXPECT_EQ(c.http.listen, "");
  EXPECT_EQ(c.log.format, LogFormat::kJson);
  EXPECT_EQ(c.log.level, LogLevel::kWarn);
  EXPECT_EQ(c.poller.batch_timeout_ms, 6);
  EXPECT_EQ(c.poller.mode, PollerMode::kDelete);
  EXPECT_TRUE(c.poller.notify);
  EXPECT_EQ(c.poller.notify_channel, "ch");
}

TEST(ConfigTest, UnknownKeysAreRejectedWithTheirPath) {
  struct Case {
    const char* yaml;
    const char* path;
  };
  for (const Case& tc : std::vector<Case>{
           {"bogus: 1", "bogus"},
           {"postgres: {slots: x}", "postgres.slots"},
           {"outbox: {topics: x}", "outbox.topics"},
           {"outbox: {columns: {idd: x}}", "outbox.columns.idd"},
           {"outbox:\n  tables:\n    - table: t\n      colums: {}",
            "outbox.tables[0].colums"},
           {"outbox: {tables: [a, {table: b, columns: {bodyy: x}}]}",
            "outbox.tables[1].columns.bodyy"},
           {"outbox: {tables: [{table: b, on_invalid: halt}]}",
            "outbox.tables[0].on_invalid"},
           {"kafka: {broker: x}", "kafka.broker"},
           {"limits: {max_events: 1}", "limits.max_events"},
           {"http: {port: 1}", "http.port"},
           {"log: {colour: true}", "log.colour"},
           {"poller: {intervalms: 1}", "poller.intervalms"},
           {"postgres.slot: x", "postgres.slot"},
       }) {
    EXPECT_THAT(
        ErrorOf(tc.yaml),
        HasSubstr(absl::StrCat("relay.yaml: unknown key \"", tc.path, "\"")))
        << tc.yaml;
  }
  EXPECT_THAT(ErrorOf("log:\n  level: info\n  colour: true\n"),
              HasSubstr("(line 3)"));
}

TEST(ConfigTest, TypeErrorsAreOneLine) {
  struct Case {
    const char* yaml;
    const char* message;
  };
  for (const Case& tc : std::vector<Case>{
           {"postgres: {status_interval_ms: fast}",
            "\"postgres.status_interval_ms\": expected an integer"},
           {"postgres: {status_interval_ms: 0}", "must be at least 1"},
           {"limits: {max_inflight_events: -5}", "must be at least 1"},
           {"limits: {max_tracked_events: 0}", "must be at least 1"},
           {"limits: {max_inflight_bytes: 3 TB}", "expected an integer"},
           {"postgres: {create_slot: maybe}", "expected true or false"},
           {"postgres: {acknowledge_slot_loss: yesterday}",
            "\"postgres.acknowledge_slot_loss\": \"yesterday\" is not an LSN"},
           {"log: {level: verbose}",
            "expected one of debug | info | warn | error"},
           {"poller: {mode: drop}", "expected one of mark | delete"},
           {"postgres: {slot: [a]}", "expected a scalar, got a list"},
           {"postgres: 5", "\"postgres\": expected a map"},
           {"kafka: {properties: [a]}", "\"kafka.properties\": expected a map"},
           {"kafka: {properties: {linger.ms: [1]}}", "map of strings"},
           {"outbox: {tables: public.outbox}", "expected a list"},
           {"outbox: {tables: [{columns: {id: x}}]}",
            "\"outbox.tables[0].table\": is required"},
           {"outbox: {tables: []}",
            "\"outbox.tables\": is empty and outbox.messages.enabled is "
            "false: nothing to relay"},
           {"outbox: {tables: [a, public.a]}", "public.a is listed twice"},
           {"outbox: {tables: [.a]}", "is not schema.table"},
           {"outbox: {headers: {type: id}}", "reserved for the event id"},
           {"outbox: {columns: {payload: \"\"}}",
            "\"outbox.tables[0].columns.payload\": must not be empty"},
           {"postgres: {slot: Bad-Slot}", "is not a slot name"},
           {"http: {listen: localhost}", "is not host:port"},
           {"kafka: {properties: {bootstrap.servers: x}}", "use kafka.brokers"},
           {"postgres: {reconnect_backoff_max_ms: 10}",
            "must be at least postgres.reconnect_backoff_initial_ms"},
           {"log: [", "relay.yaml:"},
           {"[1, 2]", "expected a map at the top level"},
       }) {
    std::string error = ErrorOf(tc.yaml);
    EXPECT_THAT(error, HasSubstr(tc.message)) << tc.yaml;
    EXPECT_THAT(error, Not(HasSubstr("\n"))) << tc.yaml;
  }
}

TEST(ConfigTest, DeadLetterRequiresTopic) {
  EXPECT_THAT(
      ErrorOf("outbox: {on_invalid: dead_letter, dead_letter_topic: \"\"}"),
      HasSubstr("\"outbox.dead_letter_topic\": must be set"));
  EXPECT_TRUE(ParseConfigYaml(
                  "outbox: {on_invalid: halt, dead_letter_topic: \"\"}", "x")
                  .ok());
}

TEST(ConfigTest, InternalTopicsReplication) {
  auto c = ParseConfigYaml(
      "kafka: {internal_topics: {replication_factor: 3, "
      "min_insync_replicas: 2}}",
      "x");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kafka.internal_topics.replication_factor, 3);
  EXPECT_EQ(c->kafka.internal_topics.min_insync_replicas, 2);
  EXPECT_EQ(Config().kafka.internal_topics.replication_factor, -1);
  EXPECT_EQ(Config().kafka.internal_topics.min_insync_replicas, -1);
  EXPECT_THAT(ErrorOf("kafka: {internal_topics: {replication_factor: 0}}"),
              HasSubstr("0 (use -1 for the broker's default)"));
  EXPECT_THAT(ErrorOf("kafka: {internal_topics: {replication_factor: 2, "
                      "min_insync_replicas: 3}}"),
              HasSubstr("\"kafka.internal_topics.min_insync_replicas\": 3 is "
                        "above kafka.internal_topics.replication_factor 2"));
  EXPECT_THAT(ErrorOf("kafka: {internal_topics: {min_insync_replicas: -2}}"),
              HasSubstr("kafka.internal_topics.min_insync_replicas"));
}

TEST(ConfigTest, TablesInheritColumnsTopicKeyAndHeaders) {
  Config c = ParseOrDie(R"(
outbox:
  columns: {payload: body, aggregateid: entity}
  topic: "events.{type}"
  headers: {type: eventType}
  tables:
    - public.outbox
    - table: billing.outbox
      columns: {id: event_id}
      topic: "billing.{aggregatetype}"
      key: type
      headers: {trace: traceparent}
    - table: other
)");
  ASSERT_EQ(c.outbox.tables.size(), 3u);
  const OutboxTable& a = c.outbox.tables[0];
  EXPECT_EQ(a.columns.payload, "body");
  EXPECT_EQ(a.columns.id, "id");
  EXPECT_EQ(a.key, "entity");  // follows the aggregateid column
  EXPECT_EQ(a.topic, "events.{type}");
  EXPECT_THAT(a.headers, ElementsAre(Pair("type", "eventType")));
  const OutboxTable& b = c.outbox.tables[1];
  EXPECT_EQ(b.schema, "billing");
  EXPECT_EQ(b.columns.id, "event_id");
  EXPECT_EQ(b.columns.payload, "body");  // inherited
  EXPECT_EQ(b.topic, "billing.{aggregatetype}");
  EXPECT_EQ(b.key, "type");
  EXPECT_THAT(b.headers, ElementsAre(Pair("trace", "traceparent")));
  EXPECT_EQ(c.outbox.tables[2].QualifiedName(), "public.other");

  Config keyed = ParseOrDie("outbox: {key: type, tables: [a]}");
  EXPECT_EQ(keyed.outbox.tables[0].key, "type");
}

TEST(ConfigTest, FlagsOverrideFile) {
  std::string path = WriteFile("flags.yaml", R"(
postgres: {conninfo: "host=file", slot: from_file}
kafka: {brokers: "file:9092"}
outbox:
  tables:
    - table: public.outbox
      topic: "per.table"
    - app.events
)");
  auto c = Load({"--config", path, "--pg=host=flag", "--kafka", "flag:9092",
                 "--slot", "from_flag", "--topic", "t.{type}"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->postgres.conninfo, "host=flag");
  EXPECT_EQ(c->kafka.brokers, "flag:9092");
  EXPECT_EQ(c->postgres.slot, "from_flag");
  ASSERT_EQ(c->outbox.tables.size(), 2u);
  EXPECT_EQ(c->outbox.tables[0].topic, "t.{type}");
  EXPECT_EQ(c->outbox.tables[1].topic, "t.{type}");

  c = Load({"--config", path, "--tables", "x.a, b"});
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->outbox.tables.size(), 2u);
  EXPECT_EQ(c->outbox.tables[0].QualifiedName(), "x.a");
  EXPECT_EQ(c->outbox.tables[0].topic, "outbox.event.{aggregatetype}");
  EXPECT_EQ(c->outbox.tables[1].QualifiedName(), "public.b");

  // Later flags win.
  c = Load({"--slot", "a", "--set", "postgres.slot=b"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->postgres.slot, "b");
}

TEST(ConfigTest, SetReachesNestedKeys) {
  auto c = Load({"--set",
                 "limits.max_inflight_events=5000",
                 "--set=kafka.properties.linger.ms=50",
                 "--set",
                 "kafka.properties.sasl.username=u",
                 "--set",
                 "kafka.properties.compression.type=",
                 "--set",
                 "outbox.columns.payload=body",
                 "--set",
                 "outbox.headers.type=eventType",
                 "--set",
                 "log.level=debug",
                 "--set",
                 "postgres.create_slot=false",
                 "--tables",
                 "a,b",
                 "--set",
                 "outbox.tables[1].topic=b.only",
                 "--set",
                 "outbox.tables[1].columns.id=event_id"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->limits.max_inflight_events, 5000);
  EXPECT_EQ(c->kafka.properties.at("linger.ms"), "50");
  EXPECT_EQ(c->kafka.properties.at("sasl.username"), "u");
  EXPECT_EQ(c->kafka.properties.count("compression.type"), 0u);
  EXPECT_EQ(c->log.level, LogLevel::kDebug);
  EXPECT_FALSE(c->postgres.create_slot);
  EXPECT_EQ(c->outbox.tables[0].columns.payload, "body");
  EXPECT_THAT(c->outbox.tables[0].headers,
              ElementsAre(Pair("type", "eventType")));
  EXPECT_EQ(c->outbox.tables[0].topic, "outbox.event.{aggregatetype}");
  EXPECT_EQ(c->outbox.tables[1].topic, "b.only");
  EXPECT_EQ(c->outbox.tables[1].columns.id, "event_id");

  // --set outbox.tables=... is the same as --tables.
  c = Load({"--set", "outbox.tables=x.y"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->outbox.tables[0].QualifiedName(), "x.y");
}

TEST(ConfigTest, SetErrorsNameTheFlagAndKey) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  for (const Case& tc : std::vector<Case>{
           {{"--set", "limits.nope=1"}, "--set: unknown key \"limits.nope\""},
           {{"--set", "limits=1"}, "--set: unknown key \"limits\""},
           {{"--set", "outbox.tables[0].bogus=1"}, "unknown key"},
           {{"--set", "outbox.tables[3].topic=x"}, "there are only 1 tables"},
           {{"--set", "outbox.tables[0].on_invalid=halt"}, "unknown key"},
           {{"--set", "outbox.topic.x=1"}, "unknown key"},
           {{"--set", "kafka.properties=x"}, "is a map"},
           {{"--set", "limits.max_inflight_events=lots"},
            "--set: \"limits.max_inflight_events\": expected an integer"},
           {{"--tables", " , "}, "\"outbox.tables\": is empty"},
       }) {
    auto c = Load(tc.args);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument)
        << tc.args[1];
    EXPECT_THAT(c.status().message(), HasSubstr(tc.message)) << tc.args[1];
  }
}

// The tableless outbox alone: logical messages, no outbox table.
TEST(ConfigTest, NoTablesWithMessagesOnly) {
  Config c = ParseOrDie("outbox: {tables: [], messages: {enabled: true}}");
  EXPECT_TRUE(c.outbox.tables.empty());
  EXPECT_TRUE(c.outbox.messages.enabled);
  auto flags = Load({"--tables", "", "--set", "outbox.messages.enabled=true"});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_TRUE(flags->outbox.tables.empty());
}

TEST(ConfigTest, MissingFileIsNotFound) {
  auto c = Load({"--config", "/nonexistent/relay.yaml"});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(c.status().message(), HasSubstr("/nonexistent/relay.yaml"));
}

TEST(ConfigTest, ErrorsNameTheFile) {
  std::string path = WriteFile(
      "typo.yaml", "outbox:\n  tables:\n    - table: t\n      colums: {}\n");
  auto c = Load({"--config", path});
  EXPECT_THAT(c.status().message(),
              HasSubstr(absl::StrCat(
                  path, ": unknown key \"outbox.tables[0].colums\"")));
}

TEST(ConfigTest, RedactedHidesSecrets) {
  Config c = ParseOrDie(R"(
postgres: {conninfo: "host=db password='PWONE PW\\'TWO' user=relay"}
kafka:
  properties:
    sasl.password: hunter2
    ssl.key.password: keypass
    sasl.oauthbearer.client.secret: OAUTHVALUE
    sasl.jaas.config: JAASVALUE
    ssl.key.pem: PEMDATA
    sasl.username: visible_user
)");
  std::string r = c.Redacted();
  for (const char* secret : {"PWONE", "TWO", "hunter2", "keypass", "OAUTHVALUE",
                             "JAASVALUE", "PEMDATA"}) {
    EXPECT_THAT(r, Not(HasSubstr(secret))) << r;
  }
  EXPECT_THAT(r,
              HasSubstr("postgres.conninfo: host=db password=**** user=relay"));
  EXPECT_THAT(r, HasSubstr("sasl.password: ****"));
  EXPECT_THAT(r, HasSubstr("visible_user"));
  EXPECT_THAT(r, HasSubstr("postgres.slot: outbox_relay"));
  EXPECT_THAT(r, HasSubstr("outbox.tables[0]: public.outbox"));

  c.postgres.conninfo =
      "postgresql://relay:pa55@db:5432/app?sslmode=require&password=qq";
  r = c.Redacted();
  EXPECT_THAT(r, Not(HasSubstr("pa55")));
  EXPECT_THAT(r, Not(HasSubstr("qq")));
  EXPECT_THAT(
      r,
      HasSubstr(
          "postgresql://relay:****@db:5432/app?sslmode=require&password=****"));
  c.postgres.conninfo = "password = x  host=h";
  EXPECT_THAT(c.Redacted(), HasSubstr("password = ****  host=h"));
  // The client key's passphrase too (issue 24).
  c.postgres.conninfo = "host=h sslkey=k.key sslpassword=KEYPASS";
  EXPECT_THAT(c.Redacted(), HasSubstr("sslkey=k.key sslpassword=****"));
  c.postgres.conninfo =
      "postgresql://db/app?sslpassword=KEYPASS&sslmode=verify-full";
  EXPECT_THAT(c.Redacted(), HasSubstr("?sslpassword=****&sslmode=verify-full"));
  c.postgres.standby_conninfo = "host=s password=STANDBYPW";
  EXPECT_THAT(c.Redacted(), Not(HasSubstr("STANDBYPW")));
}

// Issue 32 item 10: libpq ends an unquoted value at a space and reads the
// rest as keywords, so a password with a space is masked up to the next of
// libpq's keywords, never just to the space.
TEST(ConfigTest, RedactedMasksAnUnquotedPasswordUpToTheNextKeyword) {
  Config c;
  c.postgres.conninfo = "host=db password=PWONE PWTWO PW=THREE  user=relay";
  std::string r = c.Redacted();
  for (const char* part : {"PWONE", "PWTWO", "THREE"}) {
    EXPECT_THAT(r, Not(HasSubstr(part))) << r;
  }
  EXPECT_THAT(r, HasSubstr("postgres.conninfo: host=db password=****  "
                           "user=relay"));
  c.postgres.conninfo = "password=A B sslmode = require";
  EXPECT_THAT(c.Redacted(),
              HasSubstr("postgres.conninfo: password=**** sslmode = require"));
  c.postgres.conninfo = "host=db password=ESC\\ APED user=u";
  EXPECT_THAT(c.Redacted(), HasSubstr("host=db password=**** user=u"));
  c.postgres.conninfo = "host=db sslpassword=KEY PASS";
  EXPECT_THAT(c.Redacted(), HasSubstr("host=db sslpassword=****\n"));
  c.postgres.conninfo = "host=db oauth_client_secret=OAUTHSECRET";
  EXPECT_THAT(c.Redacted(), Not(HasSubstr("OAUTHSECRET")));
}

// Issue 32 item 13: the two compacted topics cannot be one: each would
// read the other's records (a DataLoss exit).
TEST(ConfigTest, StateTopicEqualToCheckpointTopicIsRefused) {
  absl::StatusOr<Config> c =
      Load({"--set", "kafka.state_topic=relay.meta", "--set",
            "kafka.checkpoint_topic=relay.meta"});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr("\"kafka.state_topic\": \"relay.meta\" is "
                        "kafka.checkpoint_topic too"));
  EXPECT_TRUE(Load({"--set", "kafka.state_topic=a", "--set",
                    "kafka.checkpoint_topic=b"})
                  .ok());
}

// Issue 32 item 11: the outage the slot must survive, one day by default.
TEST(ConfigTest, ExpectedOutage) {
  absl::StatusOr<Config> c = Load({});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->postgres.expected_outage_s, 86400);
  c = Load({"--set", "postgres.expected_outage_s=0"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->postgres.expected_outage_s, 0);
  EXPECT_FALSE(Load({"--set", "postgres.expected_outage_s=-1"}).ok());
}

// Each tool's --help lists exactly the keys it uses, with their defaults.
TEST(ConfigTest, HelpTextMentionsEveryKeyOfItsToolAndDefault) {
  Config defaults;
  for (Tool tool : {Tool::kRelay, Tool::kPoller, Tool::kAudit}) {
    std::string help = HelpText(tool);
    for (const ConfigKey& key : ConfigKeys()) {
      std::string entry = absl::StrCat("  ", key.path, " = ");
      if ((key.tools & ToolBit(tool)) == 0) {
        EXPECT_THAT(help, Not(HasSubstr(entry)))
            << ToolName(tool) << " " << key.path;
        continue;
      }
      EXPECT_THAT(help, HasSubstr(entry)) << ToolName(tool) << " " << key.path;
      EXPECT_THAT(help, HasSubstr(std::string(key.description.substr(0, 20))))
          << key.path;
      if (key.global != nullptr) {
        EXPECT_THAT(help,
                    HasSubstr(absl::StrCat(key.path, " = ",
                                           RenderField(key.global(defaults)))))
            << key.path;
      }
    }
    EXPECT_THAT(help, HasSubstr("--set KEY=VALUE"));
    EXPECT_THAT(help, HasSubstr(absl::StrCat("Usage: ", ToolName(tool))));
  }
  EXPECT_THAT(HelpText(Tool::kRelay),
              HasSubstr("limits.max_inflight_bytes = 2097152"));
  // Every key is some tool's.
  for (const ConfigKey& key : ConfigKeys()) {
    EXPECT_NE(key.tools, 0u) << key.path;
  }
}

// Issue 15: the Outbox Event Router options, from YAML and --set.
TEST(ConfigTest, EventRouterOptionsParse) {
  Config c = ParseOrDie(R"yaml(
outbox:
  compatibility: debezium
  debezium: {connector_logical_name: shop, task_id: "2"}
  timestamp: produce
  timestamp_column: occurred_at
  fields: [type:header:eventType, shard:partition]
  expand_json_payload: true
  tombstone_on_empty_payload: true
  on_update: warn
  topic_regex: "(?<routedByValue>.*)"
  topic_replacement: "outbox.$${routedByValue}.events"
  schema_version_column: schema_version
)yaml");
  EXPECT_EQ(c.outbox.compatibility, Compatibility::kDebezium);
  EXPECT_EQ(c.outbox.debezium.connector_logical_name, "shop");
  EXPECT_EQ(c.outbox.debezium.task_id, "2");
  EXPECT_EQ(c.outbox.debezium.connector_name, "postgresql");
  EXPECT_TRUE(c.outbox.debezium.run_id);  // the newest Debezium's headers
  EXPECT_EQ(c.outbox.timestamp, TimestampSource::kProduce);
  EXPECT_EQ(c.outbox.timestamp_column, "occurred_at");
  // A YAML list is the comma-separated form.
  EXPECT_EQ(c.outbox.fields, "type:header:eventType,shard:partition");
  EXPECT_TRUE(c.outbox.expand_json_payload);
  EXPECT_TRUE(c.outbox.tombstone_on_empty_payload);
  EXPECT_EQ(c.outbox.on_update, OnUpdate::kWarn);
  EXPECT_EQ(c.outbox.topic_replacement, "outbox.${routedByValue}.events");
  EXPECT_EQ(c.outbox.schema_version_column, "schema_version");
  EXPECT_THAT(ErrorOf("outbox: {timestamp: wallclock}"),
              HasSubstr("expected one of auto | commit | produce"));
  EXPECT_THAT(ErrorOf("outbox: {compatibility: kafka}"),
              HasSubstr("native | debezium"));
  auto set = Load({"--set", "outbox.compatibility=debezium", "--set",
                   "outbox.fields=a:header,b:envelope"});
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->outbox.compatibility, Compatibility::kDebezium);
  EXPECT_EQ(set->outbox.fields, "a:header,b:envelope");
  auto three = Load({"--set", "outbox.debezium.run_id=false"});
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_FALSE(three->outbox.debezium.run_id);
}

}  // namespace
}  // namespace outbox
