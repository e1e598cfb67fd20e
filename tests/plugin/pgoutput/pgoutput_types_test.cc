#include "plugin/pgoutput/pgoutput_types.h"

#include "gtest/gtest.h"

namespace outbox::pgoutput {
namespace {

struct NameCase {
  uint32_t oid;
  int32_t typmod;
  const char* name;
};

// Expected names: PostgreSQL 15's format_type(oid, typmod), with wal2json's
// unquoting of "char" and "bit" (see tests/testdata/pgoutput/README.md).
TEST(PgOutputTypesTest, NamesAreFormatTypeAsWal2JsonPrintsThem) {
  const NameCase cases[] = {
      {16, -1, "boolean"},
      {17, -1, "bytea"},
      {18, -1, "char"},
      {1002, -1, "\"char\"[]"},
      {20, -1, "bigint"},
      {21, -1, "smallint"},
      {23, -1, "integer"},
      {1007, -1, "integer[]"},
      {25, -1, "text"},
      {26, -1, "oid"},
      {114, -1, "json"},
      {3802, -1, "jsonb"},
      {2950, -1, "uuid"},
      {700, -1, "real"},
      {701, -1, "double precision"},
      {1700, -1, "numeric"},
      {1700, 0, "numeric"},
      {1700, 6, "numeric(0,2)"},
      {1700, ((10 << 16) | 2) + 4, "numeric(10,2)"},
      {1700, ((10 << 16) | (-2 & 2047)) + 4, "numeric(10,-2)"},
      {1700, ((1000 << 16) | 5) + 4, "numeric(1000,5)"},
      {1231, 24, "numeric(0,20)[]"},
      {1042, -1, "bpchar"},
      {1042, 0, "character"},
      {1042, 7, "character(3)"},
      {1014, -1, "bpchar[]"},
      {1014, 24, "character(20)[]"},
      {1043, -1, "character varying"},
      {1043, 24, "character varying(20)"},
      {1015, 9, "character varying(5)[]"},
      {1083, -1, "time without time zone"},
      {1083, 2, "time(2) without time zone"},
      {1266, -1, "time with time zone"},
      {1266, 0, "time(0) with time zone"},
      {1114, 3, "timestamp(3) without time zone"},
      {1184, -1, "timestamp with time zone"},
      {1184, 6, "timestamp(6) with time zone"},
      {1185, 0, "timestamp(0) with time zone[]"},
      {1186, -1, "interval"},
      {1186, (4 << 16) | 0xFFFF, "interval year"},
      {1186, (2 << 16) | 3, "interval month(3)"},
      {1186, (6 << 16) | 0xFFFF, "interval year to month"},
      {1186, (8 << 16) | 0, "interval day(0)"},
      {1186, (1024 << 16) | 0xFFFF, "interval hour"},
      {1186, (2048 << 16) | 0xFFFF, "interval minute"},
      {1186, (4096 << 16) | 1, "interval second(1)"},
      {1186, (1032 << 16) | 0xFFFF, "interval day to hour"},
      {1186, (3080 << 16) | 2, "interval day to minute(2)"},
      {1186, (7176 << 16) | 6, "interval day to second(6)"},
      {1186, (7168 << 16) | 0xFFFF, "interval hour to second"},
      {1186, (6144 << 16) | 6, "interval minute to second(6)"},
      {1186, (0x7FFF << 16) | 6, "interval(6)"},
      {1186, (0x7FFF << 16) | 0xFFFF, "interval"},
      {1187, (6 << 16) | 0xFFFF, "interval year to month[]"},
      {1560, -1, "bit"},
      {1560, 4, "bit(4)"},
      {1561, -1, "\"bit\"[]"},
      {1561, 6, "bit(6)[]"},
      {1562, -1, "bit varying"},
      {1562, 8, "bit varying(8)"},
      {3904, -1, "int4range"},
      {869, -1, "inet"},
      {790, -1, "money"},
  };
  for (const NameCase& c : cases) {
    EXPECT_EQ(BuiltinTypeName(c.oid, c.typmod), c.name)
        << c.oid << " " << c.typmod;
  }
}

TEST(PgOutputTypesTest, UnknownOidsHaveNoName) {
  EXPECT_EQ(BuiltinTypeName(0, -1), "");
  EXPECT_EQ(BuiltinTypeName(15, -1), "");
  EXPECT_EQ(BuiltinTypeName(16385, -1), "");
  EXPECT_EQ(BuiltinTypeName(16385, 8), "");
  EXPECT_EQ(BuiltinTypeName(UINT32_MAX, -1), "");
}

TEST(PgOutputTypesTest, ValueClassFollowsWal2Json) {
  EXPECT_EQ(ClassOf(16), ValueClass::kBool);
  EXPECT_EQ(ClassOf(17), ValueClass::kBytes);
  for (uint32_t oid : {20u, 21u, 23u, 26u, 700u, 701u, 1700u}) {
    EXPECT_EQ(ClassOf(oid), ValueClass::kNumber) << oid;
  }
  // Not numbers to wal2json either: money, arrays, domains, json.
  for (uint32_t oid : {790u, 1007u, 16402u, 114u, 3802u, 25u, 2950u}) {
    EXPECT_EQ(ClassOf(oid), ValueClass::kText) << oid;
  }
}

}  // namespace
}  // namespace outbox::pgoutput
