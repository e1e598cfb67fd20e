// libFuzzer target for PgOutputDecoder (built with -DOUTBOX_FUZZ=ON, clang).
//
//   tests/testdata/pgoutput/make_fuzz_corpus.py corpus
//   pgoutput_decoder_fuzz -max_total_time=60 corpus
//
// An input is a sequence of messages, each a 2-byte big-endian length and
// that many bytes (a short last one is fed as it is), given to one fresh
// decoder in order, so that Relation and Type messages fill the cache the
// changes after them use (the seed corpus starts each input with them).
//
// Checks, besides no crash and no sanitizer report: every result is OK or
// InvalidArgument, an error leaves the decoder usable for the next message,
// and on OK every view is readable (ASan catches a dangling one) and every
// value fits its kind: kNull empty, kBool "true"/"false", kNumber a JSON
// number.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "plugin/pgoutput/pgoutput_decoder.h"
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

void CheckChange(const outbox::Change& c) {
  size_t sum =
      Touch(c.schema) + Touch(c.table) + Touch(c.prefix) + Touch(c.content);
  for (const outbox::Column& col : c.columns) {
    sum += Touch(col.name) + Touch(col.type) + Touch(col.value);
    switch (col.kind) {
      case outbox::ValueKind::kNull:
        Check(col.value.empty());
        break;
      case outbox::ValueKind::kBool:
        Check(col.value == "true" || col.value == "false");
        break;
      case outbox::ValueKind::kNumber:
        Check(outbox::wal2json::IsJsonNumber(col.value));
        break;
      case outbox::ValueKind::kText:
      case outbox::ValueKind::kBytes:
        break;
    }
  }
  Check(c.kind == outbox::Change::Kind::kInsert ||
        c.kind == outbox::Change::Kind::kUpdate || c.columns.empty());
  volatile size_t sink = sum;
  (void)sink;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  outbox::PgOutputDecoder decoder;
  outbox::Change change;
  const char* p = reinterpret_cast<const char*>(data);
  const char* const end = p + size;
  outbox::Lsn wal_start = 1;
  while (p < end) {
    size_t n = end - p;
    if (n >= 2) {
      n = std::min<size_t>(
          (static_cast<uint8_t>(p[0]) << 8) | static_cast<uint8_t>(p[1]),
          n - 2);
      p += 2;
    }
    absl::Status st =
        decoder.Decode(absl::string_view(p, n), wal_start++, &change);
    p += n;
    if (st.ok()) {
      CheckChange(change);
    } else {
      Check(absl::IsInvalidArgument(st));  // the contract for bad input
    }
  }
  return 0;
}
