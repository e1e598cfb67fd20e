#include "route/message_router.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "outbox/status_macros.h"

namespace outbox {

absl::StatusOr<std::unique_ptr<MessageRouter>> MessageRouter::Create(
    const OutboxConfig& outbox) {
  const std::string& prefix = outbox.messages.prefix;
  if (prefix.empty()) {
    return absl::InvalidArgumentError("outbox.messages.prefix is empty");
  }
  OutboxConfig mapping = outbox;
  OutboxTable table;
  table.schema = kSchema;
  table.name = prefix;
  table.columns = OutboxColumns{};  // the content format's field names
  table.topic = outbox.messages.topic;
  table.key = table.columns.aggregateid;
  table.headers = {};  // the content carries its own
  mapping.tables = {table};
  absl::StatusOr<std::unique_ptr<Router>> router = Router::Create(mapping);
  if (!router.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("outbox.messages.topic: ", router.status().message()));
  }
  return std::unique_ptr<MessageRouter>(
      new MessageRouter(prefix, std::move(*router)));
}

absl::Status MessageRouter::Route(const Change& message, Record* out) {
  row_.kind = Change::Kind::kInsert;
  row_.xid = message.xid;
  row_.lsn = message.lsn;
  row_.commit_time_us = message.commit_time_us;
  row_.schema = kSchema;
  row_.table = prefix_;
  out->event_id = {};
  if (absl::Status s = parser_.Parse(message.content, &row_, &headers_);
      !s.ok()) {
    const Column* id = row_.Find("id");
    if (id != nullptr &&
        (id->kind == ValueKind::kText || id->kind == ValueKind::kNumber)) {
      out->event_id = id->value;
    }
    return s;
  }
  RETURN_IF_ERROR(router_->Route(row_, out));
  const size_t base = out->headers.size();
  out->headers.resize(base + headers_.size());
  for (size_t i = 0; i < headers_.size(); ++i) {
    Header& h = out->headers[base + i];
    h.name.assign(headers_[i].name);
    h.value = headers_[i].value;
    h.is_null = headers_[i].is_null;
  }
  return absl::OkStatus();
}

}  // namespace outbox
