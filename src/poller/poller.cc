#include "poller/poller.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "outbox/status_macros.h"

namespace outbox {
namespace {

constexpr uint64_t kDeadLetterBit = uint64_t{1} << 31;
constexpr uint64_t kIndexMask = kDeadLetterBit - 1;
// Janitor DELETEs per pass, so a large cleanup never starves polling.
constexpr int kJanitorRoundsPerPass = 10;

}  // namespace

Poller::Poller(const PollerOptions& options, OutboxStore* store,
               const Router* router, EventSink* sink, Clock* clock,
               PollerMetrics* metrics)
    : options_(options),
      store_(store),
      router_(router),
      sink_(sink),
      clock_(clock),
      metrics_(metrics),
      retry_(options.max_attempts, options.backoff_initial_ms,
             options.backoff_max_ms, options.seed) {
  sink_->SetDeliveryHandler(
      [this](const DeliveryReport& report) { OnDelivery(report); });
  backlog_.resize(store_->tables().size());
  last_janitor_us_ = last_report_us_ = last_progress_us_ = clock_->NowMicros();
}

uint64_t Poller::Ticket(size_t index, bool dead_letter) const {
  return (uint64_t{generation_} << 32) | (dead_letter ? kDeadLetterBit : 0) |
         (index & kIndexMask);
}

void Poller::OnDelivery(const DeliveryReport& report) {
  if ((report.ticket >> 32) != generation_) return;  // an abandoned batch
  size_t index = report.ticket & kIndexMask;
  std::vector<Outcome>& outcomes =
      (report.ticket & kDeadLetterBit) ? dead_letter_outcomes_ : outcomes_;
  if (index >= outcomes.size() || outcomes[index].state != State::kPending) {
    return;
  }
  --pending_;
  if (report.status.ok()) {
    outcomes[index].state = State::kDelivered;
    return;
  }
  outcomes[index].state = State::kFailed;
  outcomes[index].error =
      absl::StrCat("delivery to topic ", report.record.topic,
                   " failed: ", report.status.message());
}

absl::Status Poller::ProduceWithBackpressure(const Record& record,
                                             uint64_t ticket) {
  for (;;) {
    absl::Status s = sink_->Produce(record, ticket);
    if (!absl::IsResourceExhausted(s)) return s;
    if (clock_->NowMicros() >= deadline_us_) {
      return absl::DeadlineExceededError(
          absl::StrCat("the Kafka producer's queue stayed full for "
                       "poller.batch_timeout_ms (",
                       options_.batch_timeout_ms, " ms)"));
    }
    // The producer's queue is full: serve reports until it has room.
    sink_->Poll(10);
    RETURN_IF_ERROR(sink_->health());
  }
}

absl::Status Poller::AwaitReports(const std::atomic<bool>& stop) {
  int64_t stop_deadline = -1;
  while (pending_ > 0) {
    RETURN_IF_ERROR(sink_->health());
    const int64_t now = clock_->NowMicros();
    if (stop_deadline < 0 && stop.load(std::memory_order_relaxed)) {
      stop_deadline = now + int64_t{options_.flush_timeout_ms} * 1000;
    }
    if (stop_deadline >= 0 && now >= stop_deadline) {
      return absl::CancelledError(absl::StrCat(
          "stopping with ", pending_,
          " Kafka deliveries outstanding; the batch was rolled back"));
    }
    if (now >= deadline_us_) {
      return absl::DeadlineExceededError(
          absl::StrCat(pending_,
                       " Kafka deliveries still outstanding after "
                       "poller.batch_timeout_ms (",
                       options_.batch_timeout_ms, " ms)"));
    }
    // Flush, not Poll: the batch is complete, so have the producer send it
    // now rather than wait out linger.ms (the wait is served either way).
    absl::Status f = sink_->Flush(100);
    if (!f.ok() && !absl::IsDeadlineExceeded(f)) return f;
    if (metrics_ != nullptr) metrics_->last_turn_us = clock_->NowMicros();
  }
  return absl::OkStatus();
}

absl::Status Poller::AbandonBatch(size_t table, absl::Status why) {
  store_->Abandon();
  ++generation_;  // reports still to come for this batch match no batch
  pending_ = 0;
  if (!absl::IsDeadlineExceeded(why)) return why;
  ++stats_.abandoned;
  if (metrics_ != nullptr) metrics_->abandoned.Increment();
  ++abandoned_in_a_row_;
  const int64_t backoff_ms = retry_.CapMs(abandoned_in_a_row_);
  resume_at_us_ = clock_->NowMicros() + backoff_ms * 1000;
  Log(Severity::kWarn,
      "batch rolled back: Kafka did not acknowledge it in time; its rows "
      "will be claimed again",
      {{"table", store_->tables()[table].QualifiedName()},
       {"rows", absl::StrCat(rows_.size())},
       {"reason", std::string(why.message())},
       {"retry_ms", absl::StrCat(backoff_ms)},
       {"producer_outstanding", absl::StrCat(sink_->outstanding())}});
  return why;
}

absl::Status Poller::BackOff(const std::atomic<bool>& stop) {
  while (!stop.load(std::memory_order_relaxed)) {
    RETURN_IF_ERROR(sink_->health());
    const int64_t now = clock_->NowMicros();
    if (metrics_ != nullptr) metrics_->last_turn_us = now;
    if (now >= resume_at_us_ && sink_->outstanding() == 0) {
      Log(Severity::kInfo, "claiming again after a rolled-back batch");
      return absl::OkStatus();
    }
    // The backlog gauges and progress lines go on through the outage.
    RETURN_IF_ERROR(MaybeReport(/*force=*/false));
    // Serves the abandoned batch's reports (they mark nothing), or waits.
    sink_->Poll(100);
  }
  return absl::OkStatus();
}

absl::StatusOr<int> Poller::PollTable(size_t table,
                                      const std::atomic<bool>& stop) {
  // The transaction starts with the claim, and so does its deadline.
  deadline_us_ = clock_->NowMicros() + options_.batch_timeout_ms * 1000;
  RETURN_IF_ERROR(store_->Claim(table, options_.batch_size, &rows_));
  const size_t n = rows_.size();
  if (n == 0) return 0;
  const TableShape& shape = store_->tables()[table];
  ++generation_;
  pending_ = 0;
  outcomes_.assign(n, Outcome{});
  dead_letter_outcomes_.assign(n, Outcome{});
  ++stats_.batches;
  stats_.claimed += static_cast<int64_t>(n);
  if (metrics_ != nullptr) {
    metrics_->batches.Increment();
    metrics_->attempts.Increment(static_cast<double>(n));
  }

  for (size_t i = 0; i < n; ++i) {
    ToChange(shape, rows_[i], &change_);
    absl::Status s = router_->Route(change_, &record_);
    if (s.ok()) {
      s = ProduceWithBackpressure(record_, Ticket(i, false));
      if (s.ok()) {
        ++pending_;
        continue;
      }
      if (!absl::IsInvalidArgument(s)) {
        // The producer failed or stayed full: nothing of this batch is
        // settled.
        return AbandonBatch(table, s);
      }
    }
    // The row cannot become a record, or Kafka refused it outright.
    outcomes_[i].state = State::kFailed;
    outcomes_[i].error = std::string(s.message());
  }
  if (absl::Status s = AwaitReports(stop); !s.ok()) {
    return AbandonBatch(table, s);
  }

  delivered_seqs_.clear();
  failures_.clear();
  bool any_dead = false;
  for (size_t i = 0; i < n; ++i) {
    if (outcomes_[i].state == State::kDelivered) {
      delivered_seqs_.push_back(rows_[i].seq);
      continue;
    }
    RetryPolicy::Decision d = retry_.OnFailure(rows_[i].attempts);
    failures_.push_back(RowFailure{rows_[i].seq, d.attempts, outcomes_[i].error,
                                   d.retry_delay_ms, d.dead});
    any_dead |= d.dead;
  }

  if (any_dead && options_.dead_letter) {
    size_t f = 0;
    for (size_t i = 0; i < n; ++i) {
      if (outcomes_[i].state == State::kDelivered) continue;
      const RowFailure& failure = failures_[f++];
      if (failure.dead) ProduceDeadLetter(table, i, failure.error);
    }
    if (absl::Status s = AwaitReports(stop); !s.ok()) {
      return AbandonBatch(table, s);
    }
    f = 0;
    for (size_t i = 0; i < n; ++i) {
      if (outcomes_[i].state == State::kDelivered) continue;
      RowFailure& failure = failures_[f++];
      if (dead_letter_outcomes_[i].state == State::kFailed) {
        // The table keeps the row dead-lettered either way; say why the
        // Kafka copy is missing.
        absl::StrAppend(&failure.error, "; dead-letter topic ",
                        options_.dead_letter_topic, ": ",
                        dead_letter_outcomes_[i].error);
      }
    }
  }

  RETURN_IF_ERROR(
      store_->Settle(table, options_.mode, delivered_seqs_, failures_));
  abandoned_in_a_row_ = 0;

  stats_.delivered += static_cast<int64_t>(delivered_seqs_.size());
  stats_.failures += static_cast<int64_t>(failures_.size());
  if (metrics_ != nullptr) {
    metrics_->delivered.Increment(static_cast<double>(delivered_seqs_.size()));
    metrics_->failures.Increment(static_cast<double>(failures_.size()));
  }
  size_t f = 0;
  for (size_t i = 0; i < n; ++i) {
    if (outcomes_[i].state == State::kDelivered) continue;
    const RowFailure& failure = failures_[f++];
    ToChange(shape, rows_[i], &change_);
    router_->Route(change_, &record_).IgnoreError();  // for the event id
    std::string event_id(record_.event_id);
    if (failure.dead) {
      ++stats_.dead_lettered;
      if (metrics_ != nullptr) metrics_->dead_lettered.Increment();
      Log(Severity::kWarn, "dead-lettered outbox row",
          {{"table", shape.QualifiedName()},
           {"seq", absl::StrCat(failure.seq)},
           {"event_id", event_id},
           {"attempts", absl::StrCat(failure.attempts)},
           {"error", failure.error}});
    } else {
      Log(Severity::kWarn, "delivery failed, will retry",
          {{"table", shape.QualifiedName()},
           {"seq", absl::StrCat(failure.seq)},
           {"event_id", event_id},
           {"attempts", absl::StrCat(failure.attempts)},
           {"retry_ms", absl::StrCat(failure.retry_delay_ms)},
           {"error", failure.error}});
    }
  }
  return static_cast<int>(n);
}

void Poller::ProduceDeadLetter(size_t table, size_t index,
                               const std::string& error) {
  const TableShape& shape = store_->tables()[table];
  ToChange(shape, rows_[index], &change_);
  bool routed = router_->Route(change_, &record_).ok();
  std::string event_id(record_.event_id);
  const Column* payload = table < options_.payload_columns.size()
                              ? change_.Find(options_.payload_columns[table])
                              : nullptr;
  bool value_is_null = payload == nullptr || payload->kind == ValueKind::kNull;
  const Record& dl = dead_letter_.Build(
      options_.dead_letter_topic, event_id,
      value_is_null ? absl::string_view() : payload->value, value_is_null,
      error,
      {{"topic", routed ? absl::string_view(record_.topic) : ""},
       {"key", routed ? record_.key : ""},
       {"attempts", absl::StrCat(rows_[index].attempts + 1)}});
  absl::Status s = ProduceWithBackpressure(dl, Ticket(index, true));
  if (s.ok()) {
    ++pending_;
    return;
  }
  dead_letter_outcomes_[index].state = State::kFailed;
  dead_letter_outcomes_[index].error = std::string(s.message());
}

absl::Status Poller::MaybeRunJanitor(const std::atomic<bool>& stop,
                                     bool force) {
  if (options_.mode != PollerMode::kMark || options_.retention_s <= 0) {
    return absl::OkStatus();
  }
  // Every tenth of the retention, between 1 s and 60 s.
  int64_t period_us = std::clamp<int64_t>(options_.retention_s * 100'000,
                                          1'000'000, 60'000'000);
  int64_t now = clock_->NowMicros();
  if (!force && now - last_janitor_us_ < period_us) return absl::OkStatus();
  last_janitor_us_ = now;
  for (size_t t = 0; t < store_->tables().size(); ++t) {
    for (int round = 0; round < kJanitorRoundsPerPass && !stop.load();
         ++round) {
      ASSIGN_OR_RETURN(
          int64_t deleted,
          store_->DeleteSent(t, options_.retention_s, options_.janitor_batch));
      stats_.janitor_deleted += deleted;
      if (metrics_ != nullptr) {
        metrics_->janitor_deleted.Increment(static_cast<double>(deleted));
      }
      if (deleted < options_.janitor_batch) break;
    }
  }
  return absl::OkStatus();
}

absl::Status Poller::MaybeReport(bool force) {
  int64_t now = clock_->NowMicros();
  if (force ||
      now - last_report_us_ >= int64_t{options_.report_interval_ms} * 1000) {
    for (size_t t = 0; t < store_->tables().size(); ++t) {
      ASSIGN_OR_RETURN(backlog_[t], store_->ReadBacklog(t));
      if (metrics_ != nullptr) {
        const std::string name = store_->tables()[t].QualifiedName();
        metrics_->Unsent(name).Set(static_cast<double>(backlog_[t].unsent));
        metrics_->OldestUnsentAge(name).Set(backlog_[t].oldest_unsent_age_s);
      }
    }
    int64_t elapsed = std::max<int64_t>(now - last_report_us_, 1);
    if (metrics_ != nullptr) {
      metrics_->events_per_second.Set(
          static_cast<double>(stats_.delivered - last_report_delivered_) * 1e6 /
          static_cast<double>(elapsed));
    }
    last_report_us_ = now;
    last_report_delivered_ = stats_.delivered;
  }
  if (options_.progress_interval_s <= 0) return absl::OkStatus();
  int64_t elapsed = now - last_progress_us_;
  if (elapsed < int64_t{options_.progress_interval_s} * 1'000'000) {
    return absl::OkStatus();
  }
  int64_t unsent = 0;
  double oldest = 0;
  for (const Backlog& b : backlog_) {
    unsent += b.unsent;
    oldest = std::max(oldest, b.oldest_unsent_age_s);
  }
  Log(Severity::kInfo, "progress",
      {{"events_per_s",
        absl::StrCat((stats_.delivered - last_progress_delivered_) * 1'000'000 /
                     std::max<int64_t>(elapsed, 1))},
       {"delivered", absl::StrCat(stats_.delivered)},
       {"failures", absl::StrCat(stats_.failures)},
       {"dead_lettered", absl::StrCat(stats_.dead_lettered)},
       {"unsent", absl::StrCat(unsent)},
       {"oldest_unsent_s", absl::StrCat(oldest)},
       {"janitor_deleted", absl::StrCat(stats_.janitor_deleted)}});
  last_progress_us_ = now;
  last_progress_delivered_ = stats_.delivered;
  return absl::OkStatus();
}

absl::Status Poller::Idle(const std::atomic<bool>& stop) {
  const int64_t deadline = clock_->NowMicros() + options_.interval_ms * 1000;
  while (!stop.load(std::memory_order_relaxed)) {
    int64_t left_ms = (deadline - clock_->NowMicros() + 999) / 1000;
    if (left_ms <= 0) return absl::OkStatus();
    // Short slices: a signal may land on another thread (librdkafka's).
    ASSIGN_OR_RETURN(bool notified, store_->WaitForNotify(static_cast<int>(
                                        std::min<int64_t>(left_ms, 100))));
    if (metrics_ != nullptr) metrics_->last_turn_us = clock_->NowMicros();
    if (notified) {
      ++stats_.notifications;
      return absl::OkStatus();
    }
  }
  return absl::OkStatus();
}

absl::Status Poller::Run(const std::atomic<bool>& stop) {
  RETURN_IF_ERROR(MaybeReport(/*force=*/true));
  while (!stop.load(std::memory_order_relaxed)) {
    if (options_.end_session && options_.end_session()) break;
    if (metrics_ != nullptr) metrics_->last_turn_us = clock_->NowMicros();
    // An idle poller still hears a broker refusing its credentials.
    sink_->Poll(0);
    RETURN_IF_ERROR(sink_->health());
    bool full = false;
    bool abandoned = false;
    for (size_t t = 0; t < store_->tables().size() && !abandoned; ++t) {
      absl::StatusOr<int> n = PollTable(t, stop);
      if (absl::IsCancelled(n.status()) && stop.load()) {
        Log(Severity::kWarn, std::string(n.status().message()));
        return absl::OkStatus();
      }
      abandoned = absl::IsDeadlineExceeded(n.status());
      if (abandoned) continue;
      if (!n.ok()) return n.status();
      if (*n >= options_.batch_size) full = true;
    }
    if (abandoned) {
      RETURN_IF_ERROR(BackOff(stop));
      continue;
    }
    RETURN_IF_ERROR(MaybeRunJanitor(stop, /*force=*/false));
    RETURN_IF_ERROR(MaybeReport(/*force=*/false));
    // A full batch means more rows are likely waiting: claim again now.
    if (!full) RETURN_IF_ERROR(Idle(stop));
  }
  return absl::OkStatus();
}

}  // namespace outbox
