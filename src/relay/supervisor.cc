#include "relay/supervisor.h"

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "decode/wal2json_decoder.h"
#include "kafka/rdkafka_sink.h"
#include "pg/libpq_replication_stream.h"
#include "relay/relay.h"
#include "route/router.h"

namespace outbox {
namespace {

ReplicationOptions StreamOptions(const Config& config, const Router& router) {
  ReplicationOptions o;
  o.conninfo = config.postgres.conninfo;
  o.slot = config.postgres.slot;
  o.create_slot = config.postgres.create_slot;
  o.connect_timeout_s = static_cast<int>(config.postgres.connect_timeout_s);
  for (const auto& t : router.RequiredColumns()) {
    o.tables.push_back({t.schema, t.table, t.columns});
  }
  return o;
}

RelayOptions PipelineOptions(const Config& config) {
  RelayOptions o;
  o.status_interval_ms = static_cast<int>(config.postgres.status_interval_ms);
  o.max_inflight_events = config.limits.max_inflight_events;
  o.max_inflight_bytes = config.limits.max_inflight_bytes;
  o.dead_letter = config.outbox.on_invalid == OnInvalid::kDeadLetter;
  o.dead_letter_topic = config.outbox.dead_letter_topic;
  o.flush_timeout_ms = static_cast<int>(config.kafka.flush_timeout_ms);
  o.progress_interval_s = static_cast<int>(config.log.progress_interval_s);
  return o;
}

std::string Mapping(const Config& config) {
  std::vector<std::string> parts;
  for (const OutboxTable& t : config.outbox.tables) {
    parts.push_back(absl::StrCat(t.QualifiedName(), " -> ", t.topic,
                                 " key=", t.key, " value=", t.columns.payload));
  }
  return absl::StrJoin(parts, "; ");
}

// Sleeps up to `ms`, returning early when stop is set.
void SleepUnlessStopped(int64_t ms, const std::atomic<bool>& stop) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!stop.load() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

int RunRelay(const Config& config, const std::atomic<bool>& stop) {
  absl::StatusOr<std::unique_ptr<Router>> router = Router::Create(config);
  if (!router.ok()) {
    Log(Severity::kError, std::string(router.status().message()));
    return kExitUsage;
  }
  KafkaOptions kafka{config.kafka.brokers, config.kafka.properties};
  int64_t backoff = config.postgres.reconnect_backoff_initial_ms;
  std::string last_wait;
  while (!stop.load()) {
    auto stream =
        LibpqReplicationStream::Connect(StreamOptions(config, **router));
    if (!stream.ok()) {
      const absl::Status& s = stream.status();
      if (absl::IsFailedPrecondition(s) || absl::IsInvalidArgument(s)) {
        Log(Severity::kError, std::string(s.message()));
        return kExitPrecondition;
      }
      // Say it once per distinct reason, not every retry.
      if (s.message() != last_wait) {
        Log(Severity::kWarn, "waiting for PostgreSQL",
            {{"reason", std::string(s.message())},
             {"retry_ms", absl::StrCat(backoff)}});
        last_wait = std::string(s.message());
      }
      SleepUnlessStopped(backoff, stop);
      backoff = std::min(backoff * 2, config.postgres.reconnect_backoff_max_ms);
      continue;
    }
    last_wait.clear();
    const ServerInfo& server = (*stream)->server();
    auto sink = RdKafkaSink::Create(kafka);
    if (!sink.ok()) {
      Log(Severity::kError, std::string(sink.status().message()));
      return kExitUsage;
    }
    Log(Severity::kInfo, "streaming",
        {{"server", server.version},
         {"system_id", server.system_id},
         {"database", server.dbname},
         {"slot", config.postgres.slot},
         {"slot_created", server.slot_created ? "true" : "false"},
         {"start_lsn", FormatLsn(server.slot_confirmed_flush)},
         {"kafka", config.kafka.brokers},
         {"mapping", Mapping(config)}});
    Wal2JsonDecoder decoder;
    Relay relay(PipelineOptions(config), stream->get(), &decoder, router->get(),
                sink->get(), RealClock(), server.slot_confirmed_flush);
    absl::Status s = relay.Run(stop);
    const RelayStats& st = relay.stats();
    std::vector<LogField> summary;
    Log(s.ok() ? Severity::kInfo : Severity::kWarn, "session ended",
        {{"delivered", absl::StrCat(st.events_delivered)},
         {"confirmed_lsn", FormatLsn(st.confirmed)},
         {"status", s.ok() ? "ok" : std::string(s.message())}});
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
    if (st.events_delivered > 0 || st.status_updates > 1) {
      backoff = config.postgres.reconnect_backoff_initial_ms;
    }
    SleepUnlessStopped(backoff, stop);
    backoff = std::min(backoff * 2, config.postgres.reconnect_backoff_max_ms);
  }
  return kExitOk;
}

}  // namespace outbox
