// DeliveryQueue: collects the sink's delivery reports so the relay's loop
// applies them at one point of its turn, never from inside the sink.
//
//   sink Poll()/Flush()/Purge()/CommitTransaction()
//        --DeliveryReport--> Collect() (the sink's delivery handler)
//        --DeliveryOutcome--> queue --Drain()--> Relay::ApplyReport()
//
// Collect() copies what applying needs and nothing else: the ticket, the
// status, the topic (interned: a pointer to one copy per topic) and the
// sizes; for a failed report also the event id, key and value (a
// FailedRecord, to be dead-lettered). A successful report allocates
// nothing once the queue has reached its high-water capacity.
//
// Two things cannot wait for the loop, and Collect() does them at once:
// - the time of the report of the window's sampled record (InFlight), read
//   when the report arrives so the measured latency is the real one;
// - a refusal to be dead-lettered (on_invalid: dead_letter, not a dead
//   letter itself) goes to CommitPolicy::OnRefused(): under exactly-once,
//   librdkafka serves reports inside commit_transaction and then fails the
//   commit as abortable, and the policy must know why before it decides
//   (transactional_commit_policy.h). The answer travels with the outcome.
// Neither touches the Relay: Collect() reads InFlight and writes only the
// queue and the policy.
//
// Threading: one thread (the relay's loop, which also runs the sink's
// handler). The pointers are not owned and must outlive the queue.
#ifndef OUTBOX_PIPELINE_DELIVERY_QUEUE_H_
#define OUTBOX_PIPELINE_DELIVERY_QUEUE_H_

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/commit_policy.h"
#include "outbox/clock.h"
#include "outbox/event_sink.h"
#include "pipeline/in_flight.h"

namespace outbox {

// A record Kafka refused, copied out of its report (the report's views die
// with the handler): what its dead letter is built from.
struct FailedRecord {
  uint64_t ticket = 0;
  std::string event_id, topic, key, value, error;
};

// One delivery report as the loop applies it.
struct DeliveryOutcome {
  uint64_t ticket = 0;
  absl::Status status;
  // CommitPolicy::OnRefused()'s answer when it was asked (see above);
  // OK otherwise.
  absl::Status refusal;
  const std::string* topic = nullptr;  // valid for the queue's life
  int64_t key_bytes = 0;
  int64_t value_bytes = 0;
  int64_t arrived_us = 0;  // the sampled record's report only, else 0
};

class DeliveryQueue {
 public:
  // `dead_letter_topic` empty: on_invalid is halt (no refusal is ever
  // dead-lettered, so the policy is never told).
  DeliveryQueue(const Clock* clock, const InFlight* in_flight,
                CommitPolicy* policy, absl::string_view dead_letter_topic);

  DeliveryQueue(const DeliveryQueue&) = delete;
  DeliveryQueue& operator=(const DeliveryQueue&) = delete;

  // Makes Collect() `sink`'s delivery handler.
  void Attach(EventSink* sink);

  // The delivery handler.
  void Collect(const DeliveryReport& report);

  // Hands every queued outcome, in arrival order, to `apply` with its
  // FailedRecord (null when delivered; `apply` may move from it), and
  // empties the queue. Reports collected meanwhile wait for the next call.
  using Apply = absl::FunctionRef<void(const DeliveryOutcome&, FailedRecord*)>;
  void Drain(Apply apply);

  bool empty() const { return outcomes_.empty(); }

 private:
  const std::string* Intern(absl::string_view topic);

  const Clock* clock_;
  const InFlight* in_flight_;
  CommitPolicy* policy_;
  const std::string dead_letter_topic_;
  // Swapped on Drain(), so both keep their capacity.
  std::vector<DeliveryOutcome> outcomes_, draining_;
  // Failed reports' records, in the order of their outcomes.
  std::deque<FailedRecord> failures_, failures_draining_;
  // Topics seen: one copy each, stable; the last one looked up first.
  std::deque<std::string> topics_;
  absl::flat_hash_map<absl::string_view, const std::string*> topic_index_;
  const std::string* last_topic_ = nullptr;
};

}  // namespace outbox

#endif  // OUTBOX_PIPELINE_DELIVERY_QUEUE_H_
