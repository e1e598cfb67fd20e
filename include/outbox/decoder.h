// Decoder: turns one logical-decoding output record into a Change.
//
// One per output plugin (plugin/output_plugin.h: wal2json, pgoutput). Not
// thread safe; one per stream. Errors: InvalidArgument (malformed or unknown
// record) carries the record's LSN when the caller knows it; nothing is
// skipped.
#ifndef OUTBOX_DECODER_H_
#define OUTBOX_DECODER_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "outbox/change.h"

namespace outbox {

class Decoder {
 public:
  virtual ~Decoder() = default;

  // Decodes `data` into *out. The Change's views stay valid until the next
  // call. On failure *out is unspecified. A record that carries no LSN of
  // its own (pgoutput's changes) leaves Change::lsn kInvalidLsn: the caller
  // knows it (the XLogData start).
  virtual absl::Status Decode(absl::string_view data, Change* out) = 0;
};

}  // namespace outbox

#endif  // OUTBOX_DECODER_H_
