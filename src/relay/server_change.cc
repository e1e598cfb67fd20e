#include "relay/server_change.h"

#include "absl/strings/str_cat.h"

namespace outbox {

std::vector<std::string> ServerChanges(
    const std::optional<ServerIdentity>& previous,
    const ServerIdentity& current) {
  std::vector<std::string> lines;
  if (!previous.has_value()) return lines;
  if (previous->system_id != current.system_id) {
    lines.push_back(absl::StrCat(
        "system identifier changed: ", previous->system_id, " -> ",
        current.system_id, " on ", current.endpoint, " (was ",
        previous->endpoint,
        "): another cluster, not a promoted standby of the previous server"));
    return lines;
  }
  if (current.timeline > previous->timeline) {
    lines.push_back(absl::StrCat("promoted: timeline ", previous->timeline,
                                 " -> ", current.timeline, " on ",
                                 current.endpoint));
  } else if (current.timeline < previous->timeline) {
    lines.push_back(absl::StrCat(
        "timeline went back: ", previous->timeline, " -> ", current.timeline,
        " on ", current.endpoint, " (was ", previous->endpoint,
        "): a server of an older timeline, such as a former primary running "
        "again"));
  }
  return lines;
}

}  // namespace outbox
