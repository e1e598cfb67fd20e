// OutboxMessageParser: the content of a tableless-outbox logical message
// (pg_logical_emit_message under outbox.messages.prefix) -> the row it
// stands for.
//
// The content is one JSON object, as sql/outbox_emit.sql writes it:
//
//   {"id": "0b1c...", "aggregatetype": "order", "aggregateid": "42",
//    "type": "OrderCreated", "payload": {"total": 42},
//    "headers": {"trace": "abc"}}
//
// Every top-level field but "headers" becomes one Column named after it,
// with the kinds a decoder gives a table row: a string -> kText
// (unescaped), a number -> kNumber (its literal), true/false -> kBool,
// null -> kNull, an object or array -> kText holding its JSON text byte for
// byte. "payload" is the exception: any value but null is kText holding
// its JSON text as written (a string keeps its quotes and escapes), which
// is what a jsonb outbox column gives; null is kNull, a null record value.
// (From outbox_emit(), the payload is jsonb's text, so a message and a row
// with the same jsonb give the same bytes; jsonb 'null' is null here.)
// The Router then maps the row like an outbox table's (id, aggregatetype,
// aggregateid, type, payload). "headers", optional, is an object of header
// name -> string, number, boolean (their literal text) or null (a null
// header); it comes out in *headers, in content order.
//
// Errors: InvalidArgument naming the problem (content that is not a JSON
// object, invalid UTF-8, a duplicated field or header, "headers" that is
// not an object, a header value that is an object or array, a header named
// "id", which is the event id's). The id, when the content has a string or
// number "id", is still in the row then, so a poison message names its
// event.
//
// Lifetime: the row's and headers' views point into this parser and stay
// valid until its next Parse(). Not thread safe; one per relay session.
#ifndef OUTBOX_ROUTE_OUTBOX_MESSAGE_H_
#define OUTBOX_ROUTE_OUTBOX_MESSAGE_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "outbox/change.h"
#include "outbox/record.h"

namespace outbox {

class OutboxMessageParser {
 public:
  OutboxMessageParser();
  ~OutboxMessageParser();
  OutboxMessageParser(const OutboxMessageParser&) = delete;
  OutboxMessageParser& operator=(const OutboxMessageParser&) = delete;

  // Clears row->columns and *headers, then fills them from `content`.
  // Nothing else of *row is touched.
  absl::Status Parse(absl::string_view content, Change* row,
                     std::vector<Header>* headers);

 private:
  struct State;  // simdjson parser and buffers
  std::unique_ptr<State> state_;
};

}  // namespace outbox

#endif  // OUTBOX_ROUTE_OUTBOX_MESSAGE_H_
