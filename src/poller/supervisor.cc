#include "poller/supervisor.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "daemon/exit_code.h"
#include "daemon/lifecycle.h"
#include "kafka/rdkafka_sink.h"
#include "poller/libpq_outbox_store.h"
#include "poller/poller.h"
#include "route/router.h"

namespace outbox {

absl::StatusOr<std::unique_ptr<Router>> PollerRouter(const Config& config) {
  absl::Status has_tables = RequireOutboxTables(
      config,
      "outbox-poller polls the outbox tables (logical messages need "
      "outbox-relay)");
  if (!has_tables.ok()) return has_tables;
  return Router::Create(config);
}

StoreOptions MakeStoreOptions(const Config& config, const Router& router) {
  StoreOptions o;
  o.conninfo = config.postgres.conninfo;
  o.connect_timeout_s = static_cast<int>(config.postgres.connect_timeout_s);
  for (const auto& t : router.RequiredColumns()) {
    o.tables.push_back({t.schema, t.table, t.columns});
  }
  o.needs_delete = config.poller.mode == PollerMode::kDelete ||
                   config.poller.retention_s > 0;
  if (config.poller.notify) o.notify_channel = config.poller.notify_channel;
  return o;
}

namespace {

PollerOptions MakePollerOptions(const Config& config) {
  PollerOptions o;
  const PollerConfig& p = config.poller;
  o.batch_size = static_cast<int>(p.batch_size);
  o.mode = p.mode;
  o.max_attempts = static_cast<int32_t>(p.max_attempts);
  o.backoff_initial_ms = p.backoff_initial_ms;
  o.backoff_max_ms = p.backoff_max_ms;
  o.batch_timeout_ms = p.batch_timeout_ms;
  o.seed = std::random_device{}();
  o.interval_ms = p.interval_ms;
  o.retention_s = p.retention_s;
  o.dead_letter = config.outbox.on_invalid == OnInvalid::kDeadLetter;
  o.dead_letter_topic = config.outbox.dead_letter_topic;
  for (const OutboxTable& t : config.outbox.tables) {
    o.payload_columns.push_back(t.columns.payload);
  }
  o.flush_timeout_ms = static_cast<int>(config.kafka.flush_timeout_ms);
  o.progress_interval_s = static_cast<int>(config.log.progress_interval_s);
  return o;
}

// For the status page (metrics may be null): connection states and the
// last error.
void SetStates(PollerMetrics* metrics, absl::string_view postgres,
               absl::string_view kafka) {
  if (metrics != nullptr) metrics->daemon_status.SetStates(postgres, kafka);
}

void RecordError(PollerMetrics* metrics, absl::string_view what,
                 const absl::Status& s) {
  if (metrics != nullptr) metrics->daemon_status.SetLastError(what, s);
}

// What a reload checks beyond LoadConfig().
absl::Status ValidatePollerConfig(const Config& config) {
  return PollerRouter(config).status();
}

// Sessions over one configuration: an exit code, or nullopt when a session
// ended for a SessionRestart.
std::optional<int> PollSessions(const Config& config, PollerMetrics* metrics,
                                const std::atomic<bool>& stop,
                                ConfigReloader* reload,
                                SessionRestart* restart) {
  // Asked every round and while waiting: a SIGHUP is handled here.
  auto end_requested = [&config, reload, restart] {
    if (reload != nullptr && reload->requested()) {
      if (std::optional<Config> next =
              reload->Check(config, ValidatePollerConfig)) {
        restart->Request("configuration reload", *std::move(next));
      }
    }
    return restart->pending();
  };
  absl::StatusOr<std::unique_ptr<Router>> router = PollerRouter(config);
  if (!router.ok()) {
    Log(Severity::kError, std::string(router.status().message()));
    return kExitUsage;
  }
  KafkaOptions kafka{config.kafka.brokers, config.kafka.properties};
  kafka.properties.emplace("client.id", "outbox-poller");
  if (metrics != nullptr) {
    kafka.on_connection_state = metrics->daemon_status.KafkaStateListener();
    kafka.on_statistics = [metrics](const ProducerStatistics& s) {
      metrics->kafka_client.Update(s);
    };
  }
  const StoreOptions store_options = MakeStoreOptions(config, **router);
  PollerOptions poller_options = MakePollerOptions(config);
  poller_options.end_session = end_requested;
  // The poller's states (daemon/lifecycle.h): standby while connecting,
  // active while polling, draining as a session ends. Pollers share the
  // table (SKIP LOCKED): every instance of a pair is active.
  Lifecycle lifecycle(config.postgres, stop,
                      metrics != nullptr ? &metrics->role : nullptr,
                      metrics != nullptr ? &metrics->daemon_status : nullptr);
  lifecycle.WakeWhen(end_requested);
  bool producer_logged = false;  // once per configuration
  while (!stop.load()) {
    if (end_requested()) return std::nullopt;
    SetStates(metrics, "connecting", kNoKafkaProducer);
    auto store = LibpqOutboxStore::Connect(store_options);
    if (!store.ok()) {
      const absl::Status& s = store.status();
      RecordError(metrics, "", s);
      if (absl::IsFailedPrecondition(s) || absl::IsInvalidArgument(s)) {
        Log(Severity::kError, std::string(s.message()));
        return lifecycle.Stop(kExitPrecondition);
      }
      lifecycle.RetryAfter("PostgreSQL", s);
      continue;
    }
    auto sink = RdKafkaSink::Create(kafka);
    if (!sink.ok()) {
      Log(Severity::kError, std::string(sink.status().message()));
      return lifecycle.Stop(kExitUsage);
    }
    if (!producer_logged) {
      producer_logged = true;
      const auto& props = (*sink)->effective_properties();  // secrets masked
      LogEntries(Severity::kInfo, "kafka producer",
                 {props.begin(), props.end()});
    }
    std::vector<std::string> tables;
    for (const TableShape& t : (*store)->tables()) {
      tables.push_back(t.QualifiedName());
    }
    Log(Severity::kInfo, "polling",
        {{"server", (*store)->server_version()},
         {"tables", absl::StrJoin(tables, ",")},
         {"kafka", config.kafka.brokers},
         {"mode", std::string(EnumName(config.poller.mode))},
         {"batch_size", absl::StrCat(config.poller.batch_size)},
         {"interval_ms", absl::StrCat(config.poller.interval_ms)},
         {"notify", config.poller.notify ? config.poller.notify_channel
                                         : std::string("off")}});
    SetStates(
        metrics,
        absl::StrCat("connected (PostgreSQL ", (*store)->server_version(), ")"),
        absl::StrCat("producing to ", config.kafka.brokers));
    if (metrics != nullptr) {
      metrics->connected.Set(1);
      metrics->ready = true;
    }
    lifecycle.Activate();
    Poller poller(poller_options, store->get(), router->get(), sink->get(),
                  RealClock(), metrics);
    absl::Status s = poller.Run(stop);
    lifecycle.Drain();
    if (metrics != nullptr) {
      metrics->connected.Set(0);
      metrics->ready = false;
    }
    const PollerStats& st = poller.stats();
    Log(s.ok() ? Severity::kInfo : Severity::kWarn, "session ended",
        {{"delivered", absl::StrCat(st.delivered)},
         {"failures", absl::StrCat(st.failures)},
         {"dead_lettered", absl::StrCat(st.dead_lettered)},
         {"status", s.ok() ? "ok" : std::string(s.message())}});
    if (!s.ok()) RecordError(metrics, "session ended", s);
    SetStates(metrics, "session ended", kNoKafkaProducer);
    if (s.ok() && restart->pending() && !stop.load()) return std::nullopt;
    if (s.ok()) return lifecycle.Stop(kExitOk);
    if (absl::IsFailedPrecondition(s)) {
      Log(Severity::kError, std::string(s.message()));
      return lifecycle.Stop(kExitPrecondition);
    }
    if (st.batches > 0) lifecycle.Progressed();
    lifecycle.RetryAfter("PostgreSQL", s);
  }
  return lifecycle.Stop(kExitOk);
}

}  // namespace

int RunPoller(const Config& config, PollerMetrics* metrics,
              const std::atomic<bool>& stop, ConfigReloader* reload,
              SessionRestart* restart) {
  SessionRestart own;
  if (restart == nullptr) restart = &own;
  return RunSessions(config, restart, reload, [&](const Config& c) {
    return PollSessions(c, metrics, stop, reload, restart);
  });
}

}  // namespace outbox
