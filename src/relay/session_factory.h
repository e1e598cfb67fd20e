// SessionFactory: opens one outbox-relay session, the connections a
// standby needs to become active: the replication stream that takes the
// slot (with the output plugin and the slot marker), the Kafka producer
// (with its transactional.id under kafka.exactly_once) and, exactly once,
// the commit policy over the last committed checkpoint (the checkpoint
// topic checked once per process). It logs what changed about the server
// since the previous session (ServerChanges) and the producer's properties
// once per process.
//
// Open() takes the slot (START_REPLICATION) before it creates the producer:
// under exactly once, init_transactions fences every other producer with
// the transactional.id, so only the slot's holder calls it. It checks its
// stop flag after every step and returns Cancelled once it is set (the
// session, and the slot, given up). It returns any other error as it met
// it; failed_stage() says where (daemon/disposition.h's SessionStage), and
// Dispose() what it means.
//
// Threading: the supervisor's thread only. Everything given must outlive
// the factory.
#ifndef OUTBOX_RELAY_SESSION_FACTORY_H_
#define OUTBOX_RELAY_SESSION_FACTORY_H_

#include <atomic>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "config/config.h"
#include "core/refused_events.h"
#include "core/transactional_commit_policy.h"
#include "daemon/disposition.h"
#include "kafka/checkpoint_topic.h"
#include "kafka/rdkafka_sink.h"
#include "outbox/clock.h"
#include "pg/libpq_replication_stream.h"
#include "plugin/output_plugin.h"
#include "relay/relay_config.h"
#include "relay/server_change.h"
#include "relay/stored_slot_marker.h"

namespace outbox {

// One session's connections: the replication stream that holds the slot,
// the producer, and (exactly once) the commit policy over it.
struct Session {
  std::unique_ptr<LibpqReplicationStream> stream;
  std::unique_ptr<RdKafkaSink> sink;
  std::unique_ptr<TransactionalCommitPolicy> policy;
};

class SessionFactory {
 public:
  // `slot_marker` may be null (postgres.create_slot off). `kafka` is the
  // producer's options (RelayConfig's, with the connection listener).
  SessionFactory(const Config& config, const RelayConfig& derived,
                 const KafkaOptions& kafka, OutputPlugin* plugin,
                 StoredSlotMarker* slot_marker, const Clock* clock);

  // `stop`: a SIGTERM during the takeover (must outlive the call).
  absl::StatusOr<Session> Open(const std::atomic<bool>& stop);
  // Where the last Open() failed.
  SessionStage failed_stage() const { return stage_; }

 private:
  absl::StatusOr<std::unique_ptr<RdKafkaSink>> CreateProducer(
      const KafkaOptions& session_kafka);
  void LogServerChanges(const ServerInfo& server);
  // Exactly once: the checkpoint topic (once per process), the last
  // checkpoint, and the commit policy over it.
  // `timeline_history`: TimelineHistory(), read before START_REPLICATION.
  absl::Status StartTransactions(Session& session,
                                 const KafkaOptions& session_kafka,
                                 const std::string& timeline_history);
  void CheckCheckpointTopic(const CheckpointTopicState* topic,
                            const absl::Status& status);

  const Config& config_;
  const RelayConfig& derived_;
  const KafkaOptions& kafka_;
  OutputPlugin* const plugin_;
  StoredSlotMarker* const slot_marker_;
  const Clock* const clock_;
  SessionStage stage_ = SessionStage::kConnect;
  bool producer_logged_ = false;  // its properties, once per process
  // The previous session's server, to log a promotion or another cluster;
  // before the first, the server the slot marker recorded.
  std::optional<ServerIdentity> previous_server_;
  bool first_session_ = true;
  // The idle_replication_slot_timeout last warned about (0: none).
  int64_t idle_timeout_warned_s_ = 0;
  // Exactly once: events Kafka refused inside an aborted transaction, to
  // dead-letter when the next session replays them.
  RefusedEvents refused_;
  bool checkpoint_topic_checked_ = false;  // once per process
  // It was seen to exist (or made): a broker that does not know it later
  // has stale metadata, not "no checkpoint".
  bool checkpoint_topic_exists_ = false;
};

}  // namespace outbox

#endif  // OUTBOX_RELAY_SESSION_FACTORY_H_
