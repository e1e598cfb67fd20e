#include "plugin/pgoutput/pgoutput_types.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"

namespace outbox::pgoutput {
namespace {

constexpr uint32_t kBoolOid = 16;
constexpr uint32_t kByteaOid = 17;
constexpr uint32_t kInt8Oid = 20;
constexpr uint32_t kInt2Oid = 21;
constexpr uint32_t kInt4Oid = 23;
constexpr uint32_t kOidOid = 26;
constexpr uint32_t kFloat4Oid = 700;
constexpr uint32_t kFloat8Oid = 701;
constexpr uint32_t kNumericOid = 1700;
// The built-in types that take a type modifier, and their array types.
constexpr uint32_t kBpcharOid = 1042;
constexpr uint32_t kVarcharOid = 1043;
constexpr uint32_t kTimeOid = 1083;
constexpr uint32_t kTimestampOid = 1114;
constexpr uint32_t kTimestamptzOid = 1184;
constexpr uint32_t kIntervalOid = 1186;
constexpr uint32_t kTimetzOid = 1266;
constexpr uint32_t kBitOid = 1560;
constexpr uint32_t kVarbitOid = 1562;

struct TypmodArray {
  uint32_t array;
  uint32_t element;
};
constexpr TypmodArray kTypmodArrays[] = {
    {1014, kBpcharOid},  {1015, kVarcharOid},     {1115, kTimestampOid},
    {1183, kTimeOid},    {1185, kTimestamptzOid}, {1187, kIntervalOid},
    {1231, kNumericOid}, {1270, kTimetzOid},      {1561, kBitOid},
    {1563, kVarbitOid},
};

struct BuiltinType {
  uint32_t oid;
  const char* name;
};

// Generated on PostgreSQL 15 (see tests/testdata/pgoutput/README.md):
//   SELECT oid, format_type(oid, -1) FROM pg_type WHERE oid < 10000
//     AND typtype IN ('b', 'r', 'm', 'd', 'e') ORDER BY oid
// with wal2json's unquoting applied. Sorted by OID.
constexpr BuiltinType kBuiltinTypes[] = {
    {16, "boolean"},
    {17, "bytea"},
    {18, "char"},
    {19, "name"},
    {20, "bigint"},
    {21, "smallint"},
    {22, "int2vector"},
    {23, "integer"},
    {24, "regproc"},
    {25, "text"},
    {26, "oid"},
    {27, "tid"},
    {28, "xid"},
    {29, "cid"},
    {30, "oidvector"},
    {114, "json"},
    {142, "xml"},
    {143, "xml[]"},
    {194, "pg_node_tree"},
    {199, "json[]"},
    {210, "pg_type[]"},
    {270, "pg_attribute[]"},
    {271, "xid8[]"},
    {272, "pg_proc[]"},
    {273, "pg_class[]"},
    {600, "point"},
    {601, "lseg"},
    {602, "path"},
    {603, "box"},
    {604, "polygon"},
    {628, "line"},
    {629, "line[]"},
    {650, "cidr"},
    {651, "cidr[]"},
    {700, "real"},
    {701, "double precision"},
    {718, "circle"},
    {719, "circle[]"},
    {774, "macaddr8"},
    {775, "macaddr8[]"},
    {790, "money"},
    {791, "money[]"},
    {829, "macaddr"},
    {869, "inet"},
    {1000, "boolean[]"},
    {1001, "bytea[]"},
    {1002, "\"char\"[]"},
    {1003, "name[]"},
    {1005, "smallint[]"},
    {1006, "int2vector[]"},
    {1007, "integer[]"},
    {1008, "regproc[]"},
    {1009, "text[]"},
    {1010, "tid[]"},
    {1011, "xid[]"},
    {1012, "cid[]"},
    {1013, "oidvector[]"},
    {1014, "bpchar[]"},
    {1015, "character varying[]"},
    {1016, "bigint[]"},
    {1017, "point[]"},
    {1018, "lseg[]"},
    {1019, "path[]"},
    {1020, "box[]"},
    {1021, "real[]"},
    {1022, "double precision[]"},
    {1027, "polygon[]"},
    {1028, "oid[]"},
    {1033, "aclitem"},
    {1034, "aclitem[]"},
    {1040, "macaddr[]"},
    {1041, "inet[]"},
    {1042, "bpchar"},
    {1043, "character varying"},
    {1082, "date"},
    {1083, "time without time zone"},
    {1114, "timestamp without time zone"},
    {1115, "timestamp without time zone[]"},
    {1182, "date[]"},
    {1183, "time without time zone[]"},
    {1184, "timestamp with time zone"},
    {1185, "timestamp with time zone[]"},
    {1186, "interval"},
    {1187, "interval[]"},
    {1231, "numeric[]"},
    {1263, "cstring[]"},
    {1266, "time with time zone"},
    {1270, "time with time zone[]"},
    {1560, "bit"},
    {1561, "\"bit\"[]"},
    {1562, "bit varying"},
    {1563, "bit varying[]"},
    {1700, "numeric"},
    {1790, "refcursor"},
    {2201, "refcursor[]"},
    {2202, "regprocedure"},
    {2203, "regoper"},
    {2204, "regoperator"},
    {2205, "regclass"},
    {2206, "regtype"},
    {2207, "regprocedure[]"},
    {2208, "regoper[]"},
    {2209, "regoperator[]"},
    {2210, "regclass[]"},
    {2211, "regtype[]"},
    {2949, "txid_snapshot[]"},
    {2950, "uuid"},
    {2951, "uuid[]"},
    {2970, "txid_snapshot"},
    {3220, "pg_lsn"},
    {3221, "pg_lsn[]"},
    {3361, "pg_ndistinct"},
    {3402, "pg_dependencies"},
    {3614, "tsvector"},
    {3615, "tsquery"},
    {3642, "gtsvector"},
    {3643, "tsvector[]"},
    {3644, "gtsvector[]"},
    {3645, "tsquery[]"},
    {3734, "regconfig"},
    {3735, "regconfig[]"},
    {3769, "regdictionary"},
    {3770, "regdictionary[]"},
    {3802, "jsonb"},
    {3807, "jsonb[]"},
    {3904, "int4range"},
    {3905, "int4range[]"},
    {3906, "numrange"},
    {3907, "numrange[]"},
    {3908, "tsrange"},
    {3909, "tsrange[]"},
    {3910, "tstzrange"},
    {3911, "tstzrange[]"},
    {3912, "daterange"},
    {3913, "daterange[]"},
    {3926, "int8range"},
    {3927, "int8range[]"},
    {4072, "jsonpath"},
    {4073, "jsonpath[]"},
    {4089, "regnamespace"},
    {4090, "regnamespace[]"},
    {4096, "regrole"},
    {4097, "regrole[]"},
    {4191, "regcollation"},
    {4192, "regcollation[]"},
    {4451, "int4multirange"},
    {4532, "nummultirange"},
    {4533, "tsmultirange"},
    {4534, "tstzmultirange"},
    {4535, "datemultirange"},
    {4536, "int8multirange"},
    {4600, "pg_brin_bloom_summary"},
    {4601, "pg_brin_minmax_multi_summary"},
    {5017, "pg_mcv_list"},
    {5038, "pg_snapshot"},
    {5039, "pg_snapshot[]"},
    {5069, "xid8"},
    {6150, "int4multirange[]"},
    {6151, "nummultirange[]"},
    {6152, "tsmultirange[]"},
    {6153, "tstzmultirange[]"},
    {6155, "datemultirange[]"},
    {6157, "int8multirange[]"},
};

// PostgreSQL's interval typmod: the field mask in the high 16 bits (bits
// from datetime.h: MONTH 1, YEAR 2, DAY 3, HOUR 10, MINUTE 11, SECOND 12;
// 0x7FFF for all), the fractional-second precision in the low 16 (0xFFFF
// for none given).
std::string IntervalName(int32_t typmod) {
  constexpr int kMonth = 1 << 1, kYear = 1 << 2, kDay = 1 << 3, kHour = 1 << 10,
                kMinute = 1 << 11, kSecond = 1 << 12;
  const int fields = (typmod >> 16) & 0x7FFF;
  const int precision = typmod & 0xFFFF;
  const char* range = "";
  switch (fields) {
    case kYear:
      range = " year";
      break;
    case kMonth:
      range = " month";
      break;
    case kDay:
      range = " day";
      break;
    case kHour:
      range = " hour";
      break;
    case kMinute:
      range = " minute";
      break;
    case kSecond:
      range = " second";
      break;
    case kYear | kMonth:
      range = " year to month";
      break;
    case kDay | kHour:
      range = " day to hour";
      break;
    case kDay | kHour | kMinute:
      range = " day to minute";
      break;
    case kDay | kHour | kMinute | kSecond:
      range = " day to second";
      break;
    case kHour | kMinute:
      range = " hour to minute";
      break;
    case kHour | kMinute | kSecond:
      range = " hour to second";
      break;
    case kMinute | kSecond:
      range = " minute to second";
      break;
    default:
      break;  // 0x7FFF: every field
  }
  if (precision == 0xFFFF) return absl::StrCat("interval", range);
  return absl::StrCat("interval", range, "(", precision, ")");
}

// format_type() of a scalar type with a type modifier >= 0; empty for a
// type that takes none.
std::string WithTypmod(uint32_t oid, int32_t typmod) {
  constexpr int32_t kVarHdrSz = 4;  // char/varchar/numeric count it in
  switch (oid) {
    // A length or precision the type's typmodout would not print (never
    // stored for a column) leaves the bare name, as format_type() does.
    case kBpcharOid:
      if (typmod <= kVarHdrSz) return "character";
      return absl::StrCat("character(", typmod - kVarHdrSz, ")");
    case kVarcharOid:
      if (typmod <= kVarHdrSz) return "character varying";
      return absl::StrCat("character varying(", typmod - kVarHdrSz, ")");
    case kNumericOid: {
      if (typmod < kVarHdrSz) return "numeric";
      // Scale is an 11-bit two's complement number (negative since 15).
      const int32_t t = typmod - kVarHdrSz;
      const int32_t scale = ((t & 0x7FF) ^ 1024) - 1024;
      return absl::StrCat("numeric(", (t >> 16) & 0xFFFF, ",", scale, ")");
    }
    case kTimeOid:
      return absl::StrCat("time(", typmod, ") without time zone");
    case kTimetzOid:
      return absl::StrCat("time(", typmod, ") with time zone");
    case kTimestampOid:
      return absl::StrCat("timestamp(", typmod, ") without time zone");
    case kTimestamptzOid:
      return absl::StrCat("timestamp(", typmod, ") with time zone");
    case kIntervalOid:
      return IntervalName(typmod);
    case kBitOid:
      return absl::StrCat("bit(", typmod, ")");
    case kVarbitOid:
      return absl::StrCat("bit varying(", typmod, ")");
    default:
      return "";
  }
}

}  // namespace

ValueClass ClassOf(uint32_t type_oid) {
  switch (type_oid) {
    case kBoolOid:
      return ValueClass::kBool;
    case kByteaOid:
      return ValueClass::kBytes;
    case kInt2Oid:
    case kInt4Oid:
    case kInt8Oid:
    case kOidOid:
    case kFloat4Oid:
    case kFloat8Oid:
    case kNumericOid:
      return ValueClass::kNumber;
    default:
      return ValueClass::kText;
  }
}

std::string BuiltinTypeName(uint32_t type_oid, int32_t typmod) {
  if (typmod >= 0) {
    uint32_t element = type_oid;
    bool array = false;
    for (const TypmodArray& a : kTypmodArrays) {
      if (a.array == type_oid) {
        element = a.element;
        array = true;
      }
    }
    std::string name = WithTypmod(element, typmod);
    if (!name.empty()) return array ? absl::StrCat(name, "[]") : name;
  }
  const auto* it = std::lower_bound(
      std::begin(kBuiltinTypes), std::end(kBuiltinTypes), type_oid,
      [](const BuiltinType& t, uint32_t oid) { return t.oid < oid; });
  if (it == std::end(kBuiltinTypes) || it->oid != type_oid) return "";
  return it->name;
}

}  // namespace outbox::pgoutput
