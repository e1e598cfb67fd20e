#include "core/checkpoint.h"

#include <string_view>

#include "absl/strings/str_cat.h"
#include "simdjson.h"

namespace outbox {
namespace {

absl::Status Malformed(absl::string_view value, absl::string_view why) {
  return absl::DataLossError(absl::StrCat("malformed checkpoint record (", why,
                                          "): ", value.substr(0, 200)));
}

// The only strings written are LSNs, decimal identifiers and slot names
// (PostgreSQL allows [a-z0-9_] only), so nothing needs escaping; the parser
// below still reads any JSON string.
std::string Quoted(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

}  // namespace

std::string Checkpoint::Key(absl::string_view system_identifier,
                            absl::string_view slot) {
  return absl::StrCat(system_identifier, "/", slot);
}

std::string Checkpoint::Encode() const {
  std::string out = absl::StrCat(
      "{\"v\":1,\"system_identifier\":", Quoted(system_identifier),
      ",\"slot\":", Quoted(slot), ",\"end_lsn\":", Quoted(FormatLsn(end_lsn)));
  if (partial_commit_lsn != kInvalidLsn) {
    absl::StrAppend(&out, ",\"partial\":{\"commit_lsn\":",
                    Quoted(FormatLsn(partial_commit_lsn)),
                    ",\"events\":", partial_events, "}");
  }
  out += "}";
  return out;
}

absl::StatusOr<Checkpoint> Checkpoint::Parse(absl::string_view value) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(value.data(), value.size()).get(root) != simdjson::SUCCESS) {
    return Malformed(value, "not JSON");
  }
  int64_t version = 0;
  if (root["v"].get(version) != simdjson::SUCCESS || version != 1) {
    return Malformed(value, "unknown version");
  }
  Checkpoint c;
  std::string_view text;
  if (root["system_identifier"].get(text) != simdjson::SUCCESS) {
    return Malformed(value, "no system_identifier");
  }
  c.system_identifier = std::string(text);
  if (root["slot"].get(text) != simdjson::SUCCESS) {
    return Malformed(value, "no slot");
  }
  c.slot = std::string(text);
  if (root["end_lsn"].get(text) != simdjson::SUCCESS) {
    return Malformed(value, "no end_lsn");
  }
  absl::StatusOr<Lsn> lsn =
      ParseLsn(absl::string_view(text.data(), text.size()));
  if (!lsn.ok()) return Malformed(value, "bad end_lsn");
  c.end_lsn = *lsn;
  simdjson::dom::element partial;
  simdjson::error_code err = root["partial"].get(partial);
  if (err == simdjson::SUCCESS) {
    if (partial["commit_lsn"].get(text) != simdjson::SUCCESS ||
        !(lsn = ParseLsn(absl::string_view(text.data(), text.size()))).ok() ||
        *lsn == kInvalidLsn || *lsn < c.end_lsn) {
      return Malformed(value, "bad partial.commit_lsn");
    }
    c.partial_commit_lsn = *lsn;
    if (partial["events"].get(c.partial_events) != simdjson::SUCCESS ||
        c.partial_events <= 0) {
      return Malformed(value, "bad partial.events");
    }
  } else if (err != simdjson::NO_SUCH_FIELD) {
    return Malformed(value, "bad partial");
  }
  return c;
}

void CheckpointFilter::Begin(Lsn commit_lsn) {
  if (commit_lsn < end_lsn_) {
    to_drop_ = -1;  // committed at or before the checkpoint: all published
  } else if (commit_lsn == partial_commit_lsn_) {
    to_drop_ = partial_events_;
  } else {
    to_drop_ = 0;
  }
}

bool CheckpointFilter::Drop() {
  if (to_drop_ == 0) return false;
  if (to_drop_ > 0) --to_drop_;
  ++dropped_;
  return true;
}

}  // namespace outbox
