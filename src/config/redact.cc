#include "config/redact.h"

#include <algorithm>
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

// Every keyword whose value is a secret: the passwords and PostgreSQL 18's
// OAuth client secret.
bool IsSecretKeyword(absl::string_view keyword) {
  return IsPasswordKeyword(keyword) || keyword == "oauth_client_secret";
}

// The password alone (what postgres.password_file would add).
bool IsPlainPasswordKeyword(absl::string_view keyword) {
  return keyword == "password";
}

// libpq's connection keywords (PQconndefaults() of libpq 14 to 18, and
// 17's sslnegotiation, 18's min/max_protocol_version and sslkeylogfile):
// an unquoted value that runs on past a space ends only where the next of
// these starts, as far as redaction is concerned.
constexpr absl::string_view kLibpqKeywords =
    "application_name channel_binding client_encoding connect_timeout "
    "dbname fallback_application_name gssdelegation gssencmode gsslib "
    "host hostaddr keepalives keepalives_count keepalives_idle "
    "keepalives_interval krbsrvname load_balance_hosts "
    "max_protocol_version min_protocol_version oauth_ca_file "
    "oauth_client_id oauth_client_secret oauth_issuer oauth_scope "
    "options passfile password port replication require_auth "
    "requirepeer service sslcert sslcertmode sslcompression sslcrl "
    "sslcrldir sslkey sslkeylogfile sslmode sslnegotiation sslpassword "
    "sslrootcert sslsni ssl_max_protocol_version "
    "ssl_min_protocol_version target_session_attrs tcp_user_timeout "
    "user";

bool IsLibpqKeyword(absl::string_view word) {
  for (absl::string_view k : absl::StrSplit(kLibpqKeywords, ' ')) {
    if (k == word) return true;
  }
  return false;
}

// True when s[i..] starts with a libpq keyword, optional spaces and '='.
bool AtKeywordAssignment(absl::string_view s, size_t i) {
  size_t end = i;
  while (end < s.size() && s[end] != '=' && !absl::ascii_isspace(s[end])) {
    ++end;
  }
  if (!IsLibpqKeyword(s.substr(i, end - i))) return false;
  while (end < s.size() && absl::ascii_isspace(s[end])) ++end;
  return end < s.size() && s[end] == '=';
}

// The end of the unquoted word at s[i] (a backslash escapes the next
// character, a space too, as in libpq).
size_t WordEnd(absl::string_view s, size_t i) {
  while (i < s.size() && !absl::ascii_isspace(s[i])) i += s[i] == '\\' ? 2 : 1;
  return std::min(i, s.size());
}

// One keyword=value of a keyword-form conninfo, as offsets into it.
struct Setting {
  absl::string_view keyword;
  size_t value_start = 0;
  size_t value_end = 0;         // past the value (and its closing quote)
  bool unquoted_words = false;  // unquoted, and on past a space
  bool unterminated = false;    // a quote that is not closed
};

// Reads the value starting at s[i] (after "keyword ="). A secret's
// unquoted value runs to the next "keyword=", so that a space in it (which
// libpq would take for the value's end) shows none of it.
Setting ReadValue(absl::string_view s, size_t i, absl::string_view keyword,
                  bool secret) {
  Setting v;
  v.keyword = keyword;
  v.value_start = i;
  if (i < s.size() && s[i] == '\'') {
    for (++i; i < s.size() && s[i] != '\''; ++i) {
      if (s[i] == '\\') ++i;
    }
    if (i < s.size()) {
      ++i;
    } else {
      v.unterminated = true;
      i = s.size();
    }
  } else {
    i = WordEnd(s, i);
    while (secret) {
      size_t next = i;
      while (next < s.size() && absl::ascii_isspace(s[next])) ++next;
      if (next >= s.size() || AtKeywordAssignment(s, next)) break;
      v.unquoted_words = true;
      i = WordEnd(s, next);
    }
  }
  v.value_end = i;
  return v;
}

// The keyword=value settings of a keyword-form conninfo, in order; a word
// without '=' after it is skipped (libpq refuses it).
std::vector<Setting> Settings(absl::string_view s,
                              bool (*secret)(absl::string_view)) {
  std::vector<Setting> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && absl::ascii_isspace(s[i])) ++i;
    size_t kw_start = i;
    while (i < s.size() && s[i] != '=' && !absl::ascii_isspace(s[i])) ++i;
    absl::string_view keyword = s.substr(kw_start, i - kw_start);
    while (i < s.size() && absl::ascii_isspace(s[i])) ++i;
    if (i >= s.size() || s[i] != '=') continue;
    ++i;
    while (i < s.size() && absl::ascii_isspace(s[i])) ++i;
    out.push_back(ReadValue(s, i, keyword, secret(keyword)));
    i = out.back().value_end;
  }
  return out;
}

bool IsUri(absl::string_view s) {
  return absl::StartsWith(s, "postgres://") ||
         absl::StartsWith(s, "postgresql://");
}

// `s` with the values of the keywords `secret` accepts replaced by "****".
std::string Redact(absl::string_view s, bool (*secret)(absl::string_view)) {
  const absl::string_view kMask = "****";
  std::string out;
  if (IsUri(s)) {
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
      params.push_back(eq != absl::string_view::npos && secret(p.substr(0, eq))
                           ? absl::StrCat(p.substr(0, eq + 1), kMask)
                           : std::string(p));
    }
    return absl::StrCat(out, absl::StrJoin(params, "&"));
  }
  size_t done = 0;
  for (const Setting& v : Settings(s, secret)) {
    if (!secret(v.keyword)) continue;
    absl::StrAppend(&out, s.substr(done, v.value_start - done), kMask);
    done = v.value_end;
  }
  absl::StrAppend(&out, s.substr(done));
  return out;
}

}  // namespace

std::string RedactConninfo(absl::string_view conninfo) {
  return Redact(conninfo, IsSecretKeyword);
}

bool ConninfoHasPassword(absl::string_view conninfo) {
  return Redact(conninfo, IsPlainPasswordKeyword) != conninfo;
}

absl::Status CheckConninfoSecrets(absl::string_view conninfo) {
  if (IsUri(conninfo)) return absl::OkStatus();
  for (const Setting& v : Settings(conninfo, IsPasswordKeyword)) {
    if (!IsPasswordKeyword(v.keyword)) continue;
    if (v.unquoted_words || v.unterminated) {
      return absl::InvalidArgumentError(absl::StrCat(
          "its ", v.keyword,
          v.unterminated ? " opens a quote it does not close"
                         : " holds a space, where libpq ends an unquoted "
                           "value (it would read the rest as more keywords)",
          ": put the password in postgres.password_file, or in PGPASSWORD in "
          "the relay's environment and not in the conninfo, or quote it "
          "(",
          v.keyword, "='...' with \\' and \\\\ inside)"));
    }
  }
  return absl::OkStatus();
}

bool IsSecretProperty(absl::string_view name) {
  for (absl::string_view marker :
       {"password", "secret", "jaas", "oauthbearer.config", "key.pem"}) {
    if (absl::StrContains(name, marker)) return true;
  }
  return false;
}

}  // namespace outbox
