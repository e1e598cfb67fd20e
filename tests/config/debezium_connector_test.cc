// TranslateDebeziumConnector: a Debezium connector configuration becomes an
// outbox-relay configuration that loads and means the same records; keys
// with no counterpart are refused together, in one line; the rest become
// notes.
#include "config/debezium_connector.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "config/config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// What bench/debezium.sh writes, with the defaults filled in.
constexpr char kBenchConnector[] = R"(name=outbox
connector.class=io.debezium.connector.postgresql.PostgresConnector
tasks.max=1
database.hostname=db.internal
database.port=5433
database.user=outbox
database.password=s3cret
database.dbname=app
topic.prefix=dbz
plugin.name=pgoutput
slot.name=debezium
publication.name=dbz_publication
publication.autocreate.mode=filtered
table.include.list=public.outbox
snapshot.mode=no_data
tombstones.on.delete=false
transforms=outbox
transforms.outbox.type=io.debezium.transforms.outbox.EventRouter
transforms.outbox.route.by.field=aggregatetype
transforms.outbox.route.topic.replacement=outbox.event.${routedByValue}
transforms.outbox.table.field.event.key=aggregateid
transforms.outbox.table.field.event.payload=payload
)";

Config Load(const DebeziumTranslation& t) {
  absl::StatusOr<Config> c = ParseConfigYaml(t.yaml, "translation");
  EXPECT_TRUE(c.ok()) << c.status() << "\n" << t.yaml;
  return c.ok() ? *c : Config{};
}

TEST(DebeziumConnectorTest, TheBenchConnectorTranslatesToTheSameRecords) {
  auto t = TranslateDebeziumConnector(kBenchConnector);
  ASSERT_TRUE(t.ok()) << t.status();
  Config c = Load(*t);
  EXPECT_EQ(c.postgres.conninfo,
            "host=db.internal port=5433 user=outbox dbname=app");
  EXPECT_EQ(c.postgres.plugin, "pgoutput");
  EXPECT_EQ(c.postgres.slot, "debezium");
  EXPECT_EQ(c.postgres.publication, "dbz_publication");
  EXPECT_TRUE(c.postgres.create_publication);
  EXPECT_EQ(c.outbox.compatibility, Compatibility::kDebezium);
  EXPECT_EQ(c.outbox.debezium.connector_logical_name, "dbz");
  ASSERT_EQ(c.outbox.tables.size(), 1u);
  const OutboxTable& table = c.outbox.tables[0];
  EXPECT_EQ(table.QualifiedName(), "public.outbox");
  EXPECT_EQ(table.topic, "outbox.event.{aggregatetype}");
  EXPECT_EQ(table.key, "aggregateid");
  EXPECT_EQ(table.columns.id, "id");
  EXPECT_EQ(table.columns.payload, "payload");
  EXPECT_EQ(c.outbox.on_update, OnUpdate::kIgnore);
  // The password is never copied, and says so.
  EXPECT_THAT(t->yaml, Not(HasSubstr("s3cret")));
  EXPECT_THAT(t->notes, testing::Contains(HasSubstr("database.password")));
  EXPECT_THAT(t->yaml, HasSubstr("# - database.password is not copied"));
}

TEST(DebeziumConnectorTest, EveryEventRouterOptionFromConnectRestJson) {
  auto t = TranslateDebeziumConnector(R"({
    "name": "orders-outbox",
    "config": {
      "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
      "database.hostname": "db", "database.port": 5432,
      "database.user": "o b", "database.dbname": "shop",
      "database.sslmode": "require",
      "topic.prefix": "shop", "plugin.name": "pgoutput",
      "slot.name": "orders_slot", "publication.name": "orders_pub",
      "publication.autocreate.mode": "disabled",
      "table.include.list": "billing\\.outbox, public.outbox",
      "snapshot.mode": "never",
      "status.update.interval.ms": "2000",
      "transforms": "unwrap",
      "transforms.unwrap.type": "io.debezium.transforms.outbox.EventRouter",
      "transforms.unwrap.table.field.event.id": "event_id",
      "transforms.unwrap.table.field.event.key": "agg_id",
      "transforms.unwrap.table.field.event.payload": "body",
      "transforms.unwrap.route.by.field": "kind",
      "transforms.unwrap.route.topic.regex": "(?<kind>[a-z]+)_v\\d+",
      "transforms.unwrap.route.topic.replacement": "events.${kind}",
      "transforms.unwrap.table.field.event.timestamp": "occurred_at",
      "transforms.unwrap.table.field.event.schema.version": "sv",
      "transforms.unwrap.table.fields.additional.placement": "type:header:eventType,shard:partition",
      "transforms.unwrap.table.expand.json.payload": "true",
      "transforms.unwrap.route.tombstone.on.empty.payload": "true",
      "transforms.unwrap.table.op.invalid.behavior": "fatal"
    }})");
  ASSERT_TRUE(t.ok()) << t.status();
  Config c = Load(*t);
  EXPECT_EQ(c.postgres.conninfo,
            "host=db port=5432 user='o b' dbname=shop sslmode=require");
  EXPECT_EQ(c.postgres.slot, "orders_slot");
  EXPECT_EQ(c.postgres.publication, "orders_pub");
  EXPECT_FALSE(c.postgres.create_publication);
  EXPECT_EQ(c.postgres.status_interval_ms, 2000);
  EXPECT_EQ(c.outbox.debezium.connector_logical_name, "shop");
  ASSERT_EQ(c.outbox.tables.size(), 2u);
  EXPECT_EQ(c.outbox.tables[0].QualifiedName(), "billing.outbox");
  EXPECT_EQ(c.outbox.tables[1].QualifiedName(), "public.outbox");
  EXPECT_EQ(c.outbox.tables[1].columns.id, "event_id");
  EXPECT_EQ(c.outbox.tables[1].columns.aggregatetype, "kind");
  EXPECT_EQ(c.outbox.tables[1].columns.payload, "body");
  EXPECT_EQ(c.outbox.tables[1].key, "agg_id");
  EXPECT_EQ(c.outbox.topic_regex, "(?<kind>[a-z]+)_v\\d+");
  EXPECT_EQ(c.outbox.topic_replacement, "events.${kind}");
  EXPECT_EQ(c.outbox.timestamp_column, "occurred_at");
  EXPECT_EQ(c.outbox.schema_version_column, "sv");
  EXPECT_EQ(c.outbox.fields, "type:header:eventType,shard:partition");
  EXPECT_TRUE(c.outbox.expand_json_payload);
  EXPECT_TRUE(c.outbox.tombstone_on_empty_payload);
  EXPECT_EQ(c.outbox.on_update, OnUpdate::kHalt);
  EXPECT_THAT(t->notes,
              testing::Contains(HasSubstr("table.expand.json.payload")));
  EXPECT_THAT(t->yaml, HasSubstr("\"orders-outbox\""));
}

// Values with a newline, a tab and control characters: the YAML loads and
// gives the same bytes back; notes stay comments.
TEST(DebeziumConnectorTest, ControlCharactersInValuesStayInTheirScalars) {
  auto t = TranslateDebeziumConnector(R"({
    "name": "out\nbox: 1",
    "config": {
      "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
      "database.hostname": "db", "topic.prefix": "dbz\nnext: 1\u0001\u001f",
      "plugin.name": "pgoutput", "database.dbname": "s\tx\r",
      "publication.autocreate.mode": "filtered",
      "table.include.list": "public.outbox",
      "tasks.max": "1\nkafka: {brokers: evil}",
      "transforms": "outbox",
      "transforms.outbox.type": "io.debezium.transforms.outbox.EventRouter",
      "transforms.outbox.table.fields.additional.placement": "type:header:a\u0002b"
    }})");
  ASSERT_TRUE(t.ok()) << t.status();
  Config c = Load(*t);
  EXPECT_EQ(c.outbox.debezium.connector_logical_name, "dbz\nnext: 1\x01\x1f");
  EXPECT_EQ(c.postgres.conninfo, "host=db dbname=s\tx\r");
  EXPECT_EQ(c.outbox.fields,
            "type:header:a\x02"
            "b");
  EXPECT_EQ(c.kafka.brokers, "127.0.0.1:9092");
  for (const std::string& line :
       std::vector<std::string>(absl::StrSplit(t->yaml, '\n'))) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_THAT(line, testing::MatchesRegex("^[ a-z_].*")) << t->yaml;
  }
}

// outbox.debezium.run_id: the newest Debezium's four context headers unless
// the Debezium the connector runs is older than 3.4 (no runId header).
TEST(DebeziumConnectorTest, TheDebeziumVersionPicksTheContextHeaders) {
  auto newest = TranslateDebeziumConnector(kBenchConnector);
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_TRUE(Load(*newest).outbox.debezium.run_id);
  EXPECT_THAT(newest->notes,
              testing::Contains(HasSubstr("--debezium-version")));
  for (const auto& [version, run_id] :
       std::vector<std::pair<std::string, bool>>{{"3.2.3.Final", false},
                                                 {"3.3", false},
                                                 {"2.7.4.Final", false},
                                                 {"3.4.0.Final", true},
                                                 {"3.7.0.Final", true},
                                                 {"4.0", true}}) {
    auto t = TranslateDebeziumConnector(kBenchConnector, version);
    ASSERT_TRUE(t.ok()) << version << ": " << t.status();
    EXPECT_EQ(Load(*t).outbox.debezium.run_id, run_id) << version;
    EXPECT_THAT(t->notes, Not(testing::Contains(HasSubstr("run_id"))));
    EXPECT_THAT(t->yaml, HasSubstr(absl::StrCat("# Debezium ", version)));
  }
  for (const char* bad : {"three", "3", "3.x", "-3.2"}) {
    auto t = TranslateDebeziumConnector(kBenchConnector, bad);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(t.status().message(), HasSubstr("is not a Debezium version"));
  }
}

TEST(DebeziumConnectorTest, ALiteralTopicKeepsItsBracesAndWarnMapsToWarn) {
  std::string text = kBenchConnector;
  text += "transforms.outbox.route.topic.replacement=ev.{x}.${routedByValue}\n";
  text += "transforms.outbox.table.op.invalid.behavior=warn\n";
  auto t = TranslateDebeziumConnector(text);
  ASSERT_TRUE(t.ok()) << t.status();
  Config c = Load(*t);
  EXPECT_EQ(c.outbox.tables[0].topic, "ev.{{x}}.{aggregatetype}");
  EXPECT_EQ(c.outbox.on_update, OnUpdate::kWarn);
}

TEST(DebeziumConnectorTest, DebeziumDefaultsBecomeNotes) {
  // No plugin.name (decoderbufs), no autocreate mode (all_tables), no
  // snapshot.mode (initial): each is a note, with a relay-side choice.
  auto t = TranslateDebeziumConnector(
      "connector.class=io.debezium.connector.postgresql.PostgresConnector\n"
      "table.include.list=public.outbox\n"
      "transforms=o\n"
      "transforms.o.type=io.debezium.transforms.outbox.EventRouter\n"
      "heartbeat.interval.ms=10000\n");
  ASSERT_TRUE(t.ok()) << t.status();
  Config c = Load(*t);
  EXPECT_EQ(c.postgres.slot, "outbox_relay");
  EXPECT_EQ(c.postgres.publication, "outbox_relay");
  EXPECT_THAT(t->notes, testing::Contains(HasSubstr("decoderbufs")));
  EXPECT_THAT(t->notes, testing::Contains(HasSubstr(
                            "CREATE PUBLICATION outbox_relay FOR TABLE "
                            "public.outbox WITH (publish = 'insert')")));
  EXPECT_THAT(t->notes, testing::Contains(HasSubstr("snapshot.mode initial")));
  EXPECT_THAT(t->notes,
              testing::Contains(HasSubstr("heartbeat.interval.ms=10000")));
}

TEST(DebeziumConnectorTest, WhatHasNoCounterpartIsRefusedInOneLine) {
  std::string text = kBenchConnector;
  text +=
      "transforms=outbox,mask\n"
      "transforms.mask.type=org.apache.kafka.connect.transforms.MaskField$"
      "Value\n"
      "table.include.list=public.outbox_.*\n"
      "value.converter=org.apache.kafka.connect.json.JsonConverter\n"
      "transforms.outbox.tracing.span.context.field=span\n"
      "column.exclude.list=public.outbox.secret\n";
  auto t = TranslateDebeziumConnector(text);
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(t.status()));
  const std::string m(t.status().message());
  EXPECT_THAT(m, HasSubstr("transform mask"));
  EXPECT_THAT(m, HasSubstr("\"public.outbox_.*\" is a pattern"));
  EXPECT_THAT(m, HasSubstr("value.converter"));
  EXPECT_THAT(m, HasSubstr("no counterpart for column.exclude.list, "
                           "transforms.outbox.tracing.span.context.field"));
  EXPECT_THAT(m, Not(HasSubstr("\n")));
}

TEST(DebeziumConnectorTest, NotAPostgresConnectorOrNotParseable) {
  auto mysql = TranslateDebeziumConnector(
      "connector.class=io.debezium.connector.mysql.MySqlConnector\n");
  ASSERT_FALSE(mysql.ok());
  EXPECT_THAT(std::string(mysql.status().message()),
              HasSubstr("not io.debezium.connector.postgresql"));
  EXPECT_FALSE(TranslateDebeziumConnector("{\"config\": [1]").ok());
  auto bad = TranslateDebeziumConnector("just words\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("key=value"));
}

TEST(DebeziumConnectorTest, PropertiesSyntax) {
  // "key: value", comments, continuation lines and escapes.
  auto t = TranslateDebeziumConnector(
      "# a comment\n! another\n"
      "connector.class: io.debezium.connector.postgresql.PostgresConnector\n"
      "table.include.list = public.outbox,\\\n    billing.outbox\n"
      "transforms=o\n"
      "transforms.o.type=io.debezium.transforms.outbox.EventRouter\n"
      "transforms.o.route.topic.replacement=a\\=b.${routedByValue}\n");
  ASSERT_TRUE(t.ok()) << t.status();
  Config c = Load(*t);
  ASSERT_EQ(c.outbox.tables.size(), 2u);
  EXPECT_EQ(c.outbox.tables[1].QualifiedName(), "billing.outbox");
  EXPECT_EQ(c.outbox.tables[0].topic, "a=b.{aggregatetype}");
}

}  // namespace
}  // namespace outbox

namespace outbox {
namespace {

// Issue 23 item 9: Kafka Connect's topic creation becomes
// kafka.topic_creation (was refused as having no counterpart).
TEST(DebeziumConnectorTest, TopicCreationDefaultsBecomeKafkaTopicCreation) {
  auto t = TranslateDebeziumConnector(
      std::string(kBenchConnector) +
      "topic.creation.default.partitions=6\n"
      "topic.creation.default.replication.factor=3\n"
      "topic.creation.default.cleanup.policy=compact\n"
      "topic.creation.default.retention.ms=604800000\n");
  ASSERT_TRUE(t.ok()) << t.status();
  Config c = Load(*t);
  EXPECT_TRUE(c.kafka.topic_creation.enable);
  EXPECT_EQ(c.kafka.topic_creation.partitions, 6);
  EXPECT_EQ(c.kafka.topic_creation.replication_factor, 3);
  EXPECT_EQ(c.kafka.topic_creation.configs,
            (std::map<std::string, std::string>{
                {"cleanup.policy", "compact"}, {"retention.ms", "604800000"}}));
  EXPECT_THAT(t->yaml, HasSubstr("# topic.creation.default.cleanup.policy"));
  // Without both counts Connect creates nothing: neither does the relay.
  auto half = TranslateDebeziumConnector(
      std::string(kBenchConnector) + "topic.creation.default.partitions=6\n");
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_FALSE(Load(*half).kafka.topic_creation.enable);
  // Groups (per-topic regexes) are refused, by name, in one line.
  auto groups = TranslateDebeziumConnector(
      std::string(kBenchConnector) +
      "topic.creation.default.partitions=1\n"
      "topic.creation.default.replication.factor=1\n"
      "topic.creation.groups=big\n"
      "topic.creation.big.include=outbox\\\\.event\\\\..*\n");
  ASSERT_FALSE(groups.ok());
  EXPECT_THAT(groups.status().message(),
              HasSubstr("topic.creation.groups=big has no counterpart"));
  EXPECT_THAT(groups.status().message(),
              HasSubstr("no counterpart for topic.creation.big.include"));
  EXPECT_EQ(std::string(groups.status().message()).find('\n'),
            std::string::npos);
}

}  // namespace
}  // namespace outbox
