#include "http/daemon_role.h"

#include "absl/strings/str_cat.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace outbox {

DaemonRole::DaemonRole(prometheus::Registry& registry,
                       const std::string& metric_prefix) {
  auto& family =
      prometheus::BuildGauge()
          .Name(absl::StrCat(metric_prefix, "_role"))
          .Help(
              "1 for the instance's current role (standby: waiting for the "
              "slot or a connection; active: streaming; draining: ending "
              "a session; stopped), 0 for the others.")
          .Register(registry);
  for (size_t i = 0; i < std::size(kRoles); ++i) {
    gauges_[i] = &family.Add({{"role", std::string(RoleName(kRoles[i]))}});
  }
  Set(Role::kStandby);
}

void DaemonRole::Set(Role role, bool slot_held_elsewhere) {
  held_elsewhere_.store(role == Role::kStandby && slot_held_elsewhere,
                        std::memory_order_relaxed);
  role_.store(role, std::memory_order_relaxed);
  for (size_t i = 0; i < std::size(kRoles); ++i) {
    gauges_[i]->Set(kRoles[i] == role ? 1 : 0);
  }
  if (listener_) listener_();
}

}  // namespace outbox
