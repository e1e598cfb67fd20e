// The tableless outbox's routing: content parsing (OutboxMessageParser) and
// MessageRouter, on hand-written content and on outbox_emit()'s real output
// as each plugin's decoder gives it (captured from PostgreSQL 15).
#include "route/message_router.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hex_bytes.h"
#include "plugin/pgoutput/pgoutput_decoder.h"
#include "plugin/wal2json/wal2json_decoder.h"

namespace outbox {
namespace {

using ::testing::HasSubstr;

constexpr char kId[] = "a0000000-0000-4000-8000-000000000001";

Change Message(absl::string_view content) {
  Change c;
  c.kind = Change::Kind::kMessage;
  c.transactional = true;
  c.prefix = "outbox";
  c.content = content;
  c.commit_time_us = 1700000000123456;
  return c;
}

std::unique_ptr<MessageRouter> MakeRouter(OutboxConfig outbox = {}) {
  auto r = MessageRouter::Create(outbox);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : nullptr;
}

std::map<std::string, std::string> Headers(const Record& r) {
  std::map<std::string, std::string> out;
  for (const Header& h : r.headers) {
    out[h.name] = h.is_null ? "<null>" : std::string(h.value);
  }
  return out;
}

TEST(MessageRouterTest, ContentBecomesTheRecordAnOutboxRowWouldGive) {
  auto router = MakeRouter();
  const std::string content = absl::StrCat(
      R"({"id": ")", kId,
      R"(", "aggregatetype": "order", "aggregateid": "42", "type": "T", )"
      R"("payload": {"total": 12.5, "items": [1, "two"]}, )"
      R"("headers": {"trace": "t-\u00e9", "n": 3, "ok": true, "z": null}})");
  Change m = Message(content);
  Record r;
  ASSERT_TRUE(router->Route(m, &r).ok());
  EXPECT_EQ(r.topic, "outbox.event.order");
  EXPECT_EQ(r.key, "42");
  // The payload's JSON text byte for byte, as written.
  EXPECT_EQ(r.value, R"({"total": 12.5, "items": [1, "two"]})");
  EXPECT_FALSE(r.value_is_null);
  EXPECT_EQ(r.event_id, kId);
  EXPECT_EQ(r.commit_time_us, 1700000000123456);
  ASSERT_EQ(r.headers.size(), 5u);
  EXPECT_EQ(r.headers[0].name, "id");  // first, then the content's in order
  EXPECT_EQ(r.headers[1].name, "trace");
  EXPECT_EQ(r.headers[4].name, "z");
  EXPECT_EQ(Headers(r),
            (std::map<std::string, std::string>{{"id", kId},
                                                {"trace", "t-\xc3\xa9"},
                                                {"n", "3"},
                                                {"ok", "true"},
                                                {"z", "<null>"}}));
}

TEST(MessageRouterTest, PayloadKindsAndNull) {
  auto router = MakeRouter();
  for (const auto& [payload, want] : std::map<std::string, std::string>{
           {R"("just \"text\"")", R"("just \"text\"")"},
           {"12.50", "12.50"},
           {"[1, 2]", "[1, 2]"},
           {"true", "true"}}) {
    std::string content = absl::StrCat(
        R"({"id": 7, "aggregatetype": "a", "aggregateid": "k", "payload": )",
        payload, "}");
    Change m = Message(content);
    Record r;
    ASSERT_TRUE(router->Route(m, &r).ok()) << payload;
    // A JSON string payload is its JSON text (quotes and escapes), as a
    // jsonb column holding a string gives.
    EXPECT_EQ(r.value, want) << payload;
    EXPECT_EQ(r.event_id, "7");  // a number id is its literal
  }
  Change m = Message(
      R"({"id": "i", "aggregatetype": "a", "aggregateid": "k", "payload": null})");
  Record r;
  ASSERT_TRUE(router->Route(m, &r).ok());
  EXPECT_TRUE(r.value_is_null);  // like a NULL payload column
  EXPECT_EQ(r.headers.size(), 1u);
}

TEST(MessageRouterTest, TopicTemplateUsesContentFields) {
  OutboxConfig outbox;
  outbox.messages.topic = "events.{type}.{aggregatetype}";
  auto router = MakeRouter(outbox);
  Change m = Message(
      R"({"id": "i", "aggregatetype": "order", "aggregateid": "k", "type": "Paid", "payload": {}})");
  Record r;
  ASSERT_TRUE(router->Route(m, &r).ok());
  EXPECT_EQ(r.topic, "events.Paid.order");

  outbox.messages.topic = "events.{tenant}";
  auto bad = MessageRouter::Create(outbox);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("outbox.messages.topic"));
}

TEST(MessageRouterTest, BadContentIsInvalidArgumentNamingTheEvent) {
  auto router = MakeRouter();
  struct Case {
    std::string content, error, event_id;
  };
  const std::vector<Case> cases = {
      {"not json", "not a JSON object", ""},
      {R"(["an", "array"])", "not a JSON object", ""},
      {R"({"id": "e1", "aggregatetype": "a", "payload": {}})",
       "key column aggregateid is missing", "e1"},
      {R"({"aggregatetype": "a", "aggregateid": "k", "payload": {}})",
       "event id column id is missing", ""},
      {R"({"id": "e2", "aggregatetype": "a", "aggregateid": null, "payload": 1})",
       "key column aggregateid is null", "e2"},
      {R"({"id": "e3", "aggregatetype": "a", "aggregateid": "k"})",
       "payload column payload is missing", "e3"},
      {R"({"id": "e4", "aggregatetype": "a b", "aggregateid": "k", "payload": 1})",
       "", "e4"},  // an illegal topic
      {R"({"id": "e5", "id": "x", "aggregatetype": "a", "aggregateid": "k", "payload": 1})",
       "duplicate field \"id\"", "e5"},
      {R"({"id": "e6", "aggregatetype": "a", "aggregateid": "k", "payload": 1, "headers": [1]})",
       "\"headers\" is not an object", "e6"},
      {R"({"id": "e7", "aggregatetype": "a", "aggregateid": "k", "payload": 1, "headers": {"h": {"x": 1}}})",
       "header \"h\" is an object or array", "e7"},
      {R"({"id": "e8", "aggregatetype": "a", "aggregateid": "k", "payload": 1, "headers": {"id": "x"}})",
       "header \"id\" is reserved", "e8"},
      {R"({"id": "e9", "aggregatetype": "a", "aggregateid": "k", "payload": 1, "headers": {"h": "1", "h": "2"}})",
       "duplicate header \"h\"", "e9"},
      {R"({"id": "e10", "aggregatetype": "a", "aggregateid": "k", "payload": 1} trailing)",
       "not valid JSON", ""},
      {R"({"id": "e12", "aggregatetype": "a", "aggregateid": "k", "payload": 1}})",
       "trailing data", "e12"},
      {"{\"id\": \"e11\", \"aggregatetype\": \"a\", \"aggregateid\": \"\xff\"}",
       "not valid JSON", ""},
      {"", "not valid JSON", ""},
  };
  for (const Case& c : cases) {
    Change m = Message(c.content);
    Record r;
    absl::Status s = router->Route(m, &r);
    ASSERT_TRUE(absl::IsInvalidArgument(s)) << c.content << ": " << s;
    EXPECT_THAT(s.message(), HasSubstr(c.error)) << c.content;
    EXPECT_EQ(r.event_id, c.event_id) << c.content;
  }
  // A good message after bad ones: nothing left over from them.
  Change m = Message(
      R"({"id": "ok", "aggregatetype": "a", "aggregateid": "k", "payload": 1})");
  Record r;
  ASSERT_TRUE(router->Route(m, &r).ok());
  EXPECT_EQ(r.headers.size(), 1u);
}

// outbox_emit('order', '42', 'OrderCreated',
//   '{"total": 12.5, "note": "café \"q\""}',
//   '{"trace": "t-1", "n": 3, "z": null}', 'a0000000-...-000000000001')
// in one transaction, captured from PostgreSQL 15.18 with
// pg_logical_slot_get_changes (wal2json, the relay's options) and
// pg_logical_slot_get_binary_changes (pgoutput, messages 'true').
constexpr char kWal2JsonRecord[] =
    R"({"action":"M","xid":726,"timestamp":"2026-11-23 17:51:41.081093+00","lsn":"0/150B6D0","transactional":true,"prefix":"outbox","content":"{\"id\": \"a0000000-0000-4000-8000-000000000001\", \"type\": \"OrderCreated\", \"headers\": {\"n\": 3, \"z\": null, \"trace\": \"t-1\"}, \"payload\": {\"note\": \"café \\\"q\\\"\", \"total\": 12.5}, \"aggregateid\": \"42\", \"aggregatetype\": \"order\"}"})";
constexpr char kPgOutputBegin[] = "42000000000150b6d0000303f403d14205000002d6";
constexpr char kPgOutputMessage[] =
    "4d01000000000150b6d06f7574626f7800000000d87b226964223a2022613030303030"
    "30302d303030302d343030302d383030302d303030303030303030303031222c2022"
    "74797065223a20224f7264657243726561746564222c202268656164657273223a20"
    "7b226e223a20332c20227a223a206e756c6c2c20227472616365223a2022742d3122"
    "7d2c20227061796c6f6164223a207b226e6f7465223a2022636166c3a9205c22715c"
    "22222c2022746f74616c223a2031322e357d2c20226167677265676174656964223a"
    "20223432222c202261676772656761746574797065223a20226f72646572227d";

// Checks that `c`, as either decoder gives outbox_emit()'s message, routes
// into *r as the event it emitted.
void ExpectRoutedAsEmitted(const Change& c, Record* r) {
  ASSERT_EQ(c.kind, Change::Kind::kMessage);
  EXPECT_TRUE(c.transactional);
  EXPECT_EQ(c.prefix, "outbox");
  auto router = MakeRouter();
  ASSERT_TRUE(router->Route(c, r).ok());
  EXPECT_EQ(r->topic, "outbox.event.order");
  EXPECT_EQ(r->key, "42");
  // jsonb's text of the payload, as a jsonb outbox column would give it.
  EXPECT_EQ(r->value, "{\"note\": \"caf\xc3\xa9 \\\"q\\\"\", \"total\": 12.5}");
  EXPECT_EQ(Headers(*r),
            (std::map<std::string, std::string>{
                {"id", kId}, {"n", "3"}, {"z", "<null>"}, {"trace", "t-1"}}));
}

TEST(MessageRouterTest, Wal2JsonRecordOfOutboxEmit) {
  Wal2JsonDecoder decoder;
  Change c;
  ASSERT_TRUE(decoder.Decode(kWal2JsonRecord, &c).ok());
  Record r;
  ASSERT_NO_FATAL_FAILURE(ExpectRoutedAsEmitted(c, &r));
  EXPECT_GT(r.commit_time_us, 0);
}

TEST(MessageRouterTest, PgOutputMessageOfOutboxEmit) {
  PgOutputDecoder decoder;
  Change begin, c;
  ASSERT_TRUE(decoder.Decode(HexBytes(kPgOutputBegin), &begin).ok());
  const std::string bytes = HexBytes(kPgOutputMessage);
  ASSERT_TRUE(decoder.Decode(bytes, &c).ok());
  Record r;
  ASSERT_NO_FATAL_FAILURE(ExpectRoutedAsEmitted(c, &r));
  EXPECT_EQ(r.commit_time_us, begin.commit_time_us);
}

}  // namespace
}  // namespace outbox
