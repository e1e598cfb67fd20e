#include "relay/heartbeat.h"

#include <chrono>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/logging.h"
#include "outbox/clock.h"
#include "pg/pg_connection.h"
#include "relay/relay_metrics.h"

namespace outbox {

std::string FormatHeartbeatContent(const HeartbeatContent& content) {
  return absl::StrCat(absl::Hex(content.nonce), " ", content.sent_unix_us);
}

bool ParseHeartbeatContent(absl::string_view text, HeartbeatContent* out) {
  std::pair<absl::string_view, absl::string_view> parts =
      absl::StrSplit(text, absl::MaxSplits(' ', 1));
  HeartbeatContent c;
  if (parts.first.empty() || parts.first.size() > 16 ||
      !absl::SimpleHexAtoi(parts.first, &c.nonce) ||
      !absl::SimpleAtoi(parts.second, &c.sent_unix_us)) {
    return false;
  }
  *out = c;
  return true;
}

uint64_t NewHeartbeatNonce() {
  std::random_device rd;
  uint64_t nonce = 0;
  while (nonce == 0) nonce = (uint64_t{rd()} << 32) | rd();
  return nonce;
}

HeartbeatEmitter::HeartbeatEmitter(Options options, RelayMetrics* metrics)
    : options_(std::move(options)), metrics_(metrics) {}

void HeartbeatEmitter::Loop(StopSignal& stop) {
  while (!stop.stopped()) {
    EmitOnce();
    stop.WaitFor(std::chrono::seconds(options_.interval_s));
  }
}

void HeartbeatEmitter::EmitOnce() {
  absl::Status s;
  if (conn_ == nullptr) {
    PgConnectOptions o;
    o.conninfo = options_.conninfo;
    o.application_name = "outbox-relay heartbeat";
    o.connect_timeout_s = options_.connect_timeout_s;
    absl::StatusOr<std::unique_ptr<PgConnection>> c = PgConnection::Connect(o);
    if (c.ok()) {
      conn_ = std::move(*c);
    } else {
      s = c.status();
    }
  }
  if (conn_ != nullptr) {
    const HeartbeatContent content{options_.nonce, RealClock()->UnixMicros()};
    absl::StatusOr<PgResult> r = conn_->QueryParams(
        "SELECT pg_catalog.pg_logical_emit_message(true, $1, $2)",
        {kHeartbeatPrefix, FormatHeartbeatContent(content)});
    if (r.ok()) {
      if (metrics_ != nullptr) {
        metrics_->OnHeartbeatEmitted(RealClock()->NowMicros());
      }
      if (!last_error_.empty()) {
        Log(Severity::kInfo, "heartbeat emitted again");
        last_error_.clear();
      }
      return;
    }
    s = r.status();
    if (!conn_->connected()) conn_.reset();
  }
  if (metrics_ != nullptr) metrics_->OnHeartbeatError();
  if (s.message() == last_error_) return;
  last_error_ = std::string(s.message());
  Log(Severity::kWarn, "cannot emit the heartbeat message",
      {{"error", last_error_}});
}

}  // namespace outbox
