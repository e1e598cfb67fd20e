#include "core/checkpoint.h"

#include <climits>
#include <cstdint>
#include <string_view>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
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
  std::string out =
      absl::StrCat("{\"v\":1,\"system_identifier\":", Quoted(system_identifier),
                   ",\"slot\":", Quoted(slot));
  if (timeline > 0) absl::StrAppend(&out, ",\"timeline\":", timeline);
  absl::StrAppend(&out, ",\"end_lsn\":", Quoted(FormatLsn(end_lsn)));
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
  int64_t timeline = 0;
  simdjson::error_code terr = root["timeline"].get(timeline);
  if (terr == simdjson::SUCCESS) {
    if (timeline <= 0 || timeline > INT32_MAX) {
      return Malformed(value, "bad timeline");
    }
    c.timeline = static_cast<int>(timeline);
  } else if (terr != simdjson::NO_SUCH_FIELD) {
    return Malformed(value, "bad timeline");
  }
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

bool Checkpoint::After(const Checkpoint& o) const {
  return std::tie(timeline, end_lsn, partial_commit_lsn, partial_events) >
         std::tie(o.timeline, o.end_lsn, o.partial_commit_lsn,
                  o.partial_events);
}

absl::StatusOr<std::vector<TimelineSwitch>> ParseTimelineHistory(
    absl::string_view content) {
  std::vector<TimelineSwitch> out;
  for (absl::string_view line : absl::StrSplit(content, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> f =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    TimelineSwitch t;
    absl::StatusOr<Lsn> end =
        f.size() >= 2 ? ParseLsn(f[1]) : absl::InvalidArgumentError("");
    if (!absl::SimpleAtoi(f[0], &t.timeline) || t.timeline <= 0 || !end.ok()) {
      return absl::DataLossError(
          absl::StrCat("malformed timeline history line: ", line));
    }
    t.end = *end;
    out.push_back(t);
  }
  return out;
}

absl::StatusOr<Checkpoint> TrustedCheckpoint(
    const Checkpoint& checkpoint, absl::string_view system_identifier,
    int timeline, const std::vector<TimelineSwitch>& history,
    std::string* note) {
  if (note != nullptr) note->clear();
  Checkpoint c = checkpoint;
  c.timeline = timeline;
  if (checkpoint.end_lsn == kInvalidLsn &&
      checkpoint.partial_commit_lsn == kInvalidLsn) {
    return c;  // nothing published: nothing to trust
  }
  if (checkpoint.system_identifier != system_identifier) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the exactly-once checkpoint of slot ", checkpoint.slot,
        " was written for database system ", checkpoint.system_identifier,
        " but this server is system ", system_identifier,
        ": refusing to apply it (it would skip or repeat events); use a new "
        "checkpoint topic for this system"));
  }
  // An older record has no timeline: read as written on this one.
  if (checkpoint.timeline == 0 || checkpoint.timeline == timeline) return c;
  if (checkpoint.timeline > timeline) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the exactly-once checkpoint of slot ", checkpoint.slot,
        " was written on timeline ", checkpoint.timeline, " at ",
        FormatLsn(checkpoint.end_lsn), " but this server is on timeline ",
        timeline,
        ", an earlier one: it is not the promoted primary (an old primary "
        "back up?); point the relay at the current primary"));
  }
  const TimelineSwitch* fork = nullptr;
  for (const TimelineSwitch& t : history) {
    if (t.timeline == checkpoint.timeline) fork = &t;
  }
  if (fork == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the exactly-once checkpoint of slot ", checkpoint.slot,
        " was written on timeline ", checkpoint.timeline,
        ", which is not in the history of this server's timeline ", timeline,
        ": where they forked cannot be known; refusing to skip or repeat "
        "events (use a new checkpoint topic to publish this server's slot "
        "from its position)"));
  }
  // WAL of the checkpoint's timeline past the fork was lost; this
  // timeline's transactions from there on were never published.
  const bool cut =
      c.end_lsn > fork->end || (c.partial_commit_lsn != kInvalidLsn &&
                                c.partial_commit_lsn >= fork->end);
  if (c.end_lsn > fork->end) c.end_lsn = fork->end;
  if (c.partial_commit_lsn != kInvalidLsn &&
      c.partial_commit_lsn >= fork->end) {
    c.partial_commit_lsn = kInvalidLsn;
    c.partial_events = 0;
  }
  if (cut && note != nullptr) {
    *note = absl::StrCat(
        "the exactly-once checkpoint at ", FormatLsn(checkpoint.end_lsn),
        " on timeline ", checkpoint.timeline,
        " lies past where this server's timeline ", timeline, " forked off (",
        FormatLsn(fork->end),
        "): trusting it only up to there; transactions of timeline ", timeline,
        " from ", FormatLsn(fork->end), " on are published");
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
