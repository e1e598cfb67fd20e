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

RelayMetrics::RelayMetrics(std::shared_ptr<prometheus::Registry> registry)
    : registry_(std::move(registry)) {
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
               "Key and value bytes produced to Kafka and not yet reported.");
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
  // Commit to delivery report: milliseconds in a healthy pipeline, minutes
  // behind a backlog or an outage.
  latency_bounds_ = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                     1,     2.5,  5,     10,   30,  60,   300};
  latency_pending_.assign(latency_bounds_.size() + 1, 0);
  latency_ = &prometheus::BuildHistogram()
                  .Name("outbox_relay_delivery_latency_seconds")
                  .Help("Commit in PostgreSQL to Kafka delivery report.")
                  .Register(r)
                  .Add({}, latency_bounds_);
}

RelayMetrics::~RelayMetrics() = default;

void RelayMetrics::OnDelivered(absl::string_view topic, int64_t value_bytes) {
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

void RelayMetrics::ObserveLatency(double seconds) {
  if (seconds < 0) return;
  // Same bucket as Histogram::Observe: the first bound >= the value.
  size_t bucket = std::lower_bound(latency_bounds_.begin(),
                                   latency_bounds_.end(), seconds) -
                  latency_bounds_.begin();
  latency_pending_[bucket] += 1;
  latency_pending_sum_ += seconds;
  latency_is_pending_ = true;
}

void RelayMetrics::Flush() {
  if (topics_pending_) {
    for (auto& [name, c] : topics_) {
      if (c.pending_events == 0) continue;
      c.events->Increment(static_cast<double>(c.pending_events));
      c.bytes->Increment(static_cast<double>(c.pending_bytes));
      c.pending_events = c.pending_bytes = 0;
    }
    topics_pending_ = false;
  }
  if (latency_is_pending_) {
    latency_->ObserveMultiple(latency_pending_, latency_pending_sum_);
    std::fill(latency_pending_.begin(), latency_pending_.end(), 0);
    latency_pending_sum_ = 0;
    latency_is_pending_ = false;
  }
}

void RelayMetrics::OnDeliveryError() { delivery_errors_->Increment(); }

void RelayMetrics::OnDeadLettered() { dead_lettered_->Increment(); }

void RelayMetrics::SetPosition(Lsn received, Lsn confirmed,
                               int64_t inflight_events, int64_t inflight_bytes,
                               double lag_seconds) {
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
  std::lock_guard<std::mutex> lock(slot_problem_mu_);
  slot_problem_ = std::move(problem);
}

std::string RelayMetrics::slot_problem() const {
  std::lock_guard<std::mutex> lock(slot_problem_mu_);
  return slot_problem_;
}

void RelayMetrics::OnSlotMonitorError() { slot_monitor_errors_->Increment(); }

void RelayMetrics::SetFailoverProblems(std::optional<size_t> problems) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  failover_ready_->Set(problems ? (*problems == 0 ? 1 : 0) : kNaN);
  failover_problems_->Set(problems ? static_cast<double>(*problems) : kNaN);
}

}  // namespace outbox
