#include "plugin/pgoutput/pgoutput_plugin.h"

#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "outbox/status_macros.h"
#include "plugin/pgoutput/pgoutput_decoder.h"
#include "plugin/plugin_setup.h"

namespace outbox {
namespace {

// An SQL identifier, double-quoted unless it is a plain lower-case name.
std::string QuoteIdent(absl::string_view s) {
  bool plain = !s.empty() && !absl::ascii_isdigit(s[0]);
  for (char c : s) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '_')) {
      plain = false;
    }
  }
  if (plain) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<OutputPlugin>> PgOutputPlugin::Create(
    const PluginOptions& options) {
  if (options.publication.empty()) {
    return absl::InvalidArgumentError(
        "postgres.publication must name a publication for pgoutput");
  }
  return std::unique_ptr<OutputPlugin>(new PgOutputPlugin(options));
}

std::string PgOutputPlugin::CreatePublicationSql() const {
  std::vector<std::string> tables;
  for (const auto& t : options_.tables) {
    tables.push_back(
        absl::StrCat(QuoteIdent(t.schema), ".", QuoteIdent(t.name)));
  }
  // No outbox table (the tableless outbox alone): a publication of no
  // table, which publishes no row; messages need none.
  return absl::StrCat(
      "CREATE PUBLICATION ", QuoteIdent(options_.publication),
      tables.empty() ? ""
                     : absl::StrCat(" FOR TABLE ", absl::StrJoin(tables, ", ")),
      " WITH (publish = ", PublishOption(), ")");
}

absl::Status PgOutputPlugin::Prepare(PgConnection& conn,
                                     const PluginServer& server) {
  (void)server;
  RETURN_IF_ERROR(CheckOutputPluginAllowed(conn, name()));
  const std::string pub = conn.Literal(options_.publication);
  ASSIGN_OR_RETURN(
      PgResult found,
      conn.Query(absl::StrCat("SELECT pubinsert, pubupdate FROM "
                              "pg_catalog.pg_publication WHERE pubname = ",
                              pub)));
  if (PgConnection::Rows(found) == 0) {
    std::string sql = CreatePublicationSql();
    if (!options_.create_publication) {
      return absl::FailedPreconditionError(absl::StrCat(
          "publication \"", options_.publication,
          "\" does not exist and postgres.create_publication is false: run ",
          sql, ";"));
    }
    absl::StatusOr<PgResult> created = conn.Query(sql);
    if (!created.ok()) {
      if (absl::IsUnavailable(created.status()) && conn.connected()) {
        // Refused, not a lost connection: the role may not create it.
        return absl::FailedPreconditionError(
            absl::StrCat("cannot create publication \"", options_.publication,
                         "\" (", created.status().message(),
                         "): run as the tables' owner: ", sql, ";"));
      }
      if (absl::IsFailedPrecondition(created.status())) {
        return absl::FailedPreconditionError(
            absl::StrCat(created.status().message(),
                         "; run as the tables' owner: ", sql, ";"));
      }
      return created.status();
    }
    return absl::OkStatus();
  }
  if (!options_.tables.empty() &&
      (PgConnection::Value(found, 0, 0) != "t" ||
       (options_.decode_updates && PgConnection::Value(found, 0, 1) != "t"))) {
    return absl::FailedPreconditionError(absl::StrCat(
        "publication \"", options_.publication, "\" does not publish ",
        options_.decode_updates
            ? "inserts and updates (outbox.on_update is not ignore)"
            : "inserts",
        ": run ALTER PUBLICATION ", QuoteIdent(options_.publication),
        " SET (publish = ", PublishOption(), ");"));
  }
  ASSIGN_OR_RETURN(
      PgResult covered,
      conn.Query(absl::StrCat("SELECT schemaname, tablename FROM "
                              "pg_catalog.pg_publication_tables WHERE "
                              "pubname = ",
                              pub)));
  std::set<std::pair<std::string, std::string>> have;
  for (int i = 0; i < PgConnection::Rows(covered); ++i) {
    have.emplace(PgConnection::Value(covered, i, 0),
                 PgConnection::Value(covered, i, 1));
  }
  for (const auto& t : options_.tables) {
    if (have.erase({t.schema, t.name}) == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "publication \"", options_.publication, "\" does not cover ",
          t.schema, ".", t.name, ": run ALTER PUBLICATION ",
          QuoteIdent(options_.publication), " ADD TABLE ", QuoteIdent(t.schema),
          ".", QuoteIdent(t.name), ";"));
    }
  }
  if (!have.empty()) {
    // Every row it publishes would be taken for an outbox event and, not
    // being one, halt the relay or fill the dead-letter topic.
    const auto& [schema, table] = *have.begin();
    return absl::FailedPreconditionError(absl::StrCat(
        "publication \"", options_.publication, "\" also publishes ", schema,
        ".", table,
        have.size() > 1 ? absl::StrCat(" and ", have.size() - 1, " more")
                        : std::string(),
        ", which is not an outbox table: use a publication of the outbox "
        "tables only (",
        CreatePublicationSql(), ") under another postgres.publication name"));
  }
  return absl::OkStatus();
}

std::string PgOutputPlugin::PublishOption() const {
  return options_.decode_updates ? "'insert, update'" : "'insert'";
}

std::string PgOutputPlugin::StartOptions(const PluginServer& server) const {
  (void)server;
  // publication_names is a list of identifiers, so the name is
  // double-quoted inside the single-quoted option value.
  std::string names = "\"";
  for (char c : options_.publication) {
    if (c == '"') names.push_back('"');
    names.push_back(c);
  }
  names.push_back('"');
  std::string out = absl::StrCat("proto_version '1', publication_names ",
                                 StartOptionValue(names));
  // pgoutput sends every logical message or none; the decoder and relay
  // keep the configured prefixes.
  if (!options_.message_prefixes.empty()) {
    absl::StrAppend(&out, ", messages 'true'");
  }
  return out;
}

absl::Status PgOutputPlugin::Explain(absl::Status st) const {
  if (absl::StrContains(st.message(), "may not be used as an output plugin")) {
    return NotAllowedError(name(), st.message());
  }
  if (absl::StrContains(st.message(), "publication \"") &&
      absl::StrContains(st.message(), "does not exist")) {
    return absl::FailedPreconditionError(
        absl::StrCat(st.message(), "; run ", CreatePublicationSql(), ";"));
  }
  return st;
}

std::unique_ptr<Decoder> PgOutputPlugin::NewDecoder() const {
  return std::make_unique<PgOutputDecoder>();
}

}  // namespace outbox
