// The Router's Debezium Outbox Event Router options (outbox.compatibility,
// timestamp, fields, expand_json_payload, tombstone_on_empty_payload,
// topic_regex/_replacement, schema_version_column), one behaviour each.
#include <memory>
#include <string>
#include <vector>

#include "common/uuid.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "route/field_placement.h"
#include "route/record_value.h"
#include "route/router.h"
#include "route/topic_regex.h"

namespace outbox {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

MATCHER_P2(HeaderIs, name, value, "") {
  return arg.name == name && arg.value == value && !arg.is_null;
}

Column Text(absl::string_view name, absl::string_view value) {
  return Column{name, "text", ValueKind::kText, value};
}

Change Insert(std::vector<Column> extra = {},
              absl::string_view payload = R"({"total": 12.5})") {
  Change c;
  c.kind = Change::Kind::kInsert;
  c.schema = "public";
  c.table = "outbox";
  c.commit_time_us = 1700000000123456;
  c.columns = {Column{"id", "uuid", ValueKind::kText, "e1"},
               Text("aggregatetype", "order"), Text("aggregateid", "o-1"),
               Text("type", "Created"),
               Column{"payload", "jsonb", ValueKind::kText, payload}};
  for (Column& x : extra) c.columns.push_back(x);
  return c;
}

// Routes one change; the router lives on (records view its header values).
absl::StatusOr<Record> Route(const OutboxConfig& outbox, const Change& c) {
  static auto* routers = new std::vector<std::unique_ptr<Router>>;
  auto router = Router::Create(outbox);
  if (!router.ok()) return router.status();
  routers->push_back(*std::move(router));
  Record rec;
  absl::Status s = routers->back()->Route(c, &rec);
  if (!s.ok()) return s;
  return rec;
}

MATCHER_P(RunIdHeaderIs, value, "") {
  return arg.name == "__debezium.context.runId" && arg.value == value &&
         !arg.is_null;
}

// Debezium 3.4 and later (3.7.0 compared in bench/debezium_compare.sh): a
// fourth header, runId, a UUIDv7 the same on every record of a run.
TEST(DebeziumCompatibilityTest, ContextHeadersPrecedeIdInDebeziumsOrder) {
  OutboxConfig o;
  o.compatibility = Compatibility::kDebezium;
  o.debezium.connector_logical_name = "shop";
  o.debezium.task_id = "3";
  o.fields = "type:header:eventType";
  auto rec = Route(o, Insert());
  ASSERT_TRUE(rec.ok()) << rec.status();
  const std::string& run_id = DebeziumRunId();
  EXPECT_TRUE(IsUuidV7(run_id)) << run_id;
  EXPECT_THAT(
      rec->headers,
      ElementsAre(HeaderIs("__debezium.context.connectorLogicalName", "shop"),
                  HeaderIs("__debezium.context.taskId", "3"),
                  HeaderIs("__debezium.context.connectorName", "postgresql"),
                  RunIdHeaderIs(run_id), HeaderIs("id", "e1"),
                  HeaderIs("eventType", "Created")));
  // Another record, another Router of the same process: the same run id.
  Change second = Insert();
  second.columns[0].value = "e2";
  auto again = Route(o, second);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->headers.size(), 6u);
  EXPECT_THAT(again->headers[3], RunIdHeaderIs(run_id));
}

// Debezium 3.3 and older (3.2.3 compared): the three headers alone.
TEST(DebeziumCompatibilityTest, WithoutRunIdTheThreeHeadersOfDebezium32) {
  OutboxConfig o;
  o.compatibility = Compatibility::kDebezium;
  o.debezium.run_id = false;
  auto rec = Route(o, Insert());
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_THAT(
      rec->headers,
      ElementsAre(HeaderIs("__debezium.context.connectorLogicalName", "dbz"),
                  HeaderIs("__debezium.context.taskId", "0"),
                  HeaderIs("__debezium.context.connectorName", "postgresql"),
                  HeaderIs("id", "e1")));
}

TEST(DebeziumCompatibilityTest, NativeModeHasNoContextHeaders) {
  auto rec = Route(OutboxConfig{}, Insert());
  ASSERT_TRUE(rec.ok());
  EXPECT_THAT(rec->headers, ElementsAre(HeaderIs("id", "e1")));
}

TEST(RecordTimestampTest, CommitTimeByDefaultProduceTimeUnderDebezium) {
  auto native = Route(OutboxConfig{}, Insert());
  ASSERT_TRUE(native.ok());
  EXPECT_EQ(native->timestamp_ms, 1700000000123);
  OutboxConfig dbz;
  dbz.compatibility = Compatibility::kDebezium;
  EXPECT_EQ(Route(dbz, Insert())->timestamp_ms, 0);  // 0: produce time
  dbz.timestamp = TimestampSource::kCommit;
  EXPECT_EQ(Route(dbz, Insert())->timestamp_ms, 1700000000123);
  OutboxConfig produce;
  produce.timestamp = TimestampSource::kProduce;
  EXPECT_EQ(Route(produce, Insert())->timestamp_ms, 0);
}

TEST(RecordTimestampTest, ColumnWinsAndNullFallsBack) {
  OutboxConfig o;
  o.timestamp_column = "occurred_at";
  // timestamptz, timestamp (UTC, as Debezium reads it), Unix milliseconds.
  for (const auto& [type, kind, text] :
       std::vector<std::tuple<std::string, ValueKind, std::string>>{
           {"timestamp with time zone", ValueKind::kText,
            "2024-05-01 11:50:00.123789+02"},
           {"timestamp without time zone", ValueKind::kText,
            "2024-05-01 09:50:00.123789"},
           {"bigint", ValueKind::kNumber, "1714557000123"}}) {
    auto rec = Route(o, Insert({Column{"occurred_at", type, kind, text}}));
    ASSERT_TRUE(rec.ok()) << rec.status();
    EXPECT_EQ(rec->timestamp_ms, 1714557000123) << text;
  }
  auto null = Route(
      o, Insert({Column{"occurred_at", "timestamp", ValueKind::kNull, ""}}));
  EXPECT_EQ(null->timestamp_ms, 1700000000123);  // commit time
  auto bad = Route(o, Insert({Text("occurred_at", "yesterday")}));
  EXPECT_THAT(bad.status().message(), HasSubstr("event e1: timestamp column"));
  auto missing = Route(o, Insert());
  EXPECT_THAT(missing.status().message(), HasSubstr("is missing"));
}

TEST(FieldPlacementTest, HeadersInConfiguredOrderBeforeTheHeaderMap) {
  OutboxConfig o;
  o.fields = "type:header:eventType, aggregatetype:header";
  o.tables[0].headers = {{"aggregateid", "agg"}};
  auto rec = Route(o, Insert());
  ASSERT_TRUE(rec.ok());
  EXPECT_THAT(
      rec->headers,
      ElementsAre(HeaderIs("id", "e1"), HeaderIs("eventType", "Created"),
                  HeaderIs("aggregatetype", "order"), HeaderIs("agg", "o-1")));
}

TEST(FieldPlacementTest, EnvelopeIsJsonNativelyAndStructTextUnderDebezium) {
  OutboxConfig o;
  o.fields = "type:envelope:eventType,seq:envelope,note:envelope";
  std::vector<Column> extra = {Column{"seq", "bigint", ValueKind::kNumber, "7"},
                               Column{"note", "text", ValueKind::kNull, ""}};
  auto rec = Route(o, Insert(extra));
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ(rec->value,
            R"({"payload":{"total": 12.5},"eventType":"Created","seq":7,)"
            R"("note":null})");
  o.compatibility = Compatibility::kDebezium;
  rec = Route(o, Insert(extra));
  // Kafka Connect's Struct.toString(), which a StringConverter writes.
  EXPECT_EQ(rec->value,
            R"(Struct{payload={"total": 12.5},eventType=Created,seq=7})");
}

TEST(FieldPlacementTest, PartitionColumnPicksThePartition) {
  OutboxConfig o;
  o.fields = "shard:partition";
  auto rec =
      Route(o, Insert({Column{"shard", "integer", ValueKind::kNumber, "5"}}));
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->partition, 5);
  EXPECT_EQ(Route(OutboxConfig{}, Insert())->partition, -1);
  auto negative =
      Route(o, Insert({Column{"shard", "integer", ValueKind::kNumber, "-1"}}));
  EXPECT_FALSE(negative.ok());
}

TEST(FieldPlacementTest, BadSpecsAreRefused) {
  for (const char* spec :
       {"type", "type:body", "type:header:id", "x:envelope:payload",
        "a:partition,b:partition", "a:partition:name", ":header"}) {
    EXPECT_FALSE(ParseFieldPlacements(spec).ok()) << spec;
  }
  auto ok = ParseFieldPlacements("a:header,b:envelope:B,c:partition");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->size(), 3u);
}

TEST(ExpandJsonPayloadTest, CompactsJsonOutsideStrings) {
  OutboxConfig o;
  o.expand_json_payload = true;
  auto rec = Route(o, Insert({}, R"({"a": [1, 2], "s": "x y \" z"})"));
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->value, R"({"a":[1,2],"s":"x y \" z"})");
  // Not an object or array: as is (Debezium warns and keeps the string).
  EXPECT_EQ(Route(o, Insert({}, "\"just a string\""))->value,
            "\"just a string\"");
  EXPECT_EQ(Route(OutboxConfig{}, Insert({}, R"({"a": 1})"))->value,
            R"({"a": 1})");
}

TEST(TombstoneOnEmptyPayloadTest, BlankPayloadBecomesNullValue) {
  OutboxConfig o;
  o.tombstone_on_empty_payload = true;
  o.fields = "type:envelope";
  Change c = Insert();
  c.columns[4] = Column{"payload", "text", ValueKind::kText, " \t\n"};
  auto rec = Route(o, c);
  ASSERT_TRUE(rec.ok());
  EXPECT_TRUE(rec->value_is_null);
  o.tombstone_on_empty_payload = false;
  rec = Route(o, c);
  EXPECT_FALSE(rec->value_is_null);  // an envelope around the blank text
  EXPECT_TRUE(IsBlankPayload(""));
  EXPECT_FALSE(IsBlankPayload(" x "));
}

TEST(TopicRegexTest, RoutesLikeKafkaConnectsRegexRouter) {
  OutboxConfig o;
  o.topic_regex = "(?<routedByValue>.*)";
  o.topic_replacement = "outbox.${routedByValue}.events";
  EXPECT_EQ(Route(o, Insert())->topic, "outbox.order.events");
  o.topic_regex = "(ord)(er)";
  o.topic_replacement = "x.$2.$1";
  EXPECT_EQ(Route(o, Insert())->topic, "x.er.ord");
  o.topic_regex = "inv.*";  // no match: the routed value itself
  o.topic_replacement = "x";
  EXPECT_EQ(Route(o, Insert())->topic, "order");
  o.topic_replacement = "${nope}";
  EXPECT_THAT(Router::Create(o).status().message(),
              HasSubstr("no group named \"nope\""));
  o.topic_regex = "(";
  EXPECT_FALSE(Router::Create(o).ok());
  OutboxConfig only_replacement;
  only_replacement.topic_replacement = "x";
  EXPECT_FALSE(Router::Create(only_replacement).ok());
}

TEST(TopicRegexTest, EscapesAndLiteralDollar) {
  auto r = TopicRegex::Create("a(b)", "\\$1-$1");
  ASSERT_TRUE(r.ok());
  std::string out;
  r->Apply("ab", &out);
  EXPECT_EQ(out, "$1-b");
}

TEST(SchemaVersionColumnTest, MustHoldAnIntegerAndChangesNoByte) {
  OutboxConfig o;
  o.schema_version_column = "schema_version";
  auto rec = Route(
      o,
      Insert({Column{"schema_version", "integer", ValueKind::kNumber, "3"}}));
  ASSERT_TRUE(rec.ok());
  auto plain = Route(OutboxConfig{}, Insert());
  EXPECT_EQ(rec->value, plain->value);
  EXPECT_EQ(rec->headers.size(), plain->headers.size());
  EXPECT_FALSE(Route(o, Insert({Text("schema_version", "v3")})).ok());
}

}  // namespace
}  // namespace outbox
