// Logging: one line per event to stderr, readable text (default) or JSON
// lines. Thread safe (a line is written with one write(2)).
//
//   Log(Severity::kInfo, "connected", {{"slot", slot}, {"lsn", lsn}});
//   text: 2026-11-22T05:00:00.123Z INFO connected slot=outbox_relay lsn=0/1
//   json: {"ts":"2026-11-22T05:00:00.123Z","level":"info","msg":"connected",
//          "slot":"outbox_relay","lsn":"0/1"}
#ifndef OUTBOX_COMMON_LOGGING_H_
#define OUTBOX_COMMON_LOGGING_H_

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace outbox {

enum class Severity { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// Process-wide settings; call before logging starts.
void SetLogFormat(bool json);
void SetLogSeverity(Severity level);
bool ParseSeverity(absl::string_view name, Severity* out);

using LogField = std::pair<absl::string_view, std::string>;

void Log(Severity level, absl::string_view msg,
         std::initializer_list<LogField> fields = {});

// One line per entry, `msg name=value` (JSON: "name":"value"): a table of
// settings at start-up (the effective configuration, the producer's
// properties), each line greppable on its own.
void LogEntries(
    Severity level, absl::string_view msg,
    const std::vector<std::pair<std::string, std::string>>& entries);

// The text Log() would write, without the timestamp (for tests).
std::string FormatLogLine(bool json, Severity level, absl::string_view msg,
                          std::initializer_list<LogField> fields);

// Appends `s` as a JSON string literal (quotes, backslash, \n \r \t \b \f
// escaped as Jackson does, other control characters as \u00XX; other bytes
// as they are). For every JSON the daemons write, Debezium-compatible
// envelopes included.
void AppendJsonString(std::string* out, absl::string_view s);

}  // namespace outbox

#endif  // OUTBOX_COMMON_LOGGING_H_
