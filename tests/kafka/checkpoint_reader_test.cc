// What a metadata or fetch error on the checkpoint topic means (issue 23
// item 2): only a topic that does not exist is "no checkpoint"; the rest is
// retried or refused, never a start from 0/0. Against a real broker: the
// integration test checkpoint_reader_e2e_test.
#include "kafka/checkpoint_reader.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace outbox {
namespace {

TEST(CheckpointTopicErrorTest, OnlyATopicNotKnownToExistIsNone) {
  EXPECT_TRUE(
      CheckpointTopicError("cp", RD_KAFKA_RESP_ERR_NO_ERROR, false).ok());
  for (int e : {RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
                RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC}) {
    EXPECT_TRUE(absl::IsNotFound(CheckpointTopicError("cp", e, false))) << e;
    // Seen to exist in this process: stale metadata (a broker restart).
    EXPECT_TRUE(absl::IsUnavailable(CheckpointTopicError("cp", e, true))) << e;
  }
  for (int e :
       {RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE,
        RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
        RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION, RD_KAFKA_RESP_ERR__TRANSPORT}) {
    EXPECT_TRUE(absl::IsUnavailable(CheckpointTopicError("cp", e, false))) << e;
  }
  absl::Status denied = CheckpointTopicError(
      "cp", RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, false);
  EXPECT_TRUE(absl::IsFailedPrecondition(denied)) << denied;
  EXPECT_NE(denied.message().find("not authorized to read the checkpoint "
                                  "topic cp"),
            std::string::npos)
      << denied;
  EXPECT_EQ(denied.message().find('\n'), std::string::npos);
}

// The errors a real broker answers only for a moment (a KRaft broker that
// has published a new topic's metadata before making its log; a leader
// elected a moment ago) cannot be timed against one, so librdkafka's own
// mock broker answers the watermark query (ListOffsets) with them.
class MockBroker {
 public:
  MockBroker() {
    char err[256];
    rk_ =
        rd_kafka_new(RD_KAFKA_PRODUCER, rd_kafka_conf_new(), err, sizeof(err));
    cluster_ = rd_kafka_mock_cluster_new(rk_, 1);
    rd_kafka_mock_topic_create(cluster_, "state", 1, 1);
  }
  ~MockBroker() {
    rd_kafka_mock_cluster_destroy(cluster_);
    rd_kafka_destroy(rk_);
  }
  // The next `n` ListOffsets requests answer `e` (a watermark query is two).
  void FailListOffsets(rd_kafka_resp_err_t e, int n) {
    std::vector<rd_kafka_resp_err_t> errors(n, e);
    rd_kafka_mock_push_request_errors_array(cluster_, kListOffsets, n,
                                            errors.data());
  }
  KafkaOptions options() const {
    KafkaOptions o;
    o.brokers = rd_kafka_mock_cluster_bootstraps(cluster_);
    return o;
  }

 private:
  static constexpr int16_t kListOffsets = 2;  // the Kafka API key
  rd_kafka_t* rk_ = nullptr;
  rd_kafka_mock_cluster_t* cluster_ = nullptr;
};

// The state_topic_e2e_test_kafka39 failure of 2026-12-07: a slot marker
// read 129 ms after the topic was created got "not yet" from the watermark
// query and was Unavailable at once.
TEST(ReadLatestValuesTest, APartitionNotThereYetIsAskedAgain) {
  for (rd_kafka_resp_err_t e : {RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
                                RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
                                RD_KAFKA_RESP_ERR_OFFSET_NOT_AVAILABLE}) {
    MockBroker broker;
    broker.FailListOffsets(e, 2);  // one whole query
    absl::StatusOr<std::vector<std::optional<std::string>>> v =
        ReadLatestValues(broker.options(), "state", {"k"}, 10000, "state topic",
                         /*topic_exists=*/true);
    ASSERT_TRUE(v.ok()) << rd_kafka_err2name(e) << ": " << v.status();
    ASSERT_EQ(v->size(), 1u);
    EXPECT_FALSE((*v)[0].has_value()) << rd_kafka_err2name(e);
  }
}

TEST(ReadLatestValuesTest, APartitionNeverThereIsUnavailableAtTheDeadline) {
  MockBroker broker;
  broker.FailListOffsets(RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, 1000);
  absl::StatusOr<std::vector<std::optional<std::string>>> v =
      ReadLatestValues(broker.options(), "state", {"k"}, 1000, "state topic",
                       /*topic_exists=*/true);
  ASSERT_TRUE(absl::IsUnavailable(v.status())) << v.status();
  EXPECT_NE(v.status().message().find("Not leader for partition"),
            std::string::npos)
      << v.status();
}

TEST(ReadLatestValuesTest, ARefusalIsNotAskedAgain) {
  MockBroker broker;
  // Two: one watermark query is two ListOffsets requests (the low and the
  // high watermark). Were it asked again, the next query would answer OK.
  broker.FailListOffsets(RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, 2);
  absl::StatusOr<std::vector<std::optional<std::string>>> v =
      ReadLatestValues(broker.options(), "state", {"k"}, 10000, "state topic",
                       /*topic_exists=*/true);
  EXPECT_TRUE(absl::IsFailedPrecondition(v.status())) << v.status();
}

}  // namespace
}  // namespace outbox
