#include "kafka/rdkafka_log.h"

#include <cstdio>

#include "absl/strings/match.h"

namespace outbox {
namespace {

void Log(const rd_kafka_t*, int level, const char* facility, const char* line) {
  if (RdKafkaLogShown(level, facility, line)) {
    fprintf(stderr, "librdkafka %s: %s\n", facility, line);
  }
}

}  // namespace

bool RdKafkaLogShown(int level, absl::string_view facility,
                     absl::string_view line) {
  if (level > 4) return false;  // LOG_WARNING
  return !(facility == "CONFWARN" &&
           absl::StrContains(line, "enable.gapless.guarantee is experimental"));
}

void UseRdKafkaLog(rd_kafka_conf_t* conf) {
  rd_kafka_conf_set_log_cb(conf, &Log);
}

}  // namespace outbox
