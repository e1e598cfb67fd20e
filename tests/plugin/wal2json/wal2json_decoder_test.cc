// The wal2json decoder on captured and hand-written valid records.
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "plugin/wal2json/wal2json_decoder_fixture.h"

namespace outbox::wal2json_test {
namespace {

using ::testing::ElementsAre;
// ---------------------------------------------------------------------------
// Captured output.

TEST_F(Wal2JsonDecoderTest, EveryCapturedRecordDecodes) {
  for (const char* file :
       {"all.jsonl", "all_tz_kolkata.jsonl", "all_tz_new_york.jsonl",
        "outbox_inserts.jsonl", "streaming.jsonl"}) {
    std::vector<std::string> lines = ReadLines(file);
    EXPECT_GT(lines.size(), 5u) << file;
    for (const std::string& line : lines) {
      absl::Status st = decoder_.Decode(line, &change_);
      EXPECT_TRUE(st.ok()) << file << ": " << st << "\n" << line;
    }
  }
}

TEST_F(Wal2JsonDecoderTest, CapturedKindsAreCounted) {
  std::map<Kind, int> counts;
  for (const std::string& line : All()) ++counts[Ok(line).kind];
  EXPECT_EQ(counts[Kind::kBegin], 13);
  EXPECT_EQ(counts[Kind::kCommit], 13);
  EXPECT_EQ(counts[Kind::kInsert], 11);
  EXPECT_EQ(counts[Kind::kUpdate], 3);
  EXPECT_EQ(counts[Kind::kDelete], 3);
  EXPECT_EQ(counts[Kind::kMessage], 3);
  EXPECT_EQ(counts[Kind::kOther], 1);  // the truncate
}

TEST_F(Wal2JsonDecoderTest, FilteredSlotHasOnlyOutboxInsertsAndMessages) {
  int inserts = 0;
  for (const std::string& line : ReadLines("outbox_inserts.jsonl")) {
    const Change& c = Ok(line);
    EXPECT_THAT(c.kind, ::testing::AnyOf(Kind::kBegin, Kind::kCommit,
                                         Kind::kInsert, Kind::kMessage));
    if (c.kind == Kind::kInsert) {
      ++inserts;
      EXPECT_EQ(c.table, "outbox");
    }
  }
  // Insert-then-delete in one transaction still emits its insert.
  EXPECT_EQ(inserts, 5);
}

TEST_F(Wal2JsonDecoderTest, Begin) {
  const Change& c = Ok(All()[0]);
  EXPECT_EQ(c.kind, Kind::kBegin);
  EXPECT_EQ(c.xid, 729u);
  EXPECT_EQ(c.lsn, 0x154B570u);
  EXPECT_EQ(c.end_lsn, 0x154B5A0u);
  EXPECT_EQ(c.commit_time_us, 1795324143 * kSecond + 42662);
  EXPECT_TRUE(c.columns.empty());
}

TEST_F(Wal2JsonDecoderTest, Commit) {
  const Change& c = Ok(All()[2]);
  EXPECT_EQ(c.kind, Kind::kCommit);
  EXPECT_EQ(c.xid, 729u);
  EXPECT_EQ(c.lsn, 0x154B570u);
  EXPECT_EQ(c.end_lsn, 0x154B5A0u);
  EXPECT_EQ(c.commit_time_us, 1795324143 * kSecond + 42662);
}

TEST_F(Wal2JsonDecoderTest, OutboxInsert) {
  const Change& c = Ok(All()[1]);
  EXPECT_EQ(c.kind, Kind::kInsert);
  EXPECT_EQ(c.xid, 729u);
  EXPECT_EQ(c.lsn, 0x154B1A8u);
  EXPECT_EQ(c.end_lsn, kInvalidLsn);
  EXPECT_EQ(c.commit_time_us, 1795324143 * kSecond + 42662);
  EXPECT_EQ(c.schema, "public");
  EXPECT_EQ(c.table, "outbox");
  EXPECT_THAT(ColumnNames(c),
              ElementsAre("id", "aggregatetype", "aggregateid", "type",
                          "payload", "created_at", "seq", "sent_at", "attempts",
                          "next_attempt_at", "last_error", "dead_lettered_at"));
  ExpectColumn(c, "id", "uuid", ValueKind::kText,
               "6f1c7c1e-4a55-4b8e-9d64-1d2f3c4b5a69");
  ExpectColumn(c, "aggregatetype", "text", ValueKind::kText, "order");
  ExpectColumn(c, "aggregateid", "text", ValueKind::kText, "order-1001");
  ExpectColumn(c, "type", "text", ValueKind::kText, "OrderCreated");
  // SELECT payload::text FROM outbox, byte for byte.
  ExpectColumn(
      c, "payload", "jsonb", ValueKind::kText,
      R"json({"meta": null, "note": "leave at door \"back\" \\ side\nthanks", "tags": ["new", "priority"], "emoji": "😀", "flags": {"gift": false, "express": true}, "lines": [{"qty": 2, "sku": "SKU-1", "price": 19.99}, {"qty": 1, "sku": "SKU-2", "price": 5.00}], "total": 44.98, "escaped": "é\t", "orderId": "order-1001", "currency": "EUR", "customer": {"id": "cust-42", "name": "Zoë O'Brien", "email": "zoe@example.com"}})json");
  ExpectColumn(c, "created_at", "timestamp with time zone", ValueKind::kText,
               "2026-11-22 05:09:03.042479+00");
  ExpectColumn(c, "seq", "bigint", ValueKind::kNumber, "1");
  ExpectColumn(c, "sent_at", "timestamp with time zone", ValueKind::kNull, "");
  ExpectColumn(c, "attempts", "integer", ValueKind::kNumber, "0");
  ExpectColumn(c, "last_error", "text", ValueKind::kNull, "");
}

TEST_F(Wal2JsonDecoderTest, AssortedTypes) {
  const Change& c = Ok(All()[4]);
  ASSERT_EQ(c.table, "typed");
  ExpectColumn(c, "id", "integer", ValueKind::kNumber, "1");
  ExpectColumn(c, "t", "text", ValueKind::kText, "plain text");
  ExpectColumn(c, "i", "integer", ValueKind::kNumber, "42");
  // Past double precision: kept as literal text.
  ExpectColumn(c, "b", "bigint", ValueKind::kNumber, "9007199254740993");
  ExpectColumn(c, "s", "smallint", ValueKind::kNumber, "-7");
  ExpectColumn(c, "n", "numeric", ValueKind::kNumber, "12345.678900");
  ExpectColumn(c, "r", "real", ValueKind::kNumber, "1.5");
  ExpectColumn(c, "d", "double precision", ValueKind::kNumber, "-2.25e-10");
  ExpectColumn(c, "flag", "boolean", ValueKind::kBool, "true");
  ExpectColumn(c, "raw", "bytea", ValueKind::kBytes,
               absl::string_view("\xde\xad\xbe\xef\x00\xff", 6));
  ExpectColumn(c, "j", "json", ValueKind::kText,
               R"({"a": 1,  "b": [true, null]})");
  ExpectColumn(
      c, "jb", "jsonb", ValueKind::kText,
      R"({"k": "v\"q", "uni": "日本", "nested": {"x": [1, 2.5, "é"]}})");
  ExpectColumn(c, "u", "uuid", ValueKind::kText,
               "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
  ExpectColumn(c, "ts", "timestamp with time zone", ValueKind::kText,
               "2026-11-22 04:54:35.123456+00");
  ExpectColumn(c, "arr", "integer[]", ValueKind::kText, "{1,2,3}");
}

TEST_F(Wal2JsonDecoderTest, Nulls) {
  const Change& c = Ok(All()[5]);
  ASSERT_EQ(c.columns.size(), 15u);
  ExpectColumn(c, "id", "integer", ValueKind::kNumber, "2");
  for (size_t i = 1; i < c.columns.size(); ++i) {
    EXPECT_EQ(c.columns[i].kind, ValueKind::kNull) << c.columns[i].name;
    EXPECT_TRUE(c.columns[i].value.empty()) << c.columns[i].name;
  }
}

TEST_F(Wal2JsonDecoderTest, EscapesFalseEmptyBytesAndSpecialNumerics) {
  const Change& c = Ok(All()[6]);
  ExpectColumn(c, "t", "text", ValueKind::kText,
               "tab\there \"quote\" back\\slash\nnewline ünï");
  ExpectColumn(c, "b", "bigint", ValueKind::kNumber, "-1");
  ExpectColumn(c, "flag", "boolean", ValueKind::kBool, "false");
  ExpectColumn(c, "raw", "bytea", ValueKind::kBytes, "");
  ExpectColumn(c, "j", "json", ValueKind::kText, R"("just a string")");
  ExpectColumn(c, "jb", "jsonb", ValueKind::kText, "[]");
  // wal2json prints NaN and infinities as null.
  ExpectColumn(c, "n", "numeric", ValueKind::kNull, "");
  ExpectColumn(c, "r", "real", ValueKind::kNull, "");
}

TEST_F(Wal2JsonDecoderTest, UpdateSkipsIdentity) {
  const Change& c = Ok(All()[11]);
  EXPECT_EQ(c.kind, Kind::kUpdate);
  EXPECT_EQ(c.xid, 731u);
  EXPECT_EQ(c.table, "typed");
  EXPECT_EQ(c.columns.size(), 15u);  // the new row; not the identity
  ExpectColumn(c, "t", "text", ValueKind::kText, "changed");
  ExpectColumn(c, "flag", "boolean", ValueKind::kBool, "false");

  const Change& full = Ok(All()[24]);  // REPLICA IDENTITY FULL
  EXPECT_EQ(full.kind, Kind::kUpdate);
  EXPECT_THAT(ColumnNames(full), ElementsAre("id", "note"));
  ExpectColumn(full, "note", "text", ValueKind::kText, "uno");
}

TEST_F(Wal2JsonDecoderTest, DeleteHasNoColumns) {
  for (int line : {17, 27, 42}) {
    const Change& c = Ok(All()[line]);
    EXPECT_EQ(c.kind, Kind::kDelete) << line;
    EXPECT_EQ(c.schema, "public");
    EXPECT_FALSE(c.table.empty());
    EXPECT_TRUE(c.columns.empty());
  }
}

TEST_F(Wal2JsonDecoderTest, TruncateIsOther) {
  const Change& c = Ok(All()[30]);
  EXPECT_EQ(c.kind, Kind::kOther);
  EXPECT_EQ(c.xid, 737u);
  EXPECT_EQ(c.table, "full_ident");
}

TEST_F(Wal2JsonDecoderTest, TransactionalMessage) {
  const Change& c = Ok(All()[33]);
  EXPECT_EQ(c.kind, Kind::kMessage);
  EXPECT_EQ(c.xid, 738u);
  EXPECT_TRUE(c.transactional);
  EXPECT_EQ(c.prefix, "outbox");
  EXPECT_EQ(c.content, R"({"event": "tx"})");
  EXPECT_EQ(c.lsn, 0x154C9A0u);
  EXPECT_EQ(Ok(All()[38]).content, "multi\nline");
}

TEST_F(Wal2JsonDecoderTest, NonTransactionalMessageHasNullXidAndTimestamp) {
  const Change& c = Ok(All()[35]);
  EXPECT_EQ(c.kind, Kind::kMessage);
  EXPECT_EQ(c.xid, 0u);
  EXPECT_EQ(c.commit_time_us, 0);
  EXPECT_FALSE(c.transactional);
  EXPECT_EQ(c.prefix, "outbox.nontx");
  EXPECT_EQ(c.content, "plain \"text\"");
  EXPECT_EQ(c.lsn, 0x154CA20u);
}

TEST_F(Wal2JsonDecoderTest, SessionTimeZoneDoesNotChangeCommitTime) {
  for (const char* file : {"all_tz_kolkata.jsonl", "all_tz_new_york.jsonl"}) {
    std::vector<std::string> other = ReadLines(file);
    ASSERT_EQ(other.size(), All().size()) << file;
    for (size_t i = 0; i < other.size(); ++i) {
      const Change utc = Ok(All()[i]);  // copy: views die on the next call
      const Change& local = Ok(other[i]);
      EXPECT_EQ(local.kind, utc.kind) << file << ":" << i;
      EXPECT_EQ(local.lsn, utc.lsn) << file << ":" << i;
      EXPECT_EQ(local.commit_time_us, utc.commit_time_us) << file << ":" << i;
    }
  }
}

TEST_F(Wal2JsonDecoderTest, StreamingCapture) {
  std::vector<std::string> lines = ReadLines("streaming.jsonl");
  ASSERT_EQ(lines.size(), 6u);
  const Change& b = Ok(lines[0]);
  EXPECT_EQ(b.kind, Kind::kBegin);
  EXPECT_EQ(b.commit_time_us, 1795324172 * kSecond + 634748);
  ExpectColumn(Ok(lines[1]), "payload", "jsonb", ValueKind::kText,
               R"({"stream": [1, {"deep": "ü\\"}]})");
  ExpectColumn(Ok(lines[2]), "payload", "jsonb", ValueKind::kText,
               R"({"n": -500})");
  const Change& c = Ok(lines[3]);
  EXPECT_EQ(c.kind, Kind::kCommit);
  EXPECT_EQ(c.end_lsn, 0x154D770u);
}

// ---------------------------------------------------------------------------
// Robustness beyond what wal2json prints.

TEST_F(Wal2JsonDecoderTest, KeysInAnyOrderAndUnknownKeysIgnored) {
  const Change& b = Ok(
      R"({"nextlsn":"1/20","origin":7,"lsn":"1/10","timestamp":"2000-01-01 00:00:00+00","xid":5,"action":"C"})");
  EXPECT_EQ(b.kind, Kind::kCommit);
  EXPECT_EQ(b.lsn, 0x100000010u);
  EXPECT_EQ(b.end_lsn, 0x100000020u);
  EXPECT_EQ(b.xid, 5u);
  EXPECT_EQ(b.commit_time_us, 946684800 * kSecond);

  const Change& i = Ok(
      R"({"columns":[{"value":"0A0b","extra":[1,{"x":2}],"type":"bytea","name":"r"}],)"
      R"("pk":[{"name":"r","type":"bytea"}],"table":"t","schema":"s","action":"I"})");
  EXPECT_EQ(i.kind, Kind::kInsert);
  EXPECT_EQ(i.schema, "s");
  EXPECT_EQ(i.table, "t");
  ExpectColumn(i, "r", "bytea", ValueKind::kBytes, "\x0a\x0b");
}

TEST_F(Wal2JsonDecoderTest, WhitespaceAroundTokens) {
  const Change& c =
      Ok(" {\n \"action\" : \"I\" ,\r\n \"schema\":\"s\", \"table\":\"t\",\t"
         "\"columns\" : [ { \"name\" : \"n\" , \"type\" : \"numeric\" , "
         "\"value\" : -1.5E+3 \n } ] } \n");
  ExpectColumn(c, "n", "numeric", ValueKind::kNumber, "-1.5E+3");
}

TEST_F(Wal2JsonDecoderTest, ByteaWithBackslashXPrefixIsTolerated) {
  const Change& c = Ok(
      R"({"action":"I","schema":"s","table":"t","columns":[{"name":"b","type":"bytea","value":"\\xFF00"}]})");
  ExpectColumn(c, "b", "bytea", ValueKind::kBytes,
               absl::string_view("\xff\x00", 2));
}

TEST_F(Wal2JsonDecoderTest, ManyByteaColumnsKeepTheirViews) {
  // Every decoded bytea lives in one buffer: earlier views must survive the
  // later appends.
  std::string record = R"({"action":"I","schema":"s","table":"t","columns":[)";
  for (int i = 0; i < 50; ++i) {
    absl::StrAppend(&record, i ? "," : "", R"({"name":"c)", i,
                    R"(","type":"bytea","value":")", std::string(200, 'a'),
                    absl::StrCat(absl::Hex(i, absl::kZeroPad2)), "\"}");
  }
  record += "]}";
  const Change& c = Ok(record);
  ASSERT_EQ(c.columns.size(), 50u);
  for (int i = 0; i < 50; ++i) {
    std::string want(100, '\xaa');
    want.push_back(static_cast<char>(i));
    EXPECT_EQ(c.columns[i].kind, ValueKind::kBytes);
    EXPECT_EQ(c.columns[i].value, want) << i;
  }
}

// ---------------------------------------------------------------------------
// Lifetime.

TEST_F(Wal2JsonDecoderTest, ViewsOutliveTheInputBuffer) {
  struct Copy {
    std::string name, type, value;
    ValueKind kind;
  };
  std::vector<Copy> copies;
  {
    auto input = std::make_unique<std::string>(All()[4]);
    const Change& c = Ok(*input);
    for (const Column& col : c.columns) {
      copies.push_back({std::string(col.name), std::string(col.type),
                        std::string(col.value), col.kind});
    }
    // libpq reuses its buffer: clobber and free the caller's copy.
    std::fill(input->begin(), input->end(), 'x');
  }
  ASSERT_EQ(change_.columns.size(), copies.size());
  for (size_t i = 0; i < copies.size(); ++i) {
    EXPECT_EQ(change_.columns[i].name, copies[i].name);
    EXPECT_EQ(change_.columns[i].type, copies[i].type);
    EXPECT_EQ(change_.columns[i].value, copies[i].value);
    EXPECT_EQ(change_.columns[i].kind, copies[i].kind);
  }
  EXPECT_EQ(change_.table, "typed");
}

TEST_F(Wal2JsonDecoderTest, NextDecodeResetsTheChange) {
  Ok(All()[1]);
  ASSERT_FALSE(change_.columns.empty());
  const Change& m = Ok(All()[35]);
  EXPECT_TRUE(m.columns.empty());
  EXPECT_TRUE(m.schema.empty());
  EXPECT_EQ(m.end_lsn, kInvalidLsn);
  EXPECT_EQ(m.xid, 0u);
  const Change& b = Ok(All()[0]);
  EXPECT_FALSE(b.transactional);
  EXPECT_TRUE(b.prefix.empty());
  EXPECT_TRUE(b.content.empty());
}

TEST_F(Wal2JsonDecoderTest, GrowingAndShrinkingRecords) {
  std::string big = absl::StrReplaceAll(
      All()[1], {{"\"order\"", "\"" + std::string(100000, 'o') + "\""}});
  EXPECT_EQ(Ok(All()[0]).kind, Kind::kBegin);
  ExpectColumn(Ok(big), "aggregatetype", "text", ValueKind::kText,
               std::string(100000, 'o'));
  EXPECT_EQ(Ok(All()[2]).kind, Kind::kCommit);
  ExpectColumn(Ok(All()[1]), "aggregatetype", "text", ValueKind::kText,
               "order");
}

}  // namespace
}  // namespace outbox::wal2json_test
