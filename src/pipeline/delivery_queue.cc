#include "pipeline/delivery_queue.h"

#include <utility>

namespace outbox {

DeliveryQueue::DeliveryQueue(const Clock* clock, const InFlight* in_flight,
                             CommitPolicy* policy,
                             absl::string_view dead_letter_topic)
    : clock_(clock),
      in_flight_(in_flight),
      policy_(policy),
      dead_letter_topic_(dead_letter_topic) {}

void DeliveryQueue::Attach(EventSink* sink) {
  sink->SetDeliveryHandler(
      [this](const DeliveryReport& report) { Collect(report); });
}

void DeliveryQueue::Collect(const DeliveryReport& report) {
  DeliveryOutcome& o = outcomes_.emplace_back();
  o.ticket = report.ticket;
  o.status = report.status;
  o.topic = Intern(report.record.topic);
  o.key_bytes = static_cast<int64_t>(report.record.key.size());
  o.value_bytes = static_cast<int64_t>(report.record.value.size());
  if (in_flight_->sampled(report.ticket)) o.arrived_us = clock_->NowMicros();
  if (report.status.ok()) return;
  if (absl::IsInvalidArgument(report.status) && !dead_letter_topic_.empty() &&
      report.record.topic != dead_letter_topic_) {
    // Every refusal, even while winding down, so one replay covers them.
    o.refusal = policy_->OnRefused(report.ticket, report.status.message());
  }
  failures_.push_back(FailedRecord{
      report.ticket, std::string(report.record.event_id),
      std::string(report.record.topic), std::string(report.record.key),
      std::string(report.record.value), std::string(report.status.message())});
}

void DeliveryQueue::Drain(Apply apply) {
  outcomes_.swap(draining_);
  failures_.swap(failures_draining_);
  for (const DeliveryOutcome& o : draining_) {
    FailedRecord* failure = nullptr;
    if (!o.status.ok()) failure = &failures_draining_.front();
    apply(o, failure);
    if (failure != nullptr) failures_draining_.pop_front();
  }
  draining_.clear();
}

const std::string* DeliveryQueue::Intern(absl::string_view topic) {
  if (last_topic_ != nullptr && *last_topic_ == topic) return last_topic_;
  auto it = topic_index_.find(topic);
  if (it == topic_index_.end()) {
    const std::string* copy = &topics_.emplace_back(topic);
    it = topic_index_.emplace(*copy, copy).first;
  }
  last_topic_ = it->second;
  return last_topic_;
}

}  // namespace outbox
