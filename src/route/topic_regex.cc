#include "route/topic_regex.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace outbox {
namespace {

// Rewrites Java's "(?<name>" groups as plain "(" for std::regex, recording
// each name's group number (capturing groups count in order of their "(").
std::string StripGroupNames(absl::string_view regex,
                            std::map<std::string, int>* names, int* groups) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < regex.size(); ++i) {
    char c = regex[i];
    if (c == '\\' && i + 1 < regex.size()) {
      out.push_back(c);
      out.push_back(regex[++i]);
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      out.push_back(c);
      continue;
    }
    if (c == '[') in_class = true;
    if (c == '(') {
      if (i + 1 < regex.size() && regex[i + 1] == '?') {
        if (i + 2 < regex.size() && regex[i + 2] == '<' &&
            i + 3 < regex.size() && regex[i + 3] != '=' &&
            regex[i + 3] != '!') {
          size_t close = regex.find('>', i + 3);
          if (close != absl::string_view::npos) {
            (*names)[std::string(regex.substr(i + 3, close - i - 3))] =
                ++*groups;
            out.push_back('(');
            i = close;
            continue;
          }
        }
      } else {
        ++*groups;
      }
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

absl::StatusOr<TopicRegex> TopicRegex::Create(absl::string_view regex,
                                              absl::string_view replacement) {
  TopicRegex r;
  std::map<std::string, int> names;
  int groups = 0;
  std::string ecma = StripGroupNames(regex, &names, &groups);
  // std::regex reports a bad expression only by throwing; this is the one
  // place it can, at startup.
  try {
    r.regex_ = std::make_shared<const std::regex>(ecma);
  } catch (const std::regex_error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("outbox.topic_regex \"", regex,
                     "\" is not a regular expression: ", e.what()));
  }
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("outbox.topic_replacement \"", replacement, "\": ", why));
  };
  Piece literal;
  for (size_t i = 0; i < replacement.size(); ++i) {
    char c = replacement[i];
    if (c == '\\') {
      if (++i == replacement.size()) return bad("ends with '\\'");
      literal.literal.push_back(replacement[i]);
      continue;
    }
    if (c != '$') {
      literal.literal.push_back(c);
      continue;
    }
    int group = -1;
    if (i + 1 < replacement.size() && replacement[i + 1] == '{') {
      size_t close = replacement.find('}', i + 2);
      if (close == absl::string_view::npos) return bad("unclosed ${");
      std::string name(replacement.substr(i + 2, close - i - 2));
      auto it = names.find(name);
      if (it == names.end()) {
        return bad(absl::StrCat("no group named \"", name, "\""));
      }
      group = it->second;
      i = close;
    } else if (i + 1 < replacement.size() &&
               absl::ascii_isdigit(replacement[i + 1])) {
      // Java takes as many digits as still name an existing group.
      group = replacement[++i] - '0';
      while (i + 1 < replacement.size() &&
             absl::ascii_isdigit(replacement[i + 1]) &&
             group * 10 + (replacement[i + 1] - '0') <= groups) {
        group = group * 10 + (replacement[++i] - '0');
      }
      if (group > groups) {
        return bad(absl::StrCat("no group ", group));
      }
    } else {
      return bad("'$' must be followed by a group number or {name}");
    }
    if (!literal.literal.empty()) r.replacement_.push_back(std::move(literal));
    literal = Piece{};
    r.replacement_.push_back(Piece{"", group});
  }
  if (!literal.literal.empty()) r.replacement_.push_back(std::move(literal));
  return r;
}

void TopicRegex::Apply(absl::string_view value, std::string* out) const {
  out->clear();
  std::match_results<absl::string_view::const_iterator> m;
  if (!std::regex_match(value.begin(), value.end(), m, *regex_)) {
    out->assign(value.data(), value.size());
    return;
  }
  for (const Piece& p : replacement_) {
    if (p.group < 0) {
      out->append(p.literal);
    } else if (m[p.group].matched) {
      out->append(m[p.group].first, m[p.group].second);
    }
  }
}

}  // namespace outbox
