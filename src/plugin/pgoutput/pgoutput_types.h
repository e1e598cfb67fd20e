// pgoutput_types: what PgOutputDecoder needs to know about PostgreSQL's
// built-in types, as pure functions of a type OID (and type modifier).
//
// Built-in type OIDs (below 10000) are fixed in PostgreSQL's catalog data
// and do not change between major versions; pgoutput announces every other
// type with a Type message instead. Thread safe: no state.
#ifndef OUTBOX_DECODE_PGOUTPUT_TYPES_H_
#define OUTBOX_DECODE_PGOUTPUT_TYPES_H_

#include <cstdint>
#include <string>

namespace outbox::pgoutput {

// How a text-format value of a type becomes a Column, chosen as wal2json
// chooses its JSON representation: by the column's exact type OID (a domain
// over integer is text to both).
enum class ValueClass : uint8_t {
  kText,    // the text as is (json, jsonb, text, uuid, arrays, domains...)
  kNumber,  // int2, int4, int8, oid, float4, float8, numeric
  kBool,    // bool: "t"/"f"
  kBytes,   // bytea: "\x" hex
};

ValueClass ClassOf(uint32_t type_oid);

// The type's name as wal2json prints it in a column's "type": PostgreSQL's
// format_type(oid, typmod) ("integer", "character varying(20)",
// "timestamp(3) with time zone", "interval day to second(3)", "integer[]"),
// with wal2json's one twist: a quoted name that is not an array loses its
// quotes ("char", "bit"; but "\"char\"[]"). Empty when `type_oid` is not a
// built-in type of PostgreSQL 15 (later majors' new types, user types).
std::string BuiltinTypeName(uint32_t type_oid, int32_t typmod);

}  // namespace outbox::pgoutput

#endif  // OUTBOX_DECODE_PGOUTPUT_TYPES_H_
