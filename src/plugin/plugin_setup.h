// Helpers every OutputPlugin shares (private to plugin/): quoting a
// START_REPLICATION option value, and the output_plugin_libraries check.
#ifndef OUTBOX_PLUGIN_PLUGIN_SETUP_H_
#define OUTBOX_PLUGIN_PLUGIN_SETUP_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "pg/pg_connection.h"

namespace outbox {

// 'value' with single quotes doubled: a START_REPLICATION option value.
std::string StartOptionValue(absl::string_view value);

// Minor releases from 15.19/16.15/17.11/18.6 on have the setting
// output_plugin_libraries; a plugin it does not list cannot be used.
// FailedPrecondition naming the fix when the server has the setting and it
// lacks `plugin`; OK when it lists it or the server has no such setting
// (or hides it from this role: then the slot commands refuse, and Explain
// names the same fix).
absl::Status CheckOutputPluginAllowed(PgConnection& conn,
                                      absl::string_view plugin);

// The refusal for a plugin output_plugin_libraries does not allow.
absl::Status NotAllowedError(absl::string_view plugin,
                             absl::string_view detail);

}  // namespace outbox

#endif  // OUTBOX_PLUGIN_PLUGIN_SETUP_H_
