// Wal2JsonPlugin: the wal2json output plugin (format-version 2), the
// project's default. An extension the server must have installed
// (Debian: postgresql-15-wal2json) and, from the minor releases that have
// output_plugin_libraries (15.19/16.15/17.11/18.6), allow.
//
// START_REPLICATION asks for transactions, LSNs, xids and commit
// timestamps; `add-tables` for the outbox tables and `actions` insert, so
// the walsender serializes nothing else; and `add-msg-prefixes` so that
// only the configured logical-message prefixes are decoded (wal2json passes
// every message through the table filter, and an empty list keeps them all,
// hence kReservedMessagePrefix when none is wanted).
#ifndef OUTBOX_PLUGIN_WAL2JSON_WAL2JSON_PLUGIN_H_
#define OUTBOX_PLUGIN_WAL2JSON_WAL2JSON_PLUGIN_H_

#include "plugin/output_plugin.h"

namespace outbox {

// The logical message prefix wal2json is asked to keep when the relay wants
// none: wal2json has no other way to drop them all. Reserved for the relay.
inline constexpr char kReservedMessagePrefix[] = "outbox-relay.reserved";

class Wal2JsonPlugin final : public OutputPlugin {
 public:
  // InvalidArgument for a message prefix wal2json's list syntax cannot hold
  // (empty, or with ',', '\\' or whitespace).
  static absl::StatusOr<std::unique_ptr<OutputPlugin>> Create(
      const PluginOptions& options);

  absl::string_view name() const override { return "wal2json"; }
  absl::Status Prepare(PgConnection& conn, const PluginServer& server) override;
  std::string StartOptions(const PluginServer& server) const override;
  absl::Status Explain(absl::Status st) const override;
  std::unique_ptr<Decoder> NewDecoder() const override;

 private:
  explicit Wal2JsonPlugin(PluginOptions options)
      : options_(std::move(options)) {}
  PluginOptions options_;
};

}  // namespace outbox

#endif  // OUTBOX_PLUGIN_WAL2JSON_WAL2JSON_PLUGIN_H_
