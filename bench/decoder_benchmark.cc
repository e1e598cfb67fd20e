// Decoder hot path: ns per wal2json record, as the relay sees them.
//
// The records are real wal2json output (tests/testdata/wal2json/all.jsonl,
// lines 1-3): an outbox INSERT whose jsonb payload is 413 bytes, and its
// transaction's B and C. Run a Release build:
//   decoder_benchmark --benchmark_counters_tabular=true
#include <string>

#include "benchmark/benchmark.h"
#include "decode/wal2json_decoder.h"
#include "decode/wal2json_text.h"

namespace outbox {
namespace {

constexpr char kBegin[] =
    R"json({"action":"B","xid":729,"timestamp":"2026-11-22 05:09:03.042662+00","lsn":"0/154B570","nextlsn":"0/154B5A0"})json";
constexpr char kInsert[] =
    R"json({"action":"I","xid":729,"timestamp":"2026-11-22 05:09:03.042662+00","lsn":"0/154B1A8","schema":"public","table":"outbox","columns":[{"name":"id","type":"uuid","value":"6f1c7c1e-4a55-4b8e-9d64-1d2f3c4b5a69"},{"name":"aggregatetype","type":"text","value":"order"},{"name":"aggregateid","type":"text","value":"order-1001"},{"name":"type","type":"text","value":"OrderCreated"},{"name":"payload","type":"jsonb","value":"{\"meta\": null, \"note\": \"leave at door \\\"back\\\" \\\\ side\\nthanks\", \"tags\": [\"new\", \"priority\"], \"emoji\": \"😀\", \"flags\": {\"gift\": false, \"express\": true}, \"lines\": [{\"qty\": 2, \"sku\": \"SKU-1\", \"price\": 19.99}, {\"qty\": 1, \"sku\": \"SKU-2\", \"price\": 5.00}], \"total\": 44.98, \"escaped\": \"é\\t\", \"orderId\": \"order-1001\", \"currency\": \"EUR\", \"customer\": {\"id\": \"cust-42\", \"name\": \"Zoë O'Brien\", \"email\": \"zoe@example.com\"}}"},{"name":"created_at","type":"timestamp with time zone","value":"2026-11-22 05:09:03.042479+00"},{"name":"seq","type":"bigint","value":1},{"name":"sent_at","type":"timestamp with time zone","value":null},{"name":"attempts","type":"integer","value":0},{"name":"next_attempt_at","type":"timestamp with time zone","value":null},{"name":"last_error","type":"text","value":null},{"name":"dead_lettered_at","type":"timestamp with time zone","value":null}]})json";
constexpr char kCommit[] =
    R"json({"action":"C","xid":729,"timestamp":"2026-11-22 05:09:03.042662+00","lsn":"0/154B570","nextlsn":"0/154B5A0"})json";

void DecodeLoop(benchmark::State& state, const std::string& record) {
  Wal2JsonDecoder decoder;
  Change change;
  for (auto _ : state) {
    absl::Status st = decoder.Decode(record, &change);
    if (!st.ok()) {
      state.SkipWithError(std::string(st.message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(change.columns.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * record.size());
  state.counters["record_bytes"] = static_cast<double>(record.size());
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
  for (auto _ : state) {
    for (const std::string& record : records) {
      absl::Status st = decoder.Decode(record, &change);
      if (!st.ok()) state.SkipWithError("decode failed");
      benchmark::DoNotOptimize(change.end_lsn);
    }
  }
  state.SetItemsProcessed(state.iterations());
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

}  // namespace
}  // namespace outbox

BENCHMARK_MAIN();
