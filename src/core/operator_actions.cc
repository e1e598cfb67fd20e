#include "core/operator_actions.h"

#include <algorithm>
#include <map>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/logging.h"
#include "simdjson.h"

namespace outbox {
namespace {

constexpr char kOperator[] = "operator/";
constexpr char kApplied[] = "/applied";
constexpr char kIds[] = "/ids/";

// Appends the strings of `o`'s array "event_ids" (absent: none) to *ids.
bool Ids(simdjson::dom::object o, std::vector<std::string>* ids) {
  simdjson::dom::array array;
  simdjson::error_code e = o["event_ids"].get(array);
  if (e == simdjson::NO_SUCH_FIELD) return true;
  if (e != simdjson::SUCCESS) return false;
  for (simdjson::dom::element element : array) {
    std::string_view id;
    if (element.get(id) != simdjson::SUCCESS) return false;
    ids->emplace_back(id);
  }
  return true;
}

void AppendIds(std::string* out, const std::vector<std::string>& ids) {
  *out += "\"event_ids\":[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) *out += ",";
    AppendJsonString(out, ids[i]);
  }
  *out += "]";
}

void Field(std::string* out, absl::string_view name, absl::string_view value) {
  absl::StrAppend(out, out->size() > 1 ? "," : "", "\"", name, "\":");
  AppendJsonString(out, value);
}

// A string field of `o`, or "" when absent; false when present but not a
// string.
bool Text(simdjson::dom::object o, const char* name, std::string* out) {
  std::string_view v;
  simdjson::error_code e = o[name].get(v);
  if (e == simdjson::NO_SUCH_FIELD) return true;
  if (e != simdjson::SUCCESS) return false;
  *out = std::string(v);
  return true;
}

// Parses the request `json` into *a; "" or why not.
std::string ParseRequest(absl::string_view json, OperatorAction* a) {
  simdjson::dom::parser parser;
  simdjson::dom::object o;
  if (parser.parse(json.data(), json.size()).get(o) != simdjson::SUCCESS) {
    return "not a JSON object";
  }
  std::string action, from, to;
  if (!Text(o, "action", &action) || !Text(o, "event_id", &a->event_id) ||
      !Text(o, "from_lsn", &from) || !Text(o, "to_lsn", &to) ||
      !Text(o, "by", &a->by) || !Text(o, "at", &a->at) ||
      !Text(o, "reason", &a->reason)) {
    return "a field is not a string";
  }
  if (action == "skip") {
    a->kind = OperatorAction::Kind::kSkip;
    if (a->event_id.empty()) return "skip without event_id";
    return "";
  }
  if (action != "advance")
    return absl::StrCat("unknown action \"", action, "\"");
  a->kind = OperatorAction::Kind::kAdvance;
  absl::StatusOr<Lsn> t = ParseLsn(to);
  if (!t.ok() || *t == kInvalidLsn) return "advance without a valid to_lsn";
  a->to = *t;
  if (!from.empty()) {
    absl::StatusOr<Lsn> f = ParseLsn(from);
    if (!f.ok()) return "advance with a bad from_lsn";
    a->from = *f;
  }
  return "";
}

std::string ParseApplied(absl::string_view json, OperatorAction* a) {
  simdjson::dom::parser parser;
  simdjson::dom::object o;
  if (parser.parse(json.data(), json.size()).get(o) != simdjson::SUCCESS) {
    return "not a JSON object";
  }
  if (!Text(o, "applied_at", &a->applied_at)) return "bad applied_at";
  if (o["events"].get(a->events) != simdjson::SUCCESS) return "no events";
  if (!Ids(o, &a->event_ids)) return "bad event_ids";
  int64_t pages = 0;
  if (o["id_pages"].get(pages) == simdjson::SUCCESS) a->id_pages = pages;
  bool truncated = false;
  if (o["ids_truncated"].get(truncated) == simdjson::SUCCESS) {
    a->ids_truncated = truncated;
  }
  a->applied = true;
  return "";
}

}  // namespace

std::string OperatorAction::What() const {
  if (kind == Kind::kSkip) return absl::StrCat("skip event ", event_id);
  return absl::StrCat("advance ", FormatLsn(from), "..", FormatLsn(to));
}

std::string OperatorRequestSuffix(const std::string& id) {
  return absl::StrCat(kOperator, id);
}

std::string OperatorAppliedSuffix(const std::string& id) {
  return absl::StrCat(kOperator, id, kApplied);
}

std::string OperatorIdsSuffix(const std::string& id, const std::string& first) {
  return absl::StrCat(kOperator, id, kIds, first);
}

std::string FormatOperatorRequest(const OperatorAction& a) {
  std::string out = "{";
  const bool skip = a.kind == OperatorAction::Kind::kSkip;
  Field(&out, "action", skip ? "skip" : "advance");
  if (skip) {
    Field(&out, "event_id", a.event_id);
  } else {
    Field(&out, "from_lsn", FormatLsn(a.from));
    Field(&out, "to_lsn", FormatLsn(a.to));
  }
  Field(&out, "by", a.by);
  Field(&out, "at", a.at);
  Field(&out, "reason", a.reason);
  out += "}";
  return out;
}

std::string FormatOperatorApplied(const OperatorAction& a) {
  std::string out = "{";
  Field(&out, "applied_at", a.applied_at);
  absl::StrAppend(&out, ",\"events\":", a.events, ",");
  AppendIds(&out, a.event_ids);
  absl::StrAppend(&out, ",\"id_pages\":", a.id_pages, "}");
  return out;
}

std::string FormatOperatorIds(const OperatorIdPage& page) {
  std::string out = "{";
  AppendIds(&out, page.event_ids);
  out += "}";
  return out;
}

std::vector<OperatorAction> ParseOperatorRecords(
    const std::vector<std::pair<std::string, std::string>>& records,
    std::vector<std::string>* malformed) {
  std::map<std::string, OperatorAction> by_id;
  std::vector<std::pair<std::string, const std::string*>> applied;
  // By action id, in key order (the first id's position).
  std::map<std::string, std::map<std::string, const std::string*>> pages;
  for (const auto& [key, value] : records) {
    size_t at = key.rfind(kOperator);
    if (at == std::string::npos) continue;
    std::string id = key.substr(at + sizeof(kOperator) - 1);
    if (size_t ids = id.find(kIds); ids != std::string::npos) {
      pages[id.substr(0, ids)][id.substr(ids + sizeof(kIds) - 1)] = &value;
      continue;
    }
    if (absl::EndsWith(id, kApplied)) {
      id.resize(id.size() - (sizeof(kApplied) - 1));
      applied.emplace_back(id, &value);
      continue;
    }
    OperatorAction a;
    a.id = id;
    if (std::string why = ParseRequest(value, &a); !why.empty()) {
      malformed->push_back(absl::StrCat(key, ": ", why));
      continue;
    }
    by_id[id] = std::move(a);
  }
  for (const auto& [id, value] : applied) {
    auto it = by_id.find(id);
    if (it == by_id.end()) continue;  // its request is gone: nothing to do
    if (std::string why = ParseApplied(*value, &it->second); !why.empty()) {
      malformed->push_back(absl::StrCat(OperatorAppliedSuffix(id), ": ", why));
    }
  }
  std::vector<OperatorAction> out;
  out.reserve(by_id.size());
  for (auto& [id, a] : by_id) {
    // The pages' ids first (in the order dropped), then the applied
    // record's; each once (pages of an interrupted session overlap).
    std::vector<std::string> ids;
    for (const auto& [first, value] : pages[id]) {
      simdjson::dom::parser parser;
      simdjson::dom::object o;
      if (parser.parse(value->data(), value->size()).get(o) !=
              simdjson::SUCCESS ||
          !Ids(o, &ids)) {
        malformed->push_back(
            absl::StrCat(OperatorIdsSuffix(id, first), ": bad event_ids"));
      }
    }
    if (!ids.empty()) {
      ids.insert(ids.end(), a.event_ids.begin(), a.event_ids.end());
      a.event_ids.clear();
      absl::flat_hash_set<std::string> seen;
      for (std::string& e : ids) {
        if (seen.insert(e).second) a.event_ids.push_back(std::move(e));
      }
    }
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<OperatorAction> OperatorActions::Add(
    const std::vector<OperatorAction>& actions) {
  std::vector<OperatorAction> added;
  for (const OperatorAction& a : actions) {
    if (a.applied) continue;
    const bool known =
        std::any_of(pending_.begin(), pending_.end(),
                    [&a](const OperatorAction& p) { return p.id == a.id; });
    if (known) continue;
    pending_.push_back(a);
    pending_.back().events = 0;
    pending_.back().event_ids.clear();
    pending_.back().id_pages = 0;
    pending_.back().ids_truncated = false;
    progress_.emplace_back();
    if (a.kind == OperatorAction::Kind::kSkip) ++skips_;
    added.push_back(pending_.back());
  }
  return added;
}

std::vector<OperatorAction> OperatorActions::pending() const {
  std::vector<OperatorAction> out;
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (!progress_[i].done) out.push_back(pending_[i]);
  }
  return out;
}

int OperatorActions::Match(absl::string_view event_id, Lsn commit_lsn) const {
  for (size_t i = 0; i < pending_.size(); ++i) {
    const OperatorAction& a = pending_[i];
    if (progress_[i].done) continue;
    if (a.kind == OperatorAction::Kind::kSkip
            ? !event_id.empty() && event_id == a.event_id
            : commit_lsn != kInvalidLsn && commit_lsn < a.to) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

std::optional<OperatorIdPage> OperatorActions::Dropped(
    int index, absl::string_view event_id, Lsn commit_lsn, Lsn lsn) {
  OperatorAction& a = pending_[index];
  Progress& p = progress_[index];
  ++a.events;
  p.in_open_transaction = true;
  if (a.event_ids.empty()) {
    p.page_first = absl::StrFormat("%016X-%016X", commit_lsn, lsn);
  }
  a.event_ids.emplace_back(event_id);
  if (a.event_ids.size() < kMaxAppliedIds) return std::nullopt;
  ++a.id_pages;
  OperatorIdPage page{a.id, std::move(p.page_first), std::move(a.event_ids)};
  a.event_ids.clear();
  return page;
}

void OperatorActions::Committed(Lsn end_lsn) {
  for (Progress& p : progress_) {
    if (!p.in_open_transaction) continue;
    p.in_open_transaction = false;
    p.end = std::max(p.end, end_lsn);
  }
}

std::vector<OperatorAction> OperatorActions::Complete(Lsn confirmed) {
  std::vector<OperatorAction> done;
  for (size_t i = 0; i < pending_.size(); ++i) {
    Progress& p = progress_[i];
    if (p.done) continue;
    const OperatorAction& a = pending_[i];
    const bool complete = a.kind == OperatorAction::Kind::kSkip
                              ? p.end != kInvalidLsn && confirmed >= p.end
                              : confirmed >= a.to;
    if (!complete) continue;
    p.done = true;
    done.push_back(a);
  }
  return done;
}

}  // namespace outbox
