// Byte codecs for the streaming replication sub-protocol carried in CopyData
// messages (PostgreSQL 15, "Streaming Replication Protocol" in the docs):
//
//   'w' XLogData   server -> client: dataStart, walEnd, sendTime, payload
//   'k' Keepalive  server -> client: walEnd, sendTime, replyRequested
//   'r' Standby status update, client -> server: write, flush, apply,
//                  clientTime, replyRequested
//
// Integers are big-endian; PostgreSQL timestamps count microseconds since
// 2000-01-01 00:00 UTC, while StreamMessage::send_time_us counts Unix
// microseconds. Pure functions with no state and no allocation except the
// string EncodeStandbyStatus() returns: safe to call from any thread.
#ifndef OUTBOX_PG_WAL_PROTOCOL_H_
#define OUTBOX_PG_WAL_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "outbox/lsn.h"
#include "outbox/replication_stream.h"

namespace outbox {

// 'w' + dataStart + walEnd + sendTime; the payload follows.
inline constexpr size_t kXLogDataHeaderSize = 1 + 8 + 8 + 8;
// 'k' + walEnd + sendTime + replyRequested.
inline constexpr size_t kKeepaliveSize = 1 + 8 + 8 + 1;
// 'r' + write + flush + apply + clientTime + replyRequested.
inline constexpr size_t kStandbyStatusSize = 1 + 8 + 8 + 8 + 8 + 1;

// Microseconds from the Unix epoch to PostgreSQL's (2000-01-01 UTC).
inline constexpr int64_t kPgEpochOffsetMicros = int64_t{946684800} * 1000000;

// Decodes one CopyData message from the walsender. For XLogData, payload
// is a view into `bytes`: it lives as long as the caller's buffer. Trailing
// bytes after a keepalive are ignored, as pg_recvlogical does.
// DataLoss for an empty or short message or an unknown type byte: the
// stream itself is unreadable, which no row-level policy can fix (the
// supervisor exits kExitStream), and the message says "malformed
// replication message".
absl::StatusOr<StreamMessage> ParseCopyData(absl::string_view bytes);

// The 'r' message, kStandbyStatusSize bytes, ready for PQputCopyData.
// Positions mean "last byte + 1"; now_unix_us is converted to the PostgreSQL
// epoch. reply_requested asks the server to answer with a keepalive.
std::string EncodeStandbyStatus(Lsn write, Lsn flush, Lsn apply,
                                int64_t now_unix_us, bool reply_requested);

// Epoch conversions. The int64 limits are PostgreSQL's -infinity/infinity:
// they map to themselves, and results saturate there instead of overflowing.
int64_t PgEpochToUnixMicros(int64_t pg_us);
int64_t UnixMicrosToPgEpoch(int64_t unix_us);

}  // namespace outbox

#endif  // OUTBOX_PG_WAL_PROTOCOL_H_
