// ParsePgTimestamp: PostgreSQL's timestamp and timestamptz text output in
// DateStyle ISO, as Unix microseconds.
//
// The relay's sessions run with TimeZone=UTC and DateStyle=ISO, so a
// timestamptz prints as "2026-11-22 04:54:35.123456+00" and a timestamp
// (without time zone) as "2026-11-22 04:54:35.123456". The wal2json decoder
// reads commit times with it (offset required), the Router reads a
// timestamp column (offset optional: a timestamp without one is taken as
// UTC, as Debezium takes it). Pure function; thread safe; no allocation.
#ifndef OUTBOX_COMMON_PG_TIMESTAMP_H_
#define OUTBOX_COMMON_PG_TIMESTAMP_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace outbox {

enum class UtcOffset { kRequired, kOptional };

// "YYYY-MM-DD HH:MM:SS[.f{1,6}]" then a UTC offset "+HH", "-HH:MM" or
// "+HH:MM:SS" (which `offset` may allow to be absent: UTC). Years 1 to
// 200000 (no BC, no infinity). False otherwise.
bool ParsePgTimestamp(absl::string_view text, UtcOffset offset,
                      int64_t* unix_micros);

}  // namespace outbox

#endif  // OUTBOX_COMMON_PG_TIMESTAMP_H_
