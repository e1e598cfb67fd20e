// Lsn: a PostgreSQL WAL position (XLogRecPtr), printed as "X/Y" in hex.
//
// A plain value type. Positions sent back to PostgreSQL mean "last byte + 1",
// so an Lsn taken from a wal2json C record's nextlsn is the position to
// confirm once that transaction is delivered.
#ifndef OUTBOX_LSN_H_
#define OUTBOX_LSN_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace outbox {

using Lsn = uint64_t;

inline constexpr Lsn kInvalidLsn = 0;

// Formats as PostgreSQL does: upper and lower 32 bits in uppercase hex.
std::string FormatLsn(Lsn lsn);

// Parses "X/Y" (hex, either case). InvalidArgument on anything else.
absl::StatusOr<Lsn> ParseLsn(absl::string_view text);

}  // namespace outbox

#endif  // OUTBOX_LSN_H_
