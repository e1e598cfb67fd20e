// TopicRegex: Debezium's route.topic.regex / route.topic.replacement (Kafka
// Connect's RegexRouter applied to the routed value): when the regular
// expression matches the whole value, the topic is the replacement with
// its group references filled in; otherwise the topic is the value itself.
//
//   regex "(?<routedByValue>.*)", replacement "outbox.event.${routedByValue}"
//   "order" -> "outbox.event.order"
//
// Regular expressions are ECMAScript (std::regex) plus Java's named groups
// "(?<name>...)"; a replacement refers to groups as $1 or ${name}, and "\"
// takes the next character literally (java.util.regex.Matcher's rules).
// Immutable after Create(); Apply() is thread safe.
#ifndef OUTBOX_ROUTE_TOPIC_REGEX_H_
#define OUTBOX_ROUTE_TOPIC_REGEX_H_

#include <map>
#include <memory>
#include <regex>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace outbox {

class TopicRegex {
 public:
  // InvalidArgument for a regular expression std::regex refuses, or a
  // replacement naming a group the expression lacks.
  static absl::StatusOr<TopicRegex> Create(absl::string_view regex,
                                           absl::string_view replacement);

  // Clears *out and writes the topic for `value`.
  void Apply(absl::string_view value, std::string* out) const;

 private:
  struct Piece {
    std::string literal;
    int group = -1;  // when >= 0: this group of the match
  };

  TopicRegex() = default;

  std::shared_ptr<const std::regex> regex_;
  std::vector<Piece> replacement_;
};

}  // namespace outbox

#endif  // OUTBOX_ROUTE_TOPIC_REGEX_H_
