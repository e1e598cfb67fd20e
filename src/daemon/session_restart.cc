#include "daemon/session_restart.h"

#include <utility>

#include "common/logging.h"
#include "daemon/config_reload.h"

namespace outbox {

void SessionRestart::Request(absl::string_view why,
                             std::optional<Config> next) {
  std::lock_guard<std::mutex> lock(mu_);
  request_ = Pending{std::string(why), std::move(next)};
  pending_.store(true);
}

std::optional<SessionRestart::Pending> SessionRestart::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<Pending> out = std::move(request_);
  request_.reset();
  pending_.store(false);
  return out;
}

int RunSessions(
    const Config& config, SessionRestart* restart, ConfigReloader* reload,
    const std::function<std::optional<int>(const Config&)>& supervise) {
  Config current = config;
  for (;;) {
    std::optional<int> code = supervise(current);
    if (code.has_value()) return *code;
    std::optional<SessionRestart::Pending> r = restart->Take();
    const bool new_config = r.has_value() && r->next.has_value();
    if (new_config) current = *std::move(r->next);
    Log(Severity::kInfo, "starting the next session",
        {{"reason", r.has_value() ? r->why : std::string("restart")},
         {"configuration", new_config ? "new" : "same"}});
    if (new_config && reload != nullptr) reload->Applied(current);
  }
}

}  // namespace outbox
