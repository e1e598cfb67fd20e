// Decoder hot path: ns per wal2json record and per pgoutput message, as the
// relay sees them.
//
// The records are real wal2json output (tests/testdata/wal2json/all.jsonl,
// lines 1-3): an outbox INSERT whose jsonb payload is 413 bytes, and its
// transaction's B and C; the BM_PgOutput cases decode the same row as
// pgoutput sends it. Run a Release build:
//   decoder_benchmark --benchmark_counters_tabular=true
#include <string>

#include "benchmark/benchmark.h"
#include "plugin/pgoutput/pgoutput_decoder.h"
#include "plugin/wal2json/wal2json_decoder.h"
#include "plugin/wal2json/wal2json_text.h"

namespace outbox {
namespace {

constexpr char kBegin[] =
    R"json({"action":"B","xid":729,"timestamp":"2026-11-22 05:09:03.042662+00","lsn":"0/154B570","nextlsn":"0/154B5A0"})json";
constexpr char kInsert[] =
    R"json({"action":"I","xid":729,"timestamp":"2026-11-22 05:09:03.042662+00","lsn":"0/154B1A8","schema":"public","table":"outbox","columns":[{"name":"id","type":"uuid","value":"6f1c7c1e-4a55-4b8e-9d64-1d2f3c4b5a69"},{"name":"aggregatetype","type":"text","value":"order"},{"name":"aggregateid","type":"text","value":"order-1001"},{"name":"type","type":"text","value":"OrderCreated"},{"name":"payload","type":"jsonb","value":"{\"meta\": null, \"note\": \"leave at door \\\"back\\\" \\\\ side\\nthanks\", \"tags\": [\"new\", \"priority\"], \"emoji\": \"😀\", \"flags\": {\"gift\": false, \"express\": true}, \"lines\": [{\"qty\": 2, \"sku\": \"SKU-1\", \"price\": 19.99}, {\"qty\": 1, \"sku\": \"SKU-2\", \"price\": 5.00}], \"total\": 44.98, \"escaped\": \"é\\t\", \"orderId\": \"order-1001\", \"currency\": \"EUR\", \"customer\": {\"id\": \"cust-42\", \"name\": \"Zoë O'Brien\", \"email\": \"zoe@example.com\"}}"},{"name":"created_at","type":"timestamp with time zone","value":"2026-11-22 05:09:03.042479+00"},{"name":"seq","type":"bigint","value":1},{"name":"sent_at","type":"timestamp with time zone","value":null},{"name":"attempts","type":"integer","value":0},{"name":"next_attempt_at","type":"timestamp with time zone","value":null},{"name":"last_error","type":"text","value":null},{"name":"dead_lettered_at","type":"timestamp with time zone","value":null}]})json";
constexpr char kCommit[] =
    R"json({"action":"C","xid":729,"timestamp":"2026-11-22 05:09:03.042662+00","lsn":"0/154B570","nextlsn":"0/154B5A0"})json";

// Decodes `input` once per iteration with `decoder` into `change`: items
// and bytes per second, and the input's size as a counter.
template <typename Decoder>
void DecodeEach(benchmark::State& state, Decoder& decoder,
                const std::string& input, Change* change) {
  for (auto _ : state) {
    absl::Status st = decoder.Decode(input, change);
    if (!st.ok()) {
      state.SkipWithError(std::string(st.message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(change->columns.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * input.size());
  state.counters["record_bytes"] = static_cast<double>(input.size());
}

// Decodes the three inputs (B, I, C) in turn each iteration: one
// single-event transaction per item.
template <typename Decoder>
void DecodeTransaction(benchmark::State& state, Decoder& decoder,
                       const std::string (&inputs)[3], Change* change) {
  for (auto _ : state) {
    for (const std::string& input : inputs) {
      absl::Status st = decoder.Decode(input, change);
      if (!st.ok()) state.SkipWithError("decode failed");
      benchmark::DoNotOptimize(change->end_lsn);
    }
  }
  state.SetItemsProcessed(state.iterations());
}

void DecodeLoop(benchmark::State& state, const std::string& record) {
  Wal2JsonDecoder decoder;
  Change change;
  DecodeEach(state, decoder, record, &change);
}

void BM_DecodeInsert(benchmark::State& state) { DecodeLoop(state, kInsert); }
BENCHMARK(BM_DecodeInsert);

void BM_DecodeBegin(benchmark::State& state) { DecodeLoop(state, kBegin); }
BENCHMARK(BM_DecodeBegin);

void BM_DecodeCommit(benchmark::State& state) { DecodeLoop(state, kCommit); }
BENCHMARK(BM_DecodeCommit);

// B + I + C: one single-event transaction, three Decode() calls.
void BM_DecodeTransaction(benchmark::State& state) {
  const std::string records[] = {kBegin, kInsert, kCommit};
  Wal2JsonDecoder decoder;
  Change change;
  DecodeTransaction(state, decoder, records, &change);
}
BENCHMARK(BM_DecodeTransaction);

void BM_ParseTimestamp(benchmark::State& state) {
  for (auto _ : state) {
    int64_t us = 0;
    benchmark::DoNotOptimize(
        wal2json::ParseTimestamptz("2026-11-22 05:09:03.042662+00", &us));
    benchmark::DoNotOptimize(us);
  }
}
BENCHMARK(BM_ParseTimestamp);

// ---------------------------------------------------------------------------
// pgoutput: the same outbox row (another run of the same capture_setup.sql),
// as PostgreSQL 15's pgoutput sends it: tests/testdata/pgoutput/
// outbox_inserts.txt, lines 1-4 (Begin, Relation, Insert, Commit), in hex.

constexpr char kPgBegin[] = "4200000000015477e8000303ebff0581ed000002e1";
constexpr char kPgRelation[] =
    "52000040017075626c6963006f7574626f780064000c0169640000000b86ffff"
    "ffff00616767726567617465747970650000000019ffffffff00616767726567"
    "61746569640000000019ffffffff00747970650000000019ffffffff00706179"
    "6c6f61640000000edaffffffff00637265617465645f617400000004a0ffffff"
    "ff007365710000000014ffffffff0073656e745f617400000004a0ffffffff00"
    "617474656d7074730000000017ffffffff006e6578745f617474656d70745f61"
    "7400000004a0ffffffff006c6173745f6572726f720000000019ffffffff0064"
    "6561645f6c657474657265645f617400000004a0ffffffff";
constexpr char kPgInsert[] =
    "49000040014e000c740000002436663163376331652d346135352d346238652d"
    "396436342d31643266336334623561363974000000056f72646572740000000a"
    "6f726465722d31303031740000000c4f7264657243726561746564740000019d"
    "7b226d657461223a206e756c6c2c20226e6f7465223a20226c65617665206174"
    "20646f6f72205c226261636b5c22205c5c20736964655c6e7468616e6b73222c"
    "202274616773223a205b226e6577222c20227072696f72697479225d2c202265"
    "6d6f6a69223a2022f09f9880222c2022666c616773223a207b2267696674223a"
    "2066616c73652c202265787072657373223a20747275657d2c20226c696e6573"
    "223a205b7b22717479223a20322c2022736b75223a2022534b552d31222c2022"
    "7072696365223a2031392e39397d2c207b22717479223a20312c2022736b7522"
    "3a2022534b552d32222c20227072696365223a20352e30307d5d2c2022746f74"
    "616c223a2034342e39382c202265736361706564223a2022c3a95c74222c2022"
    "6f726465724964223a20226f726465722d31303031222c202263757272656e63"
    "79223a2022455552222c2022637573746f6d6572223a207b226964223a202263"
    "7573742d3432222c20226e616d65223a20225a6fc3ab204f27427269656e222c"
    "2022656d61696c223a20227a6f65406578616d706c652e636f6d227d7d740000"
    "001c323032362d31312d32332030383a31373a34302e38383035352b30307400"
    "000001316e7400000001306e6e6e";
constexpr char kPgCommit[] =
    "430000000000015477e80000000001547818000303ebff0581ed";

std::string FromHex(absl::string_view hex) {
  std::string bytes(hex.size() / 2, '\0');
  if (!wal2json::DecodeHex(hex, bytes.data())) bytes.clear();
  return bytes;
}

// The Relation message comes once per session, before the loop: false, the
// benchmark skipped, when it does not decode.
bool DecodeRelation(benchmark::State& state, PgOutputDecoder& decoder,
                    Change* change) {
  if (decoder.Decode(FromHex(kPgRelation), change).ok()) return true;
  state.SkipWithError("relation");
  return false;
}

void PgOutputLoop(benchmark::State& state, const std::string& message) {
  PgOutputDecoder decoder;
  Change change;
  if (DecodeRelation(state, decoder, &change)) {
    DecodeEach(state, decoder, message, &change);
  }
}

void BM_PgOutputDecodeInsert(benchmark::State& state) {
  PgOutputLoop(state, FromHex(kPgInsert));
}
BENCHMARK(BM_PgOutputDecodeInsert);

void BM_PgOutputDecodeBegin(benchmark::State& state) {
  PgOutputLoop(state, FromHex(kPgBegin));
}
BENCHMARK(BM_PgOutputDecodeBegin);

void BM_PgOutputDecodeCommit(benchmark::State& state) {
  PgOutputLoop(state, FromHex(kPgCommit));
}
BENCHMARK(BM_PgOutputDecodeCommit);

// B + I + C: one single-event transaction, three Decode() calls.
void BM_PgOutputDecodeTransaction(benchmark::State& state) {
  const std::string messages[] = {FromHex(kPgBegin), FromHex(kPgInsert),
                                  FromHex(kPgCommit)};
  PgOutputDecoder decoder;
  Change change;
  if (DecodeRelation(state, decoder, &change)) {
    DecodeTransaction(state, decoder, messages, &change);
  }
}
BENCHMARK(BM_PgOutputDecodeTransaction);

}  // namespace
}  // namespace outbox

BENCHMARK_MAIN();
