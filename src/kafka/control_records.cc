#include "kafka/control_records.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "simdjson.h"

namespace outbox {

ControlRecords::ControlRecords(KafkaOptions options, std::string topic,
                               std::string pair, std::string slot,
                               int timeout_ms,
                               KafkaConfig::InternalTopics internal)
    : key_prefix_(absl::StrCat(pair, "/", slot, "/")),
      state_(std::move(options), std::move(topic), timeout_ms, internal,
             "the control record") {}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>>
ControlRecords::Read(const std::string& prefix) {
  absl::StatusOr<std::map<std::string, std::string>> values =
      state_.ReadPrefix(absl::StrCat(key_prefix_, prefix));
  if (!values.ok()) return values.status();
  return std::vector<std::pair<std::string, std::string>>(values->begin(),
                                                          values->end());
}

absl::Status ControlRecords::Write(const std::string& suffix,
                                   const std::string& json) {
  return state_.Write(absl::StrCat(key_prefix_, suffix), json);
}

std::string ControlPair(const std::string& slot_marker_id,
                        const std::string& system_identifier) {
  return slot_marker_id.empty() ? system_identifier : slot_marker_id;
}

std::string PauseRecord::Encode() const {
  std::string out =
      absl::StrCat("{\"paused\":", paused ? "true" : "false", ",\"by\":");
  AppendJsonString(&out, by);
  out += ",\"at\":";
  AppendJsonString(&out, at);
  out += ",\"reason\":";
  AppendJsonString(&out, reason);
  out += "}";
  return out;
}

absl::StatusOr<PauseRecord> PauseRecord::Parse(absl::string_view json) {
  const auto malformed = [json](absl::string_view why) {
    return absl::DataLossError(absl::StrCat("malformed pause record (", why,
                                            "): ", json.substr(0, 200)));
  };
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(json.data(), json.size()).get(root) != simdjson::SUCCESS) {
    return malformed("not JSON");
  }
  PauseRecord r;
  if (root["paused"].get(r.paused) != simdjson::SUCCESS) {
    return malformed("no boolean \"paused\"");
  }
  for (auto [name, field] : {std::pair<const char*, std::string*>{"by", &r.by},
                             {"at", &r.at},
                             {"reason", &r.reason}}) {
    std::string_view text;
    simdjson::error_code e = root[name].get(text);
    if (e == simdjson::SUCCESS) {
      *field = std::string(text);
    } else if (e != simdjson::NO_SUCH_FIELD) {
      return malformed(absl::StrCat("\"", name, "\" is not a string"));
    }
  }
  return r;
}

std::string Rfc3339Now() {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(),
                          absl::UTCTimeZone());
}

}  // namespace outbox
