// TranslateDebeziumConnector: a Debezium PostgreSQL connector configuration
// with the Outbox Event Router transform, turned into the outbox-relay YAML
// that gives the same records (outbox.compatibility: debezium). Behind
// `outbox-relay from-debezium FILE`; docs/migration/debezium.md.
//
// Input: the connector's properties file (key=value lines, '#' and '!'
// comments) or its JSON as the Kafka Connect REST API takes it
// ({"name": ..., "config": {...}} or the config object alone).
//
// Every key is accounted for. A key that changes the records and has no
// counterpart (another transform, a decoderbufs plugin, a table list that is
// a regular expression, tracing, ...) is an error: InvalidArgument naming
// all of them in one line, so a migration never silently changes a record.
// A key that does not matter to the relay (tasks.max, converters that write
// the text as is, offset settings) or whose difference is only operational
// (a snapshot, Debezium's heartbeat topic, the password, which is never
// copied) becomes a note: a comment in the YAML and a line the command
// prints on stderr.
//
// Pure function; thread safe.
#ifndef OUTBOX_CONFIG_DEBEZIUM_CONNECTOR_H_
#define OUTBOX_CONFIG_DEBEZIUM_CONNECTOR_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace outbox {

struct DebeziumTranslation {
  std::string yaml;                // a complete outbox-relay configuration
  std::vector<std::string> notes;  // also in the YAML, as comments
};

absl::StatusOr<DebeziumTranslation> TranslateDebeziumConnector(
    absl::string_view text);

}  // namespace outbox

#endif  // OUTBOX_CONFIG_DEBEZIUM_CONNECTOR_H_
