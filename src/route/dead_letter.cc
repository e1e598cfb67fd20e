#include "route/dead_letter.h"

#include "absl/strings/str_cat.h"

namespace outbox {

const Record& DeadLetter::Build(absl::string_view topic,
                                absl::string_view event_id,
                                absl::string_view value, bool value_is_null,
                                absl::string_view error,
                                std::initializer_list<Extra> extra) {
  // Every text first, so growing the vector cannot move a viewed string.
  texts_.clear();
  texts_.reserve(3 + extra.size());
  texts_.emplace_back(event_id);
  texts_.emplace_back(error);
  for (const Extra& e : extra) texts_.emplace_back(e.second);
  const bool truncated = !value_is_null && value.size() > kMaxValue;
  if (truncated) texts_.push_back(absl::StrCat(value.size()));

  Record& r = record_;
  r.topic.assign(topic.data(), topic.size());
  r.key = texts_[0];
  r.key_is_null = event_id.empty();
  r.event_id = texts_[0];
  r.value_is_null = value_is_null;
  r.value = value_is_null
                ? absl::string_view()
                : value.substr(0, truncated ? kTruncatedValue : value.size());
  r.headers.clear();
  r.headers.push_back({"id", texts_[0], event_id.empty()});
  r.headers.push_back({"error", texts_[1], false});
  size_t i = 2;
  for (const Extra& e : extra) {
    r.headers.push_back({std::string(e.first), texts_[i++], false});
  }
  if (truncated) r.headers.push_back({"truncated", texts_[i], false});
  return r;
}

}  // namespace outbox
