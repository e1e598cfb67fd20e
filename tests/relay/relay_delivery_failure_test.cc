// The Relay loop when Kafka fails it (relay_fixture.h): a failed report
// drops what waits behind it instead of delivering it, dead letters that
// cannot be produced for a transient reason are retried, and a stop is
// honoured while the producer's queue stays full.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "relay/relay_fixture.h"
#include "relay/supervisor.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

// Script keys: event i of a transaction has key agg-(i % 3).
TEST_F(RelayTest, PermanentFailureHaltsWithoutDeliveringWhatFollows) {
  auto a = script_.Txn(1);  // agg-0
  auto b = script_.Txn(2);  // agg-0, agg-1
  auto c = script_.Txn(1);  // agg-0: must not reach Kafka ahead of b[0]
  // (A flush delivers everything outstanding: flush_delivers_.)
  absl::Status s = Run([&] {
    if (sink_.produced().size() == 4) {
      Deliver(0);
      Deliver(1, absl::InvalidArgumentError("Broker: Message size too large"));
    }
  });
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(b[0]));
  // Not flushed (a flush here would deliver c[0]): purged.
  EXPECT_EQ(flushes_, 0);
  EXPECT_EQ(sink_.purges(), 1);
  EXPECT_EQ(delivered_.count(c[0]), 0u);
  EXPECT_EQ(delivered_.count(b[1]), 0u);
  EXPECT_TRUE(sink_.Unreported().empty());
  EXPECT_EQ(stream_.last_flushed(), script_.commit_of(a[0]) + 0x30);
}

TEST_F(RelayTest, FailedDeadLetterHaltsWithoutDeliveringWhatFollows) {
  options_.dead_letter = true;
  auto a = script_.Txn(1);
  auto b = script_.Txn(1);
  bool failed = false;
  absl::Status s = Run([&] {
    if (!failed && sink_.produced().size() == 2) {
      failed = true;
      Deliver(0, absl::InvalidArgumentError("too large"));
    } else if (sink_.produced().size() == 3) {
      ASSERT_EQ(sink_.produced()[2].topic, "outbox.dead_letter");
      Deliver(2, absl::InvalidArgumentError("dead letter refused"));
    }
  });
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("dead letter failed"));
  EXPECT_EQ(flushes_, 0);
  EXPECT_EQ(sink_.purges(), 1);
  EXPECT_EQ(delivered_.count(b[0]), 0u);
  EXPECT_LE(stream_.last_flushed(), script_.commit_of(a[0]));
}

TEST(RelayKafkaOptionsTest, HaltStopsTheProducerAtARefusedRecord) {
  Config config;
  EXPECT_EQ(RelayKafkaOptions(config).properties.at("enable.gapless.guarantee"),
            "true");
  config.kafka.properties["enable.gapless.guarantee"] = "false";
  EXPECT_EQ(RelayKafkaOptions(config).properties.at("enable.gapless.guarantee"),
            "false");  // the user's choice stands
  config.kafka.properties.erase("enable.gapless.guarantee");
  config.outbox.on_invalid = OnInvalid::kDeadLetter;
  EXPECT_EQ(
      RelayKafkaOptions(config).properties.count("enable.gapless.guarantee"),
      0u);
}

// The sink stops at a refused record (enable.gapless.guarantee) before the
// record's own report is served: the relay halts naming that event, and
// delivers nothing that was queued behind it.
TEST_F(RelayTest, ProducerStoppedAtARefusedRecordHaltsNamingIt) {
  auto a = script_.Txn(1);
  auto b = script_.Txn(2);
  auto c = script_.Txn(1);
  bool stopped = false;
  absl::Status s = Run([&] {
    if (!stopped && sink_.produced().size() == 4) {
      Deliver(0);
      sink_.set_health(absl::InvalidArgumentError(
          "Kafka refused a record permanently and the producer stopped"));
      stopped = true;
    } else if (stopped) {
      Deliver(1, absl::InvalidArgumentError("Broker: Message size too large"));
    }
  });
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(b[0]));
  EXPECT_THAT(s.message(), HasSubstr("too large"));
  EXPECT_EQ(flushes_, 0);
  EXPECT_EQ(delivered_.count(b[1]), 0u);
  EXPECT_EQ(delivered_.count(c[0]), 0u);
  EXPECT_EQ(stream_.last_flushed(), script_.commit_of(a[0]) + 0x30);
}

TEST_F(RelayTest, ProducerStoppedAtARefusedRecordHaltsEvenWithoutItsReport) {
  auto a = script_.Txn(1);
  absl::Status s = Run([&] {
    if (!sink_.produced().empty()) {
      sink_.set_health(absl::InvalidArgumentError(
          "Kafka refused a record permanently and the producer stopped"));
    }
  });
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("refused"));
  EXPECT_LE(stream_.last_flushed(), script_.commit_of(a[0]));
}

// Issue 23 item 8: a missing ACL or topic is the topic's, not the event's.
// Under dead_letter it is not dead-lettered (nor, under halt, a halt): the
// session ends with its code, naming the topic, nothing past it confirmed.
class TopicAccessTest : public RelayTest,
                        public ::testing::WithParamInterface<bool> {};

TEST_P(TopicAccessTest, AMissingAclOrTopicIsNeitherDeadLetteredNorPoison) {
  // Under dead_letter a missing ACL, under halt a missing topic.
  options_.dead_letter = GetParam();
  const absl::Status refusal =
      GetParam() ? absl::PermissionDeniedError("Topic authorization failed")
                 : absl::NotFoundError("Unknown topic or partition");
  auto a = script_.Txn(1);
  auto b = script_.Txn(1);
  absl::Status s = Run([&] {
    if (sink_.produced().size() == 2) {
      Deliver(0);
      Deliver(1, refusal);
    }
  });
  EXPECT_EQ(s.code(), refusal.code()) << s;
  EXPECT_THAT(s.message(), HasSubstr(b[0]));
  EXPECT_EQ(stats_.blocked_topic, sink_.produced()[1].topic);
  EXPECT_EQ(sink_.produced().size(), 2u);  // no dead letter
  EXPECT_EQ(sink_.purges(), 1);
  EXPECT_EQ(stream_.last_flushed(), script_.commit_of(a[0]) + 0x30);
}

INSTANTIATE_TEST_SUITE_P(DeadLetterOrHalt, TopicAccessTest, ::testing::Bool());

// The same refusal when the producer stopped at it (gapless, under halt):
// waited for, not a halt.
TEST_F(RelayTest, AProducerStoppedAtAMissingAclDoesNotHalt) {
  auto a = script_.Txn(1);
  auto b = script_.Txn(1);
  bool stopped = false;
  absl::Status s = Run([&] {
    if (!stopped && sink_.produced().size() == 2) {
      Deliver(0);
      sink_.set_health(absl::InvalidArgumentError(
          "Kafka refused a record permanently and the producer stopped"));
      stopped = true;
    } else if (stopped) {
      Deliver(1, absl::PermissionDeniedError("Topic authorization failed"));
    }
  });
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(b[0]));
  EXPECT_EQ(stream_.last_flushed(), script_.commit_of(a[0]) + 0x30);
}

TEST_F(RelayTest, FailureDuringTheFinalFlushStopsItAndPurges) {
  auto a = script_.Txn(1);
  auto b = script_.Txn(1);
  flush_delivers_ = false;
  options_.flush_timeout_ms = 1000;
  int flushes_after_failure = 0;
  sink_.on_flush_extra = [&] {
    if (!sink_.produced().at(0).reported) {
      Deliver(0, absl::InvalidArgumentError("Broker: Message size too large"));
    } else {
      ++flushes_after_failure;
    }
  };
  // Nothing is delivered while streaming; the stop comes after 5 polls.
  absl::Status s = Run(nullptr, /*max_polls=*/5);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(a[0]));
  EXPECT_EQ(flushes_after_failure, 0);
  EXPECT_EQ(sink_.purges(), 1);
  EXPECT_EQ(delivered_.count(b[0]), 0u);
  EXPECT_LE(stream_.last_flushed(), script_.commit_of(a[0]));
}

TEST_F(RelayTest, TransientErrorProducingADeadLetterRestartsInsteadOfHalting) {
  options_.dead_letter = true;
  auto a = script_.Txn(2, /*null_key=*/0);  // a[0] is a poison row
  // The dead-letter topic is unknown while the broker restarts.
  sink_.produce_error =
      absl::UnavailableError("kafka rejected the record: Unknown topic");
  absl::Status s = Run([&] { DeliverAll(); });
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("dead-letter"));
  EXPECT_LE(stream_.last_flushed(), script_.commit_of(a[0]));
}

TEST_F(RelayTest, TransientErrorDeadLetteringAFailedDeliveryRestarts) {
  options_.dead_letter = true;
  auto a = script_.Txn(1);
  bool failed = false;
  absl::Status s = Run([&] {
    if (!failed && sink_.produced().size() == 1) {
      failed = true;
      Deliver(0, absl::InvalidArgumentError("too large"));
      sink_.produce_error = absl::UnavailableError("Unknown topic");
    }
  });
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(a[0]));
  EXPECT_EQ(sink_.produced().size(), 1u);
  EXPECT_LE(stream_.last_flushed(), script_.commit_of(a[0]));
}

TEST_F(RelayTest, StopIsHonouredWhileTheProducerQueueStaysFull) {
  sink_.queue_limit = 2;
  auto a = script_.Txn(1);
  script_.Txn(1);
  script_.Txn(1);
  script_.Txn(1);
  flush_delivers_ = false;
  options_.flush_timeout_ms = 200;
  bool hung = false;
  // Kafka never acknowledges anything; Run() stops after 5 polls. Without
  // the stop check the queue-full loop would poll for ever: give up on it
  // after 1000 polls by draining the queue.
  absl::Status s = Run(
      [&] {
        if (sink_.polls() > 1000 && !hung) {
          hung = true;
          sink_.queue_limit = -1;
          DeliverAll();
        }
      },
      /*max_polls=*/5);
  EXPECT_FALSE(hung) << "the full-queue loop ignored the stop";
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(sink_.produced().size(), 2u);  // the third never got in
  EXPECT_TRUE(stream_.stopped());
  EXPECT_LE(stream_.last_flushed(), script_.commit_of(a[0]));
}

}  // namespace
}  // namespace outbox::testing
