// The build_info gauge each daemon exports (docs/reference/metrics.md):
//
//   outbox_relay_build_info{version,revision,plugin,librdkafka,libpq} 1
//   outbox_poller_build_info{version,revision,librdkafka,libpq} 1
//
// version and revision as `--version` prints them (common/version.h),
// librdkafka's rd_kafka_version_str() and libpq's PQlibVersion() (e.g.
// "17.2" from 170002) of the libraries the process runs with, not those it
// was compiled against, and the relay's configured postgres.plugin: what a
// dashboard joins on to tell which build runs where.
//
// Threading: call once, at start, before the registry is served.
#ifndef OUTBOX_DAEMON_BUILD_INFO_H_
#define OUTBOX_DAEMON_BUILD_INFO_H_

#include <map>
#include <string>

#include "absl/strings/string_view.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace outbox {

// libpq's PQlibVersion() as text: 170002 -> "17.2", 90624 -> "9.6.24".
std::string LibpqVersion();

// The labels every build_info gauge has (version, revision, librdkafka,
// libpq).
std::map<std::string, std::string> BuildInfoLabels();

// Registers `<prefix>_build_info` = 1 with BuildInfoLabels() plus `extra`
// (the relay's plugin).
void RegisterBuildInfo(prometheus::Registry& registry, absl::string_view prefix,
                       const std::map<std::string, std::string>& extra = {});

}  // namespace outbox

#endif  // OUTBOX_DAEMON_BUILD_INFO_H_
