// TopicTemplate: a topic name with "{column}" placeholders.
//
//   "outbox.event.{aggregatetype}"  + aggregatetype=order ->
//   "outbox.event.order"
//
// Text outside braces is literal; "{{" and "}}" stand for literal braces. The
// template is parsed once, at startup, against the list of column names the
// caller will supply values for: a placeholder naming any other column, an
// empty "{}" or an unbalanced brace is an InvalidArgument config error.
// Render() is allocation-free once *out has grown to the topic's size.
//
// Thread safety: immutable after Create(); Render() may run concurrently.
#ifndef OUTBOX_ROUTE_TOPIC_TEMPLATE_H_
#define OUTBOX_ROUTE_TOPIC_TEMPLATE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "outbox/change.h"

namespace outbox {

// Kafka's topic name rule: 1 to 249 of [a-zA-Z0-9._-], and not "." or "..".
inline constexpr size_t kMaxTopicLength = 249;
bool IsLegalTopicChar(char c);
absl::Status ValidateTopicName(absl::string_view topic);

class TopicTemplate {
 public:
  // `columns[i]` names the value Render() will find at values[i].
  static absl::StatusOr<TopicTemplate> Create(
      absl::string_view text, absl::Span<const std::string> columns);

  // Clears *out and appends the rendered topic. values[i] is the column named
  // columns[i] at Create(), or nullptr if the row lacks it. A placeholder
  // whose column is missing or NULL is InvalidArgument ("topic column
  // aggregatetype is null"). The result is not checked against Kafka's rules.
  absl::Status Render(const Column* const* values, std::string* out) const;

  // The literal characters of the template, unescaped, concatenated; lets a
  // caller reject a template whose fixed text can never be a legal name.
  std::string LiteralText() const;

  // Column names the placeholders use, distinct, in order of appearance.
  std::vector<std::string> Placeholders() const;

  const std::string& text() const { return text_; }

 private:
  struct Piece {
    std::string literal;  // used when column < 0
    int column = -1;      // index into the values passed to Render()
  };

  TopicTemplate() = default;

  std::string text_;
  std::vector<std::string> columns_;  // names, for error messages
  std::vector<Piece> pieces_;
};

}  // namespace outbox

#endif  // OUTBOX_ROUTE_TOPIC_TEMPLATE_H_
