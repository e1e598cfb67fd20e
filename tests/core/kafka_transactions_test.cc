// Every row of the Kafka transaction error classes
// (core/kafka_transactions.h): librdkafka's flags to a class, the class to
// a status code and back.
#include "core/kafka_transactions.h"

#include "gtest/gtest.h"

namespace outbox {
namespace {

using C = TransactionErrorClass;

TEST(TransactionErrorClassTest, FlagsToClass) {
  struct Row {
    bool fencing, fatal, requires_abort, retriable;
    C want;
  };
  const Row rows[] = {
      {true, true, false, false, C::kFenced},  // __FENCED is fatal too
      {true, false, true, true, C::kFenced},
      {false, true, true, true, C::kFatal},
      {false, false, true, true, C::kAbortable},
      {false, false, true, false, C::kAbortable},
      {false, false, false, true, C::kRetriable},
      {false, false, false, false, C::kFatal},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(ClassifyTransactionError(r.fencing, r.fatal, r.requires_abort,
                                       r.retriable),
              r.want)
        << r.fencing << r.fatal << r.requires_abort << r.retriable;
  }
}

TEST(TransactionErrorClassTest, ClassToStatusAndBack) {
  struct Row {
    C c;
    absl::StatusCode code;
  };
  const Row rows[] = {
      {C::kFenced, absl::StatusCode::kFailedPrecondition},
      {C::kFatal, absl::StatusCode::kInternal},
      {C::kAbortable, absl::StatusCode::kAborted},
      {C::kRetriable, absl::StatusCode::kUnavailable},
  };
  for (const Row& r : rows) {
    absl::Status s = TransactionError(r.c, "what");
    EXPECT_EQ(s.code(), r.code);
    EXPECT_EQ(s.message(), "what");
    EXPECT_EQ(TransactionErrorClassOf(s), r.c);
  }
  EXPECT_EQ(TransactionErrorClassOf(absl::DeadlineExceededError("x")),
            C::kFatal);
}

}  // namespace
}  // namespace outbox
