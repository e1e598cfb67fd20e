// The limits.*, http.*, log.* and poller.* keys of the configuration key table
// (see config_key_table.h).
#include "config/config_key_table.h"
#include "config/config_keys.h"

namespace outbox::config_key_table {

void AddRuntimeKeys(KeyAppender add) {
  // limits
  add(Global("limits.max_inflight_events", G(limits.max_inflight_events),
             "events handed to Kafka but not yet acknowledged before reading "
             "pauses")
          .Min(1)
          .For(kRelayOnly));
  add(Global("limits.max_inflight_bytes", G(limits.max_inflight_bytes),
             "bytes handed to Kafka but not yet acknowledged before reading "
             "pauses (KiB/MiB/GiB suffixes allowed)")
          .Min(1)
          .Bytes()
          .For(kRelayOnly));
  add(Global("limits.min_inflight_bytes", G(limits.min_inflight_bytes),
             "the floor of the in-flight byte window, which follows twice "
             "the delivery rate times the acknowledgement time up to "
             "limits.max_inflight_bytes; equal to it, a fixed window "
             "(KiB/MiB/GiB suffixes allowed)")
          .Min(1)
          .Bytes()
          .For(kRelayOnly));
  add(Global("limits.max_tracked_events", G(limits.max_tracked_events),
             "events read from the oldest one Kafka has not acknowledged on, "
             "acknowledged ones behind it included, before reading pauses: "
             "bounds memory when one event is stuck while later ones are "
             "delivered")
          .Min(1)
          .For(kRelayOnly));
  // http
  add(Global("http.listen", G(http.listen),
             "host:port for the status page (/), /status.json, /metrics, "
             "/healthz and /readyz; empty disables")
          .For(kDaemons));
  // log
  add(Global("log.format", G(log.format), "text | json").For(kDaemons));
  add(Global("log.level", G(log.level), "debug | info | warn | error")
          .For(kDaemons));
  add(Global("log.progress_interval_s", G(log.progress_interval_s),
             "interval between progress lines; 0 disables")
          .For(kDaemons));
  // poller
  add(Global(
          "poller.interval_ms", G(poller.interval_ms),
          "outbox-poller: delay between polls when the last one found nothing")
          .Min(1)
          .For(ToolBit(Tool::kPoller)));
  add(Global("poller.batch_size", G(poller.batch_size),
             "outbox-poller: rows claimed per transaction")
          .Min(1)
          .For(ToolBit(Tool::kPoller)));
  add(Global("poller.max_attempts", G(poller.max_attempts),
             "outbox-poller: failed deliveries before a row is dead-lettered")
          .Min(1)
          .For(ToolBit(Tool::kPoller)));
  add(Global("poller.backoff_initial_ms", G(poller.backoff_initial_ms),
             "outbox-poller: first retry delay of a failed row")
          .Min(1)
          .For(ToolBit(Tool::kPoller)));
  add(Global("poller.backoff_max_ms", G(poller.backoff_max_ms),
             "outbox-poller: cap of the doubling retry delay")
          .Min(1)
          .For(ToolBit(Tool::kPoller)));
  add(Global("poller.batch_timeout_ms", G(poller.batch_timeout_ms),
             "outbox-poller: how long a claimed batch may wait for Kafka "
             "before it is rolled back")
          .Min(1)
          .For(ToolBit(Tool::kPoller)));
  add(Global("poller.retention_s", G(poller.retention_s),
             "outbox-poller: age after which sent rows are deleted (mode "
             "mark); 0 keeps them")
          .For(ToolBit(Tool::kPoller)));
  add(Global("poller.mode", G(poller.mode),
             "outbox-poller: mark | delete delivered rows")
          .For(ToolBit(Tool::kPoller)));
  add(Global("poller.notify", G(poller.notify),
             "outbox-poller: also wake on LISTEN/NOTIFY")
          .For(ToolBit(Tool::kPoller)));
  add(Global("poller.notify_channel", G(poller.notify_channel),
             "outbox-poller: LISTEN channel name")
          .For(ToolBit(Tool::kPoller)));
}

}  // namespace outbox::config_key_table
