// The Relay loop against fakes: a scripted stream of real-format wal2json
// records and a sink whose deliveries the test orders, delays and fails.
// The central assertion, checked at every status update: the flushed LSN
// never reaches the commit of a transaction with an undelivered event.
#include "relay/relay.h"

#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "config/config.h"
#include "decode/wal2json_decoder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "relay/fakes.h"
#include "relay/relay_metrics.h"
#include "route/router.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

std::string Lsns(Lsn lsn, Lsn next) {
  return absl::StrCat("\"lsn\":\"", FormatLsn(lsn), "\",\"nextlsn\":\"",
                      FormatLsn(next), "\"");
}

constexpr char kTs[] = "\"timestamp\":\"2026-11-22 05:00:00.25+00\"";

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
              JsonString(absl::StrCat("{\"n\": ", i, "}")), "}]}"));
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
                start_, metrics_.get());
    std::atomic<bool> stop{false};
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
  std::unique_ptr<RelayMetrics> metrics_;  // null unless a test sets it
};

// kTs as Unix microseconds.
constexpr int64_t kCommitUs = 1'795'323'600'250'000;

// The value of one sample in the registry, or -1 if it is absent.
// `suffix` picks a histogram's "_count", "_sum" or "_bucket" (with le).
double Sample(prometheus::Registry& registry, const std::string& name,
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
    metrics_ = std::make_unique<RelayMetrics>(registry_);
  }
  double Get(const std::string& name,
             const std::map<std::string, std::string>& labels = {}) {
    return Sample(*registry_, name, labels);
  }
  std::shared_ptr<prometheus::Registry> registry_;
};

TEST_F(RelayMetricsTest, CountsDeliveriesPerTopicAndDeadLetters) {
  options_.dead_letter = true;
  script_.Txn(3, /*null_key=*/1);  // one poison row -> dead letter
  script_.Txn(2);
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());
  EXPECT_EQ(Get("outbox_relay_events_delivered_total",
                {{"topic", "outbox.event.order"}}),
            4);
  EXPECT_EQ(Get("outbox_relay_events_delivered_total",
                {{"topic", "outbox.dead_letter"}}),
            1);
  // Value bytes: payloads {"n": i} are 8 bytes each.
  EXPECT_EQ(Get("outbox_relay_bytes_delivered_total",
                {{"topic", "outbox.event.order"}}),
            4 * 8);
  EXPECT_EQ(Get("outbox_relay_dead_lettered_total"), 1);
  EXPECT_EQ(Get("outbox_relay_delivery_errors_total"), 0);
  EXPECT_EQ(Get("outbox_relay_inflight_events"), 0);
  EXPECT_EQ(Get("outbox_relay_confirmed_lsn"),
            static_cast<double>(script_.last_end()));
  EXPECT_EQ(Get("outbox_relay_lag_bytes"), 0);
  EXPECT_EQ(Get("outbox_relay_lag_seconds"), 0);
  EXPECT_FALSE(metrics_->streaming());
  EXPECT_EQ(metrics_->last_turn_us(), clock_.NowMicros());
}

TEST_F(RelayMetricsTest, LatencyIsCommitTimeToDeliveryReport) {
  // The relay's wall clock reads 1.5 s after the commit when it starts.
  clock_.SetUnix(kCommitUs + 1'500'000 - clock_.NowMicros());
  script_.Txn(2);
  script_.Txn(1);
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());
  EXPECT_EQ(
      Sample(*registry_, "outbox_relay_delivery_latency_seconds", {}, "_count"),
      3);
  // Delivered within the first few 10 ms polls: all between 1.5 and 2.5 s.
  EXPECT_EQ(Sample(*registry_, "outbox_relay_delivery_latency_seconds", {},
                   "_bucket", 1.0),
            0);
  EXPECT_EQ(Sample(*registry_, "outbox_relay_delivery_latency_seconds", {},
                   "_bucket", 2.5),
            3);
  double sum =
      Sample(*registry_, "outbox_relay_delivery_latency_seconds", {}, "_sum");
  EXPECT_GE(sum, 3 * 1.5);
  EXPECT_LT(sum, 3 * 2.5);
}

TEST_F(RelayMetricsTest, GaugesShowPendingEventsAndLag) {
  clock_.SetUnix(kCommitUs + 4'000'000 - clock_.NowMicros());
  script_.Txn(1);
  script_.Txn(2);
  bool checked = false;
  ASSERT_TRUE(Run([&] {
                // Everything was read in the first turn; from the second
                // poll on the gauges show it pending.
                if (sink_.polls() < 3) return;
                if (!checked) {
                  checked = true;
                  EXPECT_TRUE(metrics_->streaming());
                  EXPECT_EQ(Get("outbox_relay_inflight_events"), 3);
                  EXPECT_EQ(Get("outbox_relay_inflight_bytes"),
                            3 * (5 + 8));  // key "agg-i", value {"n": i}
                  EXPECT_EQ(Get("outbox_relay_received_lsn"),
                            static_cast<double>(script_.last_end()));
                  EXPECT_EQ(Get("outbox_relay_confirmed_lsn"),
                            static_cast<double>(start_));
                  EXPECT_EQ(Get("outbox_relay_lag_bytes"),
                            static_cast<double>(script_.last_end() - start_));
                  double lag = Get("outbox_relay_lag_seconds");
                  EXPECT_GE(lag, 4.0);
                  EXPECT_LT(lag, 5.0);
                }
                DeliverAll();
              }).ok());
  EXPECT_TRUE(checked);
  EXPECT_EQ(Get("outbox_relay_inflight_events"), 0);
  EXPECT_EQ(Get("outbox_relay_lag_seconds"), 0);
  EXPECT_EQ(Get("outbox_relay_lag_bytes"), 0);
}

TEST_F(RelayMetricsTest, CountsFailedDeliveries) {
  script_.Txn(1);
  flush_delivers_ = false;
  absl::Status s = Run([&] {
    if (!sink_.produced().empty()) {
      Deliver(0, absl::UnavailableError("Local: Message timed out"));
    }
  });
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_EQ(Get("outbox_relay_delivery_errors_total"), 1);
  EXPECT_EQ(Get("outbox_relay_events_delivered_total",
                {{"topic", "outbox.event.order"}}),
            -1);  // never delivered: no series for the topic
  EXPECT_FALSE(metrics_->streaming());
}

TEST_F(RelayTest, PublishesEveryInsertAndConfirmsTheLastCommit) {
  auto a = script_.Txn(2);
  auto b = script_.Txn(1);
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());
  ASSERT_EQ(sink_.produced().size(), 3u);
  const auto& first = sink_.produced()[0];
  EXPECT_EQ(first.topic, "outbox.event.order");
  EXPECT_EQ(first.key, "agg-0");
  EXPECT_EQ(first.value, "{\"n\": 0}");
  EXPECT_EQ(first.headers.at("id"), a[0]);
  EXPECT_EQ(sink_.produced()[2].headers.at("id"), b[0]);
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
  EXPECT_EQ(stream_.started_at(), start_);
  EXPECT_TRUE(stream_.stopped());
  EXPECT_EQ(stats_.events_delivered, 3);
  EXPECT_GT(checks_, 0);
}

TEST_F(RelayTest, NeverConfirmsPastAnUndeliveredEvent) {
  auto a = script_.Txn(1);
  auto b = script_.Txn(1);
  auto c = script_.Txn(1);
  flush_delivers_ = false;
  // Deliver b and c, never a: nothing may be confirmed past a's commit.
  ASSERT_TRUE(Run(
                  [&] {
                    if (sink_.produced().size() == 3) {
                      Deliver(1);
                      Deliver(2);
                    }
                  },
                  /*max_polls=*/50)
                  .ok());
  EXPECT_LE(stream_.last_flushed(), script_.commit_of(a[0]));
  EXPECT_EQ(stats_.events_delivered, 2);
}

TEST_F(RelayTest, EmptyTransactionsAndKeepalivesAdvanceTheSlot) {
  script_.Txn(0);
  script_.Txn(0);
  script_.Keepalive();
  ASSERT_TRUE(Run(nullptr).ok());
  EXPECT_TRUE(sink_.produced().empty());
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
}

TEST_F(RelayTest, KeepaliveWaitsBehindInFlightEvents) {
  auto a = script_.Txn(1);
  script_.Keepalive(/*reply=*/true);
  flush_delivers_ = false;
  ASSERT_TRUE(Run(nullptr, /*max_polls=*/30).ok());
  // The reply was sent, but it could not confirm past the undelivered row.
  EXPECT_GE(stream_.statuses().size(), 2u);
  EXPECT_LE(stream_.last_flushed(), script_.commit_of(a[0]));
}

TEST_F(RelayTest, RandomDeliveryOrderKeepsTheInvariantAndReachesTheEnd) {
  for (int seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE(seed);
    FakeStream stream;
    FakeSink sink;
    std::swap(stream_, stream);
    std::swap(sink_, sink);
    stream_.on_status = [this](Lsn flushed) { CheckInvariant(flushed); };
    delivered_.clear();
    Script script(&stream_);
    std::swap(script_, script);
    std::mt19937 rng(seed);
    for (int t = 0; t < 40; ++t) {
      script_.Txn(std::uniform_int_distribution<int>(0, 4)(rng));
      if (rng() % 4 == 0) script_.Keepalive(rng() % 2);
    }
    ASSERT_TRUE(Run([&] {
                  auto pending = sink_.Unreported();
                  std::shuffle(pending.begin(), pending.end(), rng);
                  pending.resize(
                      std::min(pending.size(), pending.size() / 2 + rng() % 2));
                  for (size_t i : pending) Deliver(i);
                }).ok());
    EXPECT_EQ(stream_.last_flushed(), script_.last_end());
    EXPECT_EQ(sink_.produced().size(), script_.events().size());
  }
}

TEST_F(RelayTest, PermanentDeliveryFailureHaltsBelowTheEvent) {
  auto a = script_.Txn(1);
  auto b = script_.Txn(2);
  auto c = script_.Txn(1);
  flush_delivers_ = false;
  absl::Status s = Run([&] {
    if (sink_.produced().size() == 4) {
      Deliver(0);
      Deliver(1);
      Deliver(2, absl::InvalidArgumentError("Broker: Message size too large"));
      Deliver(3);
    }
  });
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(b[1]));
  EXPECT_THAT(s.message(), HasSubstr("halt"));
  EXPECT_EQ(stream_.last_flushed(), script_.commit_of(a[0]) + 0x30);
  EXPECT_LE(stream_.last_flushed(), script_.commit_of(b[1]));
}

TEST_F(RelayTest, TransientDeliveryFailureRestartsWithoutConfirming) {
  auto a = script_.Txn(1);
  flush_delivers_ = false;
  absl::Status s = Run([&] {
    if (!sink_.produced().empty()) {
      Deliver(0, absl::UnavailableError("Local: Message timed out"));
    }
  });
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_LE(stream_.last_flushed(), script_.commit_of(a[0]));
}

TEST_F(RelayTest, PoisonRowHaltsWithItsLsn) {
  auto a = script_.Txn(1);
  auto b = script_.Txn(2, /*null_key=*/1);
  absl::Status s = Run([&] { DeliverAll(); });
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("null"));
  EXPECT_THAT(s.message(), HasSubstr("LSN"));
  // a is confirmed, b (with the poison row) is not.
  EXPECT_EQ(stream_.last_flushed(), script_.commit_of(a[0]) + 0x30);
}

TEST_F(RelayTest, PoisonRowGoesToTheDeadLetterTopicUnderDeadLetter) {
  options_.dead_letter = true;
  auto a = script_.Txn(2, /*null_key=*/0);
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());
  ASSERT_EQ(sink_.produced().size(), 2u);
  const auto& dl = sink_.produced()[0];
  EXPECT_EQ(dl.topic, "outbox.dead_letter");
  EXPECT_THAT(dl.value, HasSubstr(a[0]));  // the raw wal2json row
  EXPECT_THAT(dl.headers.at("error"), HasSubstr("null"));
  EXPECT_EQ(sink_.produced()[1].topic, "outbox.event.order");
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
  EXPECT_EQ(stats_.dead_lettered, 1);
}

TEST_F(RelayTest, UndeliverableRecordIsDeadLetteredAndOnlyThatConfirmsIt) {
  options_.dead_letter = true;
  auto a = script_.Txn(1);
  bool failed = false;
  ASSERT_TRUE(Run([&] {
                if (!failed && sink_.produced().size() == 1) {
                  failed = true;
                  Deliver(0, absl::InvalidArgumentError("too large"));
                } else if (sink_.produced().size() == 2) {
                  EXPECT_LE(stream_.last_flushed(), script_.commit_of(a[0]));
                  Deliver(1);
                }
              }).ok());
  ASSERT_EQ(sink_.produced().size(), 2u);
  EXPECT_EQ(sink_.produced()[1].topic, "outbox.dead_letter");
  EXPECT_EQ(sink_.produced()[1].headers.at("topic"), "outbox.event.order");
  EXPECT_EQ(sink_.produced()[1].value, "{\"n\": 0}");
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
}

TEST_F(RelayTest, QuietStreamSendsWhatWasProducedWithoutLingering) {
  options_.send_when_idle = true;
  flush_delivers_ = false;
  script_.Txn(1);
  int produced_before_flush = -1;
  sink_.on_flush_extra = [&] {
    if (produced_before_flush < 0) {
      produced_before_flush = static_cast<int>(sink_.produced().size());
    }
  };
  ASSERT_TRUE(Run([&] {
                if (flushes_ >= 1) DeliverAll();  // acked once sent
              }).ok());
  // The quiet pass after the transaction flushed the producer once, with
  // the event in it; then the shutdown flushed.
  EXPECT_EQ(produced_before_flush, 1);
  EXPECT_EQ(flushes_, 2);
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
}

TEST_F(RelayTest, OneIdleSendInFlightAtATime) {
  // Like Nagle's algorithm: while the first idle send is unacknowledged,
  // records read after it wait for it (or linger.ms) instead of each
  // forcing a request of its own.
  options_.send_when_idle = true;
  flush_delivers_ = false;
  script_.Txn(1);
  size_t produced_at_second_flush = 0;
  sink_.on_flush_extra = [&] {
    if (flushes_ == 1) produced_at_second_flush = sink_.produced().size();
  };
  int turns_after_first_flush = 0;
  ASSERT_TRUE(Run([&] {
                if (flushes_ == 0) return;
                ++turns_after_first_flush;
                if (turns_after_first_flush == 1) {
                  script_.Txn(1);  // read while the first is in flight
                  script_.Txn(1);
                } else if (turns_after_first_flush == 5) {
                  Deliver(0);  // the first send is acknowledged
                } else if (flushes_ >= 2) {
                  DeliverAll();
                }
              }).ok());
  EXPECT_EQ(sink_.produced().size(), 3u);
  // The two later records went out together in one idle send, made only
  // after the first was acknowledged; then the shutdown flushed.
  EXPECT_EQ(produced_at_second_flush, 3u);
  EXPECT_GE(turns_after_first_flush, 5);
  EXPECT_EQ(flushes_, 3);
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
}

TEST_F(RelayTest, IdleFlushesAreOffWhenDisabled) {
  script_.Txn(1);
  ASSERT_TRUE(Run([&] { DeliverAll(); }).ok());
  EXPECT_EQ(flushes_, 1);  // the shutdown's only
}

TEST_F(RelayTest, BusyPassesLingerAndOnlyTheQuietOneFlushes) {
  options_.send_when_idle = true;
  flush_delivers_ = false;
  for (int i = 0; i < 20; ++i) script_.Txn(1);  // 60 messages: a busy pass
  int first_poll_after_busy_pass = -1, poll_at_first_flush = -1;
  sink_.on_flush_extra = [&] {
    if (poll_at_first_flush < 0) poll_at_first_flush = sink_.polls();
  };
  ASSERT_TRUE(Run([&] {
                if (first_poll_after_busy_pass < 0 &&
                    sink_.produced().size() == 20) {
                  first_poll_after_busy_pass = sink_.polls();
                }
                if (flushes_ >= 1) DeliverAll();
              }).ok());
  EXPECT_EQ(sink_.produced().size(), 20u);
  EXPECT_EQ(flushes_, 2);  // one idle flush for all 20, then the shutdown
  // The busy pass itself did not flush: the flush came on a later turn.
  ASSERT_GE(first_poll_after_busy_pass, 0);
  EXPECT_GE(poll_at_first_flush, first_poll_after_busy_pass);
}

TEST_F(RelayTest, BackpressureStopsReadingButKeepsSendingStatus) {
  options_.max_inflight_events = 3;
  for (int i = 0; i < 10; ++i) script_.Txn(1);
  flush_delivers_ = false;
  ASSERT_TRUE(Run(nullptr, /*max_polls=*/40).ok());
  EXPECT_EQ(sink_.produced().size(), 3u);
  EXPECT_GT(stream_.remaining(), 0u);
  EXPECT_GE(stream_.statuses().size(), 2u);  // timer kept running
}

TEST_F(RelayTest, FullProducerQueueIsRetriedNotDropped) {
  sink_.queue_limit = 2;
  for (int i = 0; i < 5; ++i) script_.Txn(1);
  int poll = 0;
  ASSERT_TRUE(Run([&] {
                if (++poll % 3 == 0) DeliverAll();
              }).ok());
  EXPECT_EQ(sink_.produced().size(), 5u);
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
}

TEST_F(RelayTest, DisconnectMidTransactionConfirmsOnlyWholeTransactions) {
  auto a = script_.Txn(1);
  auto b = script_.Txn(2, /*null_key=*/-1, /*commit=*/false);
  script_.Disconnect();
  absl::Status s = Run([&] { DeliverAll(); });
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  // b's rows were delivered, but b never committed in our stream: the slot
  // stays at a's end, so b is streamed again after the reconnect.
  EXPECT_EQ(sink_.produced().size(), 3u);
  EXPECT_LE(stream_.last_flushed(), script_.commit_of(a[0]) + 0x30);
  EXPECT_EQ(stats_.confirmed, script_.commit_of(a[0]) + 0x30);
}

TEST_F(RelayTest, UndecodableRecordStopsWithItsLsn) {
  script_.Txn(1);
  stream_.AddData(0x2000000, "{\"action\":\"X\"}");
  absl::Status s = Run([&] { DeliverAll(); });
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("0/2000000"));
  EXPECT_EQ(stream_.last_flushed(), script_.last_end());
}

TEST_F(RelayTest, FatalProducerErrorEndsTheSession) {
  script_.Txn(1);
  sink_.set_health(absl::InternalError("fatal: out of order sequence"));
  absl::Status s = Run(nullptr);
  EXPECT_TRUE(absl::IsInternal(s)) << s;
  EXPECT_EQ(stream_.last_flushed(), start_);
}

}  // namespace
}  // namespace outbox::testing
