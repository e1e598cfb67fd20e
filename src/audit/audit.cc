#include "audit/audit.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace outbox {
namespace {

constexpr size_t kMaxExamples = 5;

void Example(AuditReport* r, int* count, absl::string_view what,
             absl::string_view id) {
  if ((*count)++ < static_cast<int>(kMaxExamples)) {
    r->examples.push_back(absl::StrCat(what, " ", id));
  }
}

// "topic/partition@offset" ("@?" when the offset is not known).
std::string Position(const PublishedRecord& rec) {
  return absl::StrCat(rec.topic, "/", rec.partition, "@",
                      rec.offset >= 0 ? absl::StrCat(rec.offset) : "?");
}

}  // namespace

AuditReport Audit(const std::vector<CommittedEvent>& committed,
                  const std::vector<PublishedRecord>& records,
                  const OperatorSkips* skips) {
  AuditReport r;
  r.committed = static_cast<int64_t>(committed.size());
  r.records = static_cast<int64_t>(records.size());
  absl::flat_hash_map<std::string, const CommittedEvent*> by_id;
  by_id.reserve(committed.size());
  for (const CommittedEvent& e : committed) by_id[e.id] = &e;

  // First delivery of each id, in partition order.
  absl::flat_hash_map<std::string, const PublishedRecord*> seen;
  seen.reserve(committed.size());
  // Where a record was read: the same topic, partition and offset read
  // again is the consumer reading it twice, not a second copy in Kafka.
  absl::flat_hash_set<std::tuple<absl::string_view, int32_t, int64_t>>
      positions;
  positions.reserve(records.size());
  // Per key: the seq of the newest first-delivered event so far, and
  // separately per partition so interleaving partitions cannot fake a
  // violation (one key lives on one partition unless misrouted).
  std::map<std::pair<std::string, std::string>, int64_t> last_seq;
  int unknown_ex = 0, misrouted_ex = 0, order_ex = 0, missing_ex = 0;
  int duplicate_ex = 0;
  for (const PublishedRecord& rec : records) {
    if (rec.offset >= 0 &&
        !positions.emplace(rec.topic, rec.partition, rec.offset).second) {
      ++r.read_twice;
      continue;
    }
    auto it = by_id.find(rec.id);
    if (it == by_id.end()) {
      ++r.unknown;
      Example(&r, &unknown_ex, "unknown", rec.id);
      continue;
    }
    auto [first, is_first] = seen.emplace(rec.id, &rec);
    if (!is_first) {
      ++r.duplicates;
      Example(&r, &duplicate_ex, "duplicate",
              absl::StrCat(rec.id, " at ", Position(rec), ", first at ",
                           Position(*first->second)));
      continue;
    }
    ++r.delivered;
    const CommittedEvent& e = *it->second;
    if (rec.key != e.key) {
      ++r.misrouted;
      Example(&r, &misrouted_ex, "misrouted", rec.id);
    }
    auto slot =
        std::make_pair(rec.key, absl::StrCat(rec.topic, "/", rec.partition));
    auto [pos, inserted] = last_seq.emplace(slot, e.seq);
    if (!inserted) {
      if (e.seq < pos->second) {
        ++r.order_violations;
        Example(&r, &order_ex, "out-of-order", rec.id);
      } else {
        pos->second = e.seq;
      }
    }
  }
  for (size_t i : MissingEvents(committed, records)) {
    if (skips != nullptr) {
      auto skip = skips->find(committed[i].id);
      if (skip != skips->end()) {
        if (r.skipped_by_operator++ < static_cast<int64_t>(kMaxSkippedListed)) {
          r.skipped.emplace_back(committed[i].id, skip->second);
        }
        continue;
      }
    }
    ++r.missing;
    Example(&r, &missing_ex, "missing", committed[i].id);
  }
  return r;
}

std::vector<size_t> MissingEvents(const std::vector<CommittedEvent>& committed,
                                  const std::vector<PublishedRecord>& records) {
  absl::flat_hash_set<absl::string_view> published;
  published.reserve(records.size());
  for (const PublishedRecord& rec : records) published.insert(rec.id);
  std::vector<size_t> out;
  for (size_t i = 0; i < committed.size(); ++i) {
    if (!published.contains(committed[i].id)) out.push_back(i);
  }
  std::stable_sort(out.begin(), out.end(), [&](size_t a, size_t b) {
    return committed[a].seq < committed[b].seq;
  });
  return out;
}

bool AuditReport::Passed(int64_t max_duplicates) const {
  return missing == 0 && unknown == 0 && misrouted == 0 &&
         order_violations == 0 &&
         (max_duplicates < 0 || duplicates <= max_duplicates);
}

std::string AuditReport::ToText() const {
  std::string s =
      rows.empty() ? "" : absl::StrCat("rows               ", rows, "\n");
  absl::StrAppend(
      &s, "committed events   ", committed, "\nrecords read       ", records,
      "\ndelivered          ", delivered, "\nmissing            ", missing,
      "\nduplicates         ", duplicates,
      read_twice > 0 ? absl::StrCat("\nread twice         ", read_twice,
                                    " (the same offset again: the consumer's "
                                    "repeat, not counted)")
                     : "",
      "\nunknown            ",
      rows.empty() ? absl::StrCat(unknown)
                   : "not counted (records of other events are left out)",
      "\nmisrouted          ", misrouted, "\norder violations   ",
      order_violations, "\n");
  if (skipped_by_operator > 0) {
    absl::StrAppend(&s, "skipped by operator ", skipped_by_operator, "\n");
  }
  for (const std::string& e : examples) absl::StrAppend(&s, "  ", e, "\n");
  for (const auto& [id, k] : skipped) {
    absl::StrAppend(&s, "  skipped by operator ", id, " (by ", k.by, ", at ",
                    k.at, k.reason.empty() ? "" : ", reason: ", k.reason, "; ",
                    k.action, ")\n");
  }
  if (skipped_by_operator > static_cast<int64_t>(skipped.size())) {
    absl::StrAppend(&s, "  ... and ", skipped_by_operator - skipped.size(),
                    " more skipped by operator\n");
  }
  return s;
}

std::string AuditReport::ToJson() const {
  std::string ex;
  for (const std::string& e : examples) {
    absl::StrAppend(&ex, ex.empty() ? "" : ",", "\"", e, "\"");
  }
  std::string sk;
  for (const auto& [id, k] : skipped) {
    sk += sk.empty() ? "{\"id\":" : ",{\"id\":";
    AppendJsonString(&sk, id);
    for (const auto& [name, value] :
         {std::pair<const char*, const std::string*>{"action", &k.action},
          {"by", &k.by},
          {"at", &k.at},
          {"reason", &k.reason}}) {
      absl::StrAppend(&sk, ",\"", name, "\":");
      AppendJsonString(&sk, *value);
    }
    sk += "}";
  }
  return absl::StrCat(
      "{\"committed\":", committed, ",\"records\":", records,
      ",\"delivered\":", delivered, ",\"missing\":", missing,
      ",\"duplicates\":", duplicates, ",\"read_twice\":", read_twice,
      ",\"unknown\":", unknown, ",\"misrouted\":", misrouted,
      ",\"order_violations\":", order_violations,
      ",\"skipped_by_operator\":", skipped_by_operator, ",\"examples\":[", ex,
      "],\"skipped\":[", sk, "]",
      rows.empty() ? "" : absl::StrCat(",\"rows\":\"", rows, "\""), "}");
}

}  // namespace outbox
