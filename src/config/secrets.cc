#include "config/secrets.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "config/redact.h"

namespace outbox {
namespace {

constexpr absl::string_view kFileSuffix = "_file";

bool IsVariableName(absl::string_view name) {
  if (name.empty() || absl::ascii_isdigit(name[0])) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '_') return false;
  }
  return true;
}

absl::Status KeyError(absl::string_view key, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("\"", key, "\": ", message));
}

// The content of the file `path` names, without trailing CR/LF.
absl::StatusOr<std::string> ReadSecret(absl::string_view key,
                                       const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return KeyError(key,
                    absl::StrCat("cannot read ", path, ": ", strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  std::string secret = text.str();
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) {
    secret.pop_back();
  }
  if (secret.empty()) return KeyError(key, absl::StrCat(path, " is empty"));
  return secret;
}

// libpq's URI percent-encoding of a password.
std::string PercentEncoded(absl::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_' ||
        c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppend(&out, "%", absl::Hex(c, absl::kZeroPad2));
    }
  }
  return out;
}

// A conninfo keyword value, single-quoted with \ and ' escaped.
std::string Quoted(absl::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out.push_back('\\');
    out.push_back(c);
  }
  return out + "'";
}

bool IsUri(absl::string_view conninfo) {
  return absl::StartsWith(conninfo, "postgresql://") ||
         absl::StartsWith(conninfo, "postgres://");
}

absl::Status AddPassword(absl::string_view file_key,
                         absl::string_view conninfo_key,
                         const std::string& path, std::string* conninfo) {
  if (path.empty()) return absl::OkStatus();
  if (ConninfoHasPassword(*conninfo)) {
    return KeyError(file_key, absl::StrCat(conninfo_key,
                                           " holds a password already: "
                                           "remove one of the two"));
  }
  absl::StatusOr<std::string> password = ReadSecret(file_key, path);
  if (!password.ok()) return password.status();
  *conninfo = ConninfoWithPassword(*conninfo, *password);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ExpandVariables(absl::string_view text) {
  if (!absl::StrContains(text, '$')) return std::string(text);
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c != '$' || i + 1 >= text.size() ||
        (text[i + 1] != '$' && text[i + 1] != '{')) {
      out.push_back(c);
      ++i;
      continue;
    }
    if (text[i + 1] == '$') {
      out.push_back('$');
      i += 2;
      continue;
    }
    size_t close = text.find('}', i + 2);
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unterminated \"", text.substr(i), "\" (write $$ for a literal $)"));
    }
    absl::string_view inner = text.substr(i + 2, close - i - 2);
    absl::string_view name = inner;
    std::optional<absl::string_view> fallback;
    if (size_t sep = inner.find(":-"); sep != absl::string_view::npos) {
      name = inner.substr(0, sep);
      fallback = inner.substr(sep + 2);
    }
    if (!IsVariableName(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"${", inner,
                       "}\" is not ${VAR} or ${VAR:-default} (write $$ for a "
                       "literal $)"));
    }
    const char* value = getenv(std::string(name).c_str());
    if (value != nullptr && *value != '\0') {
      out.append(value);
    } else if (fallback.has_value()) {
      out.append(fallback->data(), fallback->size());
    } else if (value != nullptr) {
      // Set but empty: the value, as the shell's ${VAR}.
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("environment variable ", name, " is not set (use ${",
                       name, ":-default} for a default, $$ for a literal $)"));
    }
    i = close + 1;
  }
  return out;
}

std::string ConninfoWithPassword(absl::string_view conninfo,
                                 absl::string_view password) {
  if (IsUri(conninfo)) {
    return absl::StrCat(conninfo, absl::StrContains(conninfo, '?') ? "&" : "?",
                        "password=", PercentEncoded(password));
  }
  std::string pw = absl::StrCat("password=", Quoted(password));
  absl::string_view trimmed = absl::StripAsciiWhitespace(conninfo);
  if (trimmed.empty()) return pw;
  if (!absl::StrContains(trimmed, '=')) {
    return absl::StrCat("dbname=", Quoted(trimmed), " ", pw);
  }
  return absl::StrCat(trimmed, " ", pw);
}

absl::Status ReadSecretFiles(Config* config) {
  HttpConfig& http = config->http;
  if (http.control_enabled) {
    if (http.listen.empty()) {
      return KeyError("http.control.enabled",
                      "is true but http.listen is empty (no HTTP server)");
    }
    if (http.control_token_file.empty()) {
      return KeyError("http.control.token_file",
                      "is required when http.control.enabled is true");
    }
    absl::StatusOr<std::string> token =
        ReadSecret("http.control.token_file", http.control_token_file);
    if (!token.ok()) return token.status();
    http.control_token = *std::move(token);
  }
  PostgresConfig& pg = config->postgres;
  if (absl::Status s =
          AddPassword("postgres.password_file", "postgres.conninfo",
                      pg.password_file, &pg.conninfo);
      !s.ok()) {
    return s;
  }
  if (!pg.standby_password_file.empty() && pg.standby_conninfo.empty()) {
    return KeyError("postgres.standby_password_file",
                    "is set but postgres.standby_conninfo is empty");
  }
  if (absl::Status s = AddPassword(
          "postgres.standby_password_file", "postgres.standby_conninfo",
          pg.standby_password_file, &pg.standby_conninfo);
      !s.ok()) {
    return s;
  }
  std::map<std::string, std::string>& props = config->kafka.properties;
  std::vector<std::string> file_entries;
  for (const auto& [name, path] : props) {
    if (absl::EndsWith(name, kFileSuffix) && name.size() > kFileSuffix.size()) {
      file_entries.push_back(name);
    }
  }
  for (const std::string& entry : file_entries) {
    std::string key = absl::StrCat("kafka.properties.", entry);
    std::string name = entry.substr(0, entry.size() - kFileSuffix.size());
    if (props.count(name) > 0) {
      return KeyError(key, absl::StrCat("kafka.properties.", name,
                                        " is set too: remove one of the two"));
    }
    absl::StatusOr<std::string> value = ReadSecret(key, props[entry]);
    if (!value.ok()) return value.status();
    props.erase(entry);
    props[name] = *std::move(value);
  }
  return absl::OkStatus();
}

}  // namespace outbox
