// ReplicationStream: the logical replication connection to PostgreSQL.
//
// Implemented by LibpqReplicationStream (src/pg); tests use fakes. Owned and
// called by one thread (the relay's poll loop). Read() never blocks: when it
// reports nothing, wait on socket() becoming readable, or on a timer.
//
// Invariant kept by callers, not here: SendStatus() is never given a flush
// position past an event whose Kafka delivery has not succeeded.
#ifndef OUTBOX_REPLICATION_STREAM_H_
#define OUTBOX_REPLICATION_STREAM_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "outbox/lsn.h"

namespace outbox {

// One CopyData message from the walsender.
struct StreamMessage {
  enum class Type : uint8_t { kXLogData, kKeepalive };
  Type type = Type::kKeepalive;
  Lsn data_start = kInvalidLsn;  // kXLogData: LSN of the record
  Lsn wal_end = kInvalidLsn;     // server's current end of WAL
  int64_t send_time_us = 0;      // server clock, Unix microseconds
  bool reply_requested = false;  // kKeepalive: answer at once
  absl::string_view payload;     // kXLogData: the plugin's output; valid
                                 // until the next Read()
};

class ReplicationStream {
 public:
  virtual ~ReplicationStream() = default;

  // Starts streaming from the slot. PostgreSQL resumes at
  // max(start, confirmed_flush_lsn); pass kInvalidLsn to mean "where the
  // slot is".
  virtual absl::Status Start(Lsn start) = 0;

  // Reads one message if one is buffered or arrives without blocking.
  // Returns true and fills *out, false when nothing is ready. Unavailable
  // when the connection dropped or the server ended the stream.
  virtual absl::StatusOr<bool> Read(StreamMessage* out) = 0;

  // Sends a standby status update: written/flushed/applied positions.
  virtual absl::Status SendStatus(Lsn received, Lsn flushed,
                                  bool reply_requested) = 0;

  // File descriptor to poll for readability; -1 when not connected.
  virtual int socket() const = 0;

  // Ends the stream cleanly (CopyDone) and closes the connection.
  virtual absl::Status Stop() = 0;
};

}  // namespace outbox

#endif  // OUTBOX_REPLICATION_STREAM_H_
