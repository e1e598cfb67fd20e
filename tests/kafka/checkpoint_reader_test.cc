// What a metadata or fetch error on the checkpoint topic means (issue 23
// item 2): only a topic that does not exist is "no checkpoint"; the rest is
// retried or refused, never a start from 0/0. Against a real broker: the
// integration test checkpoint_reader_e2e_test.
#include "kafka/checkpoint_reader.h"

#include <librdkafka/rdkafka.h>

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

}  // namespace
}  // namespace outbox
