// DeliveryQueue: the sink's handler only queues; the loop applies the
// reports in arrival order. A refusal to be dead-lettered reaches the
// policy at once.
#include "pipeline/delivery_queue.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace outbox {
namespace {

class RecordingPolicy : public CommitPolicy {
 public:
  void OnBegin(Lsn) override {}
  absl::StatusOr<Admission> Admit(uint64_t, int64_t) override {
    return Admission();
  }
  absl::Status OnRefused(uint64_t ticket, absl::string_view error) override {
    refused.push_back(ticket);
    errors.emplace_back(error);
    return answer;
  }
  absl::Status OnCommit(Lsn, int64_t) override { return absl::OkStatus(); }
  absl::StatusOr<Lsn> Confirmable(Lsn delivered, int64_t) override {
    return delivered;
  }
  absl::Status Finish(bool) override { return absl::OkStatus(); }

  std::vector<uint64_t> refused;
  std::vector<std::string> errors;
  absl::Status answer;
};

DeliveryReport Report(uint64_t ticket, absl::Status status,
                      const std::string& topic) {
  DeliveryReport r;
  r.ticket = ticket;
  r.status = std::move(status);
  r.record.topic = topic;
  r.record.key = "key";
  r.record.value = "value!";
  static const char* const kIds[] = {"e0", "e1", "e2", "e3"};
  r.record.event_id = kIds[ticket % 4];  // a view: the literal outlives it
  return r;
}

struct Applied {
  uint64_t ticket;
  absl::Status status, refusal;
  std::string topic;
  int64_t bytes, arrived_us;
  std::string failed_id, failed_value, failed_error;
};

std::vector<Applied> DrainAll(DeliveryQueue* q) {
  std::vector<Applied> out;
  q->Drain([&](const DeliveryOutcome& o, FailedRecord* f) {
    out.push_back({o.ticket, o.status, o.refusal, *o.topic,
                   o.key_bytes + o.value_bytes, o.arrived_us,
                   f ? f->event_id : "", f ? f->value : "", f ? f->error : ""});
  });
  return out;
}

TEST(DeliveryQueueTest, QueuesInOrderAndCopiesFailuresOnly) {
  FakeClock clock;
  InFlight in_flight(0x100, InFlight::Limits());
  RecordingPolicy policy;
  DeliveryQueue q(&clock, &in_flight, &policy, "dlq");
  q.Collect(Report(1, absl::OkStatus(), "orders"));
  q.Collect(Report(2, absl::UnavailableError("timed out"), "orders"));
  q.Collect(Report(3, absl::OkStatus(), "payments"));
  EXPECT_FALSE(q.empty());
  std::vector<Applied> got = DrainAll(&q);
  EXPECT_TRUE(q.empty());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].ticket, 1u);
  EXPECT_EQ(got[0].topic, "orders");
  EXPECT_EQ(got[0].bytes, 9);
  EXPECT_EQ(got[0].failed_id, "");
  EXPECT_EQ(got[1].failed_id, "e2");
  EXPECT_EQ(got[1].failed_value, "value!");
  EXPECT_EQ(got[1].failed_error, "timed out");
  EXPECT_EQ(got[2].topic, "payments");
  EXPECT_TRUE(policy.refused.empty());  // not a refusal
  EXPECT_TRUE(DrainAll(&q).empty());
}

TEST(DeliveryQueueTest, ARefusalToDeadLetterReachesThePolicyAtOnce) {
  FakeClock clock;
  InFlight in_flight(0x100, InFlight::Limits());
  RecordingPolicy policy;
  policy.answer = absl::UnavailableError("abort the Kafka transaction");
  DeliveryQueue q(&clock, &in_flight, &policy, "dlq");
  q.Collect(Report(1, absl::InvalidArgumentError("too large"), "orders"));
  // Told before anything is applied (as inside a Kafka commit).
  EXPECT_EQ(policy.refused, std::vector<uint64_t>{1});
  EXPECT_EQ(policy.errors, std::vector<std::string>{"too large"});
  // A dead letter's own refusal is not the policy's to handle.
  q.Collect(Report(2, absl::InvalidArgumentError("too large"), "dlq"));
  EXPECT_EQ(policy.refused.size(), 1u);
  std::vector<Applied> got = DrainAll(&q);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].refusal, policy.answer);
  EXPECT_TRUE(got[1].refusal.ok());
}

TEST(DeliveryQueueTest, UnderHaltThePolicyIsNeverTold) {
  FakeClock clock;
  InFlight in_flight(0x100, InFlight::Limits());
  RecordingPolicy policy;
  DeliveryQueue q(&clock, &in_flight, &policy, /*dead_letter_topic=*/"");
  q.Collect(Report(1, absl::InvalidArgumentError("too large"), "orders"));
  EXPECT_TRUE(policy.refused.empty());
}

TEST(DeliveryQueueTest, TimesOnlyTheSampledRecordsReport) {
  FakeClock clock;
  InFlight in_flight(0x100, InFlight::Limits());
  ASSERT_TRUE(in_flight.Begin(0).ok());
  uint64_t a = *in_flight.Track();
  uint64_t b = *in_flight.Track();
  in_flight.OnProduced(a, 9, clock.NowMicros());  // sampled
  in_flight.OnProduced(b, 9, clock.NowMicros());
  RecordingPolicy policy;
  DeliveryQueue q(&clock, &in_flight, &policy, "dlq");
  clock.Advance(5000);
  q.Collect(Report(b, absl::OkStatus(), "orders"));
  q.Collect(Report(a, absl::OkStatus(), "orders"));
  clock.Advance(5000);  // applied later: the time is the arrival's
  std::vector<Applied> got = DrainAll(&q);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].arrived_us, 0);
  EXPECT_EQ(got[1].arrived_us, 1'005'000);
}

}  // namespace
}  // namespace outbox
