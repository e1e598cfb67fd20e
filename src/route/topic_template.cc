#include "route/topic_template.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace outbox {

bool IsLegalTopicChar(char c) {
  return absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-';
}

absl::Status ValidateTopicName(absl::string_view topic) {
  if (topic.empty()) return absl::InvalidArgumentError("topic is empty");
  if (topic.size() > kMaxTopicLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("topic is longer than ", kMaxTopicLength, " characters"));
  }
  if (topic == "." || topic == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat("topic \"", topic, "\" is not allowed"));
  }
  for (char c : topic) {
    if (!IsLegalTopicChar(c)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "topic \"", absl::CHexEscape(topic),
          "\" has a character Kafka forbids (allowed: a-z A-Z 0-9 . _ -)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<TopicTemplate> TopicTemplate::Create(
    absl::string_view text, absl::Span<const std::string> columns) {
  TopicTemplate t;
  t.text_ = std::string(text);
  t.columns_.assign(columns.begin(), columns.end());
  auto error = [&](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("topic template \"", text, "\": ", what));
  };
  std::string literal;
  auto flush = [&] {
    if (!literal.empty()) t.pieces_.push_back({std::move(literal), -1});
    literal.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      literal.push_back(c);
      ++i;
    } else if (c == '}') {
      return error("unmatched '}' (write \"}}\" for a literal brace)");
    } else if (c == '{') {
      size_t close = text.find('}', i + 1);
      if (close == absl::string_view::npos) {
        return error("unclosed '{'");
      }
      absl::string_view name = text.substr(i + 1, close - i - 1);
      if (name.empty()) return error("empty placeholder {}");
      int index = -1;
      for (size_t k = 0; k < columns.size(); ++k) {
        if (columns[k] == name) {
          index = static_cast<int>(k);
          break;
        }
      }
      if (index < 0) {
        return error(
            absl::StrCat("unknown placeholder {", name,
                         "}; known columns: ", absl::StrJoin(columns, ", ")));
      }
      flush();
      t.pieces_.push_back({"", index});
      i = close;
    } else {
      literal.push_back(c);
    }
  }
  flush();
  return t;
}

absl::Status TopicTemplate::Render(const Column* const* values,
                                   std::string* out) const {
  out->clear();
  for (const Piece& p : pieces_) {
    if (p.column < 0) {
      out->append(p.literal);
      continue;
    }
    const Column* c = values[p.column];
    if (c == nullptr || c->kind == ValueKind::kNull) {
      return absl::InvalidArgumentError(
          absl::StrCat("topic column ", columns_[p.column],
                       c == nullptr ? " is missing" : " is null"));
    }
    out->append(c->value.data(), c->value.size());
  }
  return absl::OkStatus();
}

std::vector<std::string> TopicTemplate::Placeholders() const {
  std::vector<std::string> names;
  for (const Piece& p : pieces_) {
    if (p.column < 0) continue;
    const std::string& name = columns_[p.column];
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      names.push_back(name);
    }
  }
  return names;
}

std::string TopicTemplate::LiteralText() const {
  std::string s;
  for (const Piece& p : pieces_) s += p.literal;
  return s;
}

}  // namespace outbox
