#include "relay/supervisor.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "core/transactional_commit_policy.h"
#include "kafka/checkpoint_reader.h"
#include "kafka/checkpoint_topic.h"
#include "kafka/rdkafka_sink.h"
#include "outbox/status_macros.h"
#include "pg/failover_readiness.h"
#include "pg/libpq_replication_stream.h"
#include "pg/slot_monitor.h"
#include "plugin/output_plugin.h"
#include "relay/file_slot_history.h"
#include "relay/heartbeat.h"
#include "relay/relay.h"
#include "relay/server_change.h"
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
    o.tables.push_back({t.schema, t.table});
  }
  o.publication = config.postgres.publication;
  o.create_publication = config.postgres.create_publication;
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

// Sleeps up to `ms`, returning early when stop is set. Keeps the health
// heartbeat turning: waiting to reconnect is alive.
void SleepUnlessStopped(int64_t ms, const std::atomic<bool>& stop,
                        RelayMetrics* metrics) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!stop.load() && std::chrono::steady_clock::now() < until) {
    if (metrics != nullptr) metrics->Heartbeat(RealClock()->NowMicros());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
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

// For the status page: the PostgreSQL and Kafka connection states.
void SetStates(RelayMetrics* metrics, absl::string_view postgres,
               absl::string_view kafka) {
  if (metrics != nullptr) metrics->daemon_status().SetStates(postgres, kafka);
}

absl::StatusOr<std::unique_ptr<FileSlotHistory>> OpenHistory(
    const Config& config) {
  std::string dir = config.postgres.state_dir;
  if (dir.empty()) {
    ASSIGN_OR_RETURN(dir, FileSlotHistory::DefaultStateDir());
  }
  Lsn acknowledged = kInvalidLsn;
  if (!config.postgres.acknowledge_slot_loss.empty()) {
    ASSIGN_OR_RETURN(acknowledged,
                     ParseLsn(config.postgres.acknowledge_slot_loss));
  }
  return FileSlotHistory::Open(dir, config.postgres.slot, acknowledged);
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
                    FileSlotHistory* history)
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
  FileSlotHistory* history_;
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

}  // namespace

int RunRelay(const Config& config, const std::atomic<bool>& stop,
             RelayMetrics* metrics) {
  absl::StatusOr<std::unique_ptr<Router>> router = Router::Create(config);
  if (!router.ok()) {
    Log(Severity::kError, std::string(router.status().message()));
    return kExitUsage;
  }
  absl::StatusOr<std::unique_ptr<OutputPlugin>> plugin =
      MakePlugin(config, **router);
  if (!plugin.ok()) {
    Log(Severity::kError, std::string(plugin.status().message()));
    return kExitUsage;
  }
  std::unique_ptr<MessageRouter> message_router;
  if (config.outbox.messages.enabled) {
    if (config.outbox.messages.prefix == kHeartbeatPrefix) {
      Log(Severity::kError,
          absl::StrCat("outbox.messages.prefix \"", kHeartbeatPrefix,
                       "\" is the relay's heartbeat prefix"));
      return kExitUsage;
    }
    absl::StatusOr<std::unique_ptr<MessageRouter>> m =
        MessageRouter::Create(config.outbox);
    if (!m.ok()) {
      Log(Severity::kError, std::string(m.status().message()));
      return kExitUsage;
    }
    message_router = std::move(*m);
  }
  KafkaOptions kafka = RelayKafkaOptions(config);
  if (metrics != nullptr) {
    kafka.on_connection_state = metrics->daemon_status().KafkaStateListener();
  }
  int64_t backoff = config.postgres.reconnect_backoff_initial_ms;
  std::string last_wait;
  // A relay that may create its slot remembers it (FileSlotHistory), so a
  // slot that disappears is not created anew; one that may not needs no
  // memory.
  std::unique_ptr<FileSlotHistory> history;
  if (config.postgres.create_slot) {
    absl::StatusOr<std::unique_ptr<FileSlotHistory>> h = OpenHistory(config);
    if (!h.ok()) {
      Log(Severity::kError, std::string(h.status().message()));
      return kExitPrecondition;
    }
    history = std::move(*h);
  }
  // The previous session's server, to log a promotion or another cluster;
  // before the first session, the one the slot marker recorded (a promotion
  // while the relay was down).
  std::optional<ServerIdentity> previous_server;
  if (history != nullptr) previous_server = history->RecordedServer();
  bool first_session = true;
  // Exactly once: events Kafka refused inside an aborted transaction, to
  // dead-letter when the next session replays them.
  RefusedEvents refused;
  bool checkpoint_topic_checked = false;  // once per process
  bool producer_logged = false;           // once per process
  std::unique_ptr<SlotMonitorThread> slot_monitor;
  if (metrics != nullptr || history != nullptr) {
    slot_monitor =
        std::make_unique<SlotMonitorThread>(config, metrics, history.get());
  }
  // The heartbeat's nonce tells this process's messages from any other's.
  const uint64_t heartbeat_nonce =
      config.postgres.heartbeat_interval_s > 0 ? NewHeartbeatNonce() : 0;
  std::unique_ptr<HeartbeatEmitter> heartbeat;
  if (heartbeat_nonce != 0) {
    heartbeat = std::make_unique<HeartbeatEmitter>(
        HeartbeatEmitter::Options{
            config.postgres.conninfo,
            static_cast<int>(config.postgres.connect_timeout_s),
            config.postgres.heartbeat_interval_s, heartbeat_nonce},
        metrics);
  }
  while (!stop.load()) {
    if (metrics != nullptr) metrics->Heartbeat(RealClock()->NowMicros());
    SetStates(metrics, "connecting", kNoKafkaProducer);
    auto stream = LibpqReplicationStream::Connect(
        StreamOptions(config, **router, plugin->get(), history.get()));
    if (!stream.ok()) {
      const absl::Status& s = stream.status();
      RecordError(metrics, "", s);
      if (absl::IsFailedPrecondition(s) || absl::IsInvalidArgument(s)) {
        SetStates(metrics, "refused (exiting)", kNoKafkaProducer);
        Log(Severity::kError, std::string(s.message()));
        return kExitPrecondition;
      }
      SetStates(metrics, WaitingToReconnect(backoff), kNoKafkaProducer);
      // Say it once per distinct reason, not every retry.
      if (s.message() != last_wait) {
        Log(Severity::kWarn, "waiting for PostgreSQL",
            {{"reason", std::string(s.message())},
             {"retry_ms", absl::StrCat(backoff)}});
        last_wait = std::string(s.message());
      }
      SleepUnlessStopped(backoff, stop, metrics);
      backoff = std::min(backoff * 2, config.postgres.reconnect_backoff_max_ms);
      continue;
    }
    last_wait.clear();
    const ServerInfo& server = (*stream)->server();
    if (server.slot_failover_enabled) {
      Log(Severity::kInfo, "enabled failover on the replication slot",
          {{"slot", config.postgres.slot}});
    }
    KafkaOptions session_kafka = kafka;
    if (config.kafka.exactly_once) {
      session_kafka.transactional_id =
          !config.kafka.transactional_id.empty()
              ? config.kafka.transactional_id
              : absl::StrCat("outbox-relay-", server.system_id, "-",
                             config.postgres.slot);
    }
    auto sink = RdKafkaSink::Create(session_kafka);
    if (!sink.ok() && absl::IsUnavailable(sink.status())) {
      // init_transactions could not reach the coordinator: like a broker
      // outage, wait and retry.
      Log(Severity::kWarn, "waiting for Kafka",
          {{"reason", std::string(sink.status().message())}});
      SleepUnlessStopped(backoff, stop, metrics);
      backoff = std::min(backoff * 2, config.postgres.reconnect_backoff_max_ms);
      continue;
    }
    if (!sink.ok()) {
      Log(Severity::kError, std::string(sink.status().message()));
      return kExitUsage;
    }
    if (!producer_logged) {
      producer_logged = true;
      const auto& props = (*sink)->effective_properties();  // secrets masked
      LogEntries(Severity::kInfo, "kafka producer",
                 {props.begin(), props.end()});
    }
    ServerIdentity identity{server.system_id, server.timeline, server.endpoint};
    if (first_session && previous_server.has_value() &&
        previous_server->system_id != identity.system_id) {
      previous_server.reset();  // FileSlotHistory::Record() warned already
    }
    for (const std::string& change : ServerChanges(previous_server, identity)) {
      Log(Severity::kWarn, change, {{"slot", config.postgres.slot}});
    }
    previous_server = identity;
    first_session = false;
    // Exactly once: after init_transactions (which aborts what a previous
    // producer left open, so the read below is not held back by it), the
    // last committed checkpoint decides what is already published.
    std::unique_ptr<TransactionalCommitPolicy> policy;
    if (config.kafka.exactly_once && !checkpoint_topic_checked) {
      absl::StatusOr<CheckpointTopicState> topic =
          EnsureCheckpointTopic(session_kafka, config.kafka.checkpoint_topic,
                                config.kafka.flush_timeout_ms);
      if (absl::IsUnavailable(topic.status())) {
        Log(Severity::kWarn, "waiting for Kafka",
            {{"reason", std::string(topic.status().message())}});
        SleepUnlessStopped(backoff, stop, metrics);
        backoff =
            std::min(backoff * 2, config.postgres.reconnect_backoff_max_ms);
        continue;
      }
      checkpoint_topic_checked = true;
      if (!topic.ok()) {
        // Maybe only creating or describing is denied: producing may work.
        Log(Severity::kWarn, std::string(topic.status().message()));
      } else if (topic->created) {
        Log(Severity::kInfo, "created the checkpoint topic",
            {{"topic", config.kafka.checkpoint_topic},
             {"cleanup.policy", topic->cleanup_policy}});
      } else if (!topic->compacted()) {
        Log(Severity::kWarn,
            "the checkpoint topic is not compacted: retention may delete "
            "the last checkpoint, and a restart after that publishes again "
            "what the slot still holds; set cleanup.policy=compact on it",
            {{"topic", config.kafka.checkpoint_topic},
             {"cleanup.policy", topic->cleanup_policy}});
      }
    }
    if (config.kafka.exactly_once) {
      absl::StatusOr<Checkpoint> checkpoint = ReadCheckpoint(
          session_kafka, config.kafka.checkpoint_topic, server.system_id,
          config.postgres.slot, config.kafka.flush_timeout_ms);
      if (!checkpoint.ok()) {
        if (absl::IsDataLoss(checkpoint.status())) {
          Log(Severity::kError, std::string(checkpoint.status().message()));
          return kExitStream;
        }
        Log(Severity::kWarn, "waiting for Kafka",
            {{"reason", std::string(checkpoint.status().message())}});
        SleepUnlessStopped(backoff, stop, metrics);
        backoff =
            std::min(backoff * 2, config.postgres.reconnect_backoff_max_ms);
        continue;
      }
      TransactionOptions txn;
      txn.checkpoint_topic = config.kafka.checkpoint_topic;
      txn.max_ms = config.kafka.transaction_max_ms;
      txn.max_events = config.kafka.transaction_max_events;
      txn.split_events = config.kafka.transaction_split_events;
      Log(Severity::kInfo, "exactly once",
          {{"transactional_id", session_kafka.transactional_id},
           {"checkpoint_lsn", FormatLsn(checkpoint->end_lsn)},
           {"checkpoint_topic", config.kafka.checkpoint_topic}});
      policy = std::make_unique<TransactionalCommitPolicy>(
          txn, sink->get(), *checkpoint, &refused);
    }
    Log(Severity::kInfo, "streaming",
        {{"host", server.endpoint},
         {"server", server.version},
         {"system_id", server.system_id},
         {"timeline", absl::StrCat(server.timeline)},
         {"database", server.dbname},
         {"slot", config.postgres.slot},
         {"plugin", std::string((*plugin)->name())},
         {"slot_created", server.slot_created ? "true" : "false"},
         {"failover_slot", server.slot_failover ? "true" : "false"},
         {"slot_marker", history != nullptr ? history->path() : "none"},
         {"start_lsn", FormatLsn(server.slot_confirmed_flush)},
         {"kafka", config.kafka.brokers},
         {"mapping", Mapping(config)}});
    SetStates(metrics,
              absl::StrCat("streaming from slot ", config.postgres.slot,
                           " (PostgreSQL ", server.version, ")"),
              absl::StrCat("producing to ", config.kafka.brokers));
    std::unique_ptr<Decoder> decoder = (*plugin)->NewDecoder();
    RelayOptions pipeline = PipelineOptions(config);
    pipeline.message_router = message_router.get();
    pipeline.heartbeat_nonce = heartbeat_nonce;
    Relay relay(pipeline, stream->get(), decoder.get(), router->get(),
                sink->get(), RealClock(), server.slot_confirmed_flush, metrics,
                policy.get());
    absl::Status s = relay.Run(stop);
    const RelayStats& st = relay.stats();
    std::vector<LogField> summary;
    Log(s.ok() ? Severity::kInfo : Severity::kWarn, "session ended",
        {{"delivered", absl::StrCat(st.events_delivered)},
         {"confirmed_lsn", FormatLsn(st.confirmed)},
         {"status", s.ok() ? "ok" : std::string(s.message())}});
    if (!s.ok()) RecordError(metrics, "session ended", s);
    SetStates(metrics, "session ended", kNoKafkaProducer);
    if (history != nullptr && st.confirmed != kInvalidLsn) {
      // Everything up to it is in Kafka: if the slot is lost later, the
      // events after it are the ones to re-publish.
      if (absl::Status h = history->Confirmed(st.confirmed); !h.ok()) {
        Log(Severity::kWarn, "cannot update the slot marker",
            {{"marker", history->path()}, {"error", std::string(h.message())}});
      }
    }
    if (s.ok()) return kExitOk;
    if (absl::IsInvalidArgument(s)) {
      Log(Severity::kError, std::string(s.message()));
      return kExitHalted;
    }
    if (absl::IsDataLoss(s)) {
      Log(Severity::kError, std::string(s.message()));
      return kExitStream;
    }
    if (absl::IsFailedPrecondition(s)) {
      Log(Severity::kError, std::string(s.message()));
      return kExitPrecondition;
    }
    // Transient: a session that made progress resets the backoff.
    if (metrics != nullptr) metrics->OnReconnect();
    if (st.events_delivered > 0 || st.status_updates > 1) {
      backoff = config.postgres.reconnect_backoff_initial_ms;
    }
    SetStates(metrics, WaitingToReconnect(backoff), kNoKafkaProducer);
    SleepUnlessStopped(backoff, stop, metrics);
    backoff = std::min(backoff * 2, config.postgres.reconnect_backoff_max_ms);
  }
  return kExitOk;
}

}  // namespace outbox
