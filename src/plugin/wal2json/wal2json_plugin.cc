#include "plugin/wal2json/wal2json_plugin.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "plugin/plugin_setup.h"
#include "plugin/wal2json/wal2json_decoder.h"

namespace outbox {
namespace {

// wal2json add-tables syntax: schema.table, with ',', '.', '*', '\' and
// whitespace inside names escaped by '\' (wal2json splits on blanks and
// treats '*' as a wildcard).
std::string Wal2JsonName(absl::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == ',' || c == '.' || c == '*' || c == '\\' ||
        absl::ascii_isspace(static_cast<unsigned char>(c))) {
      out.push_back('\\');
    }
    out.push_back(c);
  }
  return out;
}

// wal2json splits add-msg-prefixes on ',' and blanks and keeps a '\\'
// escape in the name, so a prefix holding one of them cannot be listed.
bool ValidMessagePrefix(absl::string_view prefix) {
  if (prefix.empty()) return false;
  for (char c : prefix) {
    if (c == ',' || c == '\\' ||
        absl::ascii_isspace(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<OutputPlugin>> Wal2JsonPlugin::Create(
    const PluginOptions& options) {
  for (const std::string& prefix : options.message_prefixes) {
    if (!ValidMessagePrefix(prefix)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "invalid logical message prefix \"", prefix,
          "\": it must be non-empty, without ',', '\\' or whitespace"));
    }
  }
  return std::unique_ptr<OutputPlugin>(new Wal2JsonPlugin(options));
}

absl::Status Wal2JsonPlugin::Prepare(PgConnection& conn,
                                     const PluginServer& server) {
  (void)server;
  return CheckOutputPluginAllowed(conn, name());
}

std::string Wal2JsonPlugin::StartOptions(const PluginServer& server) const {
  (void)server;
  std::vector<std::string> tables;
  for (const auto& t : options_.tables) {
    tables.push_back(
        absl::StrCat(Wal2JsonName(t.schema), ".", Wal2JsonName(t.name)));
  }
  // An empty add-msg-prefixes keeps every message, so "none" is a prefix
  // reserved for the relay.
  std::vector<std::string> prefixes = options_.message_prefixes;
  if (prefixes.empty()) prefixes.push_back(kReservedMessagePrefix);
  // No outbox table (the tableless outbox alone): an empty add-tables would
  // mean every table, so no row action at all; messages are not an action.
  std::string actions = "''";
  if (!tables.empty()) {
    actions = options_.decode_updates ? "'insert,update'" : "'insert'";
  }
  return absl::StrCat(
      "\"format-version\" '2', \"include-transaction\" 'true', "
      "\"include-lsn\" 'true', \"include-xids\" 'true', "
      "\"include-timestamp\" 'true', \"include-type-oids\" 'false', ",
      tables.empty()
          ? ""
          : absl::StrCat("\"add-tables\" ",
                         StartOptionValue(absl::StrJoin(tables, ",")), ", "),
      "\"actions\" ", actions, ", \"add-msg-prefixes\" ",
      StartOptionValue(absl::StrJoin(prefixes, ",")));
}

absl::Status Wal2JsonPlugin::Explain(absl::Status st) const {
  if (absl::StrContains(st.message(), "may not be used as an output plugin")) {
    return NotAllowedError(name(), st.message());
  }
  if (absl::StrContains(st.message(), "could not access file \"wal2json\"")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the wal2json plugin is not installed on the PostgreSQL server "
        "(Debian: apt-get install postgresql-15-wal2json), or set "
        "postgres.plugin: pgoutput, which every PostgreSQL has; server said: ",
        st.message()));
  }
  return st;
}

std::unique_ptr<Decoder> Wal2JsonPlugin::NewDecoder() const {
  return std::make_unique<Wal2JsonDecoder>();
}

}  // namespace outbox
