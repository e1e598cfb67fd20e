#include "route/router.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Column Text(absl::string_view name, absl::string_view value) {
  return Column{name, "text", ValueKind::kText, value};
}
Column Null(absl::string_view name) {
  return Column{name, "text", ValueKind::kNull, ""};
}

// An insert into public.outbox with Debezium's column names.
Change OutboxInsert() {
  Change c;
  c.kind = Change::Kind::kInsert;
  c.schema = "public";
  c.table = "outbox";
  c.commit_time_us = 1700000000123456;
  c.columns = {
      Column{"id", "uuid", ValueKind::kText,
             "8f1c2b1e-0c1a-4d38-9a51-3f7e1f0c9a01"},
      Text("aggregatetype", "order"),
      Text("aggregateid", "order-42"),
      Text("type", "OrderCreated"),
      Column{"payload", "jsonb", ValueKind::kText, R"({"total": 12.5})"},
  };
  return c;
}

Column* Find(Change* c, absl::string_view name) {
  for (Column& col : c->columns) {
    if (col.name == name) return &col;
  }
  return nullptr;
}

void Erase(Change* c, absl::string_view name) {
  c->columns.erase(
      std::remove_if(c->columns.begin(), c->columns.end(),
                     [&](const Column& col) { return col.name == name; }),
      c->columns.end());
}

std::unique_ptr<Router> MakeRouter(const OutboxConfig& outbox) {
  auto r = Router::Create(outbox);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : nullptr;
}

MATCHER_P2(HeaderIs, name, value, "") {
  return arg.name == name && arg.value == value && !arg.is_null;
}
MATCHER_P(NullHeader, name, "") { return arg.name == name && arg.is_null; }

TEST(RouterTest, DefaultMappingMatchesDebeziumOutboxEventRouter) {
  auto router = MakeRouter(OutboxConfig{});
  Change change = OutboxInsert();
  Record rec;
  ASSERT_TRUE(router->Route(change, &rec).ok());
  EXPECT_EQ(rec.topic, "outbox.event.order");
  EXPECT_EQ(rec.key, "order-42");
  EXPECT_FALSE(rec.key_is_null);
  EXPECT_EQ(rec.value, R"({"total": 12.5})");
  EXPECT_FALSE(rec.value_is_null);
  EXPECT_THAT(rec.headers, ElementsAre(HeaderIs(
                               "id", "8f1c2b1e-0c1a-4d38-9a51-3f7e1f0c9a01")));
  EXPECT_EQ(rec.event_id, "8f1c2b1e-0c1a-4d38-9a51-3f7e1f0c9a01");
  EXPECT_EQ(rec.commit_time_us, 1700000000123456);
  // The value is the row's own bytes, not a copy.
  EXPECT_EQ(rec.value.data(), Find(&change, "payload")->value.data());
}

TEST(RouterTest, CustomColumnsTopicKeyAndHeaders) {
  OutboxTable t;
  t.schema = "app";
  t.name = "events";
  t.columns = {"event_id", "kind", "entity", "event_type", "body"};
  t.topic = "{tenant}.{kind}.v1";
  t.key = "entity";
  t.headers = {{"event_type", "eventType"}, {"tenant", "tenant"}};
  OutboxConfig outbox;
  outbox.tables = {t};
  // "tenant" is a header column, so the template may use it.
  auto router = MakeRouter(outbox);
  ASSERT_NE(router, nullptr);

  Change c;
  c.kind = Change::Kind::kInsert;
  c.schema = "app";
  c.table = "events";
  c.columns = {Column{"event_id", "bigint", ValueKind::kNumber, "77"},
               Text("kind", "invoice"),
               Text("entity", "inv-9"),
               Text("event_type", "Paid"),
               Text("tenant", "acme"),
               Text("body", "{}")};
  Record rec;
  ASSERT_TRUE(router->Route(c, &rec).ok());
  EXPECT_EQ(rec.topic, "acme.invoice.v1");
  EXPECT_EQ(rec.key, "inv-9");
  EXPECT_EQ(rec.value, "{}");
  EXPECT_EQ(rec.event_id, "77");
  // Extra headers follow "id" in column-name order.
  EXPECT_THAT(rec.headers,
              ElementsAre(HeaderIs("id", "77"), HeaderIs("eventType", "Paid"),
                          HeaderIs("tenant", "acme")));
}

TEST(RouterTest, TwoTablesWithDifferentMappings) {
  OutboxTable a;  // defaults: public.outbox
  OutboxTable b;
  b.schema = "billing";
  b.name = "outbox";
  b.topic = "billing.{type}";
  b.columns.payload = "data";
  OutboxConfig outbox;
  outbox.tables = {a, b};
  auto router = MakeRouter(outbox);
  ASSERT_NE(router, nullptr);

  Record rec;
  ASSERT_TRUE(router->Route(OutboxInsert(), &rec).ok());
  EXPECT_EQ(rec.topic, "outbox.event.order");

  Change c = OutboxInsert();
  c.schema = "billing";
  Find(&c, "payload")->name = "data";
  Find(&c, "data")->value = "billing-bytes";
  ASSERT_TRUE(router->Route(c, &rec).ok());
  EXPECT_EQ(rec.topic, "billing.OrderCreated");
  EXPECT_EQ(rec.value, "billing-bytes");

  c.schema = "elsewhere";
  absl::Status s = router->Route(c, &rec);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("no outbox mapping for table elsewhere.outbox"));
}

TEST(RouterTest, PoisonRows) {
  auto router = MakeRouter(OutboxConfig{});
  Record rec;
  struct Case {
    const char* name;
    std::function<void(Change*)> mutate;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"null key",
       [](Change* c) { *Find(c, "aggregateid") = Null("aggregateid"); },
       "event 8f1c2b1e-0c1a-4d38-9a51-3f7e1f0c9a01: key column aggregateid is "
       "null"},
      {"missing key", [](Change* c) { Erase(c, "aggregateid"); },
       "key column aggregateid is missing"},
      {"null id", [](Change* c) { *Find(c, "id") = Null("id"); },
       "public.outbox: event id column id is null"},
      {"missing id", [](Change* c) { Erase(c, "id"); },
       "event id column id is missing"},
      {"missing payload", [](Change* c) { Erase(c, "payload"); },
       "payload column payload is missing"},
      {"null topic column",
       [](Change* c) { *Find(c, "aggregatetype") = Null("aggregatetype"); },
       "topic column aggregatetype is null"},
      {"illegal topic character",
       [](Change* c) { Find(c, "aggregatetype")->value = "or/der"; },
       "has a character Kafka forbids"},
      {"too long",
       [](Change* c) {
         static const std::string long_type(240, 'x');
         Find(c, "aggregatetype")->value = long_type;
       },
       "longer than 249"},
  };
  for (const Case& tc : cases) {
    Change c = OutboxInsert();
    tc.mutate(&c);
    absl::Status s = router->Route(c, &rec);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << tc.name;
    EXPECT_THAT(s.message(), HasSubstr(tc.message)) << tc.name;
  }
}

TEST(RouterTest, EmptyRenderedTopicIsPoison) {
  OutboxConfig outbox;
  outbox.tables[0].topic = "{aggregatetype}";
  auto router = MakeRouter(outbox);
  Change c = OutboxInsert();
  Find(&c, "aggregatetype")->value = "";
  Record rec;
  absl::Status s = router->Route(c, &rec);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("topic is empty"));
  EXPECT_THAT(s.message(), HasSubstr("event 8f1c2b1e"));
}

TEST(RouterTest, ByteaPayloadIsRaw) {
  auto router = MakeRouter(OutboxConfig{});
  Change c = OutboxInsert();
  static const char kBytes[] = {'\x00', '\xff', '\x10', 'a'};
  *Find(&c, "payload") = Column{"payload", "bytea", ValueKind::kBytes,
                                absl::string_view(kBytes, sizeof(kBytes))};
  Record rec;
  ASSERT_TRUE(router->Route(c, &rec).ok());
  EXPECT_EQ(rec.value, absl::string_view(kBytes, sizeof(kBytes)));
  EXPECT_FALSE(rec.value_is_null);
}

TEST(RouterTest, NullPayloadIsNullValue) {
  auto router = MakeRouter(OutboxConfig{});
  Change c = OutboxInsert();
  *Find(&c, "payload") = Null("payload");
  Record rec;
  rec.value = "stale";
  ASSERT_TRUE(router->Route(c, &rec).ok());
  EXPECT_TRUE(rec.value_is_null);
  EXPECT_TRUE(rec.value.empty());
}

TEST(RouterTest, NullHeaderColumnGivesNullHeader) {
  OutboxConfig outbox;
  outbox.tables[0].headers = {{"type", "eventType"}};
  auto router = MakeRouter(outbox);
  Change c = OutboxInsert();
  *Find(&c, "type") = Null("type");
  Record rec;
  ASSERT_TRUE(router->Route(c, &rec).ok());
  EXPECT_THAT(rec.headers, ElementsAre(HeaderIs("id", rec.event_id),
                                       NullHeader("eventType")));
  Erase(&c, "type");
  EXPECT_THAT(router->Route(c, &rec).message(),
              HasSubstr("header column type is missing"));
}

TEST(RouterTest, NumberAndBoolValuesAreText) {
  OutboxConfig outbox;
  outbox.tables[0].headers = {{"type", "flag"}};
  auto router = MakeRouter(outbox);
  Change c = OutboxInsert();
  *Find(&c, "id") = Column{"id", "bigint", ValueKind::kNumber, "12345"};
  *Find(&c, "aggregateid") =
      Column{"aggregateid", "int", ValueKind::kNumber, "9"};
  *Find(&c, "type") = Column{"type", "boolean", ValueKind::kBool, "true"};
  Record rec;
  ASSERT_TRUE(router->Route(c, &rec).ok());
  EXPECT_EQ(rec.key, "9");
  EXPECT_THAT(rec.headers,
              ElementsAre(HeaderIs("id", "12345"), HeaderIs("flag", "true")));
}

TEST(RouterTest, ReusesRecordBuffers) {
  OutboxConfig outbox;
  outbox.tables[0].headers = {{"type", "eventType"}};
  auto router = MakeRouter(outbox);
  Record rec;
  Change first = OutboxInsert();
  ASSERT_TRUE(router->Route(first, &rec).ok());
  const char* topic_buffer = rec.topic.data();
  const Header* header_buffer = rec.headers.data();

  Change second = OutboxInsert();
  Find(&second, "id")->value = "second-id";
  Find(&second, "aggregatetype")->value = "pay";
  Find(&second, "aggregateid")->value = "p-1";
  Find(&second, "type")->value = "Paid";
  Find(&second, "payload")->value = "2";
  ASSERT_TRUE(router->Route(second, &rec).ok());
  EXPECT_EQ(rec.topic, "outbox.event.pay");
  EXPECT_EQ(rec.key, "p-1");
  EXPECT_EQ(rec.value, "2");
  EXPECT_EQ(rec.event_id, "second-id");
  EXPECT_THAT(rec.headers, ElementsAre(HeaderIs("id", "second-id"),
                                       HeaderIs("eventType", "Paid")));
  // Shorter topic, same header count: no reallocation.
  EXPECT_EQ(rec.topic.data(), topic_buffer);
  EXPECT_EQ(rec.headers.data(), header_buffer);
}

TEST(RouterTest, CreateRejectsBadTemplates) {
  OutboxConfig outbox;
  outbox.tables[0].topic = "outbox.{tenant}";  // not a mapped column
  auto r = Router::Create(outbox);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("public.outbox"));
  EXPECT_THAT(r.status().message(), HasSubstr("unknown placeholder {tenant}"));

  outbox.tables[0].topic = "outbox events.{type}";
  r = Router::Create(outbox);
  EXPECT_THAT(r.status().message(), HasSubstr("character Kafka forbids"));

  outbox.tables[0].topic = "{{type}}";  // escapes give literal braces
  r = Router::Create(outbox);
  EXPECT_THAT(r.status().message(), HasSubstr("character Kafka forbids"));

  outbox.tables[0].topic = "outbox.{type}";
  outbox.on_invalid = OnInvalid::kDeadLetter;
  outbox.dead_letter_topic = "dead letters";
  r = Router::Create(outbox);
  EXPECT_THAT(r.status().message(), HasSubstr("outbox.dead_letter_topic"));
}

TEST(RouterTest, Wal2jsonAddTablesEscapesNames) {
  OutboxTable a;
  OutboxTable b;
  b.schema = "my.schema";
  b.name = "out,box\\ *x";
  OutboxConfig outbox;
  outbox.tables = {a, b};
  auto router = MakeRouter(outbox);
  EXPECT_THAT(router->wal2json_add_tables(),
              ElementsAre("public.outbox", "my\\.schema.out\\,box\\\\\\ \\*x"));
}

TEST(RouterTest, RequiredColumnsListsWhatTheMappingUses) {
  OutboxTable a;
  a.headers = {{"trace_id", "traceparent"}};
  OutboxTable b;
  b.name = "outbox2";
  b.key = "id";
  b.topic = "fixed";
  OutboxConfig outbox;
  outbox.tables = {a, b};
  auto router = MakeRouter(outbox);
  auto cols = router->RequiredColumns();
  ASSERT_EQ(cols.size(), 2u);
  EXPECT_EQ(cols[0].schema, "public");
  EXPECT_EQ(cols[0].table, "outbox");
  EXPECT_THAT(cols[0].columns, ElementsAre("id", "aggregateid", "payload",
                                           "trace_id", "aggregatetype"));
  EXPECT_THAT(cols[1].columns, ElementsAre("id", "payload"));
}

}  // namespace
}  // namespace outbox
