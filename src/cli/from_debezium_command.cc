#include "cli/from_debezium_command.h"

#include <fstream>
#include <iostream>
#include <sstream>

#include "config/config.h"
#include "config/debezium_connector.h"
#include "daemon/exit_code.h"

namespace outbox {

int RunFromDebeziumCommand(const std::string& path,
                           const std::string& debezium_version, FILE* out,
                           FILE* err) {
  auto fail = [&](int code, const std::string& message) {
    fprintf(err, "outbox-relay from-debezium: %s\n", message.c_str());
    return code;
  };
  std::stringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream file(path, std::ios::binary);
    if (!file) return fail(kExitUsage, "cannot read " + path);
    text << file.rdbuf();
  }
  absl::StatusOr<DebeziumTranslation> translated =
      TranslateDebeziumConnector(text.str(), debezium_version);
  if (!translated.ok()) {
    return fail(kExitUsage,
                path + ": " + std::string(translated.status().message()));
  }
  absl::StatusOr<Config> config =
      ParseConfigYaml(translated->yaml, "the translation");
  if (!config.ok()) {
    return fail(kExitInternal, "the translation does not load: " +
                                   std::string(config.status().message()));
  }
  fputs(translated->yaml.c_str(), out);
  for (const std::string& note : translated->notes) {
    fprintf(err, "note: %s\n", note.c_str());
  }
  return kExitOk;
}

}  // namespace outbox
