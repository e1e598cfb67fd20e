// PgOutputDecoder on hand-built messages: every message kind, every value
// kind and every error path. Captured server output is in
// pgoutput_captured_test.cc.
#include "plugin/pgoutput/pgoutput_decoder.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugin/pgoutput/pgoutput_test_util.h"

namespace outbox {
namespace {

using ::outbox::testing::PgMessage;
using ::testing::HasSubstr;
using Kind = Change::Kind;

// 2026-11-22 05:09:03.042662 UTC, in PostgreSQL's and Unix's epochs.
constexpr uint64_t kPgTime = 848639343042662;
constexpr int64_t kUnixTime = 1795324143042662;
constexpr uint32_t kOutboxOid = 16385;

PgMessage Begin(uint64_t final_lsn, uint32_t xid, uint64_t time = kPgTime) {
  return PgMessage('B').U64(final_lsn).U64(time).U32(xid);
}

PgMessage Commit(uint64_t commit_lsn, uint64_t end_lsn,
                 uint64_t time = kPgTime) {
  return PgMessage('C').U8(0).U64(commit_lsn).U64(end_lsn).U64(time);
}

struct Col {
  const char* name;
  uint32_t type_oid;
  int32_t typmod = -1;
  uint8_t flags = 0;
};

PgMessage Relation(uint32_t oid, absl::string_view schema,
                   absl::string_view table, const std::vector<Col>& cols) {
  PgMessage m('R');
  m.U32(oid).Str(schema).Str(table).U8('d').U16(cols.size());
  for (const Col& c : cols) {
    m.U8(c.flags)
        .Str(c.name)
        .U32(c.type_oid)
        .U32(static_cast<uint32_t>(c.typmod));
  }
  return m;
}

// public.outbox's first five columns.
PgMessage OutboxRelation() {
  return Relation(kOutboxOid, "public", "outbox",
                  {{"id", 2950, -1, 1},
                   {"aggregatetype", 25},
                   {"aggregateid", 25},
                   {"type", 25},
                   {"payload", 3802}});
}

PgMessage OutboxInsert() {
  return PgMessage('I')
      .U32(kOutboxOid)
      .U8('N')
      .U16(5)
      .Text("6f1c7c1e-4a55-4b8e-9d64-1d2f3c4b5a69")
      .Text("order")
      .Text("order-1001")
      .Text("OrderCreated")
      .Text(R"({"note": "a \"q\" \\ é 😀"})");
}

// One column of each value class, then its insert with `values`.
PgMessage TypedRelation() {
  return Relation(7, "public", "typed",
                  {{"b", 16},
                   {"raw", 17},
                   {"i", 23},
                   {"n", 1700, ((10 << 16) | 2) + 4},
                   {"d", 701},
                   {"t", 25},
                   {"vc", 1043, 24}});
}

class PgOutputDecoderTest : public ::testing::Test {
 protected:
  const Change& Ok(absl::string_view message, Lsn wal_start = kInvalidLsn) {
    absl::Status st = decoder_.Decode(message, wal_start, &change_);
    EXPECT_TRUE(st.ok()) << st;
    return change_;
  }
  absl::Status Bad(absl::string_view message) {
    absl::Status st = decoder_.Decode(message, &change_);
    EXPECT_TRUE(absl::IsInvalidArgument(st)) << st;
    return st;
  }
  std::string Error(absl::string_view message) {
    return std::string(Bad(message).message());
  }

  PgOutputDecoder decoder_;
  Change change_;
};

TEST_F(PgOutputDecoderTest, BeginTakesFinalLsnXidAndUnixTime) {
  const Change& c = Ok(Begin(0x154B570, 729), /*wal_start=*/0x1000);
  EXPECT_EQ(c.kind, Kind::kBegin);
  EXPECT_EQ(c.lsn, 0x154B570u);       // its own LSN, not the XLogData start
  EXPECT_EQ(c.end_lsn, kInvalidLsn);  // pgoutput's Begin has none
  EXPECT_EQ(c.xid, 729u);
  EXPECT_EQ(c.commit_time_us, kUnixTime);
}

TEST_F(PgOutputDecoderTest, TimestampZeroIsPostgresEpoch) {
  EXPECT_EQ(Ok(Begin(1, 1, /*time=*/0)).commit_time_us, 946684800000000);
}

TEST_F(PgOutputDecoderTest, CommitCarriesEndLsnAndItsBeginsXid) {
  Ok(Begin(0x154B570, 729));
  const Change& c = Ok(Commit(0x154B570, 0x154B5A0));
  EXPECT_EQ(c.kind, Kind::kCommit);
  EXPECT_EQ(c.lsn, 0x154B570u);
  EXPECT_EQ(c.end_lsn, 0x154B5A0u);
  EXPECT_EQ(c.xid, 729u);
  EXPECT_EQ(c.commit_time_us, kUnixTime);
}

TEST_F(PgOutputDecoderTest, InsertUsesTheCachedRelation) {
  EXPECT_EQ(Ok(OutboxRelation()).kind, Kind::kOther);
  Ok(Begin(0x200, 730));
  const Change& c = Ok(OutboxInsert(), /*wal_start=*/0x150);
  EXPECT_EQ(c.kind, Kind::kInsert);
  EXPECT_EQ(c.schema, "public");
  EXPECT_EQ(c.table, "outbox");
  EXPECT_EQ(c.lsn, 0x150u);
  EXPECT_EQ(c.xid, 730u);  // from its Begin, as wal2json gives it
  EXPECT_EQ(c.commit_time_us, kUnixTime);
  ASSERT_EQ(c.columns.size(), 5u);
  EXPECT_EQ(c.columns[0].name, "id");
  EXPECT_EQ(c.columns[0].type, "uuid");
  EXPECT_EQ(c.columns[0].kind, ValueKind::kText);
  EXPECT_EQ(c.columns[0].value, "6f1c7c1e-4a55-4b8e-9d64-1d2f3c4b5a69");
  EXPECT_EQ(c.columns[4].name, "payload");
  EXPECT_EQ(c.columns[4].type, "jsonb");
  EXPECT_EQ(c.columns[4].kind, ValueKind::kText);
  EXPECT_EQ(c.columns[4].value, R"({"note": "a \"q\" \\ é 😀"})");
}

TEST_F(PgOutputDecoderTest, WithoutWalStartChangesHaveNoLsn) {
  Ok(OutboxRelation());
  ASSERT_TRUE(decoder_.Decode(OutboxInsert().str(), &change_).ok());
  EXPECT_EQ(change_.lsn, kInvalidLsn);
}

TEST_F(PgOutputDecoderTest, AfterCommitChangesHaveNoTransaction) {
  Ok(OutboxRelation());
  Ok(Begin(0x200, 730));
  Ok(Commit(0x200, 0x230));
  const Change& c = Ok(OutboxInsert());
  EXPECT_EQ(c.xid, 0u);
  EXPECT_EQ(c.commit_time_us, 0);
}

TEST_F(PgOutputDecoderTest, ValuesAreRepresentedAsWal2JsonDoes) {
  Ok(TypedRelation());
  const Change& c = Ok(PgMessage('I')
                           .U32(7)
                           .U8('N')
                           .U16(7)
                           .Text("t")
                           .Text("\\xDEADbeef00ff")
                           .Text("-42")
                           .Text("12345.67")
                           .Text("-2.25e-10")
                           .Text("plain")
                           .Null());
  ASSERT_EQ(c.columns.size(), 7u);
  const auto expect = [&](int i, const char* type, ValueKind kind,
                          absl::string_view value) {
    EXPECT_EQ(c.columns[i].type, type) << i;
    EXPECT_EQ(c.columns[i].kind, kind) << i;
    EXPECT_EQ(c.columns[i].value, value) << i;
  };
  expect(0, "boolean", ValueKind::kBool, "true");
  expect(1, "bytea", ValueKind::kBytes,
         absl::string_view("\xde\xad\xbe\xef\x00\xff", 6));
  expect(2, "integer", ValueKind::kNumber, "-42");
  expect(3, "numeric(10,2)", ValueKind::kNumber, "12345.67");
  expect(4, "double precision", ValueKind::kNumber, "-2.25e-10");
  expect(5, "text", ValueKind::kText, "plain");
  expect(6, "character varying(20)", ValueKind::kNull, "");
}

TEST_F(PgOutputDecoderTest, FalseEmptyByteaAndNonFiniteNumbers) {
  Ok(TypedRelation());
  const Change& c = Ok(PgMessage('I')
                           .U32(7)
                           .U8('N')
                           .U16(7)
                           .Text("f")
                           .Text("\\x")
                           .Null()
                           .Text("NaN")
                           .Text("-Infinity")
                           .Text("")
                           .Text("Infinity"));  // text column: as is
  EXPECT_EQ(c.columns[0].kind, ValueKind::kBool);
  EXPECT_EQ(c.columns[0].value, "false");
  EXPECT_EQ(c.columns[1].kind, ValueKind::kBytes);
  EXPECT_EQ(c.columns[1].value, "");
  // wal2json prints null for NaN and +-Infinity: keep the Router's bytes.
  EXPECT_EQ(c.columns[3].kind, ValueKind::kNull);
  EXPECT_EQ(c.columns[3].value, "");
  EXPECT_EQ(c.columns[4].kind, ValueKind::kNull);
  EXPECT_EQ(c.columns[5].kind, ValueKind::kText);
  EXPECT_EQ(c.columns[5].value, "");
  EXPECT_EQ(c.columns[6].kind, ValueKind::kText);
  EXPECT_EQ(c.columns[6].value, "Infinity");
}

TEST_F(PgOutputDecoderTest, ViewsOutliveTheCallersBuffer) {
  Ok(TypedRelation());
  {
    std::string message = PgMessage('I')
                              .U32(7)
                              .U8('N')
                              .U16(7)
                              .Text("t")
                              .Text("\\x4142")
                              .Text("1")
                              .Text("2")
                              .Text("3")
                              .Text("kept")
                              .Text("v")
                              .str();
    ASSERT_TRUE(decoder_.Decode(message, &change_).ok());
    message.assign(message.size(), 'X');
  }
  EXPECT_EQ(change_.columns[1].value, "AB");
  EXPECT_EQ(change_.columns[5].value, "kept");
  EXPECT_EQ(change_.columns[5].name, "t");
}

TEST_F(PgOutputDecoderTest, ARelationMessageReplacesTheCachedOne) {
  Ok(OutboxRelation());
  Ok(Relation(kOutboxOid, "public", "outbox", {{"id", 2950}, {"added", 23}}));
  const Change& c =
      Ok(PgMessage('I').U32(kOutboxOid).U8('N').U16(2).Text("x").Text("5"));
  ASSERT_EQ(c.columns.size(), 2u);
  EXPECT_EQ(c.columns[1].name, "added");
  EXPECT_EQ(c.columns[1].kind, ValueKind::kNumber);
  EXPECT_THAT(Error(OutboxInsert()), HasSubstr("5 columns"));
}

TEST_F(PgOutputDecoderTest, TypeMessagesNameUserTypes) {
  EXPECT_EQ(Ok(PgMessage('Y').U32(16400).Str("public").Str("mood")).kind,
            Kind::kOther);
  Ok(PgMessage('Y').U32(16401).Str("s2").Str("color"));
  Ok(PgMessage('Y').U32(16402).Str("").Str("int4"));  // a domain: base type
  Ok(Relation(9, "s2", "t",
              {{"mood", 16400},
               {"color", 16401},
               {"dom", 16402},
               {"unknown", 16403},
               {"arr", 1015, 9}}));
  const Change& c = Ok(PgMessage('I')
                           .U32(9)
                           .U8('N')
                           .U16(5)
                           .Text("happy")
                           .Text("red")
                           .Text("7")
                           .Text("x")
                           .Text("{ab}"));
  EXPECT_EQ(c.schema, "s2");
  EXPECT_EQ(c.columns[0].type, "mood");
  EXPECT_EQ(c.columns[1].type, "s2.color");
  EXPECT_EQ(c.columns[2].type, "int4");
  EXPECT_EQ(c.columns[2].kind, ValueKind::kText);  // wal2json: a string too
  EXPECT_EQ(c.columns[3].type, "16403");
  EXPECT_EQ(c.columns[4].type, "character varying(5)[]");
}

TEST_F(PgOutputDecoderTest, UpdateKeepsTheNewRowAndLeavesUnchangedToastOut) {
  Ok(TypedRelation());
  Ok(Begin(0x300, 731));
  const PgMessage new_row = PgMessage('N')
                                .U16(7)
                                .Text("t")
                                .Unchanged()
                                .Text("1")
                                .Null()
                                .Text("2")
                                .Unchanged()
                                .Text("v");
  const PgMessage old_row = PgMessage('x')
                                .U16(7)
                                .Null()
                                .Unchanged()
                                .Text("9")
                                .Null()
                                .Null()
                                .Null()
                                .Null();
  for (char tag : {'\0', 'K', 'O'}) {
    PgMessage m('U');
    m.U32(7);
    if (tag != '\0') m.U8(tag).Raw(old_row.str().substr(1));
    m.Raw(new_row);
    const Change& c = Ok(m, /*wal_start=*/0x2F0);
    EXPECT_EQ(c.kind, Kind::kUpdate) << tag;
    EXPECT_EQ(c.table, "typed");
    EXPECT_EQ(c.lsn, 0x2F0u);
    EXPECT_EQ(c.xid, 731u);
    ASSERT_EQ(c.columns.size(), 5u) << tag;
    EXPECT_EQ(c.columns[1].name, "i");
    EXPECT_EQ(c.columns[1].value, "1");
    EXPECT_EQ(c.columns[4].name, "vc");
  }
}

TEST_F(PgOutputDecoderTest, DeleteParsesItsOldRow) {
  Ok(TypedRelation());
  for (char tag : {'K', 'O'}) {
    const Change& c = Ok(PgMessage('D')
                             .U32(7)
                             .U8(tag)
                             .U16(7)
                             .Null()
                             .Unchanged()
                             .Text("9")
                             .Null()
                             .Null()
                             .Null()
                             .Null());
    EXPECT_EQ(c.kind, Kind::kDelete);
    EXPECT_EQ(c.schema, "public");
    EXPECT_EQ(c.table, "typed");
    EXPECT_TRUE(c.columns.empty());
  }
  EXPECT_THAT(Error(PgMessage('D').U32(7).U8('N').U16(0)),
              HasSubstr("tuple tag 0x4e"));
}

TEST_F(PgOutputDecoderTest, TruncateOriginAndRelationAreOther) {
  Ok(Begin(0x400, 740));
  const Change& t =
      Ok(PgMessage('T').U32(2).U8(2).U32(16385).U32(16390), 0x3F0);
  EXPECT_EQ(t.kind, Kind::kOther);
  EXPECT_EQ(t.lsn, 0x3F0u);
  EXPECT_EQ(t.xid, 740u);
  EXPECT_EQ(Ok(PgMessage('T').U32(0).U8(0)).kind, Kind::kOther);
  EXPECT_EQ(Ok(PgMessage('O').U64(0xABCDEF01).Str("upstream_a")).kind,
            Kind::kOther);
}

TEST_F(PgOutputDecoderTest, MessagesCarryAnyBytes) {
  const std::string content("\x00\xff\x80{\"a\"}\n\x00", 9);
  const Change& m = Ok(PgMessage('M')
                           .U8(0)
                           .U64(0x154CA20)
                           .Str("outbox.nontx")
                           .U32(content.size())
                           .Raw(content),
                       /*wal_start=*/0x1);
  EXPECT_EQ(m.kind, Kind::kMessage);
  EXPECT_FALSE(m.transactional);
  EXPECT_EQ(m.lsn, 0x154CA20u);
  EXPECT_EQ(m.prefix, "outbox.nontx");
  EXPECT_EQ(m.content, content);
  EXPECT_EQ(m.xid, 0u);

  Ok(Begin(0x500, 741));
  const Change& t = Ok(PgMessage('M').U8(1).U64(0x4F0).Str("").U32(0));
  EXPECT_TRUE(t.transactional);
  EXPECT_EQ(t.xid, 741u);
  EXPECT_EQ(t.commit_time_us, kUnixTime);
  EXPECT_EQ(t.prefix, "");
  EXPECT_EQ(t.content, "");
}

// --- errors ---------------------------------------------------------------

TEST_F(PgOutputDecoderTest, RejectsUnknownAndUnrequestedMessageTypes) {
  EXPECT_THAT(Error(""), HasSubstr("empty message"));
  EXPECT_THAT(Error("Z"), HasSubstr("unknown message type 0x5a"));
  EXPECT_THAT(Error(std::string(1, '\0')), HasSubstr("0x00"));
  for (char type : {'S', 'E', 'c', 'A'}) {
    EXPECT_THAT(Error(PgMessage(type).U32(1).U8(1)),
                HasSubstr("streaming was not requested"));
  }
  for (char type : {'b', 'P', 'K', 'r', 'p'}) {
    EXPECT_THAT(Error(PgMessage(type).U64(1)),
                HasSubstr("two_phase was not requested"));
  }
}

TEST_F(PgOutputDecoderTest, RejectsChangesToUnknownRelations) {
  EXPECT_THAT(Error(OutboxInsert()),
              HasSubstr("relation 16385 before its Relation message"));
  EXPECT_THAT(Error(PgMessage('U').U32(3).U8('N').U16(0)),
              HasSubstr("relation 3"));
  EXPECT_THAT(Error(PgMessage('D').U32(3).U8('K').U16(0)),
              HasSubstr("relation 3"));
}

TEST_F(PgOutputDecoderTest, RejectsTuplesThatDoNotFitTheRelation) {
  Ok(OutboxRelation());
  EXPECT_THAT(Error(PgMessage('I').U32(kOutboxOid).U8('N').U16(4)),
              HasSubstr("tuple has 4 columns, relation public.outbox has 5"));
  EXPECT_THAT(Error(PgMessage('I').U32(kOutboxOid).U8('K').U16(5)),
              HasSubstr("Insert message with tuple tag 0x4b"));
  const auto insert_with = [](const PgMessage& first) {
    return PgMessage('I')
        .U32(kOutboxOid)
        .U8('N')
        .U16(5)
        .Raw(first)
        .Text("a")
        .Text("b")
        .Text("c")
        .Text("{}");
  };
  EXPECT_THAT(Error(insert_with(PgMessage('u'))),
              HasSubstr("unchanged TOAST value outside an Update"));
  EXPECT_THAT(Error(insert_with(PgMessage('b').U32(1).U8(1))),
              HasSubstr("bad binary uuid value in column \"id\""));
  EXPECT_THAT(Error(insert_with(PgMessage('x'))),
              HasSubstr("unknown tuple value kind 0x78"));
  EXPECT_THAT(Error(insert_with(PgMessage('t').U32(0x80000000))),
              HasSubstr("truncated value of column \"id\""));
  EXPECT_THAT(Error(insert_with(PgMessage('t').U32(1000).Raw("short"))),
              HasSubstr("truncated value"));
}

TEST_F(PgOutputDecoderTest, RejectsValuesThatDoNotFitTheirType) {
  Ok(TypedRelation());
  const auto insert = [](absl::string_view b, absl::string_view raw,
                         absl::string_view i) {
    return PgMessage('I')
        .U32(7)
        .U8('N')
        .U16(7)
        .Text(b)
        .Text(raw)
        .Text(i)
        .Null()
        .Null()
        .Null()
        .Null();
  };
  EXPECT_THAT(Error(insert("true", "\\x", "1")),
              HasSubstr("bad boolean value in column \"b\""));
  EXPECT_THAT(Error(insert("t", "\\336\\255", "1")),
              HasSubstr("bytea column \"raw\" is not in hex format"));
  EXPECT_THAT(Error(insert("t", "deadbeef", "1")), HasSubstr("hex format"));
  EXPECT_THAT(Error(insert("t", "\\xabc", "1")),
              HasSubstr("bad bytea value in column \"raw\""));
  EXPECT_THAT(Error(insert("t", "\\xzz", "1")), HasSubstr("bad bytea"));
  EXPECT_THAT(Error(insert("t", "\\x", "1x")),
              HasSubstr("bad integer value in column \"i\""));
  EXPECT_THAT(Error(insert("t", "\\x", "")), HasSubstr("bad integer"));
  EXPECT_THAT(Error(insert("t", "\\x", "nan")), HasSubstr("bad integer"));
}

TEST_F(PgOutputDecoderTest, RejectsBadFlagsAndTimestamps) {
  EXPECT_THAT(Error(PgMessage('C').U8(1).U64(1).U64(2).U64(kPgTime)),
              HasSubstr("unknown Commit flags 0x01"));
  EXPECT_THAT(Error(PgMessage('M').U8(2).U64(1).Str("p").U32(0)),
              HasSubstr("unknown Message flags 0x02"));
  EXPECT_THAT(Error(Begin(1, 1, /*time=*/INT64_MAX)),
              HasSubstr("timestamp out of range"));
  EXPECT_THAT(Error(Commit(1, 2, /*time=*/INT64_MAX - 5)),
              HasSubstr("timestamp out of range"));
  EXPECT_THAT(Error(PgMessage('M').U8(0).U64(1).Str("p").U32(0x80000000)),
              HasSubstr("truncated Message message"));
  EXPECT_THAT(
      Error(PgMessage('R').U32(1).Str("s").Str("t").U8('d').U16(0xFFFF)),
      HasSubstr("Relation with 65535 columns"));
}

// Valid messages of every kind, each decodable after the ones before it.
std::vector<std::string> ValidMessages() {
  const std::string content("\x00\xff", 2);
  return {
      OutboxRelation().str(),
      TypedRelation().str(),
      PgMessage('Y').U32(16400).Str("public").Str("mood").str(),
      Begin(0x200, 730).str(),
      PgMessage('O').U64(5).Str("origin").str(),
      OutboxInsert().str(),
      PgMessage('U')
          .U32(7)
          .U8('O')
          .U16(7)
          .Null()
          .Unchanged()
          .Text("9")
          .Null()
          .Null()
          .Null()
          .Null()
          .U8('N')
          .U16(7)
          .Text("f")
          .Unchanged()
          .Text("1")
          .Text("NaN")
          .Text("2")
          .Text("t")
          .Text("v")
          .str(),
      PgMessage('U')
          .U32(7)
          .U8('N')
          .U16(7)
          .Text("t")
          .Text("\\x00")
          .Text("1")
          .Null()
          .Null()
          .Null()
          .Null()
          .str(),
      PgMessage('D')
          .U32(kOutboxOid)
          .U8('K')
          .U16(5)
          .Text("x")
          .Null()
          .Null()
          .Null()
          .Null()
          .str(),
      PgMessage('T').U32(2).U8(1).U32(7).U32(kOutboxOid).str(),
      PgMessage('M').U8(1).U64(0x210).Str("outbox").U32(2).Raw(content).str(),
      Commit(0x200, 0x230).str(),
  };
}

TEST_F(PgOutputDecoderTest, BytesAfterAnyMessageAreAnError) {
  for (const std::string& m : ValidMessages()) {
    Ok(m);
    EXPECT_THAT(Error(m + std::string(1, '\0')), HasSubstr("bytes after"))
        << m[0];
  }
}

// Every prefix of every valid message is InvalidArgument, never a crash or
// a read past its end (the ASan build checks the latter).
TEST_F(PgOutputDecoderTest, EveryTruncationIsAnError) {
  for (const std::string& m : ValidMessages()) {
    for (size_t n = 0; n < m.size(); ++n) {
      // An exact-size copy, so ASan sees any read past the prefix.
      const std::unique_ptr<char[]> prefix(new char[n + 1]);
      std::memcpy(prefix.get(), m.data(), n);
      absl::Status st =
          decoder_.Decode(absl::string_view(prefix.get(), n), &change_);
      EXPECT_TRUE(absl::IsInvalidArgument(st))
          << m[0] << " cut at " << n << ": " << st;
    }
    Ok(m);  // keeps the relation cache as the next messages need it
  }
}

// A failed Relation message leaves the cached one in place.
TEST_F(PgOutputDecoderTest, ABadRelationMessageKeepsTheCache) {
  Ok(OutboxRelation());
  const std::string bad =
      Relation(kOutboxOid, "public", "changed", {{"only", 25}}).str();
  EXPECT_FALSE(Bad(bad.substr(0, bad.size() - 1)).ok());
  EXPECT_EQ(Ok(OutboxInsert()).table, "outbox");
}

}  // namespace
}  // namespace outbox
