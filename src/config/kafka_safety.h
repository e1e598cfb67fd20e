// UnsafeKafkaProperties: the kafka.properties that would silently weaken
// what outbox-relay and outbox-poller promise (nothing lost once confirmed,
// per-key order), with the reason for each.
//
// One rule set for both daemons: ValidateConfig() (config_validation.cc)
// refuses a configuration that has any of them unless kafka.allow_unsafe is
// true, and StartDaemon() then logs each as a warning. librdkafka's aliases are
// checked under every name (acks / request.required.acks, ...), and values
// are read the way librdkafka reads them (booleans true/t/1, integers by
// strtol with base 0). A value librdkafka cannot parse is left to it: the
// producer refuses it when it is built.
//
// Pure functions over values; thread-safe.
#ifndef OUTBOX_CONFIG_KAFKA_SAFETY_H_
#define OUTBOX_CONFIG_KAFKA_SAFETY_H_

#include <map>
#include <string>
#include <vector>

namespace outbox {

struct UnsafeKafkaProperty {
  std::string name;    // as written: "acks", "delivery.timeout.ms", ...
  std::string value;   // as written
  std::string reason;  // what it breaks, one clause
};

// In the order of `properties` (sorted by name).
std::vector<UnsafeKafkaProperty> UnsafeKafkaProperties(
    const std::map<std::string, std::string>& properties);

}  // namespace outbox

#endif  // OUTBOX_CONFIG_KAFKA_SAFETY_H_
