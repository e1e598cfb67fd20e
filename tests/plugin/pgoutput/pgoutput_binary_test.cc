// pgoutput_binary: each type's send format turned back into the text its
// output function gives. Expectations are PostgreSQL 15.18's own: for each
// value, SELECT <type>send(v) and v::text (bool: boolout's t/f) with
// extra_float_digits 1, TimeZone UTC, DateStyle ISO.
#include "plugin/pgoutput/pgoutput_binary.h"

#include <string>

#include "gtest/gtest.h"
#include "hex_bytes.h"

namespace outbox::pgoutput {
namespace {

struct Case {
  const char* type;
  uint32_t oid;
  const char* send_hex;
  const char* text;
};

constexpr Case kCases[] = {
    {"float8", 701, "0000000000000000", "0"},
    {"float8", 701, "8000000000000000", "-0"},
    {"float8", 701, "3ff0000000000000", "1"},
    {"float8", 701, "bff8000000000000", "-1.5"},
    {"float8", 701, "3fb999999999999a", "0.1"},
    {"float8", 701, "430c6bf526340000", "1e+15"},
    {"float8", 701, "42d6bcc41e900000", "100000000000000"},
    {"float8", 701, "437b69b4ba630f35", "1.2345678901234568e+17"},
    {"float8", 701, "3f1a36e2eb1c432d", "0.0001"},
    {"float8", 701, "3ee4f8b588e368f1", "1e-05"},
    {"float8", 701, "3ee9e3abe16fc70d", "1.2345e-05"},
    {"float8", 701, "400921fb54442d18", "3.141592653589793"},
    {"float8", 701, "54b249ad2594c37d", "1e+100"},
    {"float8", 701, "81bac9a7b3b7302f", "-2.5e-300"},
    {"float8", 701, "7fefffffffffffff", "1.7976931348623157e+308"},
    {"float8", 701, "0000000000000001", "5e-324"},
    {"float8", 701, "7ff8000000000000", "NaN"},
    {"float8", 701, "7ff0000000000000", "Infinity"},
    {"float8", 701, "fff0000000000000", "-Infinity"},
    {"float8", 701, "4059000000000000", "100"},
    {"float8", 701, "4340000000000000", "9.007199254740992e+15"},
    {"float8", 701, "40fe240c9fbe76c9", "123456.789"},
    {"float8", 701, "3fd3333333333334", "0.30000000000000004"},
    {"float8", 701, "c21bf08eb0000000", "-30000000000"},
    {"float8", 701, "42d6bcc41e8ffffa", "99999999999999.9"},
    // Where the shortest digits sit exactly on a rounding bound, which
    // PostgreSQL's Ryu never accepts (std::to_chars does).
    {"float4", 700, "cc1c003e", "-4.0894712e+07"},
    {"float4", 700, "4c400000", "5.0331648e+07"},
    {"float4", 700, "501502f9", "1e+10"},
    {"float4", 700, "4c000001", "3.3554436e+07"},
    {"float8", 701, "4358000000000002", "2.7021597764222984e+16"},
    {"float8", 701, "43b0000000000000", "1.152921504606847e+18"},
    {"float8", 701, "44b52d02c7e14af6", "9.999999999999999e+22"},
    {"float8", 701, "432ee89a998bc000", "4.35e+15"},
    {"float4", 700, "00000000", "0"},
    {"float4", 700, "80000000", "-0"},
    {"float4", 700, "3fc00000", "1.5"},
    {"float4", 700, "3dcccccd", "0.1"},
    {"float4", 700, "47c35000", "100000"},
    {"float4", 700, "49742400", "1e+06"},
    {"float4", 700, "47f12000", "123456"},
    {"float4", 700, "4996b438", "1.234567e+06"},
    {"float4", 700, "4b800000", "1.6777216e+07"},
    {"float4", 700, "7f7fffff", "3.4028235e+38"},
    {"float4", 700, "00000001", "1e-45"},
    {"float4", 700, "38d1b717", "0.0001"},
    {"float4", 700, "3727c5ac", "1e-05"},
    {"float4", 700, "7fc00000", "NaN"},
    {"float4", 700, "ff800000", "-Infinity"},
    {"float4", 700, "c2f6e979", "-123.456"},
    {"numeric", 1700, "0000000000000000", "0"},
    {"numeric", 1700, "0000000000000002", "0.00"},
    {"numeric", 1700, "00010000400000000001", "-1"},
    {"numeric", 1700, "000200000000000100011388", "1.5"},
    {"numeric", 1700, "0001ffff400000040001", "-0.0001"},
    {"numeric", 1700,
     "000b000700000009000c0d801ed204d2162e23340d801ed20000000003e8",
     "123456789012345678901234567890.000000001"},
    {"numeric", 1700, "00010001000000000001", "10000"},
    {"numeric", 1700, "0001fffb000000140001", "0.00000000000000000001"},
    {"numeric", 1700, "00010005000000000001", "100000000000000000000"},
    {"numeric", 1700, "00000000c0000000", "NaN"},
    {"numeric", 1700, "00000000d0000020", "Infinity"},
    {"numeric", 1700, "00000000f0000020", "-Infinity"},
    {"numeric", 1700, "0001ffff0000000403e8", "0.1000"},
    {"numeric", 1700, "0003000100000006000109291a85", "12345.678900"},
    {"numeric", 1700, "0004000100000008270f270f270f270f", "99999999.99999999"},
    {"numeric", 1700, "0001fffe0000000804d2", "0.00001234"},
    {"numeric", 1700, "00040002400000010009223d10e11388", "-987654321.5"},
    {"timestamp", 1114, "0000000000000000", "2000-01-01 00:00:00"},
    {"timestamp", 1114, "ffffffffffffffff", "1999-12-31 23:59:59.999999"},
    {"timestamp", 1114, "0003041ac1ac7e60", "2026-11-25 16:04:55.1"},
    {"timestamp", 1114, "0003041ac1acda00", "2026-11-25 16:04:55.123456"},
    {"timestamp", 1114, "0003041ac1accc80", "2026-11-25 16:04:55.12"},
    {"timestamp", 1114, "ff1af9e8fb46d000", "0044-03-15 12:00:00 BC"},
    {"timestamp", 1114, "ff1fc63d1bb12000", "0001-01-01 00:00:00 BC"},
    {"timestamp", 1114, "ff1fe2ffc594bee0", "0001-12-31 23:59:59.5 BC"},
    {"timestamp", 1114, "fd0f9983eb0ae000", "4713-11-24 00:00:00 BC"},
    {"timestamp", 1114, "7fffff5bb3b29fff", "294276-12-31 23:59:59.999999"},
    {"timestamp", 1114, "7fffffffffffffff", "infinity"},
    {"timestamp", 1114, "8000000000000000", "-infinity"},
    {"timestamp", 1114, "fffca2fec4c82000", "1970-01-01 00:00:00"},
    {"timestamp", 1114, "fff4ce7e1cbfb8c1", "1900-02-28 01:02:03.000001"},
    {"timestamp", 1114, "0380e70b913b8000", "10000-01-01 00:00:00"},
    {"timestamptz", 1184, "0000000000000000", "2000-01-01 00:00:00+00"},
    {"timestamptz", 1184, "00030419148b50e0", "2026-11-25 14:04:55.5+00"},
    {"timestamptz", 1184, "ff1af9e8fb4aa090", "0044-03-15 12:00:00.25+00 BC"},
    {"timestamptz", 1184, "7fffffffffffffff", "infinity"},
    {"timestamptz", 1184, "8000000000000000", "-infinity"},
    {"timestamptz", 1184, "fffca2fec4b8ddc1", "1969-12-31 23:59:59.000001+00"},
    {"date", 1082, "00000000", "2000-01-01"},
    {"date", 1082, "ffffffff", "1999-12-31"},
    {"date", 1082, "fff4da8b", "0001-01-01 BC"},
    {"date", 1082, "ffda97cd", "4713-01-01 BC"},
    {"date", 1082, "7fda970c", "5874897-12-31"},
    {"date", 1082, "7fffffff", "infinity"},
    {"date", 1082, "80000000", "-infinity"},
    {"date", 1082, "00002279", "2024-02-29"},
    {"date", 1082, "fff4dbf9", "0001-01-01"},
    {"uuid", 2950, "a0eebc999c0b4ef8bb6d6bb9bd380a11",
     "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
    {"uuid", 2950, "00000000000000000000000000000000",
     "00000000-0000-0000-0000-000000000000"},
    {"uuid", 2950, "ffffffffffffffffffffffffffffffff",
     "ffffffff-ffff-ffff-ffff-ffffffffffff"},
    {"int2", 21, "8000", "-32768"},
    {"int2", 21, "7fff", "32767"},
    {"int2", 21, "0000", "0"},
    {"int4", 23, "80000000", "-2147483648"},
    {"int4", 23, "7fffffff", "2147483647"},
    {"int8", 20, "8000000000000000", "-9223372036854775808"},
    {"int8", 20, "7fffffffffffffff", "9223372036854775807"},
    {"oid", 26, "ffffffff", "4294967295"},
    {"oid", 26, "00000000", "0"},
    {"bool", 16, "01", "t"},
    {"bool", 16, "00", "f"},
};

TEST(PgOutputBinaryTest, FormatsAsPostgreSqlsOutputFunctions) {
  for (const Case& c : kCases) {
    std::string raw;
    raw = HexBytes(c.send_hex);
    std::string buf = "prefix";
    absl::string_view text;
    bool appended = false;
    ASSERT_TRUE(HasBinaryFormat(c.oid)) << c.type;
    ASSERT_TRUE(FormatBinary(c.oid, raw, &buf, &text, &appended))
        << c.type << " " << c.send_hex;
    EXPECT_EQ(text, c.text) << c.type << " " << c.send_hex;
    if (appended) {
      EXPECT_EQ(buf, std::string("prefix") + c.text);
    } else {
      EXPECT_EQ(buf, "prefix");
    }
  }
}

TEST(PgOutputBinaryTest, TextTypesAreTheirBytes) {
  std::string buf;
  absl::string_view text;
  bool appended = true;
  for (uint32_t oid : {25u, 1043u, 1042u, 19u, 114u}) {
    ASSERT_TRUE(FormatBinary(oid, "Zo\xc3\xab \"x\"", &buf, &text, &appended));
    EXPECT_EQ(text, "Zo\xc3\xab \"x\"");
    EXPECT_FALSE(appended);
  }
  // jsonb: version byte 1, then the text.
  ASSERT_TRUE(FormatBinary(3802, "\x01{\"a\": 1}", &buf, &text, &appended));
  EXPECT_EQ(text, "{\"a\": 1}");
  EXPECT_FALSE(FormatBinary(3802, "\x02{}", &buf, &text, &appended));
  EXPECT_FALSE(FormatBinary(3802, "", &buf, &text, &appended));
  EXPECT_TRUE(buf.empty());
}

TEST(PgOutputBinaryTest, RejectsMalformedValuesAndUnknownTypes) {
  std::string buf;
  absl::string_view text;
  bool appended;
  EXPECT_FALSE(FormatBinary(23, "abc", &buf, &text, &appended));      // int4
  EXPECT_FALSE(FormatBinary(20, "abcd", &buf, &text, &appended));     // int8
  EXPECT_FALSE(FormatBinary(2950, "short", &buf, &text, &appended));  // uuid
  EXPECT_FALSE(FormatBinary(16, "", &buf, &text, &appended));         // bool
  std::string numeric;
  // ndigits 1 but no digit; a digit above 9999; an unknown sign.
  numeric = HexBytes("0001000000000000");
  EXPECT_FALSE(FormatBinary(1700, numeric, &buf, &text, &appended));
  numeric = HexBytes("00010000000000002710");
  EXPECT_FALSE(FormatBinary(1700, numeric, &buf, &text, &appended));
  numeric = HexBytes("0000000012340000");
  EXPECT_FALSE(FormatBinary(1700, numeric, &buf, &text, &appended));
  // Types it does not know: enum-like user OIDs, arrays, interval, char.
  for (uint32_t oid : {16400u, 1007u, 1186u, 18u, 1083u}) {
    EXPECT_FALSE(HasBinaryFormat(oid)) << oid;
    EXPECT_FALSE(FormatBinary(oid, "x", &buf, &text, &appended)) << oid;
  }
  EXPECT_TRUE(HasBinaryFormat(17));  // bytea: the decoder keeps its bytes
}

}  // namespace
}  // namespace outbox::pgoutput
