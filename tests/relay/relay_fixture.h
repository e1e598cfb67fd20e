// The fixture of the Relay loop's unit tests: a scripted stream of
// real-format wal2json records (Script), a sink whose deliveries the test
// orders, delays and fails, and a check at every status update that the
// flushed LSN never reaches the commit of a transaction with an undelivered
// event. Shared by relay_test.cc, relay_metrics_test.cc,
// relay_idle_send_test.cc and relay_stuck_event_test.cc.
#ifndef OUTBOX_TESTS_RELAY_RELAY_FIXTURE_H_
#define OUTBOX_TESTS_RELAY_RELAY_FIXTURE_H_

#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "config/config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugin/wal2json/wal2json_decoder.h"
#include "prometheus/registry.h"
#include "relay/fakes.h"
#include "relay/relay.h"
#include "relay/relay_metrics.h"
#include "route/router.h"

namespace outbox::testing {

inline std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

inline std::string Lsns(Lsn lsn, Lsn next) {
  return absl::StrCat("\"lsn\":\"", FormatLsn(lsn), "\",\"nextlsn\":\"",
                      FormatLsn(next), "\"");
}

inline constexpr char kTs[] = "\"timestamp\":\"2026-11-22 05:00:00.25+00\"";

// Builds a stream script and remembers which event belongs to which
// transaction, so tests can check the watermark against it.
class Script {
 public:
  explicit Script(FakeStream* stream) : stream_(stream) {}

  // A committed transaction with `events` outbox rows; returns event ids.
  // `null_key` makes the row at that index a poison row.
  // With commit=false the C record is left out (a stream cut mid-way).
  std::vector<std::string> Txn(int events, int null_key = -1,
                               bool commit_record = true) {
    uint32_t xid = ++xid_;
    Lsn begin = next_;
    Lsn commit = begin + 0x100 + 0x80 * events;
    Lsn end = commit + 0x30;
    stream_->AddData(begin, absl::StrCat("{\"action\":\"B\",\"xid\":", xid, ",",
                                         kTs, ",", Lsns(commit, end), "}"));
    std::vector<std::string> ids;
    for (int i = 0; i < events; ++i) {
      std::string id =
          absl::StrCat("00000000-0000-4000-8000-", xid_ * 1000 + i);
      Lsn lsn = begin + 0x80 * (i + 1);
      std::string key =
          i == null_key ? "null" : JsonString(absl::StrCat("agg-", i % 3));
      stream_->AddData(
          lsn,
          absl::StrCat(
              "{\"action\":\"I\",\"xid\":", xid, ",", kTs, ",\"lsn\":\"",
              FormatLsn(lsn),
              "\",\"schema\":\"public\",\"table\":\"outbox\",\"columns\":["
              "{\"name\":\"id\",\"type\":\"uuid\",\"value\":\"",
              id,
              "\"},{\"name\":\"aggregatetype\",\"type\":\"text\",\"value\":"
              "\"order\"},{\"name\":\"aggregateid\",\"type\":\"text\","
              "\"value\":",
              key,
              "},{\"name\":\"type\",\"type\":\"text\",\"value\":\"Created\"},"
              "{\"name\":\"payload\",\"type\":\"jsonb\",\"value\":",
              JsonString(absl::StrCat(
                  "{\"n\": ", i,
                  payload_pad > 0
                      ? absl::StrCat(", \"pad\": \"",
                                     std::string(payload_pad, 'x'), "\"")
                      : "",
                  "}")),
              "}]}"));
      commit_of_[id] = commit;
      ids.push_back(id);
    }
    if (!commit_record) return ids;
    stream_->AddData(
        commit, absl::StrCat("{\"action\":\"C\",\"xid\":", xid, ",", kTs, ",",
                             Lsns(commit, end), "}"));
    next_ = end;
    last_end_ = end;
    return ids;
  }
  // Bytes of padding in each event's payload (large rows).
  int payload_pad = 0;
  // A keepalive at the current end of WAL.
  void Keepalive(bool reply = false) { stream_->AddKeepalive(next_, reply); }
  void Disconnect() { stream_->AddDisconnect(); }

  Lsn last_end() const { return last_end_; }
  Lsn commit_of(const std::string& id) const { return commit_of_.at(id); }
  const std::map<std::string, Lsn>& events() const { return commit_of_; }

 private:
  FakeStream* stream_;
  uint32_t xid_ = 700;
  Lsn next_ = 0x1000000;
  Lsn last_end_ = 0;
  std::map<std::string, Lsn> commit_of_;
};

class RelayTest : public ::testing::Test {
 protected:
  RelayTest() : script_(&stream_) {
    router_ = std::move(Router::Create(config_).value());
    options_.progress_interval_s = 0;
    options_.status_interval_ms = 50;
    // Idle flushes would deliver everything at once through the fake's
    // Flush(); the tests of that feature turn it back on.
    options_.send_when_idle = false;
    stream_.on_status = [this](Lsn flushed) { CheckInvariant(flushed); };
  }

  // Every event not (yet) delivered successfully must lie after `flushed`.
  void CheckInvariant(Lsn flushed) {
    ++checks_;
    for (const auto& [id, commit] : script_.events()) {
      if (delivered_.count(id) == 0) {
        ASSERT_LE(flushed, commit)
            << "confirmed " << FormatLsn(flushed) << " past undelivered " << id
            << " committed at " << FormatLsn(commit);
      }
    }
  }

  void Deliver(size_t i, absl::Status status = absl::OkStatus()) {
    const auto& p = sink_.produced().at(i);
    if (p.reported) return;
    std::string id = p.topic == options_.dead_letter_topic ? p.headers.at("id")
                     : p.headers.count("id")               ? p.headers.at("id")
                                                           : "";
    if (status.ok()) delivered_.insert(id);
    sink_.Report(i, std::move(status));
  }
  void DeliverAll() {
    for (size_t i = 0; i < sink_.produced().size(); ++i) Deliver(i);
  }

  // Runs the relay: on every poll, `step` may deliver; stops once the
  // script is played and nothing is outstanding (or after max_polls).
  absl::Status Run(std::function<void()> step, int max_polls = 100000) {
    Relay relay(options_, &stream_, &decoder_, router_.get(), &sink_, &clock_,
                start_, metrics_.get(), policy_);
    std::atomic<bool> stop{false};
    relay_ = &relay;
    sink_.on_poll = [&] {
      clock_.Advance(10'000);
      if (step) step();
      if ((stream_.done() && sink_.outstanding() == 0) ||
          sink_.polls() > max_polls) {
        stop = true;
      }
    };
    sink_.on_flush = [&] {
      ++flushes_;
      if (flush_delivers_) DeliverAll();
    };
    absl::Status s = relay.Run(stop);
    stats_ = relay.stats();
    relay_ = nullptr;
    return s;
  }

  Config config_;
  RelayOptions options_;
  FakeStream stream_;
  FakeSink sink_;
  FakeClock clock_;
  Wal2JsonDecoder decoder_;
  std::unique_ptr<Router> router_;
  Script script_;
  Lsn start_ = 0x1000000;
  std::set<std::string> delivered_;
  bool flush_delivers_ = true;
  int flushes_ = 0;  // Flush() calls, the shutdown's included
  int checks_ = 0;
  RelayStats stats_;
  const Relay* relay_ = nullptr;  // the one Run() runs, for `step` to inspect
  std::unique_ptr<RelayMetrics> metrics_;  // null unless a test sets it
  CommitPolicy* policy_ = nullptr;         // at-least-once unless set
};

// kTs as Unix microseconds.
inline constexpr int64_t kCommitUs = 1'795'323'600'250'000;

// The value of one sample in the registry, or -1 if it is absent.
// `suffix` picks a histogram's "_count", "_sum" or "_bucket" (with le).
inline double Sample(prometheus::Registry& registry, const std::string& name,
                     const std::map<std::string, std::string>& labels = {},
                     const std::string& suffix = "", double le = 0) {
  for (const auto& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const auto& m : family.metric) {
      std::map<std::string, std::string> got;
      for (const auto& l : m.label) got[l.name] = l.value;
      if (got != labels) continue;
      switch (family.type) {
        case prometheus::MetricType::Counter:
          return m.counter.value;
        case prometheus::MetricType::Gauge:
          return m.gauge.value;
        case prometheus::MetricType::Histogram:
          if (suffix == "_count") {
            return static_cast<double>(m.histogram.sample_count);
          }
          if (suffix == "_sum") return m.histogram.sample_sum;
          for (const auto& b : m.histogram.bucket) {
            if (b.upper_bound == le) {
              return static_cast<double>(b.cumulative_count);
            }
          }
          return -1;
        default:
          return -1;
      }
    }
  }
  return -1;
}

class RelayMetricsTest : public RelayTest {
 protected:
  RelayMetricsTest() {
    registry_ = std::make_shared<prometheus::Registry>();
    metrics_ = std::make_unique<RelayMetrics>(registry_, &clock_);
  }
  double Get(const std::string& name,
             const std::map<std::string, std::string>& labels = {}) {
    return Sample(*registry_, name, labels);
  }
  std::shared_ptr<prometheus::Registry> registry_;
};

}  // namespace outbox::testing

#endif  // OUTBOX_TESTS_RELAY_RELAY_FIXTURE_H_
