// libFuzzer target for Wal2JsonDecoder (built with -DOUTBOX_FUZZ=ON, clang).
//
//   mkdir corpus && split -l 1 tests/testdata/wal2json/all.jsonl corpus/
//   wal2json_decoder_fuzz -max_total_time=60 \
//       -dict=tests/testdata/wal2json/fuzz.dict corpus
//
// Checks, besides no crash and no sanitizer report: the result is OK or
// InvalidArgument; on OK every view is readable (ASan catches a dangling
// one), null columns are empty, and each text column and string field
// equals what simdjson's DOM parser makes of the same input (a differential
// test of the decoder's own unescaping).
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "plugin/wal2json/wal2json_decoder.h"
#include "plugin/wal2json/wal2json_text.h"

namespace {

size_t Touch(absl::string_view s) {
  size_t sum = 0;
  for (char c : s) sum += static_cast<unsigned char>(c);
  return sum;
}

void Check(bool ok) {
  if (!ok) abort();
}

// The one field called `key` (after unescaping), or nullptr when there is
// none or several. The decoder matches keys unescaped, simdjson escaped:
// "t\u0061ble" is "table" to one and not the other, so only a key that
// occurs once is compared.
const simdjson::dom::element* Unique(simdjson::dom::object object,
                                     std::string_view key,
                                     simdjson::dom::element* out) {
  int n = 0;
  for (simdjson::dom::key_value_pair field : object) {
    if (field.key == key) {
      *out = field.value;
      ++n;
    }
  }
  return n == 1 ? out : nullptr;
}

void Same(const simdjson::dom::element* dom, absl::string_view ours) {
  std::string_view s;
  if (dom == nullptr || dom->get(s) != simdjson::SUCCESS) return;
  if (ours.empty() && !s.empty()) return;  // key was spelled escaped
  Check(s.size() == ours.size() &&
        s.compare(0, s.size(), ours.data(), ours.size()) == 0);
}

// When simdjson's DOM accepts the record too, its strings must match ours.
void CompareWithDom(const uint8_t* data, size_t size,
                    const outbox::Change& change) {
  static auto* parser = new simdjson::dom::parser();
  simdjson::dom::object record;
  if (parser->parse(data, size).get(record)) return;
  simdjson::dom::element e;
  Same(Unique(record, "table", &e), change.table);
  Same(Unique(record, "content", &e), change.content);
  simdjson::dom::array columns;
  if (Unique(record, "columns", &e) == nullptr || e.get(columns) ||
      change.columns.empty()) {  // none, or its key spelled escaped
    return;
  }
  Check(change.columns.size() == columns.size());
  size_t i = 0;
  for (simdjson::dom::element element : columns) {
    const outbox::Column& col = change.columns[i++];
    simdjson::dom::object object;
    Check(element.get(object) == simdjson::SUCCESS);
    Same(Unique(object, "name", &e), col.name);
    Same(Unique(object, "type", &e), col.type);
    if (col.kind == outbox::ValueKind::kText) {
      Same(Unique(object, "value", &e), col.value);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // One decoder for the whole run, as in the relay: state carries over.
  static auto* decoder = new outbox::Wal2JsonDecoder();
  static auto* change = new outbox::Change();
  absl::string_view input(reinterpret_cast<const char*>(data), size);

  absl::Status st = decoder->Decode(input, change);
  if (st.ok()) {
    size_t sum = Touch(change->schema) + Touch(change->table) +
                 Touch(change->prefix) + Touch(change->content);
    for (const outbox::Column& col : change->columns) {
      sum += Touch(col.name) + Touch(col.type) + Touch(col.value);
      Check(col.kind != outbox::ValueKind::kNull || col.value.empty());
    }
    volatile size_t sink = sum;
    (void)sink;
    CompareWithDom(data, size, *change);
  } else {
    Check(absl::IsInvalidArgument(st));  // the contract for bad input
  }
  int64_t us;
  (void)outbox::wal2json::ParseTimestamptz(input, &us);
  return 0;
}
