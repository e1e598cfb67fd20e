// Masking of secrets in configuration values, for logs.
//
// Config::Redacted() uses these; they are separate so they can be tested and
// reused (e.g. when logging a conninfo on a connection error).
#ifndef OUTBOX_CONFIG_REDACT_H_
#define OUTBOX_CONFIG_REDACT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace outbox {

// Returns `conninfo` (keyword=value form or postgres:// URI) with every
// password, sslpassword and oauth_client_secret replaced by "****". An
// unquoted secret is masked up to the next "keyword=" of libpq's keywords,
// not to the first space: libpq ends the value at the space and reads the
// rest as keywords, so the rest is the secret's too.
std::string RedactConninfo(absl::string_view conninfo);

// True when `conninfo` sets `password` (keyword, URI user info or URI
// parameter); an sslpassword alone is not one.
bool ConninfoHasPassword(absl::string_view conninfo);

// OK, or InvalidArgument "its password holds a space ..." (not naming the
// value) when a keyword-form conninfo has a password or sslpassword that
// libpq would split or cannot read: an unquoted value with a space, or an
// unclosed quote. The message names the fix (postgres.password_file,
// PGPASSWORD, libpq's quoting); the caller adds the key.
absl::Status CheckConninfoSecrets(absl::string_view conninfo);

// True for librdkafka property names that hold secrets (sasl.password,
// ssl.key.password, *.secret, sasl.jaas.config, sasl.oauthbearer.config,
// ssl.key.pem, ...).
bool IsSecretProperty(absl::string_view name);

}  // namespace outbox

#endif  // OUTBOX_CONFIG_REDACT_H_
