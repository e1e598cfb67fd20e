#include "cli/status_command.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "daemon/exit_code.h"

namespace outbox {
namespace {

void Line(std::string* out, absl::string_view key, absl::string_view value) {
  absl::StrAppendFormat(out, "%-20s %s\n", key, value);
}

std::string LsnOrNone(Lsn lsn) {
  return lsn == kInvalidLsn ? "none" : FormatLsn(lsn);
}

}  // namespace

std::string HumanBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (std::fabs(v) >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  if (unit == 0) return absl::StrCat(bytes, " (", bytes, " B)");
  return absl::StrFormat("%d (%.1f %s)", bytes, v, kUnits[unit]);
}

std::string FormatSlotStatus(const SlotStatus& slot) {
  std::string out;
  Line(&out, "slot", slot.slot_name);
  Line(&out, "database", slot.database);
  Line(&out, "plugin", slot.plugin);
  Line(
      &out, "active",
      slot.active ? absl::StrCat("true (pid ", slot.active_pid, ")") : "false");
  Line(&out, "confirmed_flush_lsn", LsnOrNone(slot.confirmed_flush_lsn));
  Line(&out, "restart_lsn", LsnOrNone(slot.restart_lsn));
  Line(&out, "current_wal_lsn", LsnOrNone(slot.current_wal_lsn));
  Line(&out, "lag_bytes", HumanBytes(slot.lag_bytes));
  Line(&out, "retained_wal_bytes", HumanBytes(slot.retained_bytes));
  Line(&out, "wal_status",
       slot.wal_status.empty() ? "unknown" : slot.wal_status);
  Line(&out, "safe_wal_size",
       slot.safe_wal_size ? HumanBytes(*slot.safe_wal_size) : "unlimited");
  Line(&out, "failover",
       !slot.failover   ? "n/a (PostgreSQL 16 or older)"
       : *slot.failover ? "true"
                        : "false");
  return out;
}

std::string FormatFailoverReport(const FailoverReport& report) {
  std::string out;
  for (const StandbyFacts& s : report.standbys) {
    if (!s.error.empty()) {
      Line(&out, "standby", absl::StrCat(s.node, " not reached: ", s.error));
    } else if (!s.slot_exists) {
      Line(&out, "standby", absl::StrCat(s.node, " slot missing"));
    } else {
      Line(&out, "standby",
           absl::StrCat(s.node,
                        " slot synced=", s.slot_synced ? "true" : "false",
                        " failover=", s.slot_failover ? "true" : "false"));
    }
  }
  Line(&out, "failover_ready",
       report.problems.empty()
           ? "true"
           : absl::StrCat("false (", report.problems.size(), " problem",
                          report.problems.size() == 1 ? "" : "s", ")"));
  for (const std::string& p : report.problems) Line(&out, "problem", p);
  return out;
}

int RunStatusCommand(const Config& config, FILE* out, FILE* err) {
  auto monitor =
      SlotMonitor::Connect(config.postgres.conninfo,
                           static_cast<int>(config.postgres.connect_timeout_s));
  if (!monitor.ok()) {
    absl::FPrintF(err, "outbox-relay: %s\n", monitor.status().message());
    return kExitInternal;
  }
  absl::StatusOr<SlotStatus> slot = (*monitor)->Query(config.postgres.slot);
  if (absl::IsNotFound(slot.status())) {
    absl::FPrintF(err,
                  "outbox-relay: replication slot \"%s\" does not exist "
                  "(outbox-relay creates it on its first start)\n",
                  config.postgres.slot);
    return kExitPrecondition;
  }
  if (!slot.ok()) {
    absl::FPrintF(err, "outbox-relay: %s\n", slot.status().message());
    return kExitInternal;
  }
  absl::FPrintF(out, "%s", FormatSlotStatus(*slot));
  if (slot->failover) {
    absl::StatusOr<FailoverReport> report = CheckFailoverReadiness(
        {config.postgres.conninfo, config.postgres.standby_conninfo,
         config.postgres.slot,
         static_cast<int>(config.postgres.connect_timeout_s)});
    if (report.ok()) {
      absl::FPrintF(out, "%s", FormatFailoverReport(*report));
    } else {
      absl::FPrintF(out, "%-20s unknown (%s)\n", "failover_ready",
                    report.status().message());
    }
  }
  return kExitOk;
}

}  // namespace outbox
