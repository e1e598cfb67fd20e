// OutputPlugin: everything the relay knows about one logical decoding output
// plugin, in one place: the name a slot is created with, the
// START_REPLICATION options for a set of tables, what the server needs
// before streaming (checks, and setup the relay may do itself), the hints
// that turn a server refusal into a fix, and the Decoder for its records.
//
// Two live here, each in its folder: wal2json (format-version 2; an
// extension the server must have) and pgoutput (built into PostgreSQL 10+;
// needs a publication). LibpqReplicationStream drives the plugin; the
// supervisor takes a new Decoder from it for each session.
//
// Threading: Prepare() and StartOptions() run on the thread that owns the
// replication connection; an instance holds no per-session state.
#ifndef OUTBOX_PLUGIN_OUTPUT_PLUGIN_H_
#define OUTBOX_PLUGIN_OUTPUT_PLUGIN_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "outbox/decoder.h"

namespace outbox {

class PgConnection;

struct PluginOptions {
  struct Table {
    std::string schema;
    std::string name;
    // The columns the mapping reads (pgoutput: a publication's column list
    // must keep them).
    std::vector<std::string> columns = {};
  };
  std::vector<Table> tables;  // the outbox tables to stream
  // Logical decoding messages to decode, by exact prefix; empty: none.
  std::vector<std::string> message_prefixes;
  // Also decode UPDATEs of the tables (outbox.on_update other than ignore):
  // wal2json's actions, pgoutput's publication publishing updates.
  bool decode_updates = false;
  // pgoutput: the publication to stream, created FOR TABLE <tables> WITH
  // (publish = 'insert', or 'insert, update' with decode_updates) when
  // missing and `create_publication` allows it.
  std::string publication = "outbox_relay";
  bool create_publication = true;
  // pgoutput: binary 'true' (PostgreSQL 14+) where the server and the
  // tables' column types allow (kAuto), always (kOn: refuse where not), or
  // never (kOff).
  enum class Binary { kAuto, kOn, kOff };
  Binary binary = Binary::kAuto;
  // Prepare() reads only (`validate --connect`): what it would set up
  // (pgoutput's missing publication) is NotFound, naming what the relay
  // will do at start, instead of being done.
  bool read_only = false;
};

// What the server is, as Prepare() needs it.
struct PluginServer {
  int version_num = 0;  // server_version_num, e.g. 150018
  std::string dbname;
};

class OutputPlugin {
 public:
  // The plugins the relay knows, by name ("wal2json", "pgoutput").
  static std::vector<std::string> Names();
  // InvalidArgument for an unknown name or options the plugin cannot
  // express (e.g. a message prefix wal2json cannot list).
  static absl::StatusOr<std::unique_ptr<OutputPlugin>> Create(
      absl::string_view name, const PluginOptions& options);

  virtual ~OutputPlugin() = default;

  // The plugin name of CREATE_REPLICATION_SLOT and pg_replication_slots.
  virtual absl::string_view name() const = 0;

  // The publication the slot streams (pgoutput); empty for plugins that
  // have none.
  virtual absl::string_view publication() const { return {}; }

  // Checks (and where allowed sets up) what the server needs before a
  // slot with this plugin can stream, over the replication connection.
  // FailedPrecondition with one line naming the fix.
  virtual absl::Status Prepare(PgConnection& conn,
                               const PluginServer& server) = 0;

  // The parenthesised option list of START_REPLICATION, without the
  // parentheses.
  virtual std::string StartOptions(const PluginServer& server) const = 0;

  // A server error rewritten with this plugin's fix where it has one (e.g.
  // "may not be used as an output plugin"), else `st` unchanged.
  virtual absl::Status Explain(absl::Status st) const = 0;

  // A decoder for one replication session (it may cache per session).
  virtual std::unique_ptr<Decoder> NewDecoder() const = 0;

  // A session ended with *st (not OK). True when the plugin changed how it
  // streams because of it, so the next session should start at once, from
  // the slot's confirmed position (nothing past the record that ended this
  // one was confirmed); *st is then the one line saying why. pgoutput: a
  // column whose type its decoder cannot read in binary -> text for the rest
  // of the process (or, under postgres.pgoutput_binary on, *st becomes
  // FailedPrecondition and it returns false). Default: false, *st as is.
  virtual bool RestartAfter(absl::Status* st) {
    (void)st;
    return false;
  }
};

}  // namespace outbox

#endif  // OUTBOX_PLUGIN_OUTPUT_PLUGIN_H_
