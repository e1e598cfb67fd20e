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

  // What a dead letter of `data`, the record the last Decode() read, carries:
  // the record as the plugin sends it in text, so a dead letter reads the
  // same whatever the transfer mode (pgoutput_binary). Valid until the next
  // call of either. Default: `data` as is.
  virtual absl::string_view DeadLetterForm(absl::string_view data) {
    return data;
  }
};

}  // namespace outbox

#endif  // OUTBOX_DECODER_H_
