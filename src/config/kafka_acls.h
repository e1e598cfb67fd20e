// KafkaAcls: every Kafka resource and operation a tool needs under a
// configuration, as the `kafka-acls` lines an operator pastes (`outbox-relay
// acls`, `outbox-poller acls`, and docs/operations/kafka-acls.md, which
// outbox-docgen writes from the same function).
//
// What each client does on Kafka, so what it needs (Kafka 3.0 and later: an
// idempotent producer needs no IdempotentWrite on the cluster once it may
// Write a topic, KIP-679):
//   event topics         Write, Describe (produce, metadata); Create too
//                        under kafka.topic_creation.enable (the relay
//                        creates a missing one; Create on the topic, KIP-277,
//                        not on the cluster)
//   dead-letter topic    the same, under outbox.on_invalid dead_letter
//   checkpoint topic     kafka.exactly_once: Write (the checkpoint, in the
//                        transaction), Read (the last one, at start),
//                        Describe, DescribeConfigs (its cleanup.policy),
//                        Create (created when missing)
//   state topic          postgres.slot_marker kafka: as the checkpoint topic
//   transactional id     kafka.exactly_once: Write, Describe (literal when
//                        kafka.transactional_id is set, else the prefix
//                        "outbox-relay-" of the derived one)
//   group                outbox-relay-checkpoint-reader: Read (the reader of
//                        the checkpoint and state topics has a group.id; it
//                        assigns partitions and never commits);
//                        outbox-audit: Read (the audit's and republish's
//                        reader, likewise)
// A topic template's fixed part before its first placeholder is a PREFIXED
// resource ("outbox.event.{aggregatetype}" -> prefix "outbox.event."); a
// template without one is the literal topic; a template that starts with a
// placeholder is every topic ('*'). Under outbox.topic_regex the
// replacement's part before its first '$' is added likewise.
//
// Pure: reads the Config only. Threading: any.
#ifndef OUTBOX_CONFIG_KAFKA_ACLS_H_
#define OUTBOX_CONFIG_KAFKA_ACLS_H_

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "config/config.h"

namespace outbox {

// The program (and command) whose access is listed.
enum class AclClient {
  kRelay,      // outbox-relay run
  kPoller,     // outbox-poller run
  kRepublish,  // outbox-relay republish
  kAudit,      // outbox-audit
};

struct KafkaAcl {
  std::string resource;  // kafka-acls' flag without "--": topic, group,
                         // transactional-id
  std::string name;
  bool prefixed = false;
  std::vector<std::string> operations;  // as kafka-acls spells them
  std::string why;                      // what the client does with it
};

// In a stable order: event topics, dead-letter, checkpoint, state,
// transactional id, groups; one entry per resource, operations merged.
std::vector<KafkaAcl> KafkaAcls(const Config& config, AclClient client);

// "User:<sasl.username>" from kafka.properties, else "User:outbox-relay".
std::string DefaultAclPrincipal(const Config& config);

// One `kafka-acls.sh --bootstrap-server BROKERS --add --allow-principal P
// --operation O... --RESOURCE NAME [--resource-pattern-type prefixed]` line.
std::string KafkaAclCommand(const KafkaAcl& acl, absl::string_view brokers,
                            absl::string_view principal);

// The lines for `client`: a comment naming the client, the principal and
// the settings that decided the list, then per resource a "# why" comment
// and its command.
std::string FormatKafkaAcls(const Config& config, AclClient client,
                            absl::string_view principal);

// The acls command: FormatKafkaAcls() for `principal` (empty:
// DefaultAclPrincipal()) on `out`; returns the exit code, 0.
int RunAclsCommand(const Config& config, AclClient client,
                   absl::string_view principal, FILE* out);

}  // namespace outbox

#endif  // OUTBOX_CONFIG_KAFKA_ACLS_H_
