#include "http/status_snapshot.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/logging.h"

namespace outbox {
namespace {

// Writes `"name":value` pairs into one object, commas between them.
class JsonObject {
 public:
  explicit JsonObject(std::string* out) : out_(out) { out_->push_back('{'); }
  ~JsonObject() { out_->push_back('}'); }

  void Add(const char* name, const std::string& v) {
    Key(name);
    AppendJsonString(out_, v);
  }
  void Add(const char* name, int64_t v) {
    Key(name);
    absl::StrAppend(out_, v);
  }
  // JSON has no NaN or infinity: such a value is left out.
  void Add(const char* name, double v) {
    if (!std::isfinite(v)) return;
    Key(name);
    absl::StrAppend(out_, absl::StrFormat("%.6g", v));
  }
  void Add(const char* name, bool v) {
    Key(name);
    out_->append(v ? "true" : "false");
  }
  template <typename T>
  void Add(const char* name, const std::optional<T>& v) {
    if (v.has_value()) Add(name, *v);
  }
  // Starts a nested value; the caller writes it.
  void Key(const char* name) {
    if (!first_) out_->push_back(',');
    first_ = false;
    AppendJsonString(out_, name);
    out_->push_back(':');
  }

 private:
  std::string* out_;
  bool first_ = true;
};

}  // namespace

std::string ToJson(const StatusSnapshot& s) {
  std::string out;
  {
    JsonObject o(&out);
    o.Add("service", s.service);
    o.Add("version", s.version);
    o.Add("unix_ms", s.unix_ms);
    o.Add("alive", s.alive);
    o.Add("ready", s.ready);
    o.Add("health_detail", s.health_detail);
    o.Add("role", s.role);
    o.Add("active", s.active);
    o.Add("paused", s.paused);
    o.Add("paused_by", s.paused_by);
    o.Add("paused_since", s.paused_since);
    o.Add("paused_reason", s.paused_reason);
    o.Add("events_delivered", s.events_delivered);
    o.Add("latency_count", s.latency_count);
    o.Add("latency_sum_seconds", s.latency_sum_seconds);
    o.Add("received_lsn", s.received_lsn);
    o.Add("confirmed_lsn", s.confirmed_lsn);
    o.Add("lag_bytes", s.lag_bytes);
    o.Add("lag_seconds", s.lag_seconds);
    o.Add("inflight_events", s.inflight_events);
    o.Add("max_inflight_events", s.max_inflight_events);
    o.Add("inflight_bytes", s.inflight_bytes);
    o.Add("max_inflight_bytes", s.max_inflight_bytes);
    o.Add("tracked_events", s.tracked_events);
    o.Add("max_tracked_events", s.max_tracked_events);
    o.Add("slot_name", s.slot_name);
    o.Add("slot_wal_status", s.slot_wal_status);
    o.Add("slot_retained_wal_bytes", s.slot_retained_wal_bytes);
    o.Add("slot_safe_wal_size_bytes", s.slot_safe_wal_size_bytes);
    o.Add("slot_active", s.slot_active);
    o.Add("dead_lettered", s.dead_lettered);
    o.Add("skipped_by_operator", s.skipped_by_operator);
    o.Add("delivery_errors", s.delivery_errors);
    o.Add("reconnects", s.reconnects);
    o.Add("postgres_state", s.postgres_state);
    o.Add("kafka_state", s.kafka_state);
    o.Add("last_error", s.last_error);
    o.Add("last_error_unix_ms", s.last_error_unix_ms);
    if (s.config_reload.has_value()) {
      o.Key("config_reload");
      JsonObject r(&out);
      r.Add("ok", s.config_reload->ok);
      r.Add("result", s.config_reload->result);
      if (!s.config_reload->error.empty()) {
        r.Add("error", s.config_reload->error);
      }
      r.Add("at_unix_ms", s.config_reload->at_unix_ms);
    }
    if (!s.operator_actions_pending.empty()) {
      o.Key("operator_actions_pending");
      out.push_back('[');
      for (size_t i = 0; i < s.operator_actions_pending.size(); ++i) {
        if (i > 0) out.push_back(',');
        AppendJsonString(&out, s.operator_actions_pending[i]);
      }
      out.push_back(']');
    }
    if (!s.backlog.empty()) {
      o.Key("backlog");
      out.push_back('[');
      for (size_t i = 0; i < s.backlog.size(); ++i) {
        if (i > 0) out.push_back(',');
        JsonObject t(&out);
        t.Add("table", s.backlog[i].table);
        t.Add("unsent_rows", s.backlog[i].unsent_rows);
        t.Add("oldest_unsent_age_seconds",
              s.backlog[i].oldest_unsent_age_seconds);
      }
      out.push_back(']');
    }
  }
  return out;
}

}  // namespace outbox
