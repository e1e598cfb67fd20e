#include "config/debezium_mapping.h"

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/logging.h"

namespace outbox {
namespace debezium {
namespace {

constexpr absl::string_view kRoutedByValue = "${routedByValue}";

// Debezium 3.4.0 added the fourth context header, runId (DBZ-9541).
constexpr int kRunIdSince[] = {3, 4};

}  // namespace

std::string Quote(absl::string_view s) {
  std::string out;
  AppendJsonString(&out, s);
  return absl::StrReplaceAll(out, {{"$", "$$"}});  // no ${VAR} expansion
}

std::string ConninfoValue(absl::string_view s) {
  if (!s.empty() && s.find_first_of(" '\\") == absl::string_view::npos) {
    return std::string(s);
  }
  std::string out = "'";
  for (char c : s) {
    if (c == '\'' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "'";
}

std::optional<std::string> PlainTableName(absl::string_view entry) {
  std::string name;
  for (size_t i = 0; i < entry.size(); ++i) {
    char c = entry[i];
    if (c == '\\' && i + 1 < entry.size() && entry[i + 1] == '.') {
      name.push_back('.');
      ++i;
    } else if (absl::ascii_isalnum(c) || c == '_' || c == '.') {
      name.push_back(c);
    } else {
      return std::nullopt;
    }
  }
  if (std::count(name.begin(), name.end(), '.') != 1) return std::nullopt;
  return name;
}

std::optional<std::string> TopicTemplate(absl::string_view replacement,
                                         absl::string_view column) {
  std::string out;
  for (size_t i = 0; i < replacement.size(); ++i) {
    if (absl::StartsWith(replacement.substr(i), kRoutedByValue)) {
      absl::StrAppend(&out, "{", column, "}");
      i += kRoutedByValue.size() - 1;
      continue;
    }
    char c = replacement[i];
    if (c == '$' || c == '\\') return std::nullopt;
    if (c == '{' || c == '}') out.push_back(c);
    out.push_back(c);
  }
  return out;
}

const std::map<std::string, std::string>& IgnoredKeys() {
  static const auto* keys = new std::map<std::string, std::string>{
      {"tasks.max", "the relay is one process per slot"},
      {"tombstones.on.delete", "the Event Router drops deletes"},
      {"max.batch.size", "see limits.*"},
      {"max.queue.size", "see limits.*"},
      {"max.queue.size.in.bytes", "see limits.*"},
      {"poll.interval.ms", "the relay streams without polling"},
      {"slot.max.retries", "the relay reconnects with backoff"},
      {"slot.retry.delay.ms", "the relay reconnects with backoff"},
      {"retriable.restart.connector.wait.ms",
       "see postgres.reconnect_backoff_*"},
      {"database.tcpKeepAlive", "libpq keeps connections alive by default"},
      {"decimal.handling.mode", "no effect on text and jsonb columns"},
      {"time.precision.mode", "no effect on text and jsonb columns"},
      {"binary.handling.mode", "no effect on text and jsonb columns"},
      {"key.converter.schemas.enable", "see the converters note"},
      {"value.converter.schemas.enable", "see the converters note"},
      {"offset.flush.interval.ms",
       "the relay confirms once Kafka acknowledged"},
      {"heartbeat.interval.ms",
       "Debezium's heartbeat topic is not produced; "
       "postgres.heartbeat_interval_s measures the slot's round trip"},
      {"heartbeat.action.query", "see heartbeat.interval.ms"},
      {"provide.transaction.metadata",
       "the relay produces no transaction-metadata topic"},
      {"errors.tolerance", "see outbox.on_invalid"},
      {"errors.log.enable", "the relay logs every poison event"},
      {"errors.log.include.messages", "the relay logs every poison event"},
  };
  return *keys;
}

absl::StatusOr<bool> WritesRunId(absl::string_view version) {
  std::vector<absl::string_view> parts =
      absl::StrSplit(version, absl::MaxSplits('.', 2));
  int major = 0, minor = 0;
  if (parts.size() < 2 || !absl::SimpleAtoi(parts[0], &major) ||
      !absl::SimpleAtoi(parts[1], &minor) || major < 0 || minor < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--debezium-version \"", version,
                     "\" is not a Debezium version (3.2.3.Final, 3.7)"));
  }
  return major > kRunIdSince[0] ||
         (major == kRunIdSince[0] && minor >= kRunIdSince[1]);
}

}  // namespace debezium
}  // namespace outbox
