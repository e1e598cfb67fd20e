// record_value: the value-side codecs of the Router's Debezium Outbox Event
// Router options (route/router.h): envelopes, compacted JSON payloads, blank
// payloads, and column timestamps. Pure functions over a row's Columns;
// thread safe.
#ifndef OUTBOX_ROUTE_RECORD_VALUE_H_
#define OUTBOX_ROUTE_RECORD_VALUE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "outbox/change.h"

namespace outbox {

// True when a payload is empty or blank as Java's String.trim() sees it:
// every byte at most 0x20. (Debezium's route.tombstone.on.empty.payload.)
bool IsBlankPayload(absl::string_view payload);

// Writes `json` without the whitespace outside its strings
// (outbox.expand_json_payload; Debezium's table.expand.json.payload goes
// through a Connect Struct and also rewrites numbers and drops nulls). Only
// text that starts with '{' or '[' and whose strings and brackets close is
// compacted; false (and *out untouched) otherwise: publish it as is.
bool CompactJson(absl::string_view json, std::string* out);

// One envelope field: its name and the column (nullptr: SQL NULL).
using EnvelopeField = std::pair<absl::string_view, const Column*>;

// The envelope of outbox.fields' envelope placements, as a JSON object:
// {"payload":<payload>,"<name>":<value>,...}. json/jsonb values are
// embedded as JSON, numbers and booleans bare, NULL as null, bytea as a
// base64 string (JsonConverter's form), everything else as a JSON string.
void AppendJsonEnvelope(const std::vector<EnvelopeField>& fields,
                        std::string* out);

// The same envelope as Debezium's StringConverter writes it (Kafka
// Connect's Struct.toString()): Struct{payload=...,name=value} with each
// value's text and NULL fields left out.
void AppendStructEnvelope(const std::vector<EnvelopeField>& fields,
                          std::string* out);

// A timestamp column's value as Unix milliseconds, truncated toward zero:
// timestamptz text, timestamp text (taken as UTC, as Debezium does), or an
// integer (Unix milliseconds). InvalidArgument for anything else.
absl::StatusOr<int64_t> ColumnTimestampMs(const Column& column);

// An integer column's value, for the partition and the schema version.
// InvalidArgument unless it is an integer in [min, 2^31 - 1].
absl::StatusOr<int32_t> ColumnInt32(const Column& column, int32_t min);

}  // namespace outbox

#endif  // OUTBOX_ROUTE_RECORD_VALUE_H_
