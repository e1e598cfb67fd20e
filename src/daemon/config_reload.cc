#include "daemon/config_reload.h"

#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"

namespace outbox {

const std::vector<std::string>& RestartOnlyKeys() {
  static const std::vector<std::string>* keys =
      new std::vector<std::string>{"http.listen",
                                   "http.control.enabled",
                                   "http.control.token_file",
                                   "log.format",
                                   "postgres.slot",
                                   "postgres.plugin",
                                   "postgres.slot_marker",
                                   "postgres.slot_marker_id",
                                   "postgres.state_dir",
                                   "kafka.exactly_once",
                                   "kafka.transactional_id",
                                   "kafka.checkpoint_topic",
                                   "kafka.state_topic"};
  return *keys;
}

ConfigReloader::ConfigReloader(CommandLine command_line, Config config,
                               std::atomic<bool>* requested,
                               ConfigReloadStatus* status)
    : command_line_(std::move(command_line)),
      requested_(requested),
      status_(status),
      current_(std::make_shared<const Config>(std::move(config))) {}

std::shared_ptr<const Config> ConfigReloader::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

void ConfigReloader::Refuse(const std::string& result, const std::string& why) {
  Log(Severity::kError,
      absl::StrCat("configuration reload refused (still running on the old "
                   "configuration): ",
                   why));
  if (status_ != nullptr) status_->Failed(result, why);
}

std::optional<Config> ConfigReloader::Check(
    const Config& running,
    const std::function<absl::Status(const Config&)>& validate) {
  if (!requested_->exchange(false)) return std::nullopt;
  absl::StatusOr<Config> loaded = LoadConfig(command_line_);
  if (loaded.ok() && validate) {
    if (absl::Status s = validate(*loaded); !s.ok()) loaded = s;
  }
  if (!loaded.ok()) {
    Refuse("invalid", std::string(loaded.status().message()));
    return std::nullopt;
  }
  // Compared in clear (a changed password is a change), logged redacted.
  const auto before = running.Entries();
  const auto after = loaded->Entries();
  std::map<std::string, std::string> old_values(before.begin(), before.end());
  std::map<std::string, std::string> new_values(after.begin(), after.end());
  std::map<std::string, std::string> shown;
  for (const auto& [key, value] : loaded->RedactedEntries()) {
    shown[key] = value;
  }
  std::vector<std::string> changed;
  std::vector<std::string> restart_only;
  std::vector<std::pair<std::string, std::string>> fields;
  for (const auto& [key, value] : new_values) {
    auto it = old_values.find(key);
    if (it != old_values.end() && it->second == value) continue;
    changed.push_back(key);
    fields.emplace_back(key, shown[key]);
    for (const std::string& r : RestartOnlyKeys()) {
      if (key == r) restart_only.push_back(key);
    }
  }
  for (const auto& [key, value] : old_values) {
    if (new_values.count(key) == 0) {  // e.g. an outbox table removed
      changed.push_back(key);
      fields.emplace_back(key, "(removed)");
    }
  }
  if (changed.empty()) {
    Log(Severity::kInfo, "configuration reload: unchanged");
    if (status_ != nullptr) status_->Succeeded("unchanged");
    return std::nullopt;
  }
  if (!restart_only.empty()) {
    Refuse("needs restart", absl::StrCat(absl::StrJoin(restart_only, ", "),
                                         " cannot change without a restart "
                                         "(docs/operations/reload.md)"));
    return std::nullopt;
  }
  Log(Severity::kInfo,
      "configuration reload: changed; ending the session cleanly to start "
      "the next with it",
      {{"keys", absl::StrJoin(changed, ",")}});
  for (auto& [key, value] : fields) {
    if (value == "\"\"") value.clear();  // the logger quotes it
  }
  LogEntries(Severity::kInfo, "configuration reload: new value", fields);
  return *std::move(loaded);
}

void ConfigReloader::Applied(const Config& config) {
  SetLogSeverity(static_cast<Severity>(static_cast<int>(config.log.level)));
  {
    std::lock_guard<std::mutex> lock(mu_);
    current_ = std::make_shared<const Config>(config);
  }
  Log(Severity::kInfo, "configuration reload: applied");
  if (status_ != nullptr) status_->Succeeded("applied");
}

}  // namespace outbox
