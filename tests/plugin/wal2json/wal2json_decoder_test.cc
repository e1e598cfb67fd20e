#include "plugin/wal2json/wal2json_decoder.h"

#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Kind = Change::Kind;

constexpr int64_t kSecond = 1'000'000;

std::vector<std::string> ReadLines(const std::string& name) {
  std::ifstream in(std::string(OUTBOX_TESTDATA_DIR) + "/wal2json/" + name);
  EXPECT_TRUE(in.good()) << "cannot open " << name;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// all.jsonl: see capture_setup.sql for the statements behind each line.
const std::vector<std::string>& All() {
  static const auto* lines =
      new std::vector<std::string>(ReadLines("all.jsonl"));
  return *lines;
}

std::vector<std::string> ColumnNames(const Change& c) {
  std::vector<std::string> names;
  for (const Column& col : c.columns) names.emplace_back(col.name);
  return names;
}

void ExpectColumn(const Change& c, absl::string_view name,
                  absl::string_view type, ValueKind kind,
                  absl::string_view value) {
  const Column* col = c.Find(name);
  ASSERT_NE(col, nullptr) << name;
  EXPECT_EQ(col->type, type) << name;
  EXPECT_EQ(col->kind, kind) << name;
  EXPECT_EQ(col->value, value) << name;
}

class Wal2JsonDecoderTest : public ::testing::Test {
 protected:
  // Decodes a line expected to be valid.
  const Change& Ok(absl::string_view record) {
    absl::Status st = decoder_.Decode(record, &change_);
    EXPECT_TRUE(st.ok()) << st << "\n" << record;
    return change_;
  }
  absl::Status Err(absl::string_view record) {
    return decoder_.Decode(record, &change_);
  }

  Wal2JsonDecoder decoder_;
  Change change_;
};

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

// ---------------------------------------------------------------------------
// Malformed input: always InvalidArgument, never a crash.

void ExpectInvalid(const absl::Status& st, absl::string_view fragment) {
  EXPECT_TRUE(absl::IsInvalidArgument(st)) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr(std::string(fragment)));
}

TEST_F(Wal2JsonDecoderTest, EveryTruncationIsInvalid) {
  for (int line : {0, 1, 4, 35}) {
    const std::string& record = All()[line];
    for (size_t n = 0; n < record.size(); ++n) {
      absl::Status st = Err(absl::string_view(record).substr(0, n));
      ASSERT_TRUE(absl::IsInvalidArgument(st))
          << line << " cut at " << n << ": " << st;
    }
  }
}

TEST_F(Wal2JsonDecoderTest, BadActions) {
  ExpectInvalid(Err(R"({"action":"X","lsn":"0/1"})"), "unknown action \"X\"");
  ExpectInvalid(Err(R"({"action":"BC","lsn":"0/1"})"), "unknown action");
  ExpectInvalid(Err(R"({"action":"","lsn":"0/1"})"), "unknown action");
  ExpectInvalid(Err(R"({"action":1})"), "\"action\" is not a string");
  ExpectInvalid(Err(R"({"xid":1,"lsn":"0/1","nextlsn":"0/2"})"),
                "no \"action\"");
}

TEST_F(Wal2JsonDecoderTest, MissingRequiredKeys) {
  ExpectInvalid(Err(R"({"action":"C","lsn":"0/1"})"), "no \"nextlsn\"");
  ExpectInvalid(Err(R"({"action":"B","nextlsn":"0/1"})"), "no \"lsn\"");
  ExpectInvalid(Err(R"({"action":"I","schema":"s","table":"t"})"),
                "no \"columns\"");
  ExpectInvalid(Err(R"({"action":"D","schema":"s"})"), "no \"table\"");
  ExpectInvalid(Err(R"({"action":"M","transactional":true,"prefix":"p"})"),
                "no \"content\"");
  ExpectInvalid(
      Err(R"({"action":"I","schema":"s","table":"t","columns":[{"name":"a","type":"int"}]})"),
      "column without name, type or value");
}

TEST_F(Wal2JsonDecoderTest, WrongTypes) {
  ExpectInvalid(Err(R"({"action":"B","lsn":5,"nextlsn":"0/2"})"),
                "\"lsn\" is not a string");
  ExpectInvalid(Err(R"({"action":"B","lsn":"0/1","nextlsn":"5"})"),
                "bad \"nextlsn\"");
  ExpectInvalid(Err(R"({"action":"B","lsn":"0/1","nextlsn":"0/2","xid":"5"})"),
                "\"xid\" is not an unsigned integer");
  ExpectInvalid(
      Err(R"({"action":"B","lsn":"0/1","nextlsn":"0/2","xid":4294967296})"),
      "\"xid\" out of range");
  ExpectInvalid(Err(R"({"action":"B","lsn":"0/1","nextlsn":"0/2","xid":-1})"),
                "xid");
  ExpectInvalid(
      Err(R"({"action":"B","lsn":"0/1","nextlsn":"0/2","timestamp":1})"),
      "\"timestamp\" is not a string");
  ExpectInvalid(
      Err(R"({"action":"B","lsn":"0/1","nextlsn":"0/2","timestamp":"yesterday"})"),
      "bad \"timestamp\"");
  ExpectInvalid(Err(R"({"action":"I","schema":"s","table":"t","columns":{}})"),
                "\"columns\" is not an array");
  ExpectInvalid(Err(R"({"action":"I","schema":"s","table":"t","columns":[1]})"),
                "is not an object");
  ExpectInvalid(
      Err(R"({"action":"I","schema":"s","table":"t","columns":[{"name":"a","type":"int","value":[1]}]})"),
      "array or object");
  ExpectInvalid(
      Err(R"({"action":"M","transactional":"yes","prefix":"p","content":""})"),
      "\"transactional\" is not a boolean");
  ExpectInvalid(Err(R"({"action":"I","schema":1,"table":"t","columns":[]})"),
                "\"schema\" is not a string");
}

TEST_F(Wal2JsonDecoderTest, BadHex) {
  auto with_hex = [](absl::string_view hex) {
    return absl::StrCat(
        R"({"action":"I","schema":"s","table":"t","columns":[{"name":"b","type":"bytea","value":")",
        hex, "\"}]}");
  };
  ExpectInvalid(Err(with_hex("abc")), "bad hex in bytea column \"b\"");
  ExpectInvalid(Err(with_hex("zz")), "bad hex");
  ExpectInvalid(Err(with_hex("0g")), "bad hex");
  ExpectInvalid(Err(with_hex("\\\\x0")), "bad hex");
}

TEST_F(Wal2JsonDecoderTest, BadNumbers) {
  for (const char* number :
       {"01", "-", "1.", ".5", "1e", "1e+", "+1", "1x", "--1", "0x10"}) {
    absl::Status st = Err(absl::StrCat(
        R"({"action":"I","schema":"s","table":"t","columns":[{"name":"n","type":"int","value":)",
        number, "}]}"));
    EXPECT_TRUE(absl::IsInvalidArgument(st)) << number << ": " << st;
  }
}

TEST_F(Wal2JsonDecoderTest, NotOneObject) {
  const std::string b = All()[0];
  ExpectInvalid(Err(""), "malformed JSON");
  ExpectInvalid(Err("   "), "malformed JSON");
  ExpectInvalid(Err("[1]"), "not a JSON object");
  ExpectInvalid(Err("\"B\""), "not a JSON object");
  ExpectInvalid(Err(b + " x"), "");
  ExpectInvalid(Err(b + b), "");
  ExpectInvalid(Err(b + "}"), "");
  ExpectInvalid(Err(b + "]"), "");
  ExpectInvalid(Err(b + "1"), "");
  ExpectInvalid(Err(R"({"action":"B","lsn":"0/1","nextlsn":"0/2",})"), "");
  ExpectInvalid(Err(R"({"action":"B" "lsn":"0/1","nextlsn":"0/2"})"), "");
  ExpectInvalid(Err(R"({"action":"B","lsn":"0/1","nextlsn":"0/2","xid":nul})"),
                "");
  ExpectInvalid(
      Err(R"({"action":"B","lsn":"0/1","lsn":"0/1","nextlsn":"0/2"})"),
      "duplicate key \"lsn\"");
  ExpectInvalid(Err("{\"action\":\"B\xff\"}"), "malformed JSON");
  // Whitespace after the record is fine.
  EXPECT_TRUE(Err(b + " \n").ok());
}

// What wal2json sends for pg_logical_emit_message(false, 'x',
// '\xfffe'::bytea), which any session in the database may run: the
// content's bytes as they are, not UTF-8.
constexpr char kBytesMessage[] =
    "{\"action\":\"M\",\"xid\":null,\"timestamp\":null,\"lsn\":\"0/154CA20\","
    "\"transactional\":false,\"prefix\":\"x\",\"content\":\"\xff\xfe\"}";

TEST_F(Wal2JsonDecoderTest, MessageContentMayHoldAnyBytes) {
  const Change& c = Ok(kBytesMessage);
  EXPECT_EQ(c.kind, Kind::kMessage);
  EXPECT_FALSE(c.transactional);
  EXPECT_EQ(c.prefix, "x");
  EXPECT_EQ(c.content, "\xff\xfe");
  EXPECT_EQ(c.lsn, 0x154CA20u);
  // The next record is read as usual, and so is the same one again.
  EXPECT_EQ(Ok(All()[0]).kind, Kind::kBegin);
  EXPECT_EQ(Ok(kBytesMessage).content, "\xff\xfe");
}

TEST_F(Wal2JsonDecoderTest, MessageBytesKeepEscapesAndValidText) {
  // A transactional message whose prefix and content mix escapes, valid
  // UTF-8 and bytes that are not: each comes out byte for byte.
  const std::string record =
      "{\"action\":\"M\",\"xid\":738,\"timestamp\":\"2026-11-22 "
      "05:09:03.047606+00\",\"lsn\":\"0/154C9A0\",\"transactional\":true,"
      "\"prefix\":\"p\xc0\\\"\",\"content\":\"caf\xc3\xa9 \\\"q\\\" "
      "\xed\xa0\x80\\n\xf4\x90\x80\x80 end\xe2\x82\"}";
  const Change& c = Ok(record);
  EXPECT_EQ(c.kind, Kind::kMessage);
  EXPECT_TRUE(c.transactional);
  EXPECT_EQ(c.xid, 738u);
  EXPECT_EQ(c.commit_time_us, 1795324143 * kSecond + 47606);
  EXPECT_EQ(c.prefix, "p\xc0\"");
  EXPECT_EQ(c.content,
            "caf\xc3\xa9 \"q\" \xed\xa0\x80\n\xf4\x90\x80\x80 end\xe2\x82");
  // Structure errors are still found with such bytes in the record.
  ExpectInvalid(
      Err("{\"action\":\"M\",\"transactional\":true,\"prefix\":\"\xff\"}"),
      "record has no \"content\"");
  ExpectInvalid(Err("{\"action\":\"M\",\"transactional\":true,\"prefix\":\"p\","
                    "\"content\":\"\xff\"} x"),
                "");
}

TEST_F(Wal2JsonDecoderTest, OnlyMessagesMayHoldBytesThatAreNotUtf8) {
  // A begin, insert or commit record that is not UTF-8 cannot be read:
  // InvalidArgument, so the relay stops at its LSN.
  std::string begin = All()[0];
  std::string insert = All()[1];
  std::string commit = All()[2];
  ASSERT_EQ(Ok(commit).kind, Kind::kCommit);
  for (std::string* record : {&begin, &insert, &commit}) {
    const size_t at = record->find("\"lsn\"");
    ASSERT_NE(at, std::string::npos);
    // "\xfflsn": an unknown key
    const std::string bad =
        absl::StrCat(record->substr(0, at + 1), "\xff", record->substr(at + 1));
    ExpectInvalid(Err(bad), "not valid UTF-8");
  }
  const size_t at = insert.find("public");
  ASSERT_NE(at, std::string::npos);
  insert.replace(at, 6, "pub\xe9lic");  // Latin-1, not UTF-8
  ExpectInvalid(Err(insert), "not valid UTF-8");
  ExpectInvalid(Err("{\"action\":\"\xff\"}"), "not valid UTF-8");
  // An action that is not M followed by a message's keys is no message.
  ExpectInvalid(Err("{\"action\":\"B\",\"lsn\":\"0/1\",\"nextlsn\":\"0/2\","
                    "\"prefix\":\"x\",\"content\":\"\xff\"}"),
                "not valid UTF-8");
}

TEST_F(Wal2JsonDecoderTest, RandomMessageBytesComeOutAsTheyWent) {
  // Random bytes as wal2json writes them into a message (escape_json:
  // quote, backslash and control bytes escaped, every other byte as is),
  // between other records: each decodes to exactly those bytes.
  std::mt19937 rng(11);
  for (int i = 0; i < 3000; ++i) {
    std::string bytes(rng() % 40, '\0');
    for (char& c : bytes) c = static_cast<char>(1 + rng() % 255);
    std::string escaped;
    for (char c : bytes) {
      const auto u = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        escaped += '\\';
        escaped += c;
      } else if (u < 0x20) {
        absl::StrAppend(&escaped, "\\u00", absl::Hex(u, absl::kZeroPad2));
      } else {
        escaped += c;
      }
    }
    const std::string record = absl::StrCat(
        "{\"action\":\"M\",\"xid\":null,\"timestamp\":null,\"lsn\":\"0/1\","
        "\"transactional\":false,\"prefix\":\"",
        escaped, "\",\"content\":\"", escaped, "\"}");
    const Change& c = Ok(record);
    ASSERT_EQ(c.content, bytes) << i;
    ASSERT_EQ(c.prefix, bytes) << i;
    if (i % 7 == 0) {
      ASSERT_EQ(Ok(All()[1]).kind, Kind::kInsert);
    }
  }
}

}  // namespace
}  // namespace outbox
