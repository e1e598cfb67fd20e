// PgOutputDecoder on real pgoutput output (tests/testdata/pgoutput/),
// compared with Wal2JsonDecoder on wal2json's output of the same WAL: the
// same Changes, and through the real Router byte-identical Records.
#include <cstddef>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugin/pgoutput/pgoutput_decoder.h"
#include "plugin/pgoutput/pgoutput_test_util.h"
#include "plugin/wal2json/wal2json_decoder.h"
#include "route/router.h"

namespace outbox {
namespace {

using ::outbox::testing::CapturedMessage;
using ::outbox::testing::ReadCaptured;
using ::outbox::testing::ReadLines;
using Kind = Change::Kind;

// Deep copies: a Change's views last only until the next Decode().
struct OwnedColumn {
  std::string name;
  std::string type;
  ValueKind kind;
  std::string value;
  bool operator==(const OwnedColumn&) const = default;
};

struct OwnedChange {
  Kind kind;
  uint32_t xid;
  Lsn lsn;
  Lsn end_lsn;
  int64_t commit_time_us;
  std::string schema;
  std::string table;
  std::vector<OwnedColumn> columns;
  bool transactional;
  std::string prefix;
  std::string content;
  bool operator==(const OwnedChange&) const = default;

  explicit OwnedChange(const Change& c)
      : kind(c.kind),
        xid(c.xid),
        lsn(c.lsn),
        end_lsn(c.end_lsn),
        commit_time_us(c.commit_time_us),
        schema(c.schema),
        table(c.table),
        transactional(c.transactional),
        prefix(c.prefix),
        content(c.content) {
    for (const Column& col : c.columns) {
      columns.push_back({std::string(col.name), std::string(col.type), col.kind,
                         std::string(col.value)});
    }
  }
};

void PrintTo(const OwnedChange& c, std::ostream* os) {
  *os << "{kind " << static_cast<int>(c.kind) << " xid " << c.xid << " lsn "
      << FormatLsn(c.lsn) << " end " << FormatLsn(c.end_lsn) << " time "
      << c.commit_time_us << " " << c.schema << "." << c.table << " [";
  for (const OwnedColumn& col : c.columns) {
    *os << col.name << ":" << col.type << ":" << static_cast<int>(col.kind)
        << ":" << col.value.substr(0, 60) << " ";
  }
  *os << "] " << c.transactional << " " << c.prefix << " "
      << c.content.substr(0, 60) << "}";
}

// What the Router made of an insert: a Record or the error.
struct Routed {
  std::string error;
  std::string topic;
  std::string key;
  bool key_is_null = false;
  std::string value;
  bool value_is_null = false;
  std::vector<std::string> headers;  // name=value, or name for null
  std::string event_id;
  int64_t commit_time_us = 0;
  bool operator==(const Routed&) const = default;

  Routed(const absl::Status& s, const Record& r) {
    if (!s.ok()) {
      error = std::string(s.message());
      return;
    }
    topic = r.topic;
    key = std::string(r.key);
    key_is_null = r.key_is_null;
    value = std::string(r.value);
    value_is_null = r.value_is_null;
    for (const Header& h : r.headers) {
      headers.push_back(h.is_null ? h.name
                                  : absl::StrCat(h.name, "=", h.value));
    }
    event_id = std::string(r.event_id);
    commit_time_us = r.commit_time_us;
  }
};

void PrintTo(const Routed& r, std::ostream* os) {
  *os << "{error \"" << r.error << "\" topic " << r.topic << " key " << r.key
      << " value (" << r.value.size() << " bytes) " << r.value.substr(0, 80)
      << " headers " << absl::StrJoin(r.headers, ",") << " time "
      << r.commit_time_us << "}";
}

struct Decoded {
  OwnedChange change;
  std::optional<Routed> routed;  // inserts only
};

// The outbox table, with every column the Router can map sent as a header,
// and the typed tables of the captures, so that numbers, booleans, bytea,
// NULLs, NaN and the rest all reach a Record.
std::unique_ptr<Router> MakeRouter() {
  OutboxConfig config;
  config.tables[0].headers = {
      {"type", "eventType"},   {"aggregatetype", "aggregatetype"},
      {"seq", "seq"},          {"attempts", "attempts"},
      {"created_at", "ts"},    {"sent_at", "sent_at"},
      {"last_error", "error"}, {"dead_lettered_at", "dead"},
  };
  OutboxTable typed;
  typed.name = "typed";
  typed.topic = "typed";
  typed.key = "t";  // NULL in some rows: the same error from both
  typed.columns.payload = "jb";
  for (const char* c :
       {"i", "b", "s", "n", "r", "d", "flag", "raw", "j", "u", "ts", "arr"}) {
    typed.headers[c] = c;
  }
  OutboxTable typed2;
  typed2.name = "typed2";
  typed2.topic = "typed2";
  typed2.key = "id";
  typed2.columns.payload = "big";
  for (const char* c : {"vc",     "ch",       "bp",
                        "num",    "num_neg",  "ts3",
                        "tz0",    "t2",       "ttz",
                        "iv",     "iv_ds",    "iv_p",
                        "iv_ym",  "bt",       "bt_any",
                        "vb",     "vb_any",   "c1",
                        "mood",   "color",    "dom",
                        "vc_arr", "mood_arr", "o",
                        "net",    "rng",      "Mixed Case \"q\""}) {
    typed2.headers[c] = c;
  }
  config.tables.push_back(typed);
  config.tables.push_back(typed2);
  auto router = Router::Create(config);
  EXPECT_TRUE(router.ok()) << router.status();
  return router.ok() ? *std::move(router) : nullptr;
}

const Router& TheRouter() {
  static const Router* router = MakeRouter().release();
  return *router;
}

Decoded Keep(const Change& c) {
  Decoded d{OwnedChange(c), std::nullopt};
  if (c.kind == Kind::kInsert) {
    Record record;
    absl::Status s = TheRouter().Route(c, &record);
    d.routed.emplace(s, record);
  }
  return d;
}

std::vector<Decoded> DecodePgOutput(absl::string_view file) {
  PgOutputDecoder decoder;
  Change change;
  std::vector<Decoded> out;
  for (const CapturedMessage& m : ReadCaptured(file)) {
    absl::Status s = decoder.Decode(m.bytes, m.wal_start, &change);
    EXPECT_TRUE(s.ok()) << s << " at " << FormatLsn(m.wal_start);
    if (s.ok()) out.push_back(Keep(change));
  }
  return out;
}

std::vector<Decoded> DecodeWal2Json(absl::string_view file) {
  Wal2JsonDecoder decoder;
  Change change;
  std::vector<Decoded> out;
  for (const std::string& line : ReadLines(file)) {
    absl::Status s = decoder.Decode(line, &change);
    EXPECT_TRUE(s.ok()) << s << " in " << line.substr(0, 200);
    if (s.ok()) out.push_back(Keep(change));
  }
  return out;
}

// The Changes the pipeline acts on: no kOther (R, Y, O, T; wal2json's T).
std::vector<Decoded> WithoutOther(std::vector<Decoded> in) {
  std::vector<Decoded> out;
  for (Decoded& d : in) {
    if (d.change.kind != Kind::kOther) out.push_back(std::move(d));
  }
  return out;
}

// wal2json sends B and C for a transaction with nothing to show (DDL, rows
// of tables it filters out); pgoutput (PostgreSQL 15+) sends nothing. Both
// send a truncate, which becomes kOther and leaves B and C alone.
std::vector<Decoded> WithoutEmptyTransactions(std::vector<Decoded> in) {
  std::vector<Decoded> out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].change.kind == Kind::kBegin && i + 1 < in.size() &&
        in[i + 1].change.kind == Kind::kCommit) {
      ++i;
      continue;
    }
    out.push_back(std::move(in[i]));
  }
  return out;
}

// The documented differences (pgoutput_decoder.h), applied to wal2json's
// Changes: pgoutput's Begin has no end LSN; user types are named by their
// Type message (a domain by its base type, an array by its "_" name).
std::vector<Decoded> AsPgOutputSeesIt(std::vector<Decoded> in) {
  const std::map<std::string, std::string> types = {{"posint", "int4"},
                                                    {"mood[]", "_mood"}};
  for (Decoded& d : in) {
    if (d.change.kind == Kind::kBegin) d.change.end_lsn = kInvalidLsn;
    for (OwnedColumn& col : d.change.columns) {
      auto it = types.find(col.type);
      if (it != types.end()) col.type = it->second;
    }
  }
  return in;
}

struct Counts {
  size_t inserts = 0;
  size_t records = 0;  // inserts the Router made a Record of
};

// Same WAL, both plugins: equal Changes, equal Records, in the same order.
void ExpectSameAsWal2Json(absl::string_view pgoutput_file,
                          absl::string_view wal2json_file, Counts* counts) {
  const std::vector<Decoded> pg =
      WithoutEmptyTransactions(WithoutOther(DecodePgOutput(pgoutput_file)));
  const std::vector<Decoded> w2j = AsPgOutputSeesIt(
      WithoutEmptyTransactions(WithoutOther(DecodeWal2Json(wal2json_file))));
  ASSERT_EQ(pg.size(), w2j.size());
  for (size_t i = 0; i < pg.size(); ++i) {
    EXPECT_EQ(pg[i].change, w2j[i].change) << "change " << i;
    EXPECT_EQ(pg[i].routed, w2j[i].routed) << "change " << i;
    if (pg[i].routed.has_value()) {
      ++counts->inserts;
      if (pg[i].routed->error.empty()) ++counts->records;
    }
  }
}

TEST(PgOutputCapturedTest, AllChangesMatchWal2JsonOfTheSameWal) {
  Counts counts;
  ExpectSameAsWal2Json("pgoutput/all.txt", "pgoutput/wal2json_all.jsonl",
                       &counts);
  EXPECT_EQ(counts.inserts, 16u);
  // The rest: typed's NULL key, and full_ident, which has no mapping.
  EXPECT_EQ(counts.records, 13u);
}

TEST(PgOutputCapturedTest, OutboxInsertsGiveByteIdenticalRecords) {
  Counts counts;
  ExpectSameAsWal2Json("pgoutput/outbox_inserts.txt",
                       "pgoutput/wal2json_outbox_inserts.jsonl", &counts);
  EXPECT_EQ(counts.inserts, 6u);
  EXPECT_EQ(counts.records, 6u);
}

TEST(PgOutputCapturedTest, A900KilobytePayloadGivesAByteIdenticalRecord) {
  Counts counts;
  ExpectSameAsWal2Json("pgoutput/big.txt", "pgoutput/wal2json_big.jsonl",
                       &counts);
  EXPECT_EQ(counts.records, 1u);
  const std::vector<Decoded> pg = DecodePgOutput("pgoutput/big.txt");
  for (const Decoded& d : pg) {
    if (!d.routed.has_value()) continue;
    EXPECT_EQ(d.routed->error, "");
    EXPECT_GT(d.routed->value.size(), 900'000u);
    EXPECT_THAT(d.routed->value, ::testing::HasSubstr(R"("Zoë \"q\" \\ 😀)"));
  }
}

// The rows of the wal2json suite's own capture (another run of
// capture_setup.sql: other xids, LSNs and times) decode to the same rows.
TEST(PgOutputCapturedTest, SameRowsAsTheWal2JsonTestdata) {
  const std::vector<Decoded> pg = WithoutEmptyTransactions(
      WithoutOther(DecodePgOutput("pgoutput/all.txt")));
  const std::vector<Decoded> w2j = AsPgOutputSeesIt(WithoutEmptyTransactions(
      WithoutOther(DecodeWal2Json("wal2json/all.jsonl"))));
  ASSERT_GE(w2j.size(), 40u);
  ASSERT_GE(pg.size(), w2j.size());  // pgoutput's capture goes on
  for (size_t i = 0; i < w2j.size(); ++i) {
    const OwnedChange& a = pg[i].change;
    const OwnedChange& b = w2j[i].change;
    EXPECT_EQ(a.kind, b.kind) << i;
    EXPECT_EQ(a.schema, b.schema) << i;
    EXPECT_EQ(a.table, b.table) << i;
    EXPECT_EQ(a.transactional, b.transactional) << i;
    EXPECT_EQ(a.prefix, b.prefix) << i;
    EXPECT_EQ(a.content, b.content) << i;
    ASSERT_EQ(a.columns.size(), b.columns.size()) << i;
    for (size_t j = 0; j < a.columns.size(); ++j) {
      EXPECT_EQ(a.columns[j].name, b.columns[j].name) << i;
      EXPECT_EQ(a.columns[j].type, b.columns[j].type) << i;
      EXPECT_EQ(a.columns[j].kind, b.columns[j].kind) << i;
      if (a.columns[j].name != "created_at") {  // clock_timestamp()
        EXPECT_EQ(a.columns[j].value, b.columns[j].value)
            << i << " " << a.columns[j].name;
      }
    }
  }
}

// Every message type the decoder knows is in the capture, and the facts
// the decoder relies on hold.
TEST(PgOutputCapturedTest, TheCaptureHasEveryMessageType) {
  std::set<char> types;
  for (const CapturedMessage& m : ReadCaptured("pgoutput/all.txt")) {
    types.insert(m.bytes[0]);
  }
  EXPECT_EQ(std::string(types.begin(), types.end()), "BCDIMORTUY");

  // The update of a row whose TOASTed value it did not touch: 'u', left
  // out of the Change as wal2json leaves it out.
  bool saw_toast_update = false;
  for (const Decoded& d : DecodePgOutput("pgoutput/all.txt")) {
    const OwnedChange& c = d.change;
    if (c.kind == Kind::kUpdate && c.table == "typed2") {
      saw_toast_update = true;
      EXPECT_EQ(c.columns.size(), 29u);
      for (const OwnedColumn& col : c.columns) EXPECT_NE(col.name, "big");
    }
  }
  EXPECT_TRUE(saw_toast_update);
}

TEST(PgOutputCapturedTest, MessageContentIsBytesNotText) {
  std::vector<OwnedChange> messages;
  for (const Decoded& d : DecodePgOutput("pgoutput/messages.txt")) {
    if (d.change.kind == Kind::kMessage) messages.push_back(d.change);
  }
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_FALSE(messages[0].transactional);
  EXPECT_EQ(messages[0].prefix, "bin");
  EXPECT_EQ(messages[0].content, std::string("\x00\xff\x80\xfe\n\x00", 6));
  EXPECT_TRUE(messages[1].transactional);
  EXPECT_EQ(messages[1].prefix, "empty");
  EXPECT_EQ(messages[1].content, "");
  EXPECT_NE(messages[1].xid, 0u);
  EXPECT_EQ(messages[2].prefix, "");
  EXPECT_EQ(messages[2].content, "no prefix");
}

}  // namespace
}  // namespace outbox
