// Masking of secrets in configuration values, for logs.
//
// Config::Redacted() uses these; they are separate so they can be tested and
// reused (e.g. when logging a conninfo on a connection error).
#ifndef OUTBOX_CONFIG_REDACT_H_
#define OUTBOX_CONFIG_REDACT_H_

#include <string>

#include "absl/strings/string_view.h"

namespace outbox {

// Returns `conninfo` (keyword=value form or postgres:// URI) with every
// password and sslpassword replaced by "****".
std::string RedactConninfo(absl::string_view conninfo);

// True for librdkafka property names that hold secrets (sasl.password,
// ssl.key.password, *.secret, sasl.jaas.config, sasl.oauthbearer.config,
// ssl.key.pem, ...).
bool IsSecretProperty(absl::string_view name);

}  // namespace outbox

#endif  // OUTBOX_CONFIG_REDACT_H_
