// DeadLetter: the record an outbox event becomes when it cannot be
// delivered, for both relays (on_invalid: dead_letter).
//
//   topic   the dead-letter topic          key     the event id
//   value   the row (outbox-relay: the plugin's record in text, as
//           Decoder::DeadLetterForm gives it: wal2json's JSON, pgoutput's
//           Insert message with text values whatever the transfer mode;
//           outbox-poller and undeliverable records: the payload), cut to
//           its first kTruncatedValue bytes when over kMaxValue, so the dead
//           letter still fits under the broker's message size limit; header
//           "truncated" then gives the original size
//   headers id, error, then the caller's extras in order
//
// Owns copies of every header value; the value view passed to Build() must
// stay valid until the record is produced. Not thread safe.
#ifndef OUTBOX_ROUTE_DEAD_LETTER_H_
#define OUTBOX_ROUTE_DEAD_LETTER_H_

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "outbox/record.h"

namespace outbox {

class DeadLetter {
 public:
  static constexpr size_t kMaxValue = 512 * 1024;
  static constexpr size_t kTruncatedValue = 64 * 1024;

  using Extra = std::pair<absl::string_view, absl::string_view>;

  // Returns the record, valid until the next Build().
  const Record& Build(absl::string_view topic, absl::string_view event_id,
                      absl::string_view value, bool value_is_null,
                      absl::string_view error,
                      std::initializer_list<Extra> extra = {});

 private:
  Record record_;
  std::vector<std::string> texts_;  // backs the header and key views
};

}  // namespace outbox

#endif  // OUTBOX_ROUTE_DEAD_LETTER_H_
