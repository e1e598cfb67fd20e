#include "cli/operator_command.h"

#include <unistd.h>

#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "audit/operator_skips.h"
#include "core/operator_actions.h"
#include "daemon/exit_code.h"
#include "kafka/control_records.h"
#include "kafka/operator_records.h"
#include "pg/pg_connection.h"

namespace outbox {
namespace {

struct SlotState {
  bool active = false;
  std::string active_pid;
  Lsn confirmed = kInvalidLsn;
  std::string system_id;
};

// The slot's holder and position, and the server's system identifier.
// NotFound when the slot does not exist.
absl::StatusOr<SlotState> ReadSlot(const Config& config) {
  absl::StatusOr<std::unique_ptr<PgConnection>> pg =
      ConnectPostgres(config, "outbox-relay operator");
  if (!pg.ok()) return pg.status();
  absl::StatusOr<PgResult> r = (*pg)->QueryParams(
      "SELECT s.active, coalesce(s.active_pid::text, ''), "
      "coalesce(s.confirmed_flush_lsn::text, ''), "
      "(SELECT system_identifier::text FROM pg_control_system()) "
      "FROM pg_replication_slots s WHERE s.slot_name = $1",
      {config.postgres.slot});
  if (!r.ok()) return r.status();
  if (PgConnection::Rows(*r) == 0) {
    return absl::NotFoundError(absl::StrCat(
        "replication slot \"", config.postgres.slot, "\" does not exist"));
  }
  SlotState s;
  s.active = PgConnection::Value(*r, 0, 0) == "t";
  s.active_pid = PgConnection::Value(*r, 0, 1);
  const std::string confirmed = PgConnection::Value(*r, 0, 2);
  if (!confirmed.empty()) {
    absl::StatusOr<Lsn> lsn = ParseLsn(confirmed);
    if (lsn.ok()) s.confirmed = *lsn;
  }
  s.system_id = PgConnection::Value(*r, 0, 3);
  return s;
}

// The pair's pause record; nullopt when there is none.
absl::StatusOr<std::optional<PauseRecord>> ReadPause(ControlRecords* records) {
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> read =
      records->Read(kPauseSuffix);
  if (!read.ok()) return read.status();
  const std::string key = absl::StrCat(records->key_prefix(), kPauseSuffix);
  for (const auto& [k, v] : *read) {
    if (k != key) continue;
    absl::StatusOr<PauseRecord> p = PauseRecord::Parse(v);
    if (!p.ok()) return p.status();
    return std::optional<PauseRecord>(*p);
  }
  return std::optional<PauseRecord>();
}

}  // namespace

std::string DefaultOperatorName() {
  const char* user = getenv("USER");
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return absl::StrCat(user != nullptr && *user != '\0' ? user : "unknown", "@",
                      host[0] != '\0' ? host : "unknown");
}

int RunOperatorCommand(const Config& config, CommandLine::Command command,
                       const CommandLine::OperatorAction& flags, FILE* out,
                       FILE* err) {
  const bool skip = command == CommandLine::Command::kSkip;
  const char* name = skip ? "skip" : "advance";
  OperatorAction a;
  a.kind = skip ? OperatorAction::Kind::kSkip : OperatorAction::Kind::kAdvance;
  a.event_id = flags.event;
  a.reason = flags.reason;
  a.by = flags.by.empty() ? DefaultOperatorName() : flags.by;
  if (!skip) {
    absl::StatusOr<Lsn> to = ParseLsn(flags.to);
    if (!to.ok() || *to == kInvalidLsn) {
      absl::FPrintF(err,
                    "outbox-relay advance: --to needs an LSN such as "
                    "0/16B3748, got \"%s\"\n",
                    flags.to);
      return kExitUsage;
    }
    a.to = *to;
  }
  absl::StatusOr<SlotState> slot = ReadSlot(config);
  if (absl::IsNotFound(slot.status())) {
    absl::FPrintF(err, "outbox-relay %s: refused: %s\n", name,
                  slot.status().message());
    return kExitPrecondition;
  }
  if (!slot.ok()) {
    absl::FPrintF(err, "outbox-relay %s: %s\n", name, slot.status().message());
    return kExitInternal;
  }
  std::unique_ptr<ControlRecords> control =
      OpenControlRecords(config, slot->system_id);
  ControlRecords& records = *control;
  if (slot->active) {
    absl::StatusOr<std::optional<PauseRecord>> pause = ReadPause(&records);
    if (!pause.ok()) {
      absl::FPrintF(err,
                    "outbox-relay %s: cannot read the pause record, and the "
                    "slot is in use: %s\n",
                    name, pause.status().message());
      return kExitInternal;
    }
    if (!pause->has_value() || !(*pause)->paused) {
      absl::FPrintF(
          err,
          "outbox-relay %s: refused: a relay is publishing from slot \"%s\" "
          "(pid %s) and is not paused; stop or pause it first "
          "(docs/operations/skip-and-advance.md)\n",
          name, config.postgres.slot, slot->active_pid);
      return kExitPrecondition;
    }
  }
  if (!skip) {
    a.from = slot->confirmed;
    if (a.to <= slot->confirmed) {
      absl::FPrintF(err,
                    "outbox-relay advance: refused: slot \"%s\" is already "
                    "confirmed at %s, at or past %s: nothing to advance past\n",
                    config.postgres.slot, FormatLsn(slot->confirmed),
                    FormatLsn(a.to));
      return kExitPrecondition;
    }
  }
  if (absl::Status s = WriteOperatorRequest(&records, &a); !s.ok()) {
    absl::FPrintF(err, "outbox-relay %s: cannot write the record: %s\n", name,
                  s.message());
    return kExitInternal;
  }
  absl::FPrintF(out, "recorded  %s\n", a.What());
  absl::FPrintF(out, "by        %s\n", a.by);
  absl::FPrintF(out, "at        %s\n", a.at);
  if (!a.reason.empty()) absl::FPrintF(out, "reason    %s\n", a.reason);
  absl::FPrintF(out, "record    %s%s in %s\n", records.key_prefix(),
                OperatorRequestSuffix(a.id), config.kafka.state_topic);
  absl::FPrintF(out, "relay     %s\n",
                slot->active ? "paused: applied when it resumes"
                             : "stopped: applied when it next starts");
  return kExitOk;
}

}  // namespace outbox
