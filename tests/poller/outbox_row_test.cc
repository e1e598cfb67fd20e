#include "poller/outbox_row.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "route/router.h"

namespace outbox {
namespace {

using ::testing::HasSubstr;

TEST(OutboxRowTest, KindsFollowWal2Json) {
  EXPECT_EQ(KindForType("bytea"), ValueKind::kBytes);
  EXPECT_EQ(KindForType("boolean"), ValueKind::kBool);
  EXPECT_EQ(KindForType("integer"), ValueKind::kNumber);
  EXPECT_EQ(KindForType("bigint"), ValueKind::kNumber);
  EXPECT_EQ(KindForType("numeric"), ValueKind::kNumber);
  EXPECT_EQ(KindForType("double precision"), ValueKind::kNumber);
  EXPECT_EQ(KindForType("jsonb"), ValueKind::kText);
  EXPECT_EQ(KindForType("json"), ValueKind::kText);
  EXPECT_EQ(KindForType("uuid"), ValueKind::kText);
  EXPECT_EQ(KindForType("timestamp with time zone"), ValueKind::kText);
}

TEST(OutboxRowTest, DecodesNullTextAndBytea) {
  ValueKind kind;
  std::string value = "stale";
  ASSERT_TRUE(DecodeValue("jsonb", true, "", &kind, &value).ok());
  EXPECT_EQ(kind, ValueKind::kNull);
  EXPECT_EQ(value, "");

  ASSERT_TRUE(
      DecodeValue("jsonb", false, R"({"a": "caf\u00e9"})", &kind, &value).ok());
  EXPECT_EQ(kind, ValueKind::kText);
  EXPECT_EQ(value, R"({"a": "caf\u00e9"})");

  ASSERT_TRUE(DecodeValue("bytea", false, "\\x00ff41", &kind, &value).ok());
  EXPECT_EQ(kind, ValueKind::kBytes);
  EXPECT_EQ(value, std::string("\0\xff"
                               "A",
                               3));

  ASSERT_TRUE(DecodeValue("bytea", false, "\\x", &kind, &value).ok());
  EXPECT_EQ(kind, ValueKind::kBytes);
  EXPECT_EQ(value, "");

  ASSERT_TRUE(DecodeValue("numeric", false, "NaN", &kind, &value).ok());
  EXPECT_EQ(kind, ValueKind::kText);  // wal2json quotes it
  ASSERT_TRUE(DecodeValue("numeric", false, "12.50", &kind, &value).ok());
  EXPECT_EQ(kind, ValueKind::kNumber);
  EXPECT_EQ(value, "12.50");
}

TEST(OutboxRowTest, RejectsMalformedByteaHex) {
  ValueKind kind;
  std::string value;
  EXPECT_THAT(DecodeValue("bytea", false, "\\x0", &kind, &value).message(),
              HasSubstr("bytea"));
  EXPECT_FALSE(DecodeValue("bytea", false, "\\xzz", &kind, &value).ok());
}

// The Change a row becomes routes to the same record as wal2json's insert.
class RowToRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = Router::Create(OutboxConfig{});
    ASSERT_TRUE(r.ok()) << r.status();
    router_ = *std::move(r);
    shape_ = {"public",
              "outbox",
              {{"id", "uuid"},
               {"aggregateid", "text"},
               {"payload", "jsonb"},
               {"aggregatetype", "text"}}};
  }

  OutboxRow Row(absl::string_view payload_type, bool payload_null,
                absl::string_view payload_text) {
    shape_.columns[2].type = std::string(payload_type);
    OutboxRow row;
    row.seq = 7;
    const std::pair<absl::string_view, absl::string_view> texts[] = {
        {"uuid", "8f1c2b1e-0c1a-4d38-9a51-3f7e1f0c9a01"},
        {"text", "order-42"},
        {payload_type, payload_text},
        {"text", "order"}};
    for (size_t i = 0; i < 4; ++i) {
      ValueKind kind;
      std::string value;
      EXPECT_TRUE(DecodeValue(texts[i].first, i == 2 && payload_null,
                              texts[i].second, &kind, &value)
                      .ok());
      row.kinds.push_back(kind);
      row.values.push_back(value);
    }
    return row;
  }

  std::unique_ptr<Router> router_;
  TableShape shape_;
  Change change_;
  Record record_;
};

TEST_F(RowToRecordTest, JsonbPayloadBytesAreTheTextOutput) {
  OutboxRow row = Row("jsonb", false, R"({"note": "a \"q\" \\ b", "n": 1})");
  ToChange(shape_, row, &change_);
  EXPECT_EQ(change_.kind, Change::Kind::kInsert);
  EXPECT_EQ(change_.schema, "public");
  EXPECT_EQ(change_.table, "outbox");
  ASSERT_TRUE(router_->Route(change_, &record_).ok());
  EXPECT_EQ(record_.topic, "outbox.event.order");
  EXPECT_EQ(record_.key, "order-42");
  EXPECT_EQ(record_.value, R"({"note": "a \"q\" \\ b", "n": 1})");
  EXPECT_FALSE(record_.value_is_null);
  ASSERT_EQ(record_.headers.size(), 1u);
  EXPECT_EQ(record_.headers[0].name, "id");
  EXPECT_EQ(record_.headers[0].value, "8f1c2b1e-0c1a-4d38-9a51-3f7e1f0c9a01");
}

TEST_F(RowToRecordTest, ByteaPayloadIsRawBytes) {
  OutboxRow row = Row("bytea", false, "\\x0001ff");
  ToChange(shape_, row, &change_);
  ASSERT_TRUE(router_->Route(change_, &record_).ok());
  EXPECT_EQ(record_.value, std::string("\0\x01\xff", 3));
}

TEST_F(RowToRecordTest, NullPayloadIsANullValue) {
  OutboxRow row = Row("jsonb", true, "");
  ToChange(shape_, row, &change_);
  ASSERT_TRUE(router_->Route(change_, &record_).ok());
  EXPECT_TRUE(record_.value_is_null);
}

TEST_F(RowToRecordTest, ReusedChangeTakesTheNewRow) {
  OutboxRow a = Row("jsonb", false, R"({"a": 1})");
  OutboxRow b = Row("jsonb", false, R"({"b": 2})");
  ToChange(shape_, a, &change_);
  ToChange(shape_, b, &change_);
  ASSERT_TRUE(router_->Route(change_, &record_).ok());
  EXPECT_EQ(record_.value, R"({"b": 2})");
  EXPECT_EQ(change_.columns.size(), 4u);
}

}  // namespace
}  // namespace outbox
