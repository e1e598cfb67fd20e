// The wal2json decoder on malformed records (always InvalidArgument, never a
// crash) and on logical messages holding arbitrary bytes.
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "plugin/wal2json/wal2json_decoder_fixture.h"

namespace outbox::wal2json_test {
namespace {

using ::testing::HasSubstr;
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
}  // namespace outbox::wal2json_test
