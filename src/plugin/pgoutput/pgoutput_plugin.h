// PgOutputPlugin: PostgreSQL's built-in pgoutput plugin (protocol version
// 1; text values, or binary ones on 14+), for servers without wal2json. Every
// PostgreSQL from 10 has it; the relay supports 14 and later.
//
// pgoutput streams the tables of a publication. Prepare() checks that
// `PluginOptions::publication` exists, publishes inserts and covers every
// outbox table; when it is missing and `create_publication` allows, it
// creates it (`CREATE PUBLICATION p FOR TABLE <tables> WITH (publish =
// 'insert')`, which needs ownership of the tables), and otherwise refuses
// with the exact SQL to run. A publication filters in the walsender: other
// tables' changes are decoded but never sent. So a publication that also
// publishes other tables, or (PostgreSQL 15+) filters an outbox table's
// rows or leaves out a column the mapping reads, is refused too, with a
// statement that fixes it.
//
// START_REPLICATION asks for proto_version 1 and the publication; logical
// messages only when prefixes are configured (pgoutput cannot filter them
// by prefix), never streaming of in-progress transactions; binary 'true'
// (PostgreSQL 14+) when PluginOptions::binary allows and, as Prepare()
// finds, every column of the outbox tables has a type the decoder can
// format (pgoutput_binary.h). A column of another type that appears later
// (ALTER TABLE) ends the session at its Relation message, before any of its
// rows: RestartAfter() then switches to text for the rest of the process.
#ifndef OUTBOX_PLUGIN_PGOUTPUT_PGOUTPUT_PLUGIN_H_
#define OUTBOX_PLUGIN_PGOUTPUT_PGOUTPUT_PLUGIN_H_

#include <set>
#include <string>
#include <utility>

#include "plugin/output_plugin.h"
#include "plugin/pgoutput/pgoutput_decoder.h"

namespace outbox {

class PgOutputPlugin final : public OutputPlugin {
 public:
  // InvalidArgument for an empty publication name.
  static absl::StatusOr<std::unique_ptr<OutputPlugin>> Create(
      const PluginOptions& options);

  absl::string_view name() const override { return "pgoutput"; }
  absl::string_view publication() const override {
    return options_.publication;
  }
  absl::Status Prepare(PgConnection& conn, const PluginServer& server) override;
  std::string StartOptions(const PluginServer& server) const override;
  absl::Status Explain(absl::Status st) const override;
  std::unique_ptr<Decoder> NewDecoder() const override;
  bool RestartAfter(absl::Status* st) override;

  // Whether the last Prepare() chose binary 'true'.
  bool binary() const { return binary_; }

  // The statement that creates the publication (for errors and docs), or
  // one of the same tables under `publication`; identifiers quoted as
  // PostgreSQL would.
  std::string CreatePublicationSql(absl::string_view publication = {}) const;
  // The publish option: 'insert', or 'insert, update' with decode_updates.
  std::string PublishOption() const;

 private:
  explicit PgOutputPlugin(PluginOptions options)
      : options_(std::move(options)) {}
  // "s.t, s2.t2": the outbox tables, quoted.
  std::string TableList() const;
  // The refusal of a publication that also publishes `others`, with a
  // statement that can run: ALTER PUBLICATION ... DROP TABLE where they are
  // listed one by one, else a publication under a new name.
  absl::Status RefuseOtherTables(
      PgConnection& conn, bool all_tables,
      const std::set<std::pair<std::string, std::string>>& others) const;
  // PostgreSQL 15+: a row filter on an outbox table, or a column list
  // without a column the mapping reads, is refused with the ALTER
  // PUBLICATION that removes it.
  absl::Status CheckFilters(PgConnection& conn) const;
  // The publication checks of Prepare().
  absl::Status PreparePublication(PgConnection& conn,
                                  const PluginServer& server);
  // Sets binary_ from the options, the server and the tables' column types.
  absl::Status ChooseBinary(PgConnection& conn, const PluginServer& server);
  PluginOptions options_;
  bool binary_ = false;
  bool text_only_ = false;  // a session met a type binary cannot carry
  // What the session's decoder refused (its table empty if nothing).
  mutable PgOutputDecoder::Unformattable unformattable_;
};

}  // namespace outbox

#endif  // OUTBOX_PLUGIN_PGOUTPUT_PGOUTPUT_PLUGIN_H_
