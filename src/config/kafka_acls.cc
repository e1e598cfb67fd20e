#include "config/kafka_acls.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace outbox {
namespace {

constexpr char kReaderGroup[] = "outbox-relay-checkpoint-reader";
constexpr char kAuditGroup[] = "outbox-audit";
constexpr char kDerivedTransactionalIdPrefix[] = "outbox-relay-";

class AclList {
 public:
  void Add(absl::string_view resource, absl::string_view name, bool prefixed,
           std::vector<std::string> operations, absl::string_view why) {
    for (KafkaAcl& a : acls_) {
      if (a.resource == resource && a.name == name && a.prefixed == prefixed) {
        for (std::string& op : operations) {
          if (std::find(a.operations.begin(), a.operations.end(), op) ==
              a.operations.end()) {
            a.operations.push_back(std::move(op));
          }
        }
        if (!absl::StrContains(a.why, why)) {
          absl::StrAppend(&a.why, "; ", why);
        }
        return;
      }
    }
    acls_.push_back(KafkaAcl{std::string(resource), std::string(name), prefixed,
                             std::move(operations), std::string(why)});
  }
  std::vector<KafkaAcl> Take() { return std::move(acls_); }

 private:
  std::vector<KafkaAcl> acls_;
};

// A topic template (or a topic_regex replacement, `placeholder` '$') as a
// resource: its fixed part before the first placeholder, prefixed; the
// whole name when it has none; '*' when it starts with one.
void AddTopic(AclList* list, absl::string_view spelled, char placeholder,
              const std::vector<std::string>& ops, absl::string_view why) {
  const size_t at = spelled.find(placeholder);
  if (at == absl::string_view::npos) {
    list->Add("topic", spelled, false, ops, why);
  } else if (at == 0) {
    list->Add("topic", "*", false, ops, why);
  } else {
    list->Add("topic", spelled.substr(0, at), true, ops, why);
  }
}

void AddEventTopics(const Config& c, AclList* list,
                    const std::vector<std::string>& ops,
                    absl::string_view why) {
  for (const OutboxTable& t : c.outbox.tables) {
    AddTopic(list, t.topic, '{', ops, why);
  }
  if (c.outbox.messages.enabled) {
    AddTopic(list, c.outbox.messages.topic, '{', ops, why);
  }
  if (!c.outbox.topic_regex.empty()) {
    AddTopic(list, c.outbox.topic_replacement, '$', ops, why);
  }
}

void AddInternalTopic(AclList* list, const std::string& topic,
                      absl::string_view why) {
  list->Add("topic", topic, false,
            {"Read", "Write", "Describe", "DescribeConfigs", "Create"}, why);
}

}  // namespace

std::vector<KafkaAcl> KafkaAcls(const Config& c, AclClient client) {
  AclList list;
  const bool create = c.kafka.topic_creation.enable;
  const bool dead_letter = c.outbox.on_invalid == OnInvalid::kDeadLetter;
  switch (client) {
    case AclClient::kRelay:
    case AclClient::kPoller: {
      std::vector<std::string> ops = {"Write", "Describe"};
      // The poller never creates a topic.
      const bool creates = create && client == AclClient::kRelay;
      if (creates) ops.push_back("Create");
      AddEventTopics(c, &list, ops,
                     creates ? "produce the events; create a missing topic "
                               "(kafka.topic_creation.enable)"
                             : "produce the events");
      if (dead_letter) {
        list.Add("topic", c.outbox.dead_letter_topic, false, ops,
                 creates ? "produce dead letters (outbox.on_invalid "
                           "dead_letter); create it when missing"
                         : "produce dead letters (outbox.on_invalid "
                           "dead_letter)");
      }
      if (client == AclClient::kPoller) break;
      const bool marker = c.postgres.slot_marker == SlotMarkerBackend::kKafka;
      if (c.kafka.exactly_once) {
        AddInternalTopic(&list, c.kafka.checkpoint_topic,
                         "kafka.exactly_once: write a checkpoint in each "
                         "transaction, read the last one at start, check "
                         "its cleanup.policy, create it when missing");
      }
      // Every session reads the operator's records (skip, advance, pause)
      // and writes an applied one: the state topic whatever the marker.
      AddInternalTopic(
          &list, c.kafka.state_topic,
          marker ? "postgres.slot_marker kafka: read and write the slot "
                   "marker; every session: read the operator's skip, advance "
                   "and pause records, write what it applied; check the "
                   "topic's cleanup.policy, create it when missing"
                 : "every session: read the operator's skip, advance and "
                   "pause records, write what it applied; check the topic's "
                   "cleanup.policy, create it when missing");
      if (c.kafka.exactly_once) {
        if (c.kafka.transactional_id.empty()) {
          list.Add("transactional-id", kDerivedTransactionalIdPrefix, true,
                   {"Write", "Describe"},
                   "kafka.exactly_once: the transactional producer (the id "
                   "is derived, outbox-relay-<system identifier>-<slot>; set "
                   "kafka.transactional_id for a literal one)");
        } else {
          list.Add("transactional-id", c.kafka.transactional_id, false,
                   {"Write", "Describe"},
                   "kafka.exactly_once: the transactional producer");
        }
      }
      list.Add("group", kReaderGroup, false, {"Read"},
               "the reader of the checkpoint and state topics (assigns "
               "partitions, commits nothing)");
      break;
    }
    case AclClient::kRepublish:
      AddEventTopics(c, &list, {"Read", "Write", "Describe"},
                     "read what Kafka holds, produce what it lacks");
      list.Add("group", kAuditGroup, false, {"Read"},
               "the reader of the event topics (assigns partitions, commits "
               "nothing)");
      break;
    case AclClient::kAudit:
      AddEventTopics(c, &list, {"Read", "Describe"},
                     "read every event published");
      list.Add("group", kAuditGroup, false, {"Read"},
               "the reader of the event topics (assigns partitions, commits "
               "nothing)");
      break;
  }
  return list.Take();
}

std::string DefaultAclPrincipal(const Config& config) {
  auto it = config.kafka.properties.find("sasl.username");
  if (it != config.kafka.properties.end() && !it->second.empty()) {
    return absl::StrCat("User:", it->second);
  }
  return "User:outbox-relay";
}

std::string KafkaAclCommand(const KafkaAcl& acl, absl::string_view brokers,
                            absl::string_view principal) {
  std::string line = absl::StrCat("kafka-acls.sh --bootstrap-server ", brokers,
                                  " --add --allow-principal ", principal);
  for (const std::string& op : acl.operations) {
    absl::StrAppend(&line, " --operation ", op);
  }
  // '*' quoted: the shell would expand it.
  absl::StrAppend(&line, " --", acl.resource, " ",
                  acl.name == "*" ? "'*'" : acl.name);
  if (acl.prefixed) absl::StrAppend(&line, " --resource-pattern-type prefixed");
  return line;
}

std::string FormatKafkaAcls(const Config& c, AclClient client,
                            absl::string_view principal) {
  static constexpr absl::string_view kNames[] = {
      "outbox-relay", "outbox-poller", "outbox-relay republish",
      "outbox-audit"};
  std::vector<std::string> modes;
  if (client == AclClient::kRelay) {
    modes.push_back(c.kafka.exactly_once ? "kafka.exactly_once"
                                         : "at least once");
    if (c.postgres.slot_marker == SlotMarkerBackend::kKafka) {
      modes.push_back("postgres.slot_marker kafka");
    }
  }
  if ((client == AclClient::kRelay || client == AclClient::kPoller) &&
      c.outbox.on_invalid == OnInvalid::kDeadLetter) {
    modes.push_back("outbox.on_invalid dead_letter");
  }
  if (client == AclClient::kRelay && c.kafka.topic_creation.enable) {
    modes.push_back("kafka.topic_creation.enable");
  }
  std::string out = absl::StrCat(
      "# Kafka ACLs of ", kNames[static_cast<int>(client)], " for principal ",
      principal, modes.empty() ? "" : " (", absl::StrJoin(modes, ", "),
      modes.empty() ? "" : ")",
      "\n# Run as a Kafka admin (add --command-config FILE with the admin's "
      "credentials).\n");
  for (const KafkaAcl& acl : KafkaAcls(c, client)) {
    absl::StrAppend(&out, "# ", acl.why, "\n",
                    KafkaAclCommand(acl, c.kafka.brokers, principal), "\n");
  }
  return out;
}

int RunAclsCommand(const Config& config, AclClient client,
                   absl::string_view principal, FILE* out) {
  const std::string p =
      principal.empty() ? DefaultAclPrincipal(config) : std::string(principal);
  fputs(FormatKafkaAcls(config, client, p).c_str(), out);
  return 0;
}

}  // namespace outbox
