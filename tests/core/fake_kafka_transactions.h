// A KafkaTransactions fake for the commit policy's and the Relay's unit
// tests: records the calls and the checkpoint records, and fails the next
// call of one name on demand.
#ifndef OUTBOX_TESTS_CORE_FAKE_KAFKA_TRANSACTIONS_H_
#define OUTBOX_TESTS_CORE_FAKE_KAFKA_TRANSACTIONS_H_

#include <functional>
#include <string>
#include <vector>

#include "core/kafka_transactions.h"

namespace outbox::testing {

// Records the calls; fails the next call of one name on demand.
class FakeKafkaTransactions : public KafkaTransactions {
 public:
  absl::Status BeginTransaction() override { return Call("begin"); }
  absl::Status ProduceInTransaction(absl::string_view topic,
                                    absl::string_view key,
                                    absl::string_view value) override {
    topics.emplace_back(topic);
    keys.emplace_back(key);
    checkpoints.emplace_back(value);
    return Call("checkpoint");
  }
  absl::Status CommitTransaction() override {
    if (on_commit) on_commit();  // as delivery reports served inside it
    return Call("commit");
  }
  absl::Status AbortTransaction() override {
    calls.push_back("abort");
    return absl::OkStatus();
  }

  absl::Status Call(const std::string& name) {
    calls.push_back(name);
    if (name != fail_call) return absl::OkStatus();
    fail_call.clear();
    return fail_status;
  }

  std::vector<std::string> calls;
  std::vector<std::string> topics, keys, checkpoints;
  // The next call of this name fails with fail_status.
  std::string fail_call;
  absl::Status fail_status;
  std::function<void()> on_commit;
};

}  // namespace outbox::testing

#endif  // OUTBOX_TESTS_CORE_FAKE_KAFKA_TRANSACTIONS_H_
