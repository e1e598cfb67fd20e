// ParseConnectorProperties: a Kafka Connect connector configuration, read
// into its key/value pairs. Input is either a properties file (key=value or
// key: value lines, '#' and '!' comments) or the connector's JSON as the
// Kafka Connect REST API takes it ({"name": ..., "config": {...}} or the
// config object alone), told apart by a leading '{'. Used by
// TranslateDebeziumConnector (debezium_connector.h).
//
// Pure function; thread safe.
#ifndef OUTBOX_CONFIG_CONNECTOR_PROPERTIES_H_
#define OUTBOX_CONFIG_CONNECTOR_PROPERTIES_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace outbox {

using ConnectorProperties = std::map<std::string, std::string>;

// InvalidArgument when the text is neither well-formed properties nor JSON
// of the shape above.
absl::StatusOr<ConnectorProperties> ParseConnectorProperties(
    absl::string_view text);

}  // namespace outbox

#endif  // OUTBOX_CONFIG_CONNECTOR_PROPERTIES_H_
