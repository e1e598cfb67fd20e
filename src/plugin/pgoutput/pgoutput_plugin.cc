#include "plugin/pgoutput/pgoutput_plugin.h"

#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "outbox/status_macros.h"
#include "plugin/pgoutput/pgoutput_binary.h"
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

std::string PgOutputPlugin::TableList() const {
  std::vector<std::string> tables;
  for (const auto& t : options_.tables) {
    tables.push_back(
        absl::StrCat(QuoteIdent(t.schema), ".", QuoteIdent(t.name)));
  }
  return absl::StrJoin(tables, ", ");
}

std::string PgOutputPlugin::CreatePublicationSql(
    absl::string_view publication) const {
  // No outbox table (the tableless outbox alone): a publication of no
  // table, which publishes no row; messages need none.
  return absl::StrCat(
      "CREATE PUBLICATION ",
      QuoteIdent(publication.empty() ? options_.publication : publication),
      options_.tables.empty() ? "" : absl::StrCat(" FOR TABLE ", TableList()),
      " WITH (publish = ", PublishOption(), ")");
}

absl::Status PgOutputPlugin::Prepare(PgConnection& conn,
                                     const PluginServer& server) {
  RETURN_IF_ERROR(PreparePublication(conn, server));
  return ChooseBinary(conn, server);
}

absl::Status PgOutputPlugin::ChooseBinary(PgConnection& conn,
                                          const PluginServer& server) {
  binary_ = false;
  unformattable_ = {};
  const bool on = options_.binary == PluginOptions::Binary::kOn;
  if (options_.binary == PluginOptions::Binary::kOff || text_only_) {
    return absl::OkStatus();
  }
  if (server.version_num < 140000) {
    if (!on) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "postgres.pgoutput_binary is on, but PostgreSQL ", server.version_num,
        " has no binary transfer (14+): set it to auto or off"));
  }
  if (!options_.tables.empty()) {
    std::vector<std::string> tables;
    for (const auto& t : options_.tables) {
      tables.push_back(
          absl::StrCat(conn.Literal(absl::StrCat(QuoteIdent(t.schema), ".",
                                                 QuoteIdent(t.name))),
                       "::regclass"));
    }
    ASSIGN_OR_RETURN(
        PgResult cols,
        conn.Query(absl::StrCat(
            "SELECT n.nspname || '.' || c.relname, a.attname, a.atttypid, "
            "format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute "
            "a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid JOIN "
            "pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE "
            "a.attnum > 0 AND NOT a.attisdropped AND a.attrelid IN (",
            absl::StrJoin(tables, ", "), ") ORDER BY a.attrelid, a.attnum")));
    for (int i = 0; i < PgConnection::Rows(cols); ++i) {
      uint32_t oid = 0;
      if (!absl::SimpleAtoi(PgConnection::Value(cols, i, 2), &oid) ||
          !pgoutput::HasBinaryFormat(oid)) {
        if (!on) return absl::OkStatus();
        return absl::FailedPreconditionError(absl::StrCat(
            "postgres.pgoutput_binary is on, but column \"",
            PgConnection::Value(cols, i, 1), "\" of ",
            PgConnection::Value(cols, i, 0), " has type ",
            PgConnection::Value(cols, i, 3),
            ", whose binary format the relay cannot read: set it to auto "
            "(text for such tables) or off"));
      }
    }
  }
  binary_ = true;
  return absl::OkStatus();
}

bool PgOutputPlugin::RestartAfter(absl::Status* st) {
  if (!binary_ || unformattable_.table.empty()) return false;
  const std::string what =
      absl::StrCat("column \"", unformattable_.column, "\" of ",
                   unformattable_.table, " has type ", unformattable_.type,
                   ", whose binary format the relay cannot read");
  if (options_.binary == PluginOptions::Binary::kOn) {
    *st = absl::FailedPreconditionError(
        absl::StrCat("postgres.pgoutput_binary is on, but ", what,
                     ": set it to auto (text for such tables) or off"));
    return false;
  }
  text_only_ = true;
  *st = absl::AbortedError(absl::StrCat(
      what,
      ": streaming in text (postgres.pgoutput_binary auto) from the "
      "last confirmed position on"));
  return true;
}

absl::Status PgOutputPlugin::PreparePublication(PgConnection& conn,
                                                const PluginServer& server) {
  RETURN_IF_ERROR(CheckOutputPluginAllowed(conn, name()));
  const std::string pub = conn.Literal(options_.publication);
  ASSIGN_OR_RETURN(
      PgResult found,
      conn.Query(absl::StrCat("SELECT pubinsert, pubupdate, puballtables "
                              "FROM pg_catalog.pg_publication WHERE pubname = ",
                              pub)));
  if (PgConnection::Rows(found) == 0) {
    std::string sql = CreatePublicationSql();
    if (!options_.create_publication) {
      return absl::FailedPreconditionError(absl::StrCat(
          "publication \"", options_.publication,
          "\" does not exist and postgres.create_publication is false: run ",
          sql, ";"));
    }
    if (options_.read_only) {
      return absl::NotFoundError(absl::StrCat(
          "publication \"", options_.publication,
          "\" does not exist; the relay creates it at start: ", sql,
          " (as a role that owns the tables)"));
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
  const bool all_tables = PgConnection::Value(found, 0, 2) == "t";
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
  if (!have.empty()) return RefuseOtherTables(conn, all_tables, have);
  // PostgreSQL 15+ publications can filter rows and columns; 14 has
  // neither (nor the view's columns that show them).
  if (server.version_num >= 150000) return CheckFilters(conn);
  return absl::OkStatus();
}

absl::Status PgOutputPlugin::RefuseOtherTables(
    PgConnection& conn, bool all_tables,
    const std::set<std::pair<std::string, std::string>>& others) const {
  // Every row it publishes would be taken for an outbox event and, not
  // being one, halt the relay or fill the dead-letter topic.
  const auto& [schema, table] = *others.begin();
  std::string refusal = absl::StrCat(
      "publication \"", options_.publication, "\" also publishes ", schema, ".",
      table,
      others.size() > 1 ? absl::StrCat(" and ", others.size() - 1, " more")
                        : std::string(),
      ", which is not an outbox table");
  // A publication made under another name always works. Dropping the other
  // tables works only for tables listed one by one: not FOR ALL TABLES, not
  // FOR TABLES IN SCHEMA (PostgreSQL 15+).
  const std::string new_name = absl::StrCat(options_.publication, "_outbox");
  const std::string create = absl::StrCat(
      "create a publication of the outbox tables only and set "
      "postgres.publication to it: ",
      CreatePublicationSql(new_name), ";");
  bool listed = !all_tables;
  if (listed) {
    ASSIGN_OR_RETURN(
        PgResult rel,
        conn.Query(absl::StrCat(
            "SELECT n.nspname, c.relname FROM pg_catalog.pg_publication_rel r "
            "JOIN pg_catalog.pg_publication p ON p.oid = r.prpubid "
            "JOIN pg_catalog.pg_class c ON c.oid = r.prrelid "
            "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
            "WHERE p.pubname = ",
            conn.Literal(options_.publication))));
    std::set<std::pair<std::string, std::string>> explicit_tables;
    for (int i = 0; i < PgConnection::Rows(rel); ++i) {
      explicit_tables.emplace(PgConnection::Value(rel, i, 0),
                              PgConnection::Value(rel, i, 1));
    }
    for (const auto& t : others) listed = listed && explicit_tables.count(t);
  }
  if (!listed) {
    return absl::FailedPreconditionError(absl::StrCat(
        refusal, " (the publication is ",
        all_tables ? "FOR ALL TABLES" : "FOR TABLES IN SCHEMA", "): ", create));
  }
  std::vector<std::string> drop;
  for (const auto& [s, t] : others) {
    drop.push_back(absl::StrCat(QuoteIdent(s), ".", QuoteIdent(t)));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      refusal, ": run ALTER PUBLICATION ", QuoteIdent(options_.publication),
      " DROP TABLE ", absl::StrJoin(drop, ", "),
      "; or, if another subscriber needs those tables, ", create));
}

absl::Status PgOutputPlugin::CheckFilters(PgConnection& conn) const {
  // One row per published column of each outbox table, with its row filter.
  ASSIGN_OR_RETURN(
      PgResult cols,
      conn.Query(absl::StrCat(
          "SELECT t.schemaname, t.tablename, t.rowfilter, a FROM "
          "pg_catalog.pg_publication_tables t, unnest(t.attnames) a WHERE "
          "t.pubname = ",
          conn.Literal(options_.publication))));
  // A row filter or a column list on one table: SET TABLE names every
  // outbox table without either, and the publication holds nothing else.
  const std::string fix =
      absl::StrCat(": run ALTER PUBLICATION ", QuoteIdent(options_.publication),
                   " SET TABLE ", TableList(), ";");
  for (const auto& t : options_.tables) {
    std::set<std::string> published;
    for (int i = 0; i < PgConnection::Rows(cols); ++i) {
      if (PgConnection::Value(cols, i, 0) != t.schema ||
          PgConnection::Value(cols, i, 1) != t.name) {
        continue;
      }
      if (!PgConnection::IsNull(cols, i, 2)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "publication \"", options_.publication, "\" filters the rows of ",
            t.schema, ".", t.name, " (WHERE ", PgConnection::Value(cols, i, 2),
            "): the events it rejects would never reach Kafka, with nothing "
            "in the stream to say so",
            fix));
      }
      published.insert(PgConnection::Value(cols, i, 3));
    }
    std::vector<std::string> missing;
    for (const std::string& c : t.columns) {
      if (!published.count(c)) missing.push_back(c);
    }
    if (!missing.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "publication \"", options_.publication, "\" has a column list on ",
          t.schema, ".", t.name, " without ", absl::StrJoin(missing, ", "),
          ", which the outbox mapping reads: those events would arrive "
          "without them",
          fix));
    }
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
  if (binary_) absl::StrAppend(&out, ", binary 'true'");
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
  unformattable_ = {};
  return std::make_unique<PgOutputDecoder>(binary_, &unformattable_);
}

}  // namespace outbox
