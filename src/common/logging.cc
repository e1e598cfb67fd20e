#include "common/logging.h"

#include <unistd.h>

#include <atomic>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace outbox {
namespace {

std::atomic<bool> g_json{false};
std::atomic<int> g_level{static_cast<int>(Severity::kInfo)};

const char* LevelName(Severity level, bool json) {
  switch (level) {
    case Severity::kDebug:
      return json ? "debug" : "DEBUG";
    case Severity::kInfo:
      return json ? "info" : "INFO";
    case Severity::kWarn:
      return json ? "warn" : "WARN";
    case Severity::kError:
      return json ? "error" : "ERROR";
  }
  return "?";
}

bool NeedsQuotes(absl::string_view v) {
  if (v.empty()) return true;
  for (char c : v) {
    if (c == ' ' || c == '"' || c == '=' || c == '\n') return true;
  }
  return false;
}

std::string Render(bool json, absl::string_view ts, Severity level,
                   absl::string_view msg,
                   std::initializer_list<LogField> fields) {
  std::string line;
  if (json) {
    line.push_back('{');
    if (!ts.empty()) {
      line.append("\"ts\":");
      AppendJsonString(&line, ts);
      line.push_back(',');
    }
    absl::StrAppend(&line, "\"level\":\"", LevelName(level, true),
                    "\",\"msg\":");
    AppendJsonString(&line, msg);
    for (const auto& [k, v] : fields) {
      line.push_back(',');
      AppendJsonString(&line, k);
      line.push_back(':');
      AppendJsonString(&line, v);
    }
    line.push_back('}');
  } else {
    if (!ts.empty()) absl::StrAppend(&line, ts, " ");
    absl::StrAppend(&line, LevelName(level, false), " ", msg);
    for (const auto& [k, v] : fields) {
      absl::StrAppend(&line, " ", k, "=");
      if (NeedsQuotes(v)) {
        AppendJsonString(&line, v);
      } else {
        line.append(v);
      }
    }
  }
  return line;
}

}  // namespace

void AppendJsonString(std::string* out, absl::string_view s) {
  out->push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      default:
        if (c < 0x20) {
          absl::StrAppend(out, "\\u00", absl::Hex(c, absl::kZeroPad2));
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

void SetLogFormat(bool json) { g_json = json; }
void SetLogSeverity(Severity level) { g_level = static_cast<int>(level); }

bool ParseSeverity(absl::string_view name, Severity* out) {
  for (Severity l :
       {Severity::kDebug, Severity::kInfo, Severity::kWarn, Severity::kError}) {
    if (name == LevelName(l, true)) {
      *out = l;
      return true;
    }
  }
  return false;
}

std::string FormatLogLine(bool json, Severity level, absl::string_view msg,
                          std::initializer_list<LogField> fields) {
  return Render(json, "", level, msg, fields);
}

void Log(Severity level, absl::string_view msg,
         std::initializer_list<LogField> fields) {
  if (static_cast<int>(level) < g_level) return;
  std::string ts = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(),
                                    absl::UTCTimeZone());
  std::string line = Render(g_json, ts, level, msg, fields);
  line.push_back('\n');
  ssize_t unused = write(STDERR_FILENO, line.data(), line.size());
  (void)unused;
}

void LogEntries(
    Severity level, absl::string_view msg,
    const std::vector<std::pair<std::string, std::string>>& entries) {
  for (const auto& [name, value] : entries) Log(level, msg, {{name, value}});
}

}  // namespace outbox
