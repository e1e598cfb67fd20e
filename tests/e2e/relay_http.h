// A daemon's HTTP endpoint from a test: the port it logged at start (the
// relay's http.listen 127.0.0.1:0, or any port a regex finds in a log), a
// GET, and one metric's value. Tests that include it link outbox_http
// (cpp-httplib).
#ifndef OUTBOX_TESTS_E2E_RELAY_HTTP_H_
#define OUTBOX_TESTS_E2E_RELAY_HTTP_H_

#include <httplib.h>

#include <regex>
#include <string>

#include "absl/strings/numbers.h"
#include "e2e/test_env.h"

namespace outbox::testing {

// The port in `process`'s output: the first group of `port_re`; 0 while
// it has not logged one.
inline int LoggedPort(const Process& process, const std::regex& port_re) {
  std::smatch m;
  const std::string out = process.Output();
  return std::regex_search(out, m, port_re) ? std::stoi(m[1]) : 0;
}

// Waits up to `timeout_ms` for LoggedPort(); 0 when none came.
inline int WaitLoggedPort(const Process& process, const std::regex& port_re,
                          int timeout_ms = 30000) {
  int port = 0;
  WaitUntil([&] { return (port = LoggedPort(process, port_re)) > 0; },
            timeout_ms);
  return port;
}

// The relay's startup line names the address it bound: with port 0, the
// port the kernel picked.
inline const std::regex& RelayListenRe() {
  static const std::regex re("http_listen=127\\.0\\.0\\.1:([0-9]+)");
  return re;
}

// Waits up to `timeout_ms` for the relay's HTTP port; 0 when it never
// logged one.
inline int WaitRelayHttpPort(const Process& relay, int timeout_ms = 30000) {
  return WaitLoggedPort(relay, RelayListenRe(), timeout_ms);
}

// GET `path` on the relay's port; the body, *status -1 when unreachable
// (or the port is not logged yet).
inline std::string RelayHttpGet(const Process& relay, const std::string& path,
                                int* status) {
  *status = -1;
  const int port = LoggedPort(relay, RelayListenRe());
  if (port == 0) return "";
  httplib::Client client("127.0.0.1", port);
  auto res = client.Get(path.c_str());
  if (!res) return "";
  *status = res->status;
  return res->body;
}

// The value of an unlabelled metric ("nan" parses too), or -1 when absent.
inline double RelayMetric(const Process& relay, const std::string& name) {
  int code = 0;
  const std::string body = RelayHttpGet(relay, "/metrics", &code);
  std::smatch m;
  const std::regex re("\n" + name + " ([^\n]+)");
  double v = -1;
  if (std::regex_search(body, m, re)) absl::SimpleAtod(m[1].str(), &v);
  return v;
}

}  // namespace outbox::testing

#endif  // OUTBOX_TESTS_E2E_RELAY_HTTP_H_
