// Single-value mappings from a Debezium connector configuration to the
// outbox-relay YAML: quoting, a table name, a topic template, which keys do
// not change a record, and which Debezium versions write the runId header.
// The building blocks of TranslateDebeziumConnector (debezium_connector.cc).
//
// Pure functions; thread safe.
#ifndef OUTBOX_CONFIG_DEBEZIUM_MAPPING_H_
#define OUTBOX_CONFIG_DEBEZIUM_MAPPING_H_

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace outbox {
namespace debezium {

// A YAML double-quoted scalar: a JSON string is one (newlines and control
// characters escaped, which YAML reads back as the same bytes).
std::string Quote(absl::string_view s);

// A libpq conninfo value.
std::string ConninfoValue(absl::string_view s);

// A Debezium table.include.list entry that names one table
// ("schema\.table" or "schema.table"), or nullopt when it is a pattern.
std::optional<std::string> PlainTableName(absl::string_view entry);

// A topic template for route.topic.replacement under the default regex:
// ${routedByValue} becomes {column}; braces double; nullopt when the
// replacement refers to anything else.
std::optional<std::string> TopicTemplate(absl::string_view replacement,
                                         absl::string_view column);

// Keys that do not change an outbox record, each with why.
const std::map<std::string, std::string>& IgnoredKeys();

// Whether Debezium `version` ("3.2.3.Final", "3.7") writes the runId
// header; InvalidArgument when it is not MAJOR.MINOR[.anything].
absl::StatusOr<bool> WritesRunId(absl::string_view version);

}  // namespace debezium
}  // namespace outbox

#endif  // OUTBOX_CONFIG_DEBEZIUM_MAPPING_H_
