#include "daemon/build_info.h"

#include <libpq-fe.h>
#include <librdkafka/rdkafka.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "absl/strings/str_cat.h"
#include "common/version.h"

namespace outbox {

std::string LibpqVersion() {
  const int v = PQlibVersion();
  // 10 and later: major * 10000 + minor; before: major, minor, patch.
  if (v >= 100000) return absl::StrCat(v / 10000, ".", v % 10000);
  return absl::StrCat(v / 10000, ".", v / 100 % 100, ".", v % 100);
}

std::map<std::string, std::string> BuildInfoLabels() {
  return {{"version", Version()},
          {"revision", GitRevision()},
          {"librdkafka", rd_kafka_version_str()},
          {"libpq", LibpqVersion()}};
}

void RegisterBuildInfo(prometheus::Registry& registry, absl::string_view prefix,
                       const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> labels = BuildInfoLabels();
  labels.insert(extra.begin(), extra.end());
  prometheus::BuildGauge()
      .Name(absl::StrCat(prefix, "_build_info"))
      .Help(
          "1, labelled with the build: version and revision (as --version "
          "prints them), the librdkafka and libpq versions the process "
          "runs with, and (the relay) postgres.plugin.")
      .Register(registry)
      .Add(labels)
      .Set(1);
}

}  // namespace outbox
