// CliPage: one program's reference page (outbox-relay, outbox-poller,
// outbox-audit) in the manner of PostgreSQL's pg_recvlogical page, rendered
// as Markdown for the site and as roff for man(1). The options and exit
// codes come from the code's tables (CommandLineFlags() with each flag's
// tools, kExitCodes); the prose around them lives here, once for both
// renderings. Text uses `backticks` for literals; nothing else of Markdown.
#ifndef OUTBOX_DOCGEN_CLI_PAGES_H_
#define OUTBOX_DOCGEN_CLI_PAGES_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace outbox {

struct CliEntry {
  std::string term;  // "--config FILE", "2", "PGHOST"
  std::string text;
};

struct CliPage {
  std::string name;     // "outbox-relay"
  std::string summary;  // one line, for NAME
  std::vector<std::string> synopsis;
  std::vector<std::string> description;  // paragraphs
  std::vector<CliEntry> commands;
  std::vector<CliEntry> options;
  std::vector<CliEntry> exit_status;
  std::vector<CliEntry> environment;
  std::vector<CliEntry> files;
  std::vector<CliEntry> examples;  // term: what it does; text: the command
  std::vector<std::string> see_also;
};

std::vector<CliPage> CliPages();

// `note` goes right under the title (the "generated" comment).
std::string RenderMarkdown(const CliPage& page, absl::string_view note);
std::string RenderMan(const CliPage& page);

}  // namespace outbox

#endif  // OUTBOX_DOCGEN_CLI_PAGES_H_
