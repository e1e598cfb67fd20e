// pgoutput_binary: column values in their binary send format (pgoutput's
// `binary 'true'`, PostgreSQL 14+) turned back into exactly the text the
// type's output function gives on the replication connection's settings
// (TimeZone=UTC, DateStyle=ISO, extra_float_digits=3, all pinned: see
// LibpqReplicationStream::kServerSettings), so the
// decoder classifies them as it classifies text values:
//   bool                        "t" / "f"
//   int2, int4, int8, oid       decimal
//   float4, float8              PostgreSQL's shortest round-trip output:
//                               fixed notation for a decimal exponent from
//                               -4 to 5 (float4) or 14 (float8), else
//                               d.ddde+XX; NaN, Infinity, -Infinity
//   numeric                     its digits to the display scale; NaN,
//                               Infinity, -Infinity
//   text, varchar, bpchar,      the bytes as sent (the send format is the
//   name, json                  text)
//   jsonb                       the text after the version byte 1
//   uuid                        8-4-4-4-12, lower-case hex
//   date                        YYYY-MM-DD[ BC]; infinity, -infinity
//   timestamp, timestamptz      YYYY-MM-DD HH:MM:SS[.ffffff](+00 for
//                               timestamptz)[ BC], the fraction's trailing
//                               zeros trimmed; infinity, -infinity
// bytea needs no text: its send format is the raw bytes the decoder keeps.
// Any other type is not formattable (HasBinaryFormat false): a relation
// with such a column must be streamed in text.
//
// Thread safe: pure functions.
#ifndef OUTBOX_PLUGIN_PGOUTPUT_PGOUTPUT_BINARY_H_
#define OUTBOX_PLUGIN_PGOUTPUT_PGOUTPUT_BINARY_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace outbox::pgoutput {

// Whether FormatBinary() knows `type_oid`'s send format (bytea included).
bool HasBinaryFormat(uint32_t type_oid);

// The text of `raw`, a non-bytea value of `type_oid` in its send format:
// either *view (into `raw`, or static) or, when *appended is true, the
// bytes appended to *buf from its old size on. False when the type is not
// formattable or `raw` is not a valid value of it (*buf may have grown).
bool FormatBinary(uint32_t type_oid, absl::string_view raw, std::string* buf,
                  absl::string_view* view, bool* appended);

// The pieces, for tests; each appends to *out.
void AppendFloat4(float v, std::string* out);
void AppendFloat8(double v, std::string* out);
// False for a malformed value.
bool AppendNumeric(absl::string_view raw, std::string* out);
// Microseconds since 2000-01-01 (UTC for timestamptz).
void AppendTimestamp(int64_t pg_micros, bool with_zone, std::string* out);
// Days since 2000-01-01.
void AppendDate(int32_t pg_days, std::string* out);
void AppendUuid(absl::string_view raw16, std::string* out);

}  // namespace outbox::pgoutput

#endif  // OUTBOX_PLUGIN_PGOUTPUT_PGOUTPUT_BINARY_H_
