#include "relay/supervisor.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "core/transactional_commit_policy.h"
#include "daemon/lifecycle.h"
#include "kafka/checkpoint_reader.h"
#include "kafka/checkpoint_topic.h"
#include "kafka/rdkafka_sink.h"
#include "kafka/state_topic.h"
#include "kafka/topic_admin.h"
#include "outbox/status_macros.h"
#include "pg/failover_readiness.h"
#include "pg/libpq_replication_stream.h"
#include "pg/slot_monitor.h"
#include "plugin/output_plugin.h"
#include "relay/heartbeat.h"
#include "relay/relay.h"
#include "relay/server_change.h"
#include "relay/slot_marker.h"
#include "route/message_router.h"
#include "route/router.h"

namespace outbox {
namespace {

ReplicationOptions StreamOptions(const Config& config, const Router& router,
                                 OutputPlugin* plugin, SlotHistory* history) {
  ReplicationOptions o;
  o.plugin = plugin;
  o.conninfo = config.postgres.conninfo;
  o.slot = config.postgres.slot;
  o.create_slot = config.postgres.create_slot;
  o.failover_slot = config.postgres.failover_slot;
  o.history = history;
  o.connect_timeout_s = static_cast<int>(config.postgres.connect_timeout_s);
  for (const auto& t : router.RequiredColumns()) {
    o.tables.push_back({t.schema, t.table, t.columns});
  }
  return o;
}

// The configured output plugin over the router's tables.
absl::StatusOr<std::unique_ptr<OutputPlugin>> MakePlugin(const Config& config,
                                                         const Router& router) {
  PluginOptions o;
  for (const auto& t : router.RequiredColumns()) {
    o.tables.push_back({t.schema, t.table, t.columns});
  }
  o.publication = config.postgres.publication;
  o.create_publication = config.postgres.create_publication;
  switch (config.postgres.pgoutput_binary) {
    case PgOutputBinary::kAuto:
      o.binary = PluginOptions::Binary::kAuto;
      break;
    case PgOutputBinary::kOn:
      o.binary = PluginOptions::Binary::kOn;
      break;
    case PgOutputBinary::kOff:
      o.binary = PluginOptions::Binary::kOff;
      break;
  }
  if (config.outbox.messages.enabled) {
    o.message_prefixes.push_back(config.outbox.messages.prefix);
  }
  if (config.postgres.heartbeat_interval_s > 0) {
    o.message_prefixes.push_back(kHeartbeatPrefix);
  }
  o.decode_updates = config.outbox.on_update != OnUpdate::kIgnore;
  return OutputPlugin::Create(config.postgres.plugin, o);
}

}  // namespace

KafkaOptions RelayKafkaOptions(const Config& config) {
  KafkaOptions kafka{config.kafka.brokers, config.kafka.properties};
  // Under halt, a record the broker refuses must stop the producer before it
  // sends anything queued behind it (librdkafka would otherwise bump its
  // epoch and send the rest, some of the refused record's key, on its own
  // before the relay can purge them). Not under dead_letter: there a refused
  // record must fail alone, to be dead-lettered while the rest flows.
  if (config.outbox.on_invalid == OnInvalid::kHalt) {
    kafka.properties.emplace("enable.gapless.guarantee", "true");
  }
  return kafka;
}

namespace {

RelayOptions PipelineOptions(const Config& config) {
  RelayOptions o;
  o.status_interval_ms = static_cast<int>(config.postgres.status_interval_ms);
  o.read_coalesce_us = static_cast<int>(config.postgres.read_coalesce_us);
  o.max_inflight_events = config.limits.max_inflight_events;
  o.max_inflight_bytes = config.limits.max_inflight_bytes;
  o.min_inflight_bytes = config.limits.min_inflight_bytes;
  // librdkafka's alias and its name; its own default (5) when neither is set.
  for (const char* name : {"queue.buffering.max.ms", "linger.ms"}) {
    auto it = config.kafka.properties.find(name);
    double ms;
    if (it != config.kafka.properties.end() &&
        absl::SimpleAtod(it->second, &ms)) {
      o.batching_delay_us = static_cast<int64_t>(ms * 1000);
    }
  }
  o.max_tracked_events = config.limits.max_tracked_events;
  o.dead_letter = config.outbox.on_invalid == OnInvalid::kDeadLetter;
  o.dead_letter_topic = config.outbox.dead_letter_topic;
  o.on_update = config.outbox.on_update;
  o.flush_timeout_ms = static_cast<int>(config.kafka.flush_timeout_ms);
  o.send_when_idle = config.kafka.send_when_idle;
  o.progress_interval_s = static_cast<int>(config.log.progress_interval_s);
  return o;
}

std::string Mapping(const Config& config) {
  std::vector<std::string> parts;
  for (const OutboxTable& t : config.outbox.tables) {
    parts.push_back(absl::StrCat(t.QualifiedName(), " -> ", t.topic,
                                 " key=", t.key, " value=", t.columns.payload));
  }
  if (config.outbox.messages.enabled) {
    parts.push_back(absl::StrCat("messages '", config.outbox.messages.prefix,
                                 "' -> ", config.outbox.messages.topic));
  }
  return absl::StrJoin(parts, "; ");
}

constexpr std::chrono::milliseconds kSlotMonitorTick{500};
// Failover readiness connects to every standby: a slower round than the
// slot's, and at once when a session starts. While a check finds problems
// the next comes sooner, so that a slot the standby synchronizes a few
// seconds after its creation, or a setting an operator just fixed, is seen
// ready without waiting a whole round.
constexpr std::chrono::seconds kFailoverCheckInterval{60};
constexpr std::chrono::seconds kFailoverRecheckInterval{10};

// For the status page: what went wrong last, when (metrics may be null).
void RecordError(RelayMetrics* metrics, absl::string_view what,
                 const absl::Status& s) {
  if (metrics != nullptr) metrics->daemon_status().SetLastError(what, s);
}

// The one line for a session that ended on a missing ACL or topic
// (IsTopicAccessError): what is missing and how it resumes.
std::string KafkaBlockedState(const absl::Status& s, absl::string_view topic) {
  const std::string t =
      topic.empty() ? "an event topic" : absl::StrCat("topic ", topic);
  if (absl::IsPermissionDenied(s)) {
    return absl::StrCat(
        "waiting for a Kafka ACL: the relay's principal may not write ", t,
        " (grant it WRITE and DESCRIBE on the topic); nothing past the "
        "refused event is confirmed, and the relay retries by itself");
  }
  return absl::StrCat(
      "waiting for Kafka ", t,
      " to exist (create it, or set kafka.topic_creation.enable); nothing "
      "past the refused event is confirmed, and the relay retries by itself");
}

// kafka.topic_creation: creates `topic`, which Kafka said does not exist,
// with the configured partitions, replication factor and configs; logs it.
absl::Status CreateMissingTopic(const KafkaOptions& kafka,
                                const KafkaConfig& config,
                                const std::string& topic, int timeout_ms) {
  ASSIGN_OR_RETURN(std::unique_ptr<TopicAdmin> admin,
                   TopicAdmin::Create(kafka));
  NewTopicSpec spec;
  spec.partitions = static_cast<int>(config.topic_creation.partitions);
  spec.replication_factor =
      static_cast<int>(config.topic_creation.replication_factor);
  spec.configs = config.topic_creation.configs;
  absl::Status s = admin->CreateTopic(topic, spec, timeout_ms);
  if (!s.ok()) {
    Log(Severity::kWarn, "cannot create the missing topic",
        {{"topic", topic}, {"error", std::string(s.message())}});
    return s;
  }
  Log(Severity::kInfo, "created the missing topic (kafka.topic_creation)",
      {{"topic", topic},
       {"partitions", absl::StrCat(spec.partitions)},
       {"replication_factor", absl::StrCat(spec.replication_factor)}});
  return absl::OkStatus();
}

// For the status page: the PostgreSQL and Kafka connection states.
void SetStates(RelayMetrics* metrics, absl::string_view postgres,
               absl::string_view kafka) {
  if (metrics != nullptr) metrics->daemon_status().SetStates(postgres, kafka);
}

// The producer's transaction.timeout.ms: kafka.properties' or
// librdkafka's default.
int64_t TransactionTimeoutMs(const Config& config) {
  int64_t ms = 60000;
  auto it = config.kafka.properties.find("transaction.timeout.ms");
  if (it != config.kafka.properties.end() &&
      !absl::SimpleAtoi(it->second, &ms)) {
    ms = 60000;  // librdkafka refused it at Create() already
  }
  return ms;
}

// The part of the start-up checkpoint that holds on the server the stream
// is connected to: after a promotion that lost WAL, only what precedes the
// fork (core/checkpoint.h, TrustedCheckpoint); logged when cut.
absl::StatusOr<Checkpoint> CheckpointOnServer(LibpqReplicationStream& stream,
                                              const Checkpoint& checkpoint) {
  const ServerInfo& server = stream.server();
  std::vector<TimelineSwitch> history;
  if (checkpoint.timeline != 0 && checkpoint.timeline < server.timeline) {
    absl::StatusOr<std::string> text = stream.TimelineHistory();
    if (!text.ok()) {
      return absl::UnavailableError(
          absl::StrCat("cannot read timeline ", server.timeline,
                       "'s history: ", text.status().message()));
    }
    ASSIGN_OR_RETURN(history, ParseTimelineHistory(*text));
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

// The slot marker where postgres.slot_marker keeps it.
absl::StatusOr<std::unique_ptr<SlotMarker>> OpenSlotMarker(
    const Config& config, const KafkaOptions& kafka) {
  Lsn acknowledged = kInvalidLsn;
  if (!config.postgres.acknowledge_slot_loss.empty()) {
    ASSIGN_OR_RETURN(acknowledged,
                     ParseLsn(config.postgres.acknowledge_slot_loss));
  }
  if (config.postgres.slot_marker == SlotMarkerStore::kKafka) {
    return SlotMarker::Open(
        std::make_unique<KafkaMarkerStore>(
            kafka, config.kafka.state_topic, config.postgres.slot,
            static_cast<int>(config.kafka.flush_timeout_ms)),
        config.postgres.slot, acknowledged);
  }
  std::string dir = config.postgres.state_dir;
  if (dir.empty()) {
    ASSIGN_OR_RETURN(dir, DefaultStateDir());
  }
  return OpenFileSlotMarker(dir, config.postgres.slot, acknowledged);
}

// Queries the slot every kSlotMonitorInterval on its own thread, over a
// normal connection (never the replication one: a slow query must not stall
// the relay loop), sets the slot gauges (with metrics) and moves the slot
// marker's confirmed position (with a history). Errors are counted and
// logged once per distinct message; the next round reconnects. With
// postgres.failover_slot, while the slot is active (the session has set its
// failover flag), it also checks failover readiness every
// kFailoverCheckInterval (kFailoverRecheckInterval while it finds
// problems): each problem is logged once when it appears, and the gauge
// follows every check. Destruction
// waits for a query or connect in progress (at most
// postgres.connect_timeout_s).

class SlotMonitorThread {
 public:
  // `metrics` and `history` may each be null.
  SlotMonitorThread(const Config& config, RelayMetrics* metrics,
                    SlotMarker* history)
      : conninfo_(config.postgres.conninfo),
        standby_conninfo_(config.postgres.standby_conninfo),
        slot_(config.postgres.slot),
        failover_slot_(config.postgres.failover_slot),
        connect_timeout_s_(static_cast<int>(config.postgres.connect_timeout_s)),
        metrics_(metrics),
        history_(history),
        thread_([this] { Loop(); }) {}
  ~SlotMonitorThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  // Queries every kSlotMonitorInterval, and at once when a session starts
  // or ends (checked every kSlotMonitorTick), so the slot gauges show a new
  // session holding the slot without waiting a whole interval.
  void Loop() {
    auto next = std::chrono::steady_clock::now();
    bool streaming = false;
    std::unique_lock<std::mutex> lock(mu_);
    while (!done_) {
      auto now = std::chrono::steady_clock::now();
      const bool now_streaming = metrics_ != nullptr && metrics_->streaming();
      if (now >= next || now_streaming != streaming) {
        if (now_streaming && !streaming) next_failover_check_ = now;
        streaming = now_streaming;
        lock.unlock();
        QueryOnce();
        lock.lock();
        next = std::chrono::steady_clock::now() + kSlotMonitorInterval;
      }
      cv_.wait_for(lock, kSlotMonitorTick, [this] { return done_; });
    }
  }

  void QueryOnce() {
    if (monitor_ == nullptr) {
      auto m = SlotMonitor::Connect(conninfo_, connect_timeout_s_);
      if (!m.ok()) return Failed(m.status());
      monitor_ = std::move(*m);
    }
    absl::StatusOr<SlotStatus> s = monitor_->Query(slot_);
    if (!s.ok()) {
      if (absl::IsUnavailable(s.status())) monitor_.reset();
      // The supervisor creates a missing slot; nothing to report until then.
      if (!absl::IsNotFound(s.status())) Failed(s.status());
      return;
    }
    if (metrics_ != nullptr) metrics_->SetSlot(*s);
    if (failover_slot_ && s->active) CheckFailover();
    if (history_ != nullptr) {
      if (absl::Status h = history_->Confirmed(s->confirmed_flush_lsn);
          !h.ok()) {
        return Failed(h, "cannot update the slot marker");
      }
    }
    last_error_.clear();
  }

  void CheckFailover() {
    auto now = std::chrono::steady_clock::now();
    if (now < next_failover_check_) return;
    next_failover_check_ = now + kFailoverCheckInterval;
    absl::StatusOr<FailoverReport> r = CheckFailoverReadiness(
        {conninfo_, standby_conninfo_, slot_, connect_timeout_s_});
    if (!r.ok()) return Failed(r.status(), "cannot check failover readiness");
    if (!r->supported) {
      // Said once; checked again only when a session starts.
      next_failover_check_ = std::chrono::steady_clock::time_point::max();
      if (failover_unsupported_noted_) return;
      failover_unsupported_noted_ = true;
      Log(Severity::kInfo,
          "postgres.failover_slot has no effect: PostgreSQL 16 and older have "
          "no failover slots",
          {{"server_version_num", absl::StrCat(r->version_num)}});
      return;
    }
    if (!r->problems.empty())
      next_failover_check_ = now + kFailoverRecheckInterval;
    if (metrics_ != nullptr) metrics_->SetFailoverProblems(r->problems.size());
    for (const std::string& p : r->problems) {
      if (std::find(failover_problems_.begin(), failover_problems_.end(), p) ==
          failover_problems_.end()) {
        Log(Severity::kWarn, absl::StrCat("failover not safe: ", p));
      }
    }
    if (r->problems.empty() && !failover_problems_.empty()) {
      Log(Severity::kInfo, "failover ready: every check passed",
          {{"standbys", absl::StrCat(r->standbys.size())}});
    }
    failover_problems_ = std::move(r->problems);
  }

  void Failed(const absl::Status& s,
              absl::string_view what = "cannot query the replication slot") {
    if (metrics_ != nullptr) metrics_->OnSlotMonitorError();
    RecordError(metrics_, what, s);
    if (s.message() == last_error_) return;
    last_error_ = std::string(s.message());
    Log(Severity::kWarn, what, {{"slot", slot_}, {"error", last_error_}});
  }

  const std::string conninfo_;
  const std::string standby_conninfo_;
  const std::string slot_;
  const bool failover_slot_;
  const int connect_timeout_s_;
  RelayMetrics* metrics_;
  SlotMarker* history_;
  std::unique_ptr<SlotMonitor> monitor_;  // monitor thread only
  std::string last_error_;                // monitor thread only
  // Monitor thread only: when to check failover readiness next, and the
  // problems the last check logged.
  std::chrono::steady_clock::time_point next_failover_check_;
  std::vector<std::string> failover_problems_;
  bool failover_unsupported_noted_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;   // guarded by mu_
  std::thread thread_;  // last: starts after everything above
};

// One session's connections: the replication stream that holds the slot,
// the producer, and (exactly once) the commit policy over it.
struct Session {
  std::unique_ptr<LibpqReplicationStream> stream;
  std::unique_ptr<RdKafkaSink> sink;
  std::unique_ptr<TransactionalCommitPolicy> policy;
};

// RunRelay()'s state machine (daemon/lifecycle.h): as a standby, Connect()
// tries to take the slot and set up a producer; as the active instance,
// Stream() runs the session until it ends (draining as it does); a
// transient error goes back to standby, anything else stops with its exit
// code (set by Exit()).
class RelaySupervisor {
 public:
  RelaySupervisor(const Config& config, const std::atomic<bool>& stop,
                  RelayMetrics* metrics)
      : config_(config),
        stop_(stop),
        metrics_(metrics),
        lifecycle_(config.postgres, stop,
                   metrics != nullptr ? &metrics->role() : nullptr,
                   metrics != nullptr ? &metrics->daemon_status() : nullptr,
                   [metrics] {
                     if (metrics != nullptr) {
                       metrics->Heartbeat(RealClock()->NowMicros());
                     }
                   }) {}

  int Run() {
    if (std::optional<int> code = Prepare()) return lifecycle_.Stop(*code);
    while (!stop_.load()) {
      absl::StatusOr<Session> session = Connect();  // standby
      if (!session.ok()) {
        if (exit_code_) return lifecycle_.Stop(*exit_code_);
        lifecycle_.RetryAfter(waiting_for_, session.status(),
                              IsSlotInUse(session.status()));
        continue;
      }
      lifecycle_.Activate();
      absl::Status end = Stream(*session);  // active, then draining
      if (end.ok()) break;
      if (exit_code_) return lifecycle_.Stop(*exit_code_);
      if (restart_now_) {  // the plugin changed how it streams
        restart_now_ = false;
        continue;
      }
      if (metrics_ != nullptr) metrics_->OnReconnect();
      lifecycle_.RetryAfter(
          blocked_state_.empty() ? "PostgreSQL" : "Kafka", end,
          IsSlotInUse(end),
          blocked_state_.empty() ? kNoKafkaProducer : blocked_state_);
      blocked_state_.clear();
    }
    return lifecycle_.Stop(kExitOk);
  }

 private:
  // What every session shares, made once; an exit code when the
  // configuration cannot work.
  std::optional<int> Prepare() {
    absl::StatusOr<std::unique_ptr<Router>> router = Router::Create(config_);
    if (!router.ok()) return LogExit(kExitUsage, router.status());
    router_ = std::move(*router);
    absl::StatusOr<std::unique_ptr<OutputPlugin>> plugin =
        MakePlugin(config_, *router_);
    if (!plugin.ok()) return LogExit(kExitUsage, plugin.status());
    plugin_ = std::move(*plugin);
    if (config_.outbox.messages.enabled) {
      if (config_.outbox.messages.prefix == kHeartbeatPrefix) {
        return LogExit(kExitUsage,
                       absl::InvalidArgumentError(absl::StrCat(
                           "outbox.messages.prefix \"", kHeartbeatPrefix,
                           "\" is the relay's heartbeat prefix")));
      }
      absl::StatusOr<std::unique_ptr<MessageRouter>> m =
          MessageRouter::Create(config_.outbox);
      if (!m.ok()) return LogExit(kExitUsage, m.status());
      message_router_ = std::move(*m);
    }
    kafka_ = RelayKafkaOptions(config_);
    // A relay that may create its slot remembers it (SlotMarker), so a
    // slot that disappears is not created anew; one that may not needs no
    // memory.
    if (config_.postgres.create_slot) {
      absl::StatusOr<std::unique_ptr<SlotMarker>> h =
          OpenSlotMarker(config_, kafka_);
      if (!h.ok()) return LogExit(kExitPrecondition, h.status());
      history_ = std::move(*h);
      // Before the first session, the server the marker recorded (a
      // promotion while the relay was down).
      previous_server_ = history_->RecordedServer();
    }
    if (metrics_ != nullptr) {
      kafka_.on_connection_state =
          metrics_->daemon_status().KafkaStateListener();
    }
    if (metrics_ != nullptr || history_ != nullptr) {
      slot_monitor_ = std::make_unique<SlotMonitorThread>(config_, metrics_,
                                                          history_.get());
    }
    // The heartbeat's nonce tells this process's messages from any other's.
    if (config_.postgres.heartbeat_interval_s > 0) {
      heartbeat_nonce_ = NewHeartbeatNonce();
      heartbeat_ = std::make_unique<HeartbeatEmitter>(
          HeartbeatEmitter::Options{
              config_.postgres.conninfo,
              static_cast<int>(config_.postgres.connect_timeout_s),
              config_.postgres.heartbeat_interval_s, heartbeat_nonce_},
          metrics_);
    }
    return std::nullopt;
  }

  // Standby: one attempt to hold the slot and set up a producer for it.
  // Errors to retry are returned as they are (`waiting_for_` says what for);
  // errors to exit on also set exit_code_.
  absl::StatusOr<Session> Connect() {
    if (metrics_ != nullptr) metrics_->Heartbeat(RealClock()->NowMicros());
    SetStates(metrics_, "connecting", kNoKafkaProducer);
    waiting_for_ = "PostgreSQL";
    Session session;
    auto stream = LibpqReplicationStream::Connect(
        StreamOptions(config_, *router_, plugin_.get(), history_.get()));
    if (!stream.ok()) {
      const absl::Status& s = stream.status();
      // Another instance holding the slot is a standby's normal state.
      if (!IsSlotInUse(s)) RecordError(metrics_, "", s);
      if (absl::IsFailedPrecondition(s) || absl::IsInvalidArgument(s)) {
        SetStates(metrics_, "refused (exiting)", kNoKafkaProducer);
        return Exit(kExitPrecondition, s);
      }
      return s;
    }
    session.stream = std::move(*stream);
    const ServerInfo& server = session.stream->server();
    if (server.slot_failover_enabled) {
      Log(Severity::kInfo, "enabled failover on the replication slot",
          {{"slot", config_.postgres.slot}});
    }
    KafkaOptions session_kafka = kafka_;
    if (config_.kafka.exactly_once) {
      session_kafka.transactional_id =
          !config_.kafka.transactional_id.empty()
              ? config_.kafka.transactional_id
              : absl::StrCat("outbox-relay-", server.system_id, "-",
                             config_.postgres.slot);
    }
    waiting_for_ = "Kafka";
    auto sink = RdKafkaSink::Create(session_kafka);
    // init_transactions could not reach the coordinator: like a broker
    // outage, wait and retry.
    if (absl::IsUnavailable(sink.status())) return sink.status();
    if (!sink.ok()) return Exit(kExitUsage, sink.status());
    session.sink = std::move(*sink);
    if (!producer_logged_) {
      producer_logged_ = true;
      const auto& props = session.sink->effective_properties();  // masked
      LogEntries(Severity::kInfo, "kafka producer",
                 {props.begin(), props.end()});
    }
    LogServerChanges(server);
    if (config_.kafka.exactly_once) {
      absl::Status s = StartTransactions(session, session_kafka);
      if (!s.ok()) return s;
    }
    return session;
  }

  void LogServerChanges(const ServerInfo& server) {
    ServerIdentity identity{server.system_id, server.timeline, server.endpoint};
    if (first_session_ && previous_server_.has_value() &&
        previous_server_->system_id != identity.system_id) {
      previous_server_.reset();  // SlotMarker::Record() warned already
    }
    for (const std::string& change :
         ServerChanges(previous_server_, identity)) {
      Log(Severity::kWarn, change, {{"slot", config_.postgres.slot}});
    }
    previous_server_ = identity;
    first_session_ = false;
  }

  // Exactly once: after init_transactions (which aborts what a previous
  // producer left open, so the read below is not held back by it), the
  // last committed checkpoint decides what is already published.
  absl::Status StartTransactions(Session& session,
                                 const KafkaOptions& session_kafka) {
    const ServerInfo& server = session.stream->server();
    if (!checkpoint_topic_checked_) {
      absl::StatusOr<CheckpointTopicState> topic =
          EnsureCheckpointTopic(session_kafka, config_.kafka.checkpoint_topic,
                                config_.kafka.flush_timeout_ms);
      if (absl::IsUnavailable(topic.status())) return topic.status();
      checkpoint_topic_checked_ = true;
      checkpoint_topic_exists_ = topic.ok();
      if (!topic.ok()) {
        // Maybe only creating or describing is denied: producing may work.
        Log(Severity::kWarn, std::string(topic.status().message()));
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
    absl::StatusOr<Checkpoint> checkpoint = ReadCheckpoint(
        session_kafka, config_.kafka.checkpoint_topic, server.system_id,
        config_.postgres.slot, config_.kafka.flush_timeout_ms,
        checkpoint_topic_exists_);
    if (checkpoint.ok()) {
      checkpoint = CheckpointOnServer(*session.stream, *checkpoint);
    }
    if (absl::IsDataLoss(checkpoint.status())) {
      return Exit(kExitStream, checkpoint.status());
    }
    if (absl::IsFailedPrecondition(checkpoint.status())) {
      RecordError(metrics_, "", checkpoint.status());
      return Exit(kExitPrecondition, checkpoint.status());
    }
    if (!checkpoint.ok()) return checkpoint.status();
    TransactionOptions txn;
    txn.checkpoint_topic = config_.kafka.checkpoint_topic;
    txn.max_ms = config_.kafka.transaction_max_ms;
    txn.max_events = config_.kafka.transaction_max_events;
    txn.split_events = config_.kafka.transaction_split_events;
    txn.timeout_ms = TransactionTimeoutMs(config_);
    txn.split_ms = txn.timeout_ms / 3;  // well before the broker aborts
    txn.clock = RealClock();            // the Relay's
    Log(Severity::kInfo, "exactly once",
        {{"transactional_id", session_kafka.transactional_id},
         {"checkpoint_lsn", FormatLsn(checkpoint->end_lsn)},
         {"checkpoint_topic", config_.kafka.checkpoint_topic}});
    session.policy = std::make_unique<TransactionalCommitPolicy>(
        txn, session.sink.get(), *checkpoint, &refused_);
    return absl::OkStatus();
  }

  // Active: streams until the session ends, draining as it does. OK: the
  // relay was stopped; an error with exit_code_ set: exit; else retry.
  absl::Status Stream(Session& session) {
    const ServerInfo& server = session.stream->server();
    Log(Severity::kInfo, "streaming",
        {{"host", server.endpoint},
         {"server", server.version},
         {"system_id", server.system_id},
         {"timeline", absl::StrCat(server.timeline)},
         {"database", server.dbname},
         {"slot", config_.postgres.slot},
         {"plugin", std::string(plugin_->name())},
         {"slot_created", server.slot_created ? "true" : "false"},
         {"failover_slot", server.slot_failover ? "true" : "false"},
         {"slot_marker", history_ != nullptr ? history_->where() : "none"},
         {"start_lsn", FormatLsn(server.slot_confirmed_flush)},
         {"kafka", config_.kafka.brokers},
         {"mapping", Mapping(config_)}});
    SetStates(metrics_,
              absl::StrCat("streaming from slot ", config_.postgres.slot,
                           " (PostgreSQL ", server.version, ")"),
              absl::StrCat("producing to ", config_.kafka.brokers));
    std::unique_ptr<Decoder> decoder = plugin_->NewDecoder();
    RelayOptions pipeline = PipelineOptions(config_);
    pipeline.message_router = message_router_.get();
    pipeline.heartbeat_nonce = heartbeat_nonce_;
    pipeline.on_draining = [this] { lifecycle_.Drain(); };
    Relay relay(pipeline, session.stream.get(), decoder.get(), router_.get(),
                session.sink.get(), RealClock(), server.slot_confirmed_flush,
                metrics_, session.policy.get());
    absl::Status s = relay.Run(stop_);
    // E.g. pgoutput's fallback from binary to text: s says why.
    restart_now_ = !s.ok() && plugin_->RestartAfter(&s);
    const RelayStats& st = relay.stats();
    Log(s.ok() ? Severity::kInfo : Severity::kWarn, "session ended",
        {{"delivered", absl::StrCat(st.events_delivered)},
         {"confirmed_lsn", FormatLsn(st.confirmed)},
         {"status", s.ok() ? "ok" : std::string(s.message())}});
    if (!s.ok()) RecordError(metrics_, "session ended", s);
    SetStates(metrics_, "session ended", kNoKafkaProducer);
    if (history_ != nullptr && st.confirmed != kInvalidLsn) {
      // Everything up to it is in Kafka: if the slot is lost later, the
      // events after it are the ones to re-publish.
      if (absl::Status h = history_->Confirmed(st.confirmed); !h.ok()) {
        Log(Severity::kWarn, "cannot update the slot marker",
            {{"marker", history_->where()},
             {"error", std::string(h.message())}});
      }
    }
    if (s.ok() || restart_now_) return s;
    if (absl::IsInvalidArgument(s)) return Exit(kExitHalted, s);
    if (absl::IsDataLoss(s)) return Exit(kExitStream, s);
    if (absl::IsFailedPrecondition(s)) return Exit(kExitPrecondition, s);
    // A missing ACL or topic: not the event's fault, so never poison. The
    // next session tries again from the slot; until then nothing past the
    // refused event is confirmed.
    if (absl::IsNotFound(s) && config_.kafka.topic_creation.enable &&
        !st.blocked_topic.empty()) {
      absl::Status created =
          CreateMissingTopic(kafka_, config_.kafka, st.blocked_topic,
                             static_cast<int>(config_.kafka.flush_timeout_ms));
      if (created.ok()) {
        lifecycle_.Progressed();  // the next session produces to it: soon
        return s;
      }
      s = created;  // says why; waited for like the topic itself
      if (!IsTopicAccessError(s)) s = absl::NotFoundError(created.message());
    }
    const bool blocked = IsTopicAccessError(s);
    if (blocked) {
      blocked_state_ = KafkaBlockedState(s, st.blocked_topic);
      if (metrics_ != nullptr) {
        metrics_->SetKafkaBlocked(absl::IsPermissionDenied(s),
                                  st.blocked_topic);
      }
      RecordError(metrics_, "", absl::Status(s.code(), blocked_state_));
      if (blocked_state_ != last_blocked_) {
        Log(Severity::kWarn, blocked_state_,
            {{"error", std::string(s.message())}});
        last_blocked_ = blocked_state_;
      }
    }
    // Transient: a session that made progress resets the backoff (not one
    // that ends at the same missing ACL or topic again: those retries
    // slow down, each one publishing again what came before the refusal).
    if (!blocked && (st.events_delivered > 0 || st.status_updates > 1)) {
      lifecycle_.Progressed();
    }
    return s;
  }

  // Logs `s` as the reason to exit with `code`, and returns `s`.
  absl::Status Exit(int code, absl::Status s) {
    Log(Severity::kError, std::string(s.message()));
    exit_code_ = code;
    return s;
  }
  int LogExit(int code, const absl::Status& s) {
    Exit(code, s).IgnoreError();
    return code;
  }

  const Config& config_;
  const std::atomic<bool>& stop_;
  RelayMetrics* const metrics_;
  Lifecycle lifecycle_;
  std::optional<int> exit_code_;
  bool restart_now_ = false;  // the next session at once, no backoff
  const char* waiting_for_ = "PostgreSQL";  // what the last attempt met
  bool producer_logged_ = false;            // its properties, once per process
  // A missing ACL or topic ended the last session: the Kafka state until
  // the next one (KafkaBlockedState), and the last one logged.
  std::string blocked_state_;
  std::string last_blocked_;
  std::unique_ptr<Router> router_;
  std::unique_ptr<OutputPlugin> plugin_;
  std::unique_ptr<MessageRouter> message_router_;
  KafkaOptions kafka_;
  std::unique_ptr<SlotMarker> history_;
  // The previous session's server, to log a promotion or another cluster.
  std::optional<ServerIdentity> previous_server_;
  bool first_session_ = true;
  // Exactly once: events Kafka refused inside an aborted transaction, to
  // dead-letter when the next session replays them.
  RefusedEvents refused_;
  bool checkpoint_topic_checked_ = false;  // once per process
  // It was seen to exist (or made): a broker that does not know it later
  // has stale metadata, not "no checkpoint".
  bool checkpoint_topic_exists_ = false;
  std::unique_ptr<SlotMonitorThread> slot_monitor_;  // after history_
  uint64_t heartbeat_nonce_ = 0;
  std::unique_ptr<HeartbeatEmitter> heartbeat_;
};

}  // namespace

int RunRelay(const Config& config, const std::atomic<bool>& stop,
             RelayMetrics* metrics) {
  return RelaySupervisor(config, stop, metrics).Run();
}

}  // namespace outbox
