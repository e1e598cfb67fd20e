#include "config/redact.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace outbox {
namespace {

// password, and sslpassword (the client key's passphrase).
bool IsPasswordKeyword(absl::string_view keyword) {
  return absl::EndsWith(keyword, "password");
}

}  // namespace

// Replaces the password in a libpq conninfo, keyword=value or URI form.
std::string RedactConninfo(absl::string_view s) {
  const absl::string_view kMask = "****";
  std::string out;
  if (absl::StartsWith(s, "postgres://") ||
      absl::StartsWith(s, "postgresql://")) {
    size_t start = s.find("://") + 3;
    size_t at = s.find('@', start);
    size_t slash = s.find_first_of("/?", start);
    if (at != absl::string_view::npos &&
        (slash == absl::string_view::npos || at < slash)) {
      size_t colon = s.find(':', start);
      if (colon != absl::string_view::npos && colon < at) {
        out = absl::StrCat(s.substr(0, colon + 1), kMask);
        s.remove_prefix(at);
      }
    }
    // Query parameter password=...
    size_t q = s.find('?');
    if (q == absl::string_view::npos) return absl::StrCat(out, s);
    absl::StrAppend(&out, s.substr(0, q + 1));
    std::vector<std::string> params;
    for (absl::string_view p : absl::StrSplit(s.substr(q + 1), '&')) {
      size_t eq = p.find('=');
      params.push_back(eq != absl::string_view::npos &&
                               IsPasswordKeyword(p.substr(0, eq))
                           ? absl::StrCat(p.substr(0, eq + 1), kMask)
                           : std::string(p));
    }
    return absl::StrCat(out, absl::StrJoin(params, "&"));
  }
  size_t i = 0;
  while (i < s.size()) {
    // keyword
    size_t kw_start = i;
    while (i < s.size() && s[i] != '=' && !absl::ascii_isspace(s[i])) ++i;
    absl::string_view keyword = s.substr(kw_start, i - kw_start);
    while (i < s.size() && absl::ascii_isspace(s[i])) ++i;
    if (i >= s.size() || s[i] != '=') {
      absl::StrAppend(&out, s.substr(kw_start, i - kw_start));
      continue;
    }
    ++i;
    while (i < s.size() && absl::ascii_isspace(s[i])) ++i;
    absl::StrAppend(&out, s.substr(kw_start, i - kw_start));
    size_t v_start = i;
    if (i < s.size() && s[i] == '\'') {
      for (++i; i < s.size() && s[i] != '\''; ++i) {
        if (s[i] == '\\') ++i;
      }
      if (i < s.size()) ++i;
    } else {
      while (i < s.size() && !absl::ascii_isspace(s[i])) ++i;
    }
    absl::StrAppend(&out, IsPasswordKeyword(keyword)
                              ? kMask
                              : s.substr(v_start, i - v_start));
    size_t ws = i;
    while (i < s.size() && absl::ascii_isspace(s[i])) ++i;
    absl::StrAppend(&out, s.substr(ws, i - ws));
  }
  return out;
}

bool IsSecretProperty(absl::string_view name) {
  for (absl::string_view marker :
       {"password", "secret", "jaas", "oauthbearer.config", "key.pem"}) {
    if (absl::StrContains(name, marker)) return true;
  }
  return false;
}

}  // namespace outbox
