// ValidateConfig: the checks a resolved Config must pass beyond each key's
// own type and range (config_keys.h): values that depend on other keys
// (a backoff maximum at least its initial value, a dead-letter topic when
// outbox.on_invalid is dead_letter, ...), formats (slot name, LSN, host:port)
// and the Kafka producer properties that would break delivery guarantees
// (kafka_safety.h). Called by LoadConfig() and ParseConfigYaml() (config.h)
// after the tables are resolved and secret files read.
//
// Also the error every config reading step reports a bad key with.
//
// Pure functions; thread safe.
#ifndef OUTBOX_CONFIG_CONFIG_VALIDATION_H_
#define OUTBOX_CONFIG_CONFIG_VALIDATION_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "config/config.h"

namespace outbox {

// OK, or InvalidArgument naming the first offending key.
absl::Status ValidateConfig(const Config& c);

// InvalidArgument `<source>: "<path>": <message>`, with " (line N)" when
// `line` (0-based) is given.
absl::Status ConfigKeyError(absl::string_view source, absl::string_view path,
                            absl::string_view message, int line = -1);

// ConfigKeyError for a value found wrong after reading (source "config").
absl::Status InvalidConfigValue(absl::string_view path,
                                absl::string_view message);

}  // namespace outbox

#endif  // OUTBOX_CONFIG_CONFIG_VALIDATION_H_
