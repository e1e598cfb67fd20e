#include "poller/poller_metrics.h"

#include <map>

namespace outbox {
namespace {

prometheus::Counter& MakeCounter(prometheus::Registry& r, const char* name,
                                 const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r).Add({});
}

prometheus::Gauge& MakeGauge(prometheus::Registry& r, const char* name,
                             const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
}

}  // namespace

PollerMetrics::PollerMetrics(prometheus::Registry& r)
    : delivered(MakeCounter(r, "outbox_poller_events_delivered_total",
                            "Outbox rows delivered to Kafka")),
      attempts(MakeCounter(r, "outbox_poller_attempts_total",
                           "Delivery attempts (rows claimed and routed)")),
      failures(MakeCounter(r, "outbox_poller_failures_total",
                           "Failed delivery attempts")),
      dead_lettered(MakeCounter(r, "outbox_poller_dead_lettered_total",
                                "Rows moved to the dead-letter state")),
      batches(MakeCounter(r, "outbox_poller_batches_total",
                          "Claims that found rows")),
      abandoned(MakeCounter(r, "outbox_poller_batches_abandoned_total",
                            "Batches rolled back because Kafka did not "
                            "acknowledge them within poller.batch_timeout_ms")),
      janitor_deleted(MakeCounter(r, "outbox_poller_janitor_deleted_total",
                                  "Sent rows deleted after the retention")),
      events_per_second(MakeGauge(r, "outbox_poller_events_per_second",
                                  "Rows delivered per second, last interval")),
      connected(MakeGauge(r, "outbox_poller_connected",
                          "1 while connected to PostgreSQL")),
      role(r, "outbox_poller"),
      config_reload(r, "outbox_poller"),
      kafka_client(r, "outbox_poller"),
      unsent_(prometheus::BuildGauge()
                  .Name("outbox_poller_unsent_rows")
                  .Help("Rows neither sent nor dead-lettered")
                  .Register(r)),
      oldest_(prometheus::BuildGauge()
                  .Name("outbox_poller_oldest_unsent_age_seconds")
                  .Help("Age of the oldest unsent row")
                  .Register(r)) {}

prometheus::Gauge& PollerMetrics::Unsent(const std::string& table) {
  return unsent_.Add({{"table", table}});
}

prometheus::Gauge& PollerMetrics::OldestUnsentAge(const std::string& table) {
  return oldest_.Add({{"table", table}});
}

void PollerMetrics::FillStatus(StatusSnapshot* s) const {
  s->events_delivered = static_cast<int64_t>(delivered.Value());
  s->dead_lettered = static_cast<int64_t>(dead_lettered.Value());
  s->delivery_errors = static_cast<int64_t>(failures.Value());
  // Per table, in name order; the gauges carry the table as their label.
  std::map<std::string, StatusSnapshot::TableBacklog> tables;
  auto each = [&tables](const prometheus::Family<prometheus::Gauge>& family,
                        auto set) {
    for (const prometheus::MetricFamily& f : family.Collect()) {
      for (const prometheus::ClientMetric& m : f.metric) {
        for (const prometheus::ClientMetric::Label& l : m.label) {
          if (l.name != "table") continue;
          StatusSnapshot::TableBacklog& t = tables[l.value];
          t.table = l.value;
          set(t, m.gauge.value);
        }
      }
    }
  };
  each(unsent_, [](StatusSnapshot::TableBacklog& t, double v) {
    t.unsent_rows = static_cast<int64_t>(v);
  });
  each(oldest_, [](StatusSnapshot::TableBacklog& t, double v) {
    t.oldest_unsent_age_seconds = v;
  });
  for (auto& [name, t] : tables) s->backlog.push_back(std::move(t));
  daemon_status.Fill(s);
  config_reload.Fill(s);
}

}  // namespace outbox
