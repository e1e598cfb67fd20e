#include "relay/supervisor.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "config/kafka_acls.h"
#include "daemon/disposition.h"
#include "daemon/lifecycle.h"
#include "http/daemon_status.h"
#include "kafka/topic_admin.h"
#include "kafka/topic_replication.h"
#include "plugin/output_plugin.h"
#include "relay/heartbeat.h"
#include "relay/operator_session.h"
#include "relay/relay.h"
#include "relay/relay_health.h"
#include "relay/session_factory.h"
#include "relay/slot_monitor_thread.h"
#include "relay/stored_slot_marker.h"
#include "route/message_router.h"
#include "route/router.h"

namespace outbox {
namespace {

// The start-up replication check waits at most this long for Kafka.
constexpr int64_t kReplicationCheckTimeoutMs = 10000;

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

// What a reload checks beyond LoadConfig(): that PlanRelay() succeeds.
absl::Status ValidateRelayConfig(const Config& config) {
  return PlanRelay(config).status();
}

// RunRelay()'s state machine (daemon/lifecycle.h): as a standby, Connect()
// opens a session; as the active instance, Stream() runs it until it ends
// (draining as it does); Dispose() says what each failure or end means.
class RelaySupervisor {
 public:
  RelaySupervisor(const Config& config, const std::atomic<bool>& stop,
                  RelayMetrics* metrics, Clock* clock, ConfigReloader* reload,
                  SessionRestart* restart, PauseControl* pause)
      : config_(config),
        stop_(stop),
        metrics_(metrics),
        clock_(clock),
        reload_(reload),
        restart_(restart),
        pause_(pause),
        lifecycle_(config.postgres, stop,
                   metrics != nullptr ? &metrics->role() : nullptr,
                   metrics != nullptr ? &metrics->daemon_status() : nullptr,
                   [metrics, clock] {
                     if (metrics != nullptr) {
                       metrics->Heartbeat(clock->NowMicros());
                     }
                   }) {
    lifecycle_.WakeWhen([this] { return EndSessionRequested(); });
  }

  // An exit code, or nullopt when the session ended for a SessionRestart.
  std::optional<int> Run() {
    if (std::optional<int> code = Prepare()) return lifecycle_.Stop(*code);
    while (!stop_.load()) {
      // A standby: the next attempt is the next supervisor's.
      if (EndSessionRequested()) return std::nullopt;
      absl::StatusOr<Session> session = Connect();  // standby
      if (!session.ok()) {
        // Stopped during the takeover: the session (and the slot, if it
        // was taken) is given up; nothing was delivered or confirmed.
        if (stop_.load()) break;
        std::optional<int> code = AfterFailedConnect(session.status());
        if (code) return lifecycle_.Stop(*code);
        continue;
      }
      if (stop_.load()) break;  // the session ends unstreamed
      // The operator's skips and advances, read before the session is
      // active and anything is read or produced (a Kafka outage then
      // delays the activation, never the reading of a streaming session).
      OperatorSession operator_actions(
          config_, kafka_, session->stream->server().system_id, metrics_);
      operator_actions.Load();
      holds_slot_ = true;
      lifecycle_.Activate();
      // Active, then draining.
      SessionEnd end = Stream(*session, operator_actions);
      holds_slot_ = false;
      // Drained cleanly for a restart (a failed end is disposed of first).
      if (end.status.ok() && restart_->pending() && !stop_.load()) {
        return std::nullopt;
      }
      if (std::optional<int> code = AfterSession(end)) {
        return lifecycle_.Stop(*code);
      }
    }
    return lifecycle_.Stop(kExitOk);
  }

 private:
  // Asked every turn (RelayOptions::end_session, the standby's wait): a
  // SIGHUP is handled here, on this thread; true once a restart is pending.
  bool EndSessionRequested() {
    if (reload_ != nullptr && reload_->requested()) {
      if (std::optional<Config> next =
              reload_->Check(config_, ValidateRelayConfig)) {
        restart_->Request("configuration reload", *std::move(next));
      }
    }
    return restart_->pending();
  }

  // What every session shares, made once; an exit code when the
  // configuration cannot work.
  std::optional<int> Prepare() {
    if (std::optional<int> code = Configure()) return code;
    kafka_ = derived_.kafka;
    // A relay that may create its slot remembers it (the slot marker), so
    // a slot that disappears is not created anew; one that may not needs
    // no memory.
    if (config_.postgres.create_slot) {
      absl::StatusOr<std::unique_ptr<StoredSlotMarker>> marker =
          OpenSlotMarker(config_, kafka_);
      if (!marker.ok()) {
        return ExitAt(SessionStage::kOpenSlotMarker, marker.status());
      }
      slot_marker_ = std::move(*marker);
    }
    if (metrics_ != nullptr) {
      kafka_.on_connection_state =
          metrics_->daemon_status().KafkaStateListener();
      kafka_.on_statistics = [m = metrics_](const ProducerStatistics& s) {
        m->kafka_client().Update(s);
      };
    }
    if (pause_ != nullptr) pause_->Attach(kafka_);
    factory_ = std::make_unique<SessionFactory>(
        config_, derived_, kafka_, plugin_.get(), slot_marker_.get(), clock_);
    StartHelpers();
    return std::nullopt;
  }

  // The router, the derived configuration, the plugin, the message routes
  // (PlanRelay(), which `outbox-relay validate` runs too).
  std::optional<int> Configure() {
    absl::StatusOr<RelayPlan> plan = PlanRelay(config_);
    if (!plan.ok()) return ExitAt(SessionStage::kConfigure, plan.status());
    router_ = std::move(plan->router);
    derived_ = std::move(plan->derived);
    plugin_ = std::move(plan->plugin);
    message_router_ = std::move(plan->message_router);
    return std::nullopt;
  }

  // The slot monitor thread and the heartbeat, when configured.
  void StartHelpers() {
    if (metrics_ != nullptr || slot_marker_ != nullptr) {
      slot_monitor_ = std::make_unique<SlotMonitorThread>(
          config_, metrics_, slot_marker_.get(), &holds_slot_, clock_);
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
  }

  // Standby: one attempt to hold the slot and set up a producer for it.
  absl::StatusOr<Session> Connect() {
    const int64_t now_us = clock_->NowMicros();
    if (metrics_ != nullptr) {
      metrics_->Heartbeat(now_us);
      metrics_->BusyUntil(now_us + SessionOpenBoundUs(config_));
    }
    // Kafka's last refusal stands while the next attempt is under way.
    SetStates("connecting",
              kafka_trouble_.empty() ? kNoKafkaProducer : kafka_trouble_);
    absl::StatusOr<Session> session = factory_->Open(stop_);
    if (session.ok() && !replication_checked_) {
      if (metrics_ != nullptr) {
        metrics_->BusyUntil(clock_->NowMicros() +
                            (kReplicationCheckTimeoutMs + 5000) * 1000);
      }
      CheckReplication();
    }
    if (metrics_ != nullptr) {
      metrics_->BusyUntil(0);
      metrics_->Heartbeat(clock_->NowMicros());
    }
    return session;
  }

  // Once, at the first session (its internal topics exist by now): a
  // warning for each topic the relay depends on that one broker's loss
  // would take (kafka/topic_replication.h). Kafka not answering: tried
  // again at the next session.
  void CheckReplication() {
    absl::StatusOr<ClusterReplication> cluster = DescribeTopicReplication(
        kafka_,
        static_cast<int>(std::min<int64_t>(config_.kafka.flush_timeout_ms,
                                           kReplicationCheckTimeoutMs)));
    if (!cluster.ok()) {
      Log(Severity::kInfo, "cannot check the replication of the topics",
          {{"error", std::string(cluster.status().message())}});
      return;
    }
    replication_checked_ = true;
    const std::vector<std::string> topics =
        UnreplicatedTopics(*cluster, KafkaAcls(config_, AclClient::kRelay));
    if (metrics_ != nullptr) metrics_->SetUnreplicatedTopics(topics.size());
    if (!topics.empty()) {
      Log(Severity::kWarn, UnreplicatedTopicsWarning(topics, cluster->brokers));
    }
  }

  // A failed Connect(): the exit code, or nullopt after waiting to retry.
  std::optional<int> AfterFailedConnect(const absl::Status& s) {
    SessionEnd end;
    end.stage = factory_->failed_stage();
    end.status = s;
    end.slot_held_elsewhere = IsSlotInUse(s);
    // A standby: what blocks Kafka is the active instance's to report.
    if (end.slot_held_elsewhere && metrics_ != nullptr) {
      metrics_->ClearKafkaBlocked();
    }
    const Disposition d = Dispose(end);
    const bool exiting = d.action == Disposition::Action::kStop;
    // Another instance holding the slot is a standby's normal state.
    if (end.stage == SessionStage::kConnect && !end.slot_held_elsewhere) {
      RecordError("", s);
    }
    if (exiting && end.stage == SessionStage::kConnect) {
      SetStates("refused (exiting)", kNoKafkaProducer);
    }
    if (exiting && end.stage == SessionStage::kReadCheckpoint &&
        d.exit_code == kExitPrecondition) {
      RecordError("", s);
    }
    if (exiting) return LogExit(d.exit_code, s);
    // Kafka would not start a producer (exactly once: its transaction
    // coordinator) or give the checkpoint: the Kafka state says why.
    const bool kafka_stage = end.stage == SessionStage::kCreateProducer ||
                             end.stage == SessionStage::kReadCheckpoint;
    kafka_trouble_ = kafka_stage ? NoKafkaProducer(s) : "";
    lifecycle_.RetryAfter(d.waiting_for, s,
                          d.wait == Disposition::Wait::kStandbyInterval,
                          kafka_trouble_);
    return std::nullopt;
  }

  // Active: streams until the session ends, draining as it does.
  SessionEnd Stream(Session& session, OperatorSession& operator_actions) {
    const ServerInfo& server = session.stream->server();
    SessionEnd end;
    end.stage = SessionStage::kStream;
    if (pause_ != nullptr) {
      // The pair's pause, read before anything is: a standby taking over
      // from a paused instance starts paused.
      pause_->SetSystemId(server.system_id);
      if (absl::Status p = pause_->Refresh(); !p.ok()) {
        end.status = absl::UnavailableError(absl::StrCat(
            "cannot read the pause record, so not streaming: ", p.message()));
        SessionEnded(end.status, RelayStats{});
        return end;
      }
    }
    LogStreaming(server);
    std::unique_ptr<Decoder> decoder = plugin_->NewDecoder();
    RelayOptions pipeline = derived_.pipeline;
    if (pause_ != nullptr) pipeline.paused = pause_->paused_flag();
    pipeline.message_router = message_router_.get();
    pipeline.heartbeat_nonce = heartbeat_nonce_;
    pipeline.on_draining = [this] { lifecycle_.Drain(); };
    pipeline.end_session = [this] { return EndSessionRequested(); };
    operator_actions.Attach(&pipeline);
    pipeline.on_resume = [&operator_actions] { operator_actions.Load(); };
    Relay relay(pipeline, session.stream.get(), decoder.get(), router_.get(),
                session.sink.get(), clock_, server.slot_confirmed_flush,
                metrics_, session.policy.get());
    end.status = relay.Run(stop_);
    // E.g. pgoutput's fallback from binary to text: the status says why.
    end.restart_requested =
        !end.status.ok() && plugin_->RestartAfter(&end.status);
    const RelayStats& st = relay.stats();
    SessionEnded(end.status, st);
    end.blocked_topic = st.blocked_topic;
    end.topic_creation = config_.kafka.topic_creation.enable;
    end.slot_held_elsewhere = IsSlotInUse(end.status);
    end.progressed = st.events_delivered > 0 || st.status_updates > 1;
    return end;
  }

  void LogStreaming(const ServerInfo& server) {
    kafka_trouble_.clear();
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
         {"slot_marker",
          slot_marker_ != nullptr ? slot_marker_->where() : "none"},
         {"start_lsn", FormatLsn(server.slot_confirmed_flush)},
         {"kafka", config_.kafka.brokers},
         {"mapping", derived_.mapping}});
    SetStates(absl::StrCat("streaming from slot ", config_.postgres.slot,
                           " (PostgreSQL ", server.version, ")"),
              absl::StrCat("producing to ", config_.kafka.brokers));
  }

  // Logs the session's end and moves the slot marker to what it confirmed.
  void SessionEnded(const absl::Status& s, const RelayStats& st) {
    Log(s.ok() ? Severity::kInfo : Severity::kWarn, "session ended",
        {{"delivered", absl::StrCat(st.events_delivered)},
         {"confirmed_lsn", FormatLsn(st.confirmed)},
         {"status", s.ok() ? "ok" : std::string(s.message())}});
    if (!s.ok()) RecordError("session ended", s);
    SetStates("session ended", kNoKafkaProducer);
    if (slot_marker_ == nullptr || st.confirmed == kInvalidLsn) return;
    // Everything up to it is in Kafka: if the slot is lost later, the
    // events after it are the ones to re-publish.
    if (absl::Status h = slot_marker_->Confirmed(st.confirmed); !h.ok()) {
      Log(Severity::kWarn, "cannot update the slot marker",
          {{"marker", slot_marker_->where()},
           {"error", std::string(h.message())}});
    }
  }

  // The end of a session: the exit code, or nullopt to go on (after the
  // wait, when one is due).
  std::optional<int> AfterSession(const SessionEnd& end) {
    Disposition d = Dispose(end);
    absl::Status s = end.status;
    if (d.action == Disposition::Action::kCreateTopic) {
      // The dead-letter topic is one the relay depends on: created with
      // kafka.internal_topics' replication.
      const bool dead_letter =
          config_.outbox.on_invalid == OnInvalid::kDeadLetter &&
          end.blocked_topic == config_.outbox.dead_letter_topic;
      absl::Status created = CreateMissingTopic(
          kafka_, config_.kafka.topic_creation, end.blocked_topic,
          static_cast<int>(config_.kafka.flush_timeout_ms),
          dead_letter ? &config_.kafka.internal_topics : nullptr);
      d = AfterTopicCreation(end, created, &s);
      // The topic exists now: no longer blocked, whoever delivers to it.
      if (created.ok() && metrics_ != nullptr) metrics_->ClearKafkaBlocked();
    }
    switch (d.action) {
      case Disposition::Action::kStop:
        if (s.ok()) return d.exit_code;  // stopped
        return LogExit(d.exit_code, s);
      case Disposition::Action::kRestartNow:  // the plugin changed
        return std::nullopt;
      case Disposition::Action::kRetry:
      case Disposition::Action::kCreateTopic:
        break;
    }
    std::string kafka_state = kNoKafkaProducer;
    if (d.wait == Disposition::Wait::kBlockedTopic) {
      kafka_state = Blocked(s, end.blocked_topic);
    }
    if (d.reset_backoff) lifecycle_.Progressed();
    if (metrics_ != nullptr) metrics_->OnReconnect();
    lifecycle_.RetryAfter(d.waiting_for, s,
                          d.wait == Disposition::Wait::kStandbyInterval,
                          kafka_state);
    return std::nullopt;
  }

  // A missing ACL or topic blocks Kafka: the gauge, the status page's last
  // error, one log line per distinct state; returns the Kafka state.
  std::string Blocked(const absl::Status& s, const std::string& topic) {
    std::string state = KafkaBlockedState(s, topic);
    if (metrics_ != nullptr) {
      metrics_->SetKafkaBlocked(absl::IsPermissionDenied(s), topic);
    }
    RecordError("", absl::Status(s.code(), state));
    if (state != last_blocked_) {
      Log(Severity::kWarn, state, {{"error", std::string(s.message())}});
      last_blocked_ = state;
    }
    return state;
  }

  // Logs `s` as the reason to exit with the code Dispose() gives at `stage`.
  int ExitAt(SessionStage stage, const absl::Status& s) {
    SessionEnd end;
    end.stage = stage;
    end.status = s;
    return LogExit(Dispose(end).exit_code, s);
  }
  int LogExit(int code, const absl::Status& s) {
    Log(Severity::kError, std::string(s.message()));
    return code;
  }
  // For the status page: what went wrong last, when.
  void RecordError(absl::string_view what, const absl::Status& s) {
    if (metrics_ != nullptr) metrics_->daemon_status().SetLastError(what, s);
  }
  // For the status page: the PostgreSQL and Kafka connection states.
  void SetStates(absl::string_view postgres, absl::string_view kafka) {
    if (metrics_ != nullptr)
      metrics_->daemon_status().SetStates(postgres, kafka);
  }

  const Config& config_;
  const std::atomic<bool>& stop_;
  RelayMetrics* const metrics_;
  Clock* const clock_;
  ConfigReloader* const reload_;   // may be null
  SessionRestart* const restart_;  // never null
  PauseControl* const pause_;      // null: never paused
  Lifecycle lifecycle_;
  RelayConfig derived_;  // computed once by Configure()
  KafkaOptions kafka_;   // derived_'s, with the connection listener
  std::unique_ptr<Router> router_;
  std::unique_ptr<OutputPlugin> plugin_;
  std::unique_ptr<MessageRouter> message_router_;
  std::unique_ptr<StoredSlotMarker> slot_marker_;
  std::unique_ptr<SessionFactory> factory_;  // after what it uses
  std::string last_blocked_;  // the blocked Kafka state logged last
  // "no producer: <why>" after Kafka would not start one; "" once
  // streaming (Connect() shows it while it tries again).
  std::string kafka_trouble_;
  bool replication_checked_ = false;  // CheckReplication() is done
  // A session holds the slot (START_REPLICATION succeeded) and streams:
  // only then does the slot monitor move the marker.
  std::atomic<bool> holds_slot_{false};
  std::unique_ptr<SlotMonitorThread> slot_monitor_;  // after slot_marker_
  uint64_t heartbeat_nonce_ = 0;
  std::unique_ptr<HeartbeatEmitter> heartbeat_;
};

}  // namespace

int RunRelay(const Config& config, const std::atomic<bool>& stop,
             RelayMetrics* metrics, Clock* clock, ConfigReloader* reload,
             SessionRestart* restart, PauseControl* pause) {
  SessionRestart own;
  if (restart == nullptr) restart = &own;
  return RunSessions(config, restart, reload, [&](const Config& c) {
    return RelaySupervisor(c, stop, metrics, clock, reload, restart, pause)
        .Run();
  });
}

}  // namespace outbox
