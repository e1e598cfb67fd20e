// MessageRouter: the tableless outbox. A transactional logical decoding
// message whose prefix is outbox.messages.prefix -> the Record it stands
// for.
//
// The content (route/outbox_message.h; written by sql/outbox_emit.sql's
// outbox_emit()) becomes a row with the outbox table's columns, which a
// Router built over one pseudo-table, "message.<prefix>", maps as it maps
// a table row: topic outbox.messages.topic rendered with the content's
// fields, key aggregateid, value payload, header "id", then the content's
// "headers" in their order. So a message and a table row with the same
// fields give the same record, and every Router rule (and error) holds for
// both.
//
// Errors: InvalidArgument for content that is not an event (see
// outbox_message.h) or a row the Router refuses; out->event_id names the
// event when the content has an id. The caller applies the poison policy.
//
// Lifetime: the Record's views point into this object and the message's
// Change; valid until the next Route(). Not thread safe: one per relay
// session (it keeps parse buffers).
#ifndef OUTBOX_ROUTE_MESSAGE_ROUTER_H_
#define OUTBOX_ROUTE_MESSAGE_ROUTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/config.h"
#include "outbox/change.h"
#include "outbox/record.h"
#include "route/outbox_message.h"
#include "route/router.h"

namespace outbox {

class MessageRouter {
 public:
  // The schema name of the pseudo-table, as routing errors show it.
  static constexpr char kSchema[] = "message";

  // From outbox.messages (enabled or not) and the poison settings of
  // `outbox`. InvalidArgument for a bad topic template or prefix.
  static absl::StatusOr<std::unique_ptr<MessageRouter>> Create(
      const OutboxConfig& outbox);

  const std::string& prefix() const { return prefix_; }

  // `message` is a kMessage Change; its prefix is not checked.
  absl::Status Route(const Change& message, Record* out);

 private:
  MessageRouter(std::string prefix, std::unique_ptr<Router> router)
      : prefix_(std::move(prefix)), router_(std::move(router)) {}

  std::string prefix_;
  std::unique_ptr<Router> router_;
  OutboxMessageParser parser_;
  Change row_;
  std::vector<Header> headers_;
};

}  // namespace outbox

#endif  // OUTBOX_ROUTE_MESSAGE_ROUTER_H_
