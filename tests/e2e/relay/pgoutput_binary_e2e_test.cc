// pgoutput's binary transfer (postgres.pgoutput_binary) on the fixture's
// PostgreSQL: every type the decoder formats gives the same Columns in
// binary as in text (one set of rows, decoded through both), the relay's
// records are the same bytes either way, and a column of a type binary
// cannot carry makes the relay stream in text (refused under `on`). The
// floats' cases are in float_digits_e2e_test.cc (the same binary).
#include <map>
#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "e2e/relay/pgoutput_binary_e2e_fixture.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST_F(PgOutputBinaryE2ETest, EveryTypeDecodesToTheSameColumnsInBothModes) {
  const std::string t = UniqueName("types");
  const std::string pub = slot_ + "_pub";
  db_->Exec("CREATE TABLE public." + t +
            " (id int PRIMARY KEY, b bool, i2 int2, i4 int4, i8 int8, o oid, "
            "n numeric, n2 numeric(12,4), f4 float4, f8 float8, u uuid, "
            "tx text, vc varchar(20), bc char(5), nm name, js json, jb jsonb, "
            "by bytea, ts timestamp, ts3 timestamp(3), tz timestamptz, "
            "d date)");
  db_->Exec("CREATE PUBLICATION " + pub + " FOR TABLE public." + t);
  db_->Exec("SELECT pg_create_logical_replication_slot('" + slot_ +
            "', 'pgoutput')");
  // Edge cases one per row (NULL in every other column), then random ones.
  const std::vector<std::pair<std::string, std::string>> edge = {
      {"b", "true"},
      {"b", "false"},
      {"i2", "-32768"},
      {"i2", "32767"},
      {"i4", "-2147483648"},
      {"i4", "0"},
      {"i8", "-9223372036854775808"},
      {"i8", "9223372036854775807"},
      {"o", "4294967295"},
      {"n", "0"},
      {"n", "-0.000"},
      {"n", "'NaN'"},
      {"n", "'Infinity'"},
      {"n", "'-Infinity'"},
      {"n", "123456789012345678901234567890.000000000000000000001"},
      {"n", "-1e-30"},
      {"n", "1e100"},
      {"n", "10000.00100"},
      {"n2", "-12345678.1234"},
      {"n2", "0.5"},
      {"f4", "'NaN'"},
      {"f4", "'-Infinity'"},
      {"f4", "-0"},
      {"f4", "1e6"},
      {"f4", "123456"},
      {"f4", "3.4028235e38"},
      {"f4", "1e-45"},
      {"f4", "0.1"},
      {"f8", "'Infinity'"},
      {"f8", "'NaN'"},
      {"f8", "-0"},
      {"f8", "1e15"},
      {"f8", "1e14"},
      {"f8", "99999999999999.9"},
      {"f8", "0.0001"},
      {"f8", "0.00001"},
      {"f8", "5e-324"},
      {"f8", "1.7976931348623157e308"},
      {"f8", "0.1 + 0.2"},
      {"u", "gen_random_uuid()"},
      {"tx", "''"},
      {"tx", "'Zoë 🚀 \"quoted\" \\ back'"},
      {"vc", "'ünïcødé'"},
      {"bc", "'ab'"},
      {"nm", "'a name'"},
      {"js", "'{\"a\": [1, 2.50, {\"b\": \"\\u00e9\\ud83d\\ude80\"}]}'"},
      {"jb",
       "'{\"a\": [1, 2.50, {\"b\": \"\\u00e9\\ud83d\\ude80\"}], "
       "\"z\": {\"y\": {\"x\": null}}}'"},
      {"jb", "'\"just a string\"'"},
      {"jb", "'null'"},
      {"by", "''"},
      {"by", "'\\x00ff5c78'"},
      {"ts", "'2000-01-01'"},
      {"ts", "'2026-11-25 16:04:55.1'"},
      {"ts", "'2026-11-25 16:04:55.123456'"},
      {"ts", "'1999-12-31 23:59:59.999999'"},
      {"ts", "'0044-03-15 12:00:00 BC'"},
      {"ts", "'4713-11-24 00:00:00.5 BC'"},
      {"ts", "'294276-12-31 23:59:59.999999'"},
      {"ts", "'infinity'"},
      {"ts", "'-infinity'"},
      {"ts3", "'2026-11-25 16:04:55.123456'"},
      {"tz", "'2026-11-25 16:04:55.5+02'"},
      {"tz", "'0001-01-01 00:00:00+00 BC'"},
      {"tz", "'1969-12-31 23:59:59.000001+00'"},
      {"tz", "'-infinity'"},
      {"d", "'2000-01-01'"},
      {"d", "'0001-01-01 BC'"},
      {"d", "'4713-01-01 BC'"},
      {"d", "'5874897-12-31'"},
      {"d", "'infinity'"},
      {"d", "'2024-02-29'"},
  };
  int id = 0;
  db_->Exec("INSERT INTO public." + t + " (id) VALUES (" +
            std::to_string(++id) + ")");  // all NULL
  for (const auto& [col, value] : edge) {
    db_->Exec("INSERT INTO public." + t + " (id, " + col + ") VALUES (" +
              std::to_string(++id) + ", " + value + ")");
  }
  db_->Exec(
      "INSERT INTO public." + t +
      " SELECT 1000 + g, random() < 0.5, (random() * 65535 - 32768)::int2, "
      "(random() * 4e9 - 2e9)::int4, (random() * 1e18)::int8 * "
      "(CASE WHEN random() < 0.5 THEN -1 ELSE 1 END), (random() * "
      "4e9)::bigint::oid, "
      "round(((random() - 0.5) * power(10, random() * 40 - 20))::numeric, "
      "(random() * 30)::int), round((random() * 1e8)::numeric, 4), "
      "((random() - 0.5) * power(10, random() * 70 - 35))::float4, "
      "(random() - 0.5) * power(10::float8, random() * 600 - 300), "
      "gen_random_uuid(), md5(g::text), left(md5(g::text), 20), "
      "left(md5(g::text), 3), md5(g::text), json_build_object('g', g, 'r', "
      "random()), jsonb_build_object('g', g, 'r', random(), 'n', "
      "jsonb_build_array(g, 'ä\\u00e9')), decode(md5(g::text), 'hex'), "
      "timestamp '4000-01-01 BC' + random() * interval '6000 years' + "
      "random() * interval '1 day', timestamp '2000-01-01' + random() * "
      "interval '100 years', timestamptz '1500-01-01 00:00+00' + random() * "
      "interval '1000 years', date '4000-01-01 BC' + (random() * 3000000)::int "
      "FROM generate_series(1, 2000) g");
  std::vector<std::string> raw_text, raw_binary;
  auto text = DecodeInserts(slot_, pub, false, &raw_text);
  auto binary = DecodeInserts(slot_, pub, true, &raw_binary);
  ASSERT_EQ(text.size(), edge.size() + 2001);
  ASSERT_EQ(binary.size(), text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    ASSERT_EQ(binary[i], text[i]) << "row " << i;
    // The walsender did send binary: no row (the all-NULL one aside) has
    // the same bytes in both.
    if (i > 0) {
      EXPECT_NE(raw_binary[i], raw_text[i]) << "row " << i;
    }
  }
  db_->Exec("DROP PUBLICATION " + pub);
}

// The same rows through two pgoutput relays, one in binary (auto, the
// default) and one in text (off): every record the same bytes.
TEST_F(PgOutputBinaryE2ETest, RecordsAreTheSameInBinaryAndText) {
  db_->Exec("ALTER TABLE public." + table_ +
            " ADD COLUMN note text, ADD COLUMN amount numeric, ADD COLUMN "
            "ratio float8, ADD COLUMN flag bool, ADD COLUMN due date");
  auto second = StartBinaryAndText(
      {"--set", "outbox.headers.note=note", "--set",
       "outbox.headers.amount=amount", "--set", "outbox.headers.ratio=ratio",
       "--set", "outbox.headers.flag=flag", "--set", "outbox.headers.due=due",
       "--set", "outbox.headers.created_at=created"},
      {"--topic", "b.{aggregatetype}"}, {"--topic", "t.{aggregatetype}"});
  ASSERT_NE(second, nullptr);
  const std::vector<std::string> payloads = {
      "'{\"total\": 42, \"items\": [1, 2.5, -3e10, true, null]}'",
      "'{\"name\": \"Zoë 🚀 \\u00e9\", \"quote\": \"a\\\"b\\\\c\\n\"}'",
      "'{\"deep\": {\"er\": {\"est\": [\"\\ud83d\\ude80\", {}]}}}'",
      "'\"just a string\"'",
      "'null'",
      "NULL",
      "'{\"n\": 123456789012345678901234567890.000000001}'",
      "jsonb_build_object('blob', repeat('x', 300000))"};
  int n = 0;
  for (const std::string& p : payloads) {
    ++n;
    const bool nulls = n % 2 == 0;
    db_->Exec(
        "INSERT INTO public." + table_ +
        " (id, aggregatetype, aggregateid, type, payload, created_at, note, "
        "amount, ratio, flag, due) VALUES (gen_random_uuid(), '" +
        aggtype_ + "', 'key-" + std::to_string(n % 3) + " é', 'T', " + p +
        ", timestamptz '2026-11-25 16:04:55.12+00' - " + std::to_string(n) +
        " * interval '601 years 1.5 seconds', " +
        (nulls ? "NULL, NULL, NULL, NULL, NULL"
               : "'note ☃ " + std::to_string(n) + "', -" + std::to_string(n) +
                     ".50, 0.1 * " + std::to_string(n) + ", " +
                     (n % 3 == 0 ? "true" : "false") + ", date '0100-02-03'") +
        ")");
  }
  ExpectSameRecords("b." + aggtype_, "t." + aggtype_, payloads.size(), *relay_,
                    *second, /*timestamps=*/true);
  second->Signal(SIGTERM);
  EXPECT_EQ(second->Wait(30000), 0) << second->Output();
  db_->Query("SELECT pg_drop_replication_slot('" + slot_ + "_t')")
      .status()
      .IgnoreError();
}

// A column whose type binary cannot carry (an enum) added while the relay
// streams in binary: the session ends at its Relation message, before any
// row of it, and the next one streams in text from the slot's confirmed
// position: one log line, every event delivered.
TEST_F(PgOutputBinaryE2ETest, AnUnknownTypeMidStreamFallsBackToTextOnce) {
  const std::string mood = UniqueName("mood");
  db_->Exec("CREATE TYPE public." + mood + " AS ENUM ('sad', 'happy')");
  extra_relay_args_ = {"--set", "postgres.plugin=pgoutput", "--set",
                       "postgres.publication=" + slot_ + "_pub"};
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  EXPECT_THAT(StartReplicationCommand(slot_), HasSubstr("binary 'true'"));
  std::vector<std::string> ids;
  const auto insert = [&](const std::string& extra_cols,
                          const std::string& extra_values) {
    ids.push_back(db_->Scalar("SELECT gen_random_uuid()"));
    db_->Exec("INSERT INTO public." + table_ +
              " (id, aggregatetype, aggregateid, type, payload" + extra_cols +
              ") VALUES ('" + ids.back() + "', '" + aggtype_ +
              "', 'k', 'T', '" + "{\"i\": " + std::to_string(ids.size()) +
              "}'" + extra_values + ")");
  };
  for (int i = 0; i < 5; ++i) insert("", "");
  db_->Exec("ALTER TABLE public." + table_ + " ADD COLUMN mood public." + mood);
  for (int i = 0; i < 5; ++i) {
    insert(", mood", i % 2 == 0 ? ", 'happy'" : ", NULL");
  }
  auto got = ConsumeUntil(
      env_->kafka_brokers(), {topic_},
      [&](const std::vector<KafkaMessage>& m) {
        std::set<std::string> distinct;
        for (const auto& k : m) distinct.insert(k.Header("id"));
        return distinct.size() >= ids.size();
      },
      60000);
  std::set<std::string> seen;
  for (const auto& m : got) seen.insert(m.Header("id"));
  for (const std::string& want : ids) EXPECT_TRUE(seen.count(want)) << want;
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  EXPECT_THAT(StartReplicationCommand(slot_), Not(HasSubstr("binary")));
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();
  const std::string out = relay_->Output();
  const std::string line = "column \\\"mood\\\" of public." + table_ +
                           " has type " + mood +
                           ", whose binary format the relay cannot read";
  size_t count = 0;
  for (size_t at = out.find(line); at != std::string::npos;
       at = out.find(line, at + 1)) {
    ++count;
  }
  EXPECT_EQ(count, 1u) << out;
  EXPECT_THAT(out, HasSubstr("streaming in text")) << out;
}

// Such a column from the start: auto streams that table in text, on
// refuses in one line.
TEST_F(PgOutputBinaryE2ETest, AnUnknownTypeAtStartIsTextUnderAutoRefusedOn) {
  const std::string mood = UniqueName("mood");
  db_->Exec("CREATE TYPE public." + mood + " AS ENUM ('sad', 'happy')");
  db_->Exec("ALTER TABLE public." + table_ + " ADD COLUMN mood public." + mood);
  extra_relay_args_ = {"--set", "postgres.plugin=pgoutput",
                       "--set", "postgres.publication=" + slot_ + "_pub",
                       "--set", "postgres.pgoutput_binary=on"};
  StartRelay();
  EXPECT_EQ(relay_->Wait(30000), 3) << relay_->Output();
  EXPECT_THAT(relay_->Output(),
              HasSubstr("postgres.pgoutput_binary is on, but column \"mood\" "
                        "of public." +
                        table_ + " has type " + mood));
  extra_relay_args_.resize(4);  // auto
  relay_ = Process::Start(RelayArgs(), dir_ + "/auto.log");
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  EXPECT_THAT(StartReplicationCommand(slot_), Not(HasSubstr("binary")));
  const std::string id = db_->Scalar("SELECT gen_random_uuid()");
  db_->Exec("INSERT INTO public." + table_ +
            " (id, aggregatetype, aggregateid, type, payload, mood) VALUES ('" +
            id + "', '" + aggtype_ + "', 'k', 'T', '{}', 'sad')");
  auto got = ConsumeUntil(
      env_->kafka_brokers(), {topic_},
      [&](const std::vector<KafkaMessage>& m) { return !m.empty(); }, 60000);
  ASSERT_EQ(got.size(), 1u) << relay_->Output();
  EXPECT_EQ(got[0].Header("id"), id);
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();
  EXPECT_THAT(relay_->Output(), Not(HasSubstr("binary format")));
}

// A poison row (an illegal topic) dead-lettered by a binary and a text
// relay: the same dead letter, byte for byte, holding the row as text mode
// sends it (the uuid as its text, not its 16 send-format bytes).
TEST_F(PgOutputBinaryE2ETest, DeadLettersAreTheSameInBinaryAndText) {
  db_->Exec("ALTER TABLE public." + table_ +
            " ADD COLUMN ratio float8, ADD COLUMN amount numeric, ADD COLUMN "
            "flag bool, ADD COLUMN blob bytea, ADD COLUMN due date");
  const std::string dl_b = UniqueName("dlb"), dl_t = UniqueName("dlt");
  auto second = StartBinaryAndText(
      {"--set", "outbox.on_invalid=dead_letter", "--topic", "{aggregatetype}"},
      {"--set", "outbox.dead_letter_topic=" + dl_b},
      {"--set", "outbox.dead_letter_topic=" + dl_t});
  ASSERT_NE(second, nullptr);
  std::vector<std::string> ids;
  for (int n = 0; n < 3; ++n) {
    ids.push_back(db_->Scalar("SELECT gen_random_uuid()"));
    db_->Exec("INSERT INTO public." + table_ +
              " (id, aggregatetype, aggregateid, type, payload, created_at, "
              "ratio, amount, flag, blob, due) VALUES ('" +
              ids.back() + "', 'not a topic " + aggtype_ + "', 'k', 'T', " +
              (n == 1 ? "NULL" : "'{\"n\": " + std::to_string(n) + "}'") +
              ", timestamptz '2026-11-25 16:04:55.12+00', " +
              (n == 2 ? "NULL, NULL, NULL, NULL, NULL"
                      : "0.1::float8 + 0.2::float8, -12.50, true, '\\x00ff5c', "
                        "date '0100-02-03'") +
              ")");
  }
  const auto enough = [&](const std::vector<KafkaMessage>& m) {
    return m.size() >= ids.size();
  };
  auto got_b = ConsumeUntil(env_->kafka_brokers(), {dl_b}, enough, 60000);
  auto got_t = ConsumeUntil(env_->kafka_brokers(), {dl_t}, enough, 60000);
  ASSERT_EQ(got_b.size(), ids.size()) << relay_->Output();
  ASSERT_EQ(got_t.size(), ids.size()) << second->Output();
  std::map<std::string, const KafkaMessage*> b, t;
  for (const auto& m : got_b) b[m.Header("id")] = &m;
  for (const auto& m : got_t) t[m.Header("id")] = &m;
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_TRUE(b.count(ids[i]) && t.count(ids[i])) << ids[i];
    const KafkaMessage& x = *b[ids[i]];
    const KafkaMessage& y = *t[ids[i]];
    EXPECT_EQ(absl::CEscape(x.value), absl::CEscape(y.value)) << ids[i];
    EXPECT_EQ(x.headers, y.headers);
    EXPECT_EQ(x.key, y.key);
    // Readable: the uuid and the timestamp as their text.
    EXPECT_THAT(x.value, HasSubstr(ids[i]));
    EXPECT_THAT(x.value, HasSubstr("2026-11-25 16:04:55.12+00"));
    if (i == 0) {
      EXPECT_THAT(x.value, HasSubstr("0.30000000000000004"));
      EXPECT_THAT(x.value, HasSubstr("\\x00ff5c"));
    }
  }
  EXPECT_TRUE(relay_->Running()) << relay_->Output();
  second->Signal(SIGTERM);
  EXPECT_EQ(second->Wait(30000), 0) << second->Output();
  db_->Query("SELECT pg_drop_replication_slot('" + slot_ + "_t')")
      .status()
      .IgnoreError();
}

}  // namespace
}  // namespace outbox::testing
