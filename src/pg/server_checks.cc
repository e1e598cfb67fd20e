#include "pg/server_checks.h"

#include "absl/strings/str_cat.h"

namespace outbox {

absl::Status CheckLogicalDecoding(const WalLevelReport& report) {
  if (report.wal_level == "logical") return absl::OkStatus();
  if (!report.effective_wal_level.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "wal_level is '", report.wal_level,
        "' but logical decoding needs wal_level = logical: run ALTER SYSTEM "
        "SET wal_level = logical; and restart PostgreSQL"));
  }
  // PostgreSQL 19+: a logical slot raises the effective level by itself.
  if (report.wal_level != "replica") {
    return absl::FailedPreconditionError(absl::StrCat(
        "wal_level is '", report.wal_level,
        "' but logical decoding needs wal_level = replica (PostgreSQL 19 "
        "turns logical decoding on with the first logical slot) or logical: "
        "run ALTER SYSTEM SET wal_level = replica; and restart PostgreSQL"));
  }
  if (report.in_recovery && *report.effective_wal_level != "logical") {
    return absl::FailedPreconditionError(absl::StrCat(
        "this standby's effective_wal_level is '", *report.effective_wal_level,
        "': it decodes only when its primary has logical decoding on (a "
        "logical slot on the primary, or wal_level = logical there)"));
  }
  return absl::OkStatus();
}

std::optional<std::string> IdleSlotTimeoutWarning(int64_t idle_timeout_s,
                                                  int64_t expected_outage_s) {
  if (idle_timeout_s <= 0 || expected_outage_s <= 0 ||
      idle_timeout_s >= expected_outage_s) {
    return std::nullopt;
  }
  return absl::StrCat(
      "idle_replication_slot_timeout is ", idle_timeout_s,
      " s, shorter than postgres.expected_outage_s (", expected_outage_s,
      " s): if every relay instance is down that long, PostgreSQL "
      "invalidates the slot at its next checkpoint and the events committed "
      "meanwhile are lost to the relay; raise it (ALTER SYSTEM SET "
      "idle_replication_slot_timeout = '",
      (expected_outage_s + 59) / 60,
      "min'; SELECT pg_reload_conf();) or set it to 0, or lower "
      "postgres.expected_outage_s");
}

std::string FormatStartupCheck(const StartupCheck& check) {
  std::string text =
      check.status.ok() ? check.detail : std::string(check.status.message());
  // One line whatever the server said.
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return absl::StrCat(check.status.ok() ? "ok " : "FAIL ", check.check, ": ",
                      text);
}

}  // namespace outbox
