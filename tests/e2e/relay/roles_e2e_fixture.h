// RolesE2ETest: the fixture of the tests of a pair of outbox-relay
// instances sharing one slot (roles_e2e_test.cc: markers, exactly once's
// slot race, SIGTERM during a takeover; pause_e2e_test.cc: pause and resume
// through the HTTP endpoints), against the fixture's PostgreSQL and Kafka.
#ifndef OUTBOX_TESTS_E2E_RELAY_ROLES_E2E_FIXTURE_H_
#define OUTBOX_TESTS_E2E_RELAY_ROLES_E2E_FIXTURE_H_

#include <iterator>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "e2e/relay/relay_e2e_fixture.h"
#include "e2e/relay_http.h"
#include "pg/libpq_replication_stream.h"
#include "pg/slot_marker.h"
#include "plugin/output_plugin.h"

namespace outbox::testing {

// How many times `text` occurs in `log`.
inline int Count(const std::string& log, const std::string& text) {
  int n = 0;
  for (size_t at = log.find(text); at != std::string::npos;
       at = log.find(text, at + text.size())) {
    ++n;
  }
  return n;
}

// The log lines of sessions that started streaming (LogStreaming).
inline int Takeovers(const Process& p) {
  static const std::regex re(" INFO streaming host=");
  const std::string out = p.Output();
  return static_cast<int>(
      std::distance(std::sregex_iterator(out.begin(), out.end(), re),
                    std::sregex_iterator()));
}

class RolesE2ETest : public RelayE2ETest {
 protected:
  std::unique_ptr<Process> StartInstance(const std::string& name,
                                         std::vector<std::string> extra = {}) {
    std::vector<std::string> args = RelayArgs();
    args.insert(args.end(), {"--set", "postgres.standby_retry_ms=200"});
    args.insert(args.end(), extra.begin(), extra.end());
    return Process::Start(args, dir_ + "/" + name + ".log");
  }
  std::string ActivePid() {
    return db_->Scalar(
        "SELECT coalesce(active_pid::text, '') FROM pg_replication_slots "
        "WHERE slot_name = '" +
        slot_ + "'");
  }
  // Whether the instance reports itself active (/activez answers 200).
  static bool Active(const Process& p) {
    int status = 0;
    RelayHttpGet(p, "/activez", &status);
    return status == 200;
  }
  std::unique_ptr<OutputPlugin> Plugin() {
    PluginOptions options;
    options.tables.push_back({"public", table_});
    absl::StatusOr<std::unique_ptr<OutputPlugin>> plugin =
        OutputPlugin::Create("wal2json", options);
    EXPECT_TRUE(plugin.ok()) << plugin.status();
    return plugin.ok() ? std::move(*plugin) : nullptr;
  }
  ReplicationOptions StreamOptions(OutputPlugin* plugin, SlotMarker* marker) {
    ReplicationOptions o;
    o.conninfo = pg_conninfo_;
    o.slot = slot_;
    o.plugin = plugin;
    o.slot_marker = marker;
    o.tables.push_back({"public", table_, {"id"}});
    return o;
  }
};

}  // namespace outbox::testing

#endif  // OUTBOX_TESTS_E2E_RELAY_ROLES_E2E_FIXTURE_H_
