#include "config/kafka_safety.h"

#include <climits>
#include <cstdlib>
#include <optional>

#include "absl/strings/match.h"

namespace outbox {
namespace {

// librdkafka's reading of a boolean; nullopt when it would refuse it.
std::optional<bool> ParseBool(const std::string& v) {
  for (const char* t : {"true", "t", "1"}) {
    if (absl::EqualsIgnoreCase(v, t)) return true;
  }
  for (const char* f : {"false", "f", "0"}) {
    if (absl::EqualsIgnoreCase(v, f)) return false;
  }
  return std::nullopt;
}

// librdkafka's reading of an integer (strtol, base 0, trailing characters
// ignored), plus the names some integer properties accept instead
// ("all" = -1 for acks); nullopt when it would refuse it.
std::optional<long> ParseInt(const std::string& v) {
  if (absl::EqualsIgnoreCase(v, "all")) return -1;
  const char* begin = v.c_str();
  char* end = nullptr;
  long n = std::strtol(begin, &end, 0);
  if (end == begin) return std::nullopt;
  return n;
}

struct Rule {
  std::vector<const char*> names;  // a property and its aliases
  bool (*unsafe)(const std::string& value);
  const char* reason;
};

const std::vector<Rule>& Rules() {
  static const std::vector<Rule>* rules = new std::vector<Rule>{
      {{"enable.idempotence"},
       [](const std::string& v) { return ParseBool(v) == false; },
       "turns off the idempotent producer, whose ordered retries keep each "
       "partition in produce order: retries could reorder and duplicate a "
       "key's events"},
      {{"acks", "request.required.acks"},
       [](const std::string& v) {
         std::optional<long> n = ParseInt(v);
         return n.has_value() && *n != -1;
       },
       "lets a broker acknowledge a record before every in-sync replica has "
       "it, so losing that broker loses events already confirmed as "
       "delivered; use all"},
      {{"max.in.flight", "max.in.flight.requests.per.connection"},
       [](const std::string& v) {
         std::optional<long> n = ParseInt(v);
         return n.has_value() && *n > 5;
       },
       "the idempotent producer keeps a partition's order only with at most "
       "5 requests in flight"},
      {{"message.timeout.ms", "delivery.timeout.ms"},
       [](const std::string& v) {
         std::optional<long> n = ParseInt(v);
         return n.has_value() && *n != 0;
       },
       "a record that times out fails while later records of its partition "
       "can still be written, so it is sent again only after them, out of "
       "its key's order (enable.gapless.guarantee does not cover timeouts); "
       "0 waits out a Kafka outage instead"},
      {{"retries", "message.send.max.retries"},
       [](const std::string& v) {
         std::optional<long> n = ParseInt(v);
         return n.has_value() && *n < INT_MAX;
       },
       "a record that runs out of retries fails while later records of its "
       "partition can still be written, so it is sent again only after them, "
       "out of its key's order; leave it unset (unlimited)"},
      {{"queuing.strategy"},
       [](const std::string& v) { return !absl::EqualsIgnoreCase(v, "fifo"); },
       "any order but fifo sends newer records first"},
      {{"partitioner"},
       [](const std::string& v) { return v == "random"; },
       "spreads a key's events over partitions: no per-key order"},
      {{"delivery.report.only.error"},
       [](const std::string& v) { return ParseBool(v) == true; },
       "suppresses the successful delivery reports that confirm events: "
       "nothing would ever be confirmed"},
      {{"test.mock.num.brokers"},
       [](const std::string& v) {
         std::optional<long> n = ParseInt(v);
         return n.has_value() && *n != 0;
       },
       "replaces the brokers with librdkafka's in-process mock cluster: "
       "events would be acknowledged and lost"},
  };
  return *rules;
}

}  // namespace

std::vector<UnsafeKafkaProperty> UnsafeKafkaProperties(
    const std::map<std::string, std::string>& properties) {
  std::vector<UnsafeKafkaProperty> out;
  for (const auto& [name, value] : properties) {
    for (const Rule& rule : Rules()) {
      for (const char* n : rule.names) {
        if (name == n && rule.unsafe(value)) {
          out.push_back({name, value, rule.reason});
        }
      }
    }
  }
  return out;
}

}  // namespace outbox
