// The running relay's HTTP endpoint from a test: the port it logged at
// start (http.listen 127.0.0.1:0), a GET, and one metric's value. Tests
// that include it link outbox_http (cpp-httplib).
#ifndef OUTBOX_TESTS_INTEGRATION_RELAY_HTTP_H_
#define OUTBOX_TESTS_INTEGRATION_RELAY_HTTP_H_

#include <httplib.h>

#include <regex>
#include <string>

#include "absl/strings/numbers.h"
#include "integration/test_env.h"

namespace outbox::testing {

// GET `path` on the relay's port; the body, *status -1 when unreachable
// (or the port is not logged yet).
inline std::string RelayHttpGet(const Process& relay, const std::string& path,
                                int* status) {
  std::smatch m;
  const std::string out = relay.Output();
  static const std::regex listen_re("http_listen=127\\.0\\.0\\.1:([0-9]+)");
  *status = -1;
  if (!std::regex_search(out, m, listen_re)) return "";
  httplib::Client client("127.0.0.1", std::stoi(m[1]));
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

#endif  // OUTBOX_TESTS_INTEGRATION_RELAY_HTTP_H_
