// The kafka.* keys of the configuration key table (see
// config_key_table.h).
#include "config/config_key_table.h"
#include "config/config_keys.h"

namespace outbox::config_key_table {

void AddKafkaKeys(KeyAppender add) {
  add(Global("kafka.brokers", G(kafka.brokers),
             "bootstrap brokers, host:port[,host:port...]"));
  add(Global("kafka.properties", G(kafka.properties),
             "librdkafka producer properties passed through verbatim "
             "(security.protocol, sasl.*, ssl.*, linger.ms, ...); entries "
             "merge with the defaults shown, an empty value removes one; "
             "NAME_file: a file whose content is property NAME, read at "
             "start (sasl.password_file, ssl.key.password_file, ...)"));
  add(Global("kafka.send_when_idle", G(kafka.send_when_idle),
             "once everything readable is produced, send what the producer "
             "holds at once instead of waiting out linger.ms: low latency at "
             "low rates, linger.ms batching under load")
          .For(kRelayOnly));
  add(Global("kafka.flush_timeout_ms", G(kafka.flush_timeout_ms),
             "how long shutdown waits for outstanding deliveries")
          .For(kDaemons));
  add(Global("kafka.allow_unsafe", G(kafka.allow_unsafe),
             "accept kafka.properties that weaken the delivery guarantees "
             "(acks below all, enable.idempotence=false, max.in.flight above "
             "5, a finite message.timeout.ms or retries, ...), each logged as "
             "a warning; false refuses them at start")
          .For(kDaemons));
  add(Global("kafka.exactly_once", G(kafka.exactly_once),
             "publish in Kafka transactions with a checkpoint record and "
             "confirm the slot only after commit: read_committed consumers "
             "see every event once, at the cost of up to "
             "kafka.transaction.max_ms more latency")
          .For(kRelayOnly));
  add(Global("kafka.transactional_id", G(kafka.transactional_id),
             "exactly_once: the producer's transactional.id; empty derives "
             "outbox-relay-<system identifier>-<slot>, so a standby fences a "
             "stale instance of the same slot")
          .For(kRelayOnly));
  add(Global("kafka.state_topic", G(kafka.state_topic),
             "postgres.slot_marker kafka: the compacted topic holding one "
             "slot marker per system identifier and slot (created compacted "
             "when missing)")
          .For(kRelayOnly));
  add(Global("kafka.checkpoint_topic", G(kafka.checkpoint_topic),
             "exactly_once: the compacted topic holding one checkpoint per "
             "database and slot (created compacted when missing)")
          .For(kRelayOnly));
  add(Global("kafka.transaction.max_ms", G(kafka.transaction_max_ms),
             "exactly_once: commit the Kafka transaction at the first "
             "PostgreSQL commit after it has been open this long")
          .Min(1)
          .For(kRelayOnly));
  add(Global("kafka.transaction.max_events", G(kafka.transaction_max_events),
             "exactly_once: or once it holds this many events")
          .Min(1)
          .For(kRelayOnly));
  add(Global("kafka.transaction.split_events",
             G(kafka.transaction_split_events),
             "exactly_once: split a PostgreSQL transaction (not atomic for "
             "consumers, still once) past this many events in one Kafka "
             "transaction")
          .Min(1)
          .For(kRelayOnly));
  add(Global("kafka.topic_creation.enable", G(kafka.topic_creation.enable),
             "create a topic the relay produces to (events, dead letters) "
             "when Kafka says it does not exist, with the settings below; "
             "false: the relay waits until someone creates it")
          .For(kDaemons));
  add(Global("kafka.topic_creation.partitions",
             G(kafka.topic_creation.partitions),
             "topic_creation: partitions of a created topic; -1 is the "
             "broker's num.partitions")
          .Min(-1)
          .For(kDaemons));
  add(Global("kafka.topic_creation.replication_factor",
             G(kafka.topic_creation.replication_factor),
             "topic_creation: replication factor of a created topic; -1 is "
             "the broker's default.replication.factor")
          .Min(-1)
          .For(kDaemons));
  add(Global("kafka.topic_creation.configs", G(kafka.topic_creation.configs),
             "topic_creation: topic configs of a created topic "
             "(cleanup.policy, retention.ms, min.insync.replicas, ...)")
          .For(kDaemons));
}

}  // namespace outbox::config_key_table
