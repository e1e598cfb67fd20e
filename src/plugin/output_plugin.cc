#include "plugin/output_plugin.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "outbox/status_macros.h"
#include "plugin/pgoutput/pgoutput_plugin.h"
#include "plugin/plugin_setup.h"
#include "plugin/wal2json/wal2json_plugin.h"

namespace outbox {

std::vector<std::string> OutputPlugin::Names() {
  return {"wal2json", "pgoutput"};
}

absl::StatusOr<std::unique_ptr<OutputPlugin>> OutputPlugin::Create(
    absl::string_view name, const PluginOptions& options) {
  if (name == "wal2json") return Wal2JsonPlugin::Create(options);
  if (name == "pgoutput") return PgOutputPlugin::Create(options);
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown output plugin \"", name,
      "\" (postgres.plugin: ", absl::StrJoin(Names(), " or "), ")"));
}

std::string StartOptionValue(absl::string_view value) {
  std::string quoted = "'";
  for (char c : value) {
    if (c == '\'') quoted.push_back('\'');
    quoted.push_back(c);
  }
  quoted.push_back('\'');
  return quoted;
}

absl::Status NotAllowedError(absl::string_view plugin,
                             absl::string_view detail) {
  return absl::FailedPreconditionError(absl::StrCat(
      plugin,
      " is not allowed by the server setting output_plugin_libraries: run "
      "ALTER SYSTEM SET output_plugin_libraries = pgoutput, test_decoding, "
      "wal2json; SELECT pg_reload_conf(); (",
      detail, ")"));
}

absl::Status CheckOutputPluginAllowed(PgConnection& conn,
                                      absl::string_view plugin) {
  // pg_settings omits what this role may not read (Debian's
  // output_plugin_libraries needs pg_read_all_settings): then the slot
  // commands report the same problem and Explain() names the fix.
  ASSIGN_OR_RETURN(PgResult res,
                   conn.Query("SELECT setting FROM pg_catalog.pg_settings "
                              "WHERE name = 'output_plugin_libraries'"));
  if (PgConnection::Rows(res) == 0) return absl::OkStatus();
  std::string setting = PgConnection::Value(res, 0, 0);
  for (absl::string_view lib : absl::StrSplit(setting, ',')) {
    lib = absl::StripAsciiWhitespace(lib);
    absl::ConsumePrefix(&lib, "\"");
    if (absl::EndsWith(lib, "\"")) lib.remove_suffix(1);
    if (lib == plugin) return absl::OkStatus();
  }
  return NotAllowedError(plugin, absl::StrCat("now '", setting, "'"));
}

}  // namespace outbox
