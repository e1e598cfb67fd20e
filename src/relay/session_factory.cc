#include "relay/session_factory.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "kafka/checkpoint_reader.h"
#include "kafka/checkpoint_topic.h"
#include "outbox/status_macros.h"
#include "pg/server_checks.h"

namespace outbox {
namespace {

// The part of the start-up checkpoint that holds on the server the stream
// is connected to: after a promotion that lost WAL, only what precedes the
// fork (core/checkpoint.h, TrustedCheckpoint); logged when cut.
// `timeline_history`: the server timeline's history file, read before
// START_REPLICATION (TimelineHistory()).
absl::StatusOr<Checkpoint> CheckpointOnServer(
    const ServerInfo& server, const std::string& timeline_history,
    const Checkpoint& checkpoint) {
  std::vector<TimelineSwitch> history;
  if (checkpoint.timeline != 0 && checkpoint.timeline < server.timeline) {
    ASSIGN_OR_RETURN(history, ParseTimelineHistory(timeline_history));
  }
  std::string note;
  ASSIGN_OR_RETURN(Checkpoint trusted,
                   TrustedCheckpoint(checkpoint, server.system_id,
                                     server.timeline, history, &note));
  if (!note.empty()) {
    Log(Severity::kWarn, note, {{"slot", checkpoint.slot}});
  }
  return trusted;
}

}  // namespace

SessionFactory::SessionFactory(const Config& config, const RelayConfig& derived,
                               const KafkaOptions& kafka, OutputPlugin* plugin,
                               StoredSlotMarker* slot_marker,
                               const Clock* clock)
    : config_(config),
      derived_(derived),
      kafka_(kafka),
      plugin_(plugin),
      slot_marker_(slot_marker),
      clock_(clock) {
  // Before the first session, the server the marker recorded (a promotion
  // while the relay was down).
  if (slot_marker_ != nullptr)
    previous_server_ = slot_marker_->RecordedServer();
}

namespace {

// Open()'s answer once `stop` is set: the session (and the slot, when it
// was taken) is given up without streaming.
absl::Status Stopping(const std::atomic<bool>& stop) {
  if (!stop.load()) return absl::OkStatus();
  return absl::CancelledError("stopping: the session was not started");
}

}  // namespace

// The slot first, then the producer: init_transactions fences every other
// producer with the transactional.id, so only the instance that holds the
// slot may call it (an instance that saw the slot free but lost the race
// for it would fence the winner). A failure after START_REPLICATION
// destroys the session, which closes the connection and frees the slot for
// another instance. `stop` is checked after every step.
absl::StatusOr<Session> SessionFactory::Open(const std::atomic<bool>& stop) {
  stage_ = SessionStage::kConnect;
  Session session;
  ReplicationOptions stream_options = derived_.stream;
  stream_options.plugin = plugin_;
  stream_options.slot_marker = slot_marker_;
  ASSIGN_OR_RETURN(session.stream,
                   LibpqReplicationStream::Connect(stream_options));
  RETURN_IF_ERROR(Stopping(stop));
  const ServerInfo& server = session.stream->server();
  if (server.slot_failover_enabled) {
    Log(Severity::kInfo, "enabled failover on the replication slot",
        {{"slot", config_.postgres.slot}});
  }
  // Once per value: a slot nobody streams from is invalidated after it.
  if (server.idle_slot_timeout_s != idle_timeout_warned_s_) {
    idle_timeout_warned_s_ = server.idle_slot_timeout_s;
    if (std::optional<std::string> warning = IdleSlotTimeoutWarning(
            server.idle_slot_timeout_s, config_.postgres.expected_outage_s)) {
      Log(Severity::kWarn, *warning, {{"slot", config_.postgres.slot}});
    }
  }
  // Exactly once: the timeline's history, which the checkpoint is cut by,
  // can only be asked before START_REPLICATION.
  std::string timeline_history;
  if (config_.kafka.exactly_once) {
    absl::StatusOr<std::string> text = session.stream->TimelineHistory();
    if (!text.ok()) {
      return absl::UnavailableError(
          absl::StrCat("cannot read timeline ", server.timeline,
                       "'s history: ", text.status().message()));
    }
    timeline_history = std::move(*text);
  }
  RETURN_IF_ERROR(session.stream->Start(server.slot_confirmed_flush));
  RETURN_IF_ERROR(Stopping(stop));
  KafkaOptions session_kafka = kafka_;
  session_kafka.stop = &stop;
  if (config_.kafka.exactly_once) {
    session_kafka.transactional_id =
        !config_.kafka.transactional_id.empty()
            ? config_.kafka.transactional_id
            : absl::StrCat("outbox-relay-", server.system_id, "-",
                           config_.postgres.slot);
  }
  stage_ = SessionStage::kCreateProducer;
  absl::StatusOr<std::unique_ptr<RdKafkaSink>> sink =
      CreateProducer(session_kafka);
  RETURN_IF_ERROR(Stopping(stop));
  if (!sink.ok()) return sink.status();
  session.sink = std::move(*sink);
  LogServerChanges(server);
  if (config_.kafka.exactly_once) {
    stage_ = SessionStage::kReadCheckpoint;
    RETURN_IF_ERROR(
        StartTransactions(session, session_kafka, timeline_history));
    RETURN_IF_ERROR(Stopping(stop));
  }
  return session;
}

absl::StatusOr<std::unique_ptr<RdKafkaSink>> SessionFactory::CreateProducer(
    const KafkaOptions& session_kafka) {
  absl::StatusOr<std::unique_ptr<RdKafkaSink>> created =
      RdKafkaSink::Create(session_kafka);
  if (!created.ok() &&
      absl::StrContains(created.status().message(),
                        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED")) {
    // A missing ACL, granted later like a topic's (the relay retries):
    // the one line names what to grant.
    return absl::UnavailableError(absl::StrCat(
        "waiting for a Kafka ACL: the relay's principal may not use "
        "transactional id ",
        session_kafka.transactional_id,
        " (grant it WRITE and DESCRIBE on the transactional id; "
        "`outbox-relay acls` prints the line): ",
        created.status().message()));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<RdKafkaSink> sink, std::move(created));
  if (!producer_logged_) {
    producer_logged_ = true;
    const auto& props = sink->effective_properties();  // masked
    LogEntries(Severity::kInfo, "kafka producer", {props.begin(), props.end()});
  }
  return sink;
}

void SessionFactory::LogServerChanges(const ServerInfo& server) {
  ServerIdentity identity{server.system_id, server.timeline, server.endpoint};
  if (first_session_ && previous_server_.has_value() &&
      previous_server_->system_id != identity.system_id) {
    previous_server_.reset();  // StoredSlotMarker::Record() warned already
  }
  for (const std::string& change : ServerChanges(previous_server_, identity)) {
    Log(Severity::kWarn, change, {{"slot", config_.postgres.slot}});
  }
  previous_server_ = identity;
  first_session_ = false;
}

void SessionFactory::CheckCheckpointTopic(const CheckpointTopicState* topic,
                                          const absl::Status& status) {
  checkpoint_topic_checked_ = true;
  checkpoint_topic_exists_ = status.ok();
  if (!status.ok()) {
    // Maybe only creating or describing is denied: producing may work.
    Log(Severity::kWarn, std::string(status.message()));
  } else if (topic->created) {
    Log(Severity::kInfo, "created the checkpoint topic",
        {{"topic", config_.kafka.checkpoint_topic},
         {"cleanup.policy", topic->cleanup_policy}});
  } else if (!topic->compacted()) {
    Log(Severity::kWarn,
        "the checkpoint topic is not compacted: retention may delete "
        "the last checkpoint, and a restart after that publishes again "
        "what the slot still holds; set cleanup.policy=compact on it",
        {{"topic", config_.kafka.checkpoint_topic},
         {"cleanup.policy", topic->cleanup_policy}});
  }
}

// After init_transactions (which aborts what a previous producer left
// open, so the read below is not held back by it), the last committed
// checkpoint decides what is already published.
absl::Status SessionFactory::StartTransactions(
    Session& session, const KafkaOptions& session_kafka,
    const std::string& timeline_history) {
  const ServerInfo& server = session.stream->server();
  if (!checkpoint_topic_checked_) {
    absl::StatusOr<CheckpointTopicState> topic = EnsureCheckpointTopic(
        session_kafka, config_.kafka.checkpoint_topic,
        config_.kafka.internal_topics, config_.kafka.flush_timeout_ms);
    if (absl::IsUnavailable(topic.status())) return topic.status();
    CheckCheckpointTopic(topic.ok() ? &*topic : nullptr, topic.status());
  }
  std::string where;
  absl::StatusOr<Checkpoint> checkpoint = ReadCheckpoint(
      session_kafka, config_.kafka.checkpoint_topic, server.system_id,
      config_.postgres.slot, config_.kafka.flush_timeout_ms,
      checkpoint_topic_exists_, &where);
  if (checkpoint.ok()) {
    checkpoint = CheckpointOnServer(session.stream->server(), timeline_history,
                                    *checkpoint);
  }
  if (!checkpoint.ok()) return checkpoint.status();
  TransactionOptions txn = derived_.transactions;
  txn.clock = clock_;  // the Relay's
  Log(Severity::kInfo, "exactly once",
      {{"transactional_id", session_kafka.transactional_id},
       {"checkpoint_lsn", FormatLsn(checkpoint->end_lsn)},
       {"checkpoint_topic", config_.kafka.checkpoint_topic},
       {"checkpoint_read", where}});
  session.policy = std::make_unique<TransactionalCommitPolicy>(
      txn, session.sink.get(), *checkpoint, &refused_);
  // Best effort: if it fails, the first commit only waits longer.
  if (absl::Status s = session.sink->LookUpTopic(
          config_.kafka.checkpoint_topic, config_.kafka.flush_timeout_ms);
      !s.ok()) {
    Log(Severity::kWarn, std::string(s.message()));
  }
  return absl::OkStatus();
}

}  // namespace outbox
