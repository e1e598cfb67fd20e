#include "docgen/acl_page.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "config/config.h"
#include "config/kafka_acls.h"

namespace outbox {
namespace {

struct Mode {
  const char* title;
  const char* text;     // a paragraph before the example
  const char* command;  // the command that prints it
  const char* yaml;     // the configuration's Kafka-relevant keys
  AclClient client;
};

constexpr Mode kModes[] = {
    {"At least once (the default)",
     "The relay produces the events with an idempotent producer. Nothing "
     "else: it creates no topic and reads none.",
     "outbox-relay acls --config relay.yaml",
     "kafka:\n  brokers: broker:9092\n  properties:\n    sasl.username: "
     "relay\n",
     AclClient::kRelay},
    {"Exactly once",
     "A transactional producer (`kafka.transactional_id`, derived as "
     "`outbox-relay-<system identifier>-<slot>` when empty, hence the "
     "prefix) and the checkpoint topic, which the relay reads at start "
     "through a consumer of its own, checks for `cleanup.policy` and creates "
     "when missing. Set `kafka.transactional_id` to grant a literal id "
     "instead of the prefix.",
     "outbox-relay acls --config relay.yaml",
     "kafka:\n  brokers: broker:9092\n  exactly_once: true\n  properties:\n  "
     "  sasl.username: relay\n",
     AclClient::kRelay},
    {"HA pair with the Kafka slot marker",
     "`postgres.slot_marker: kafka` keeps the slot marker in the state "
     "topic, which both instances of the pair read and write (same "
     "principal for both, or grant each).",
     "outbox-relay acls --config relay.yaml",
     "postgres:\n  slot_marker: kafka\n  slot_marker_id: orders\nkafka:\n  "
     "brokers: broker:9092\n  exactly_once: true\n  transactional_id: "
     "orders-relay\n  properties:\n    sasl.username: relay\n",
     AclClient::kRelay},
    {"Dead letters on",
     "`outbox.on_invalid: dead_letter` adds the dead-letter topic.",
     "outbox-relay acls --config relay.yaml",
     "outbox:\n  on_invalid: dead_letter\n  dead_letter_topic: "
     "outbox.dead_letter\nkafka:\n  brokers: broker:9092\n  properties:\n    "
     "sasl.username: relay\n",
     AclClient::kRelay},
    {"Topic creation on",
     "`kafka.topic_creation.enable: true` adds `Create` on the topics the "
     "relay produces to (Create on a topic resource, KIP-277, rather than on "
     "the whole cluster). With it off, `Create` on the checkpoint and state "
     "topics is still listed: the relay creates those when missing. Drop it "
     "if you create them yourself (compacted, one partition).",
     "outbox-relay acls --config relay.yaml",
     "outbox:\n  on_invalid: dead_letter\nkafka:\n  brokers: broker:9092\n  "
     "topic_creation:\n    enable: true\n  properties:\n    sasl.username: "
     "relay\n",
     AclClient::kRelay},
    {"outbox-poller",
     "The polling relay produces the events (and dead letters under "
     "`outbox.on_invalid: dead_letter`) and nothing else: it never creates a "
     "topic.",
     "outbox-poller acls --config relay.yaml",
     "outbox:\n  on_invalid: dead_letter\nkafka:\n  brokers: broker:9092\n  "
     "properties:\n    sasl.username: poller\n",
     AclClient::kPoller},
    {"outbox-audit",
     "The audit reads the event topics from the beginning through a "
     "consumer that assigns partitions and commits nothing (group "
     "`outbox-audit`). It has no `acls` command; these are the lines for "
     "the configuration shown.",
     "(none)",
     "kafka:\n  brokers: broker:9092\n  properties:\n    sasl.username: "
     "auditor\n",
     AclClient::kAudit},
    {"outbox-relay republish",
     "Republishing reads the event topics (as the audit does) and produces "
     "what they lack.",
     "(none)",
     "kafka:\n  brokers: broker:9092\n  properties:\n    sasl.username: "
     "relay\n",
     AclClient::kRepublish},
};

}  // namespace

std::string KafkaAclsPage(absl::string_view note) {
  std::string out = absl::StrCat("# Kafka ACLs\n\n", note);
  absl::StrAppend(
      &out,
      "On a cluster with an authorizer, the relay's principal needs the "
      "operations below on each resource, and nothing else. "
      "`outbox-relay acls` and `outbox-poller acls` print them for the "
      "effective configuration (the same `--config` and flags as `run`) as "
      "`kafka-acls.sh` commands to paste, each after a comment saying what "
      "the client does with it:\n\n"
      "```sh\n"
      "outbox-relay acls --config relay.yaml --principal User:relay > "
      "acls.sh\n"
      "# review it, then as a Kafka admin (add --command-config FILE with "
      "the admin's credentials):\n"
      "sh acls.sh\n"
      "```\n\n"
      "`--principal` defaults to `User:` and "
      "`kafka.properties.sasl.username`, else `User:outbox-relay`. This page "
      "is generated from the same code (`src/config/kafka_acls.cc`) for the "
      "example configurations below.\n\n"
      "## Resources\n\n"
      "| resource | operations | when |\n"
      "|---|---|---|\n"
      "| event topics (`outbox.topic`, each table's `topic`, "
      "`outbox.messages.topic`, `outbox.topic_replacement`) | Write, "
      "Describe; Create under `kafka.topic_creation.enable` | always |\n"
      "| dead-letter topic (`outbox.dead_letter_topic`) | Write, Describe; "
      "Create under `kafka.topic_creation.enable` | `outbox.on_invalid: "
      "dead_letter` |\n"
      "| checkpoint topic (`kafka.checkpoint_topic`) | Read, Write, Describe, "
      "DescribeConfigs, Create | `kafka.exactly_once` |\n"
      "| state topic (`kafka.state_topic`) | Read, Write, Describe, "
      "DescribeConfigs, Create | `postgres.slot_marker: kafka` |\n"
      "| transactional id (`kafka.transactional_id`, else the prefix "
      "`outbox-relay-`) | Write, Describe | `kafka.exactly_once` |\n"
      "| group `outbox-relay-checkpoint-reader` | Read | `kafka.exactly_once` "
      "or `postgres.slot_marker: kafka` |\n"
      "| group `outbox-audit` | Read | outbox-audit, `outbox-relay "
      "republish` |\n\n"
      "A topic template becomes a prefixed resource: its fixed part before "
      "the first placeholder (`outbox.event.{aggregatetype}` -> prefix "
      "`outbox.event.`). A template without placeholders is a literal topic; "
      "one that starts with a placeholder can name any topic, so it becomes "
      "`--topic '*'`: narrow it by hand if you know the values. The groups "
      "are never joined and never commit; librdkafka asks for them because "
      "each reader has a `group.id`.\n\n"
      "No cluster ACL is needed: an idempotent producer needs "
      "IdempotentWrite on the cluster only on Kafka before 3.0 (KIP-679), "
      "and creating a topic needs Create on the topic (KIP-277) or on the "
      "cluster, either works. The start-up replication check "
      "([topics.md](topics.md#internal-topics-and-replication)) reads the "
      "topics' metadata, which Describe on them allows; a topic the "
      "principal may not describe is not checked.\n\n"
      "## What a missing ACL does\n\n"
      "- Write or Describe on an event or dead-letter topic: the relay "
      "stalls before the refused event and says `waiting for a Kafka ACL: "
      "the relay's principal may not write topic T` (status page, "
      "`outbox_relay_kafka_blocked{reason=\"authorization\"}`), then resumes "
      "by itself once the ACL is granted ([kafka-errors.md]"
      "(kafka-errors.md)).\n"
      "- Write on the transactional id: exactly once cannot start; the "
      "relay logs `waiting for a Kafka ACL: the relay's principal may not "
      "use transactional id T (grant it WRITE and DESCRIBE ...)` and "
      "retries until it is granted.\n"
      "- Read on the checkpoint topic or on the group "
      "`outbox-relay-checkpoint-reader`: the checkpoint cannot be read; "
      "one line naming the topic and the ACL, exit code 3 "
      "([exactly-once-failover.md](../concepts/exactly-once-failover.md)).\n"
      "- Create or DescribeConfigs on the checkpoint or state topic: a "
      "warning, and the relay goes on when the topic exists (create it "
      "yourself, compacted).\n\n");
  for (const Mode& m : kModes) {
    absl::StatusOr<Config> config = ParseConfigYaml(m.yaml, m.title);
    if (!config.ok()) {
      fprintf(stderr, "outbox-docgen: kafka-acls example \"%s\": %s\n", m.title,
              std::string(config.status().message()).c_str());
      std::abort();
    }
    absl::StrAppend(&out, "## ", m.title, "\n\n", m.text, "\n\n");
    absl::StrAppend(&out, "```yaml\n", m.yaml, "```\n\n");
    if (std::string(m.command) != "(none)") {
      absl::StrAppend(&out, "`", m.command, "` prints:\n\n");
    }
    absl::StrAppend(
        &out, "```sh\n",
        FormatKafkaAcls(*config, m.client, DefaultAclPrincipal(*config)),
        "```\n\n");
  }
  out.pop_back();  // one newline at the end
  return out;
}

}  // namespace outbox
