// Secrets the way platforms pass them: environment variables named in the
// YAML file, and files (a Kubernetes Secret or Docker secret mounted as a
// volume), so that no password has to sit in the file or on the command
// line (visible in `ps` and in pod specs).
//
//   ExpandVariables()  every scalar value of the YAML file: ${VAR} is the
//                      variable's value, ${VAR:-default} the default when
//                      VAR is unset or empty, $$ a literal $. An unset VAR
//                      without a default is an error (the caller names the
//                      key). Keys, --set values and `$` not followed by `{`
//                      or `$` are left alone.
//   ReadSecretFiles()  postgres.password_file (and standby_password_file):
//                      the file's content becomes the conninfo's password;
//                      kafka.properties NAME_file: the file's content becomes
//                      property NAME; http.control.token_file (when
//                      http.control.enabled, required): the file's content
//                      becomes HttpConfig::control_token. Trailing CR/LF
//                      are dropped. A file that
//                      cannot be read or is empty, or a secret given both
//                      ways, is an error naming the key.
//
// Config::Redacted() masks what these fill in like any other secret.
// Thread safety: ExpandVariables() reads the environment; call at start-up.
#ifndef OUTBOX_CONFIG_SECRETS_H_
#define OUTBOX_CONFIG_SECRETS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "config/config.h"

namespace outbox {

// The expansion of `text`; InvalidArgument with a message that does not
// name the key (the YAML reader adds it).
absl::StatusOr<std::string> ExpandVariables(absl::string_view text);

// Reads the _file settings into `config` (the _file entries of
// kafka.properties are removed). InvalidArgument "\"<key>\": <why>".
absl::Status ReadSecretFiles(Config* config);

// `conninfo` (keyword form, URI, bare database name or empty) with
// `password` added, quoted as its form needs.
std::string ConninfoWithPassword(absl::string_view conninfo,
                                 absl::string_view password);

}  // namespace outbox

#endif  // OUTBOX_CONFIG_SECRETS_H_
