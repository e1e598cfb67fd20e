// `outbox-relay from-debezium FILE`: prints the outbox-relay configuration
// that gives the records of a Debezium PostgreSQL connector with the Outbox
// Event Router (config/debezium_connector.h), on stdout, and each note on
// stderr ("note: ..."). FILE is the connector's .properties or Connect REST
// .json; "-" reads standard input.
//
// Before printing, the YAML is loaded as the relay would load it, so what
// it prints is a configuration the relay accepts.
// Returns the exit code: 0; kExitUsage (2) with one line on stderr for an
// unreadable file or a connector it cannot translate (naming every key that
// has no counterpart); kExitInternal (1) if its own YAML did not load.
#ifndef OUTBOX_CLI_FROM_DEBEZIUM_COMMAND_H_
#define OUTBOX_CLI_FROM_DEBEZIUM_COMMAND_H_

#include <cstdio>
#include <string>

namespace outbox {

int RunFromDebeziumCommand(const std::string& path,
                           const std::string& debezium_version, FILE* out,
                           FILE* err);

}  // namespace outbox

#endif  // OUTBOX_CLI_FROM_DEBEZIUM_COMMAND_H_
