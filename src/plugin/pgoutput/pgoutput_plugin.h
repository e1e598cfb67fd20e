// PgOutputPlugin: PostgreSQL's built-in pgoutput plugin (protocol version
// 1, text values), for servers without wal2json. Every PostgreSQL from 10
// has it; the relay supports 14 and later.
//
// pgoutput streams the tables of a publication. Prepare() checks that
// `PluginOptions::publication` exists, publishes inserts and covers every
// outbox table; when it is missing and `create_publication` allows, it
// creates it (`CREATE PUBLICATION p FOR TABLE <tables> WITH (publish =
// 'insert')`, which needs ownership of the tables), and otherwise refuses
// with the exact SQL to run. A publication filters in the walsender: other
// tables' changes are decoded but never sent.
//
// START_REPLICATION asks for proto_version 1 and the publication; logical
// messages only when prefixes are configured (pgoutput cannot filter them
// by prefix), never streaming of in-progress transactions.
#ifndef OUTBOX_PLUGIN_PGOUTPUT_PGOUTPUT_PLUGIN_H_
#define OUTBOX_PLUGIN_PGOUTPUT_PGOUTPUT_PLUGIN_H_

#include "plugin/output_plugin.h"

namespace outbox {

class PgOutputPlugin final : public OutputPlugin {
 public:
  // InvalidArgument for an empty publication name.
  static absl::StatusOr<std::unique_ptr<OutputPlugin>> Create(
      const PluginOptions& options);

  absl::string_view name() const override { return "pgoutput"; }
  absl::Status Prepare(PgConnection& conn, const PluginServer& server) override;
  std::string StartOptions(const PluginServer& server) const override;
  absl::Status Explain(absl::Status st) const override;
  std::unique_ptr<Decoder> NewDecoder() const override;

  // The statement that creates the publication (for errors and docs);
  // identifiers quoted as PostgreSQL would.
  std::string CreatePublicationSql() const;
  // The publish option: 'insert', or 'insert, update' with decode_updates.
  std::string PublishOption() const;

 private:
  explicit PgOutputPlugin(PluginOptions options)
      : options_(std::move(options)) {}
  PluginOptions options_;
};

}  // namespace outbox

#endif  // OUTBOX_PLUGIN_PGOUTPUT_PGOUTPUT_PLUGIN_H_
