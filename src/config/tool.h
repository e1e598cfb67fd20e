// Tool: which program a command line and a configuration key belong to.
// outbox-relay, outbox-poller and outbox-audit read the same configuration
// file and share most flags; each accepts, and its --help lists, only the
// commands and flags it has and the keys it uses.
#ifndef OUTBOX_CONFIG_TOOL_H_
#define OUTBOX_CONFIG_TOOL_H_

#include "absl/strings/string_view.h"

namespace outbox {

enum class Tool { kRelay, kPoller, kAudit };

// A set of tools, one bit each.
using ToolSet = unsigned;
constexpr ToolSet ToolBit(Tool tool) { return 1u << static_cast<int>(tool); }
inline constexpr ToolSet kRelayOnly = ToolBit(Tool::kRelay);
inline constexpr ToolSet kDaemons =
    ToolBit(Tool::kRelay) | ToolBit(Tool::kPoller);  // relay, poller
inline constexpr ToolSet kAllTools =
    kDaemons | ToolBit(Tool::kAudit);  // relay, poller, audit

// "outbox-relay", "outbox-poller", "outbox-audit".
absl::string_view ToolName(Tool tool);

}  // namespace outbox

#endif  // OUTBOX_CONFIG_TOOL_H_
