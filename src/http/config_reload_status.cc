#include "http/config_reload_status.h"

#include "absl/strings/str_cat.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace outbox {

ConfigReloadStatus::ConfigReloadStatus(prometheus::Registry& registry,
                                       const std::string& metric_prefix,
                                       const Clock* clock)
    : clock_(clock) {
  failures_ =
      &prometheus::BuildCounter()
           .Name(absl::StrCat(metric_prefix, "_config_reload_failures_total"))
           .Help(
               "SIGHUP reloads refused: the configuration was "
               "invalid or changed a key that needs a restart "
               "(the process keeps its old configuration).")
           .Register(registry)
           .Add({});
  last_success_ =
      &prometheus::BuildGauge()
           .Name(absl::StrCat(metric_prefix,
                              "_config_last_reload_success_timestamp_seconds"))
           .Help(
               "Unix time of the last configuration load that succeeded: "
               "the start, then each SIGHUP that read a valid "
               "configuration (applied or unchanged).")
           .Register(registry)
           .Add({});
  last_success_->Set(static_cast<double>(clock_->UnixMicros()) / 1e6);
  last_successful_ =
      &prometheus::BuildGauge()
           .Name(absl::StrCat(metric_prefix, "_config_last_reload_successful"))
           .Help(
               "1 when the last configuration load succeeded (the start, "
               "or the last SIGHUP), 0 when the last SIGHUP's was refused "
               "and the process runs on an older configuration than its "
               "file.")
           .Register(registry)
           .Add({});
  last_successful_->Set(1);
}

void ConfigReloadStatus::Succeeded(absl::string_view result) {
  const int64_t now_us = clock_->UnixMicros();
  last_success_->Set(static_cast<double>(now_us) / 1e6);
  last_successful_->Set(1);
  std::lock_guard<std::mutex> lock(mu_);
  last_ = StatusSnapshot::ConfigReload{true, std::string(result), "",
                                       now_us / 1000};
}

void ConfigReloadStatus::Failed(absl::string_view result,
                                absl::string_view error) {
  failures_->Increment();
  last_successful_->Set(0);
  std::lock_guard<std::mutex> lock(mu_);
  last_ = StatusSnapshot::ConfigReload{false, std::string(result),
                                       std::string(error),
                                       clock_->UnixMicros() / 1000};
}

void ConfigReloadStatus::Fill(StatusSnapshot* snapshot) const {
  std::lock_guard<std::mutex> lock(mu_);
  snapshot->config_reload = last_;
}

}  // namespace outbox
