// libFuzzer target for the tableless outbox's content (built with
// -DOUTBOX_FUZZ=ON, clang): any session may write a logical message under
// the prefix, so its content is untrusted bytes.
//
//   message_router_fuzz -max_total_time=60 CORPUS_DIR
//
// Checks, besides no crash and no sanitizer report: Route() is OK or
// InvalidArgument; on OK every view of the record is readable (ASan
// catches a dangling one), the "id" header comes first and equals the
// event id, and a null header has no bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "route/message_router.h"

namespace {

size_t Touch(absl::string_view s) {
  size_t sum = 0;
  for (char c : s) sum += static_cast<unsigned char>(c);
  return sum;
}

void Check(bool ok) {
  if (!ok) abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static outbox::MessageRouter* router =
      outbox::MessageRouter::Create(outbox::OutboxConfig{})->release();
  outbox::Change message;
  message.kind = outbox::Change::Kind::kMessage;
  message.transactional = true;
  message.prefix = "outbox";
  message.content =
      absl::string_view(reinterpret_cast<const char*>(data), size);
  outbox::Record record;
  absl::Status s = router->Route(message, &record);
  if (!s.ok()) {
    Check(absl::IsInvalidArgument(s));
    Touch(record.event_id);
    return 0;
  }
  volatile size_t sum = Touch(record.topic) + Touch(record.key) +
                        Touch(record.value) + Touch(record.event_id);
  (void)sum;
  Check(!record.headers.empty() && record.headers[0].name == "id" &&
        record.headers[0].value == record.event_id);
  for (const outbox::Header& h : record.headers) {
    Touch(h.name);
    Touch(h.value);
    Check(!h.is_null || h.value.empty());
  }
  return 0;
}
