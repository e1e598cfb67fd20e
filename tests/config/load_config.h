// Test helpers for the configuration tests: LoadConfig() over a command
// line, as the daemons call it, and files in the test's temporary directory.
#ifndef OUTBOX_TESTS_CONFIG_LOAD_CONFIG_H_
#define OUTBOX_TESTS_CONFIG_LOAD_CONFIG_H_

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "config/command_line.h"
#include "config/config.h"
#include "gtest/gtest.h"

namespace outbox {

// Runs ParseCommandLine + LoadConfig on the given arguments.
inline absl::StatusOr<Config> Load(std::vector<std::string> args) {
  args.insert(args.begin(), "outbox-relay");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  auto cl = ParseCommandLine(static_cast<int>(argv.size()), argv.data());
  if (!cl.ok()) return cl.status();
  return LoadConfig(*cl);
}

// Writes `text` to `name` in the test's temporary directory; its path.
inline std::string WriteFile(absl::string_view name, absl::string_view text) {
  std::string path = absl::StrCat(::testing::TempDir(), "/", name);
  std::ofstream(path) << text;
  return path;
}

}  // namespace outbox

#endif  // OUTBOX_TESTS_CONFIG_LOAD_CONFIG_H_
