#include "relay/relay_metrics.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace outbox {
namespace {

constexpr const char* kWalStatuses[] = {"reserved", "extended", "unreserved",
                                        "lost"};

prometheus::Counter* NewCounter(prometheus::Registry& r, const char* name,
                                const char* help) {
  return &prometheus::BuildCounter().Name(name).Help(help).Register(r).Add({});
}

prometheus::Gauge* NewGauge(prometheus::Registry& r, const char* name,
                            const char* help) {
  return &prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
}

}  // namespace

struct RelayMetrics::WalStatusGauges {
  prometheus::Gauge* by_status[std::size(kWalStatuses)];
};

RelayMetrics::RelayMetrics(std::shared_ptr<prometheus::Registry> registry,
                           const Clock* clock)
    : registry_(std::move(registry)),
      clock_(clock),
      role_(*registry_, "outbox_relay"),
      config_reload_(*registry_, "outbox_relay", clock),
      kafka_client_(*registry_, "outbox_relay") {
  prometheus::Registry& r = *registry_;
  delivery_errors_ = NewCounter(
      r, "outbox_relay_delivery_errors_total",
      "Delivery reports that came back with an error (each one ends the "
      "session or sends the event to the dead-letter topic).");
  dead_lettered_ = NewCounter(r, "outbox_relay_dead_lettered_total",
                              "Events delivered to the dead-letter topic.");
  reconnects_ = NewCounter(r, "outbox_relay_reconnects_total",
                           "Replication sessions restarted after a transient "
                           "error (PostgreSQL or Kafka).");
  slot_monitor_errors_ = NewCounter(r, "outbox_relay_slot_monitor_errors_total",
                                    "Failed queries of pg_replication_slots.");
  inflight_events_ = NewGauge(r, "outbox_relay_inflight_events",
                              "Events produced to Kafka and not yet reported.");
  inflight_bytes_ =
      NewGauge(r, "outbox_relay_inflight_bytes",
               "Bytes produced to Kafka and not yet reported: keys and "
               "values, plus 512 per record for what librdkafka and the "
               "relay hold beside them.");
  tracked_events_ = NewGauge(
      r, "outbox_relay_tracked_events",
      "Events from the oldest one Kafka has not acknowledged to the newest "
      "read, acknowledged ones behind it included; reading pauses at "
      "limits.max_tracked_events.");
  received_lsn_ = NewGauge(r, "outbox_relay_received_lsn",
                           "Newest WAL position received from PostgreSQL.");
  confirmed_lsn_ =
      NewGauge(r, "outbox_relay_confirmed_lsn",
               "WAL position confirmed to PostgreSQL (everything before it is "
               "in Kafka).");
  lag_bytes_ = NewGauge(r, "outbox_relay_lag_bytes",
                        "Received minus confirmed WAL position, in bytes.");
  lag_seconds_ = NewGauge(
      r, "outbox_relay_lag_seconds",
      "Age of the oldest event not yet confirmed: now minus the commit "
      "time of the oldest unconfirmed transaction with events; 0 when none "
      "is pending.");
  slot_retained_ = NewGauge(
      r, "outbox_relay_slot_retained_wal_bytes",
      "WAL the slot keeps on the server: pg_current_wal_lsn() - restart_lsn.");
  slot_lag_ = NewGauge(
      r, "outbox_relay_slot_lag_bytes",
      "pg_current_wal_lsn() - confirmed_flush_lsn, as the server sees it.");
  slot_safe_wal_size_ =
      NewGauge(r, "outbox_relay_slot_safe_wal_size_bytes",
               "WAL that can still be written before the slot risks losing WAL "
               "(pg_replication_slots.safe_wal_size); NaN when unlimited.");
  slot_active_ = NewGauge(r, "outbox_relay_slot_active",
                          "1 while a process streams from the slot.");
  ready_ = NewGauge(r, "outbox_relay_ready",
                    "1 while the relay streams from a usable slot with a "
                    "healthy producer, or is a healthy standby (another "
                    "instance holds the slot) (/readyz, less the liveness "
                    "check).");
  role_.OnChange([this] {
    std::lock_guard<std::mutex> lock(health_mu_);
    UpdateReadyLocked();
  });
  last_turn_timestamp_ =
      NewGauge(r, "outbox_relay_last_turn_timestamp_seconds",
               "Unix time of the relay loop's (or, between sessions, the "
               "supervisor's) last turn; /healthz fails when it stops moving.");
  slot_safe_wal_size_->Set(std::numeric_limits<double>::quiet_NaN());
  failover_ready_ = NewGauge(
      r, "outbox_relay_failover_ready",
      "1 when a PostgreSQL 17+ failover would keep the slot (failover slot, "
      "synchronized_standby_slots, standbys syncing it), 0 when a check "
      "failed, NaN when not checked (PostgreSQL 16 or older).");
  failover_problems_ =
      NewGauge(r, "outbox_relay_failover_problems",
               "Unsafe failover settings the last readiness check found (each "
               "logged as a warning).");
  SetFailoverProblems(std::nullopt);
  unreplicated_topics_ = NewGauge(
      r, "outbox_relay_unreplicated_topics",
      "Topics the relay depends on (events, dead letters, checkpoints, slot "
      "marker) with replication factor 1 on a cluster of 3 or more brokers, "
      "as the check at the first session found them (logged as a warning); "
      "NaN until checked.");
  unreplicated_topics_->Set(std::numeric_limits<double>::quiet_NaN());
  paused_ = NewGauge(r, "outbox_relay_paused",
                     "1 while publishing is paused (POST /pause, "
                     "docs/operations/pause.md): nothing further is read from "
                     "the replication stream; 0 otherwise.");
  auto& blocked =
      prometheus::BuildGauge()
          .Name("outbox_relay_kafka_blocked")
          .Help(
              "1 while the relay waits for Kafka to let it write a topic: "
              "a missing ACL (reason authorization) or a topic that does "
              "not exist (reason unknown_topic). Nothing past the refused "
              "event is confirmed; the relay retries by itself.")
          .Register(r);
  kafka_blocked_authorization_ = &blocked.Add({{"reason", "authorization"}});
  kafka_blocked_unknown_topic_ = &blocked.Add({{"reason", "unknown_topic"}});
  messages_ignored_ = NewCounter(
      r, "outbox_relay_nontransactional_messages_total",
      "Non-transactional logical messages under outbox.messages.prefix, "
      "ignored (only transactional ones are events).");
  updates_ignored_ = NewCounter(
      r, "outbox_relay_ignored_updates_total",
      "UPDATEs of outbox rows seen under outbox.on_update warn or error, "
      "logged and not published.");
  skipped_by_operator_ = NewCounter(
      r, "outbox_relay_events_skipped_by_operator_total",
      "Outbox events dropped, not published, because an operator named them "
      "(outbox-relay skip --event, advance --to).");
  heartbeats_emitted_ =
      NewCounter(r, "outbox_relay_heartbeats_emitted_total",
                 "Heartbeat logical messages the relay wrote.");
  heartbeat_errors_ =
      NewCounter(r, "outbox_relay_heartbeat_errors_total",
                 "Failed attempts to write a heartbeat logical message.");
  heartbeat_round_trip_ = NewGauge(
      r, "outbox_relay_heartbeat_round_trip_seconds",
      "From writing the last heartbeat message to reading it back through "
      "the slot; NaN before the first.");
  heartbeat_age_ = NewGauge(
      r, "outbox_relay_heartbeat_age_seconds",
      "Since the last heartbeat came back through the slot; NaN before the "
      "first.");
  heartbeat_round_trip_->Set(std::numeric_limits<double>::quiet_NaN());
  heartbeat_age_->Set(std::numeric_limits<double>::quiet_NaN());
  events_family_ = &prometheus::BuildCounter()
                        .Name("outbox_relay_events_delivered_total")
                        .Help("Events Kafka acknowledged, per topic.")
                        .Register(r);
  bytes_family_ = &prometheus::BuildCounter()
                       .Name("outbox_relay_bytes_delivered_total")
                       .Help("Value bytes Kafka acknowledged, per topic.")
                       .Register(r);
  auto& status = prometheus::BuildGauge()
                     .Name("outbox_relay_slot_wal_status")
                     .Help("The slot's wal_status: 1 for the current value.")
                     .Register(r);
  wal_status_ = std::make_unique<WalStatusGauges>();
  for (size_t i = 0; i < std::size(kWalStatuses); ++i) {
    wal_status_->by_status[i] = &status.Add({{"status", kWalStatuses[i]}});
  }
  // From commit: a millisecond or less in a healthy pipeline at low rates,
  // minutes behind a backlog or an outage.
  latency_bounds_ = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                     0.5,   1,      2.5,   5,    10,    30,   60,  300};
  latency_ = &prometheus::BuildHistogram()
                  .Name("outbox_relay_delivery_latency_seconds")
                  .Help("Commit in PostgreSQL to Kafka delivery report.")
                  .Register(r)
                  .Add({}, latency_bounds_);
  delivery_latency_.Init(latency_, &latency_bounds_);
  receive_latency_.Init(
      &prometheus::BuildHistogram()
           .Name("outbox_relay_receive_latency_seconds")
           .Help("Commit in PostgreSQL to the relay reading the event's "
                 "transaction from the replication stream (its Begin), per "
                 "event.")
           .Register(r)
           .Add({}, latency_bounds_),
      &latency_bounds_);
}

RelayMetrics::~RelayMetrics() = default;

void RelayMetrics::SetKafkaBlocked(bool authorization,
                                   absl::string_view topic) {
  kafka_blocked_authorization_->Set(authorization ? 1 : 0);
  kafka_blocked_unknown_topic_->Set(authorization ? 0 : 1);
  kafka_blocked_topic_ = std::string(topic);
}

void RelayMetrics::ClearKafkaBlocked() {
  kafka_blocked_topic_.clear();
  kafka_blocked_authorization_->Set(0);
  kafka_blocked_unknown_topic_->Set(0);
}

void RelayMetrics::OnDelivered(absl::string_view topic, int64_t value_bytes) {
  if (!kafka_blocked_topic_.empty() && topic == kafka_blocked_topic_) {
    ClearKafkaBlocked();
  }
  auto it = topics_.find(topic);
  if (it == topics_.end()) {
    std::string name(topic);
    TopicCounters c;
    c.events = &events_family_->Add({{"topic", name}});
    c.bytes = &bytes_family_->Add({{"topic", name}});
    it = topics_.emplace(std::move(name), c).first;
  }
  ++it->second.pending_events;
  it->second.pending_bytes += value_bytes;
  topics_pending_ = true;
}

void RelayMetrics::BufferedHistogram::Init(prometheus::Histogram* h,
                                           const std::vector<double>* b) {
  histogram = h;
  bounds = b;
  pending.assign(b->size() + 1, 0);
}

void RelayMetrics::BufferedHistogram::Observe(double seconds) {
  if (seconds < 0) return;
  // Same bucket as Histogram::Observe: the first bound >= the value.
  size_t bucket = std::lower_bound(bounds->begin(), bounds->end(), seconds) -
                  bounds->begin();
  pending[bucket] += 1;
  pending_sum += seconds;
  is_pending = true;
}

void RelayMetrics::BufferedHistogram::Publish() {
  if (!is_pending) return;
  histogram->ObserveMultiple(pending, pending_sum);
  std::fill(pending.begin(), pending.end(), 0);
  pending_sum = 0;
  is_pending = false;
}

void RelayMetrics::ObserveLatency(double seconds) {
  delivery_latency_.Observe(seconds);
}

void RelayMetrics::ObserveReceiveLatency(double seconds) {
  receive_latency_.Observe(seconds);
}

void RelayMetrics::Flush() {
  if (topics_pending_) {
    for (auto& [name, c] : topics_) {
      if (c.pending_events == 0) continue;
      c.events->Increment(static_cast<double>(c.pending_events));
      delivered_total_.fetch_add(c.pending_events, std::memory_order_relaxed);
      c.bytes->Increment(static_cast<double>(c.pending_bytes));
      c.pending_events = c.pending_bytes = 0;
    }
    topics_pending_ = false;
  }
  delivery_latency_.Publish();
  receive_latency_.Publish();
}

void RelayMetrics::OnDeliveryError() { delivery_errors_->Increment(); }

void RelayMetrics::OnDeadLettered() { dead_lettered_->Increment(); }

void RelayMetrics::SetPosition(Lsn received, Lsn confirmed,
                               int64_t inflight_events, int64_t inflight_bytes,
                               double lag_seconds) {
  received_.store(received, std::memory_order_relaxed);
  confirmed_.store(confirmed, std::memory_order_relaxed);
  received_lsn_->Set(static_cast<double>(received));
  confirmed_lsn_->Set(static_cast<double>(confirmed));
  lag_bytes_->Set(
      received > confirmed ? static_cast<double>(received - confirmed) : 0);
  inflight_events_->Set(static_cast<double>(inflight_events));
  inflight_bytes_->Set(static_cast<double>(inflight_bytes));
  lag_seconds_->Set(lag_seconds);
}

void RelayMetrics::SetTrackedEvents(int64_t events) {
  tracked_events_->Set(static_cast<double>(events));
}

void RelayMetrics::OnReconnect() { reconnects_->Increment(); }

void RelayMetrics::SetSlot(const SlotStatus& slot) {
  slot_retained_->Set(static_cast<double>(slot.retained_bytes));
  slot_lag_->Set(static_cast<double>(slot.lag_bytes));
  slot_safe_wal_size_->Set(slot.safe_wal_size
                               ? static_cast<double>(*slot.safe_wal_size)
                               : std::numeric_limits<double>::quiet_NaN());
  slot_active_->Set(slot.active ? 1 : 0);
  for (size_t i = 0; i < std::size(kWalStatuses); ++i) {
    wal_status_->by_status[i]->Set(slot.wal_status == kWalStatuses[i] ? 1 : 0);
  }
  std::string problem;
  if (slot.wal_status == "lost") {
    // The relay itself stops with the whole fix (pg/slot_loss.h).
    problem = absl::StrCat(
        "replication slot \"", slot.slot_name,
        "\" is invalidated (wal_status 'lost': the server removed WAL it "
        "still needed): events committed after ",
        FormatLsn(slot.confirmed_flush_lsn), " are in no slot");
  }
  std::lock_guard<std::mutex> lock(health_mu_);
  slot_problem_ = std::move(problem);
  slot_ = slot;
  UpdateReadyLocked();
}

std::string RelayMetrics::slot_problem() const {
  std::lock_guard<std::mutex> lock(health_mu_);
  return slot_problem_;
}

void RelayMetrics::OnMessageIgnored() { messages_ignored_->Increment(); }
void RelayMetrics::OnUpdateIgnored() { updates_ignored_->Increment(); }
void RelayMetrics::OnSkippedByOperator() { skipped_by_operator_->Increment(); }

void RelayMetrics::SetOperatorActionsPending(std::vector<std::string> pending) {
  std::lock_guard<std::mutex> lock(health_mu_);
  operator_pending_ = std::move(pending);
}

void RelayMetrics::OnHeartbeatEmitted(int64_t now_us) {
  heartbeats_emitted_->Increment();
  int64_t none = 0;
  heartbeat_pending_since_us_.compare_exchange_strong(none, now_us);
}

void RelayMetrics::OnHeartbeatError() { heartbeat_errors_->Increment(); }

void RelayMetrics::OnHeartbeatReturned(double round_trip_s, int64_t now_us) {
  // A heartbeat emitted just before this store is forgotten as pending: a
  // stall is then seen one interval later, from the next one.
  heartbeat_pending_since_us_.store(0);
  last_heartbeat_returned_us_.store(now_us, std::memory_order_relaxed);
  heartbeat_round_trip_->Set(round_trip_s);
  heartbeat_age_->Set(0);
}

void RelayMetrics::RefreshHeartbeatAge(int64_t now_us) {
  int64_t last = last_heartbeat_returned_us_.load(std::memory_order_relaxed);
  if (last != 0) heartbeat_age_->Set(std::max<int64_t>(0, now_us - last) / 1e6);
}

std::string RelayMetrics::heartbeat_problem(int64_t now_us,
                                            int64_t timeout_us) const {
  const int64_t pending = heartbeat_pending_since_us_.load();
  if (pending == 0 || now_us - pending <= timeout_us) return "";
  const int64_t data = last_stream_data_us_.load(std::memory_order_relaxed);
  if (data != 0 && now_us - data <= timeout_us) return "";
  return absl::StrCat(
      "no heartbeat came back through the slot for ",
      (now_us - pending) / 1'000'000,
      " s and the stream delivered nothing else: the walsender is not "
      "delivering (postgres.heartbeat_timeout_s ",
      timeout_us / 1'000'000, ")");
}

void RelayMetrics::Heartbeat(int64_t now_us) {
  last_turn_us_.store(now_us, std::memory_order_relaxed);
  last_turn_timestamp_->Set(static_cast<double>(clock_->UnixMicros()) / 1e6);
}

void RelayMetrics::SetStreaming(bool streaming) {
  std::lock_guard<std::mutex> lock(health_mu_);
  streaming_.store(streaming, std::memory_order_relaxed);
  UpdateReadyLocked();
}

bool RelayMetrics::ready() const {
  std::lock_guard<std::mutex> lock(health_mu_);
  return streaming() && slot_problem_.empty();
}

void RelayMetrics::UpdateReadyLocked() {
  // What /readyz says (relay/relay_health.h), less liveness and the
  // heartbeat: streaming from a usable slot, or a healthy standby.
  const bool healthy_standby =
      role_.role() == Role::kStandby && role_.slot_held_elsewhere();
  ready_->Set((streaming() && slot_problem_.empty()) || healthy_standby ? 1
                                                                        : 0);
}

void RelayMetrics::OnSlotMonitorError() { slot_monitor_errors_->Increment(); }

void RelayMetrics::SetFailoverProblems(std::optional<size_t> problems) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  failover_ready_->Set(problems ? (*problems == 0 ? 1 : 0) : kNaN);
  failover_problems_->Set(problems ? static_cast<double>(*problems) : kNaN);
}

void RelayMetrics::SetUnreplicatedTopics(size_t topics) {
  unreplicated_topics_->Set(static_cast<double>(topics));
}

void RelayMetrics::SetPaused(bool paused) {
  paused_flag_.store(paused, std::memory_order_relaxed);
  paused_->Set(paused ? 1 : 0);
}

void RelayMetrics::FillStatus(StatusSnapshot* s) const {
  const auto whole = [](const prometheus::Gauge* g) {
    return static_cast<int64_t>(g->Value());
  };
  s->events_delivered = delivered_total_.load(std::memory_order_relaxed);
  prometheus::ClientMetric latency = latency_->Collect();
  s->latency_count = static_cast<int64_t>(latency.histogram.sample_count);
  s->latency_sum_seconds = latency.histogram.sample_sum;
  const Lsn received = received_.load(std::memory_order_relaxed);
  const Lsn confirmed = confirmed_.load(std::memory_order_relaxed);
  // Before the first session's first turn there is no position to show.
  if (received != kInvalidLsn || confirmed != kInvalidLsn) {
    s->received_lsn = FormatLsn(received);
    s->confirmed_lsn = FormatLsn(confirmed);
    s->lag_bytes = whole(lag_bytes_);
    s->lag_seconds = lag_seconds_->Value();
    s->inflight_events = whole(inflight_events_);
    s->inflight_bytes = whole(inflight_bytes_);
    s->tracked_events = whole(tracked_events_);
  }
  {
    std::lock_guard<std::mutex> lock(health_mu_);
    if (slot_.has_value()) {
      s->slot_name = slot_->slot_name;
      if (!slot_->wal_status.empty()) s->slot_wal_status = slot_->wal_status;
      s->slot_retained_wal_bytes = slot_->retained_bytes;
      if (slot_->safe_wal_size) {
        s->slot_safe_wal_size_bytes = *slot_->safe_wal_size;
      }
      s->slot_active = slot_->active;
    }
    s->operator_actions_pending = operator_pending_;
  }
  s->dead_lettered = static_cast<int64_t>(dead_lettered_->Value());
  s->skipped_by_operator = static_cast<int64_t>(skipped_by_operator_->Value());
  s->delivery_errors = static_cast<int64_t>(delivery_errors_->Value());
  s->reconnects = static_cast<int64_t>(reconnects_->Value());
  daemon_status_.Fill(s);
  config_reload_.Fill(s);
}

}  // namespace outbox
