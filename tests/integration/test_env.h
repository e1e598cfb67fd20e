// Test-only access to the real servers the `outbox_servers` CTest fixture
// started: connection details, a plain SQL connection, a Kafka producer and
// consumer. Fails the test (ADD_FAILURE / ASSERT) on any server error.
#ifndef OUTBOX_TESTS_INTEGRATION_TEST_ENV_H_
#define OUTBOX_TESTS_INTEGRATION_TEST_ENV_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace outbox::testing {

// KEY=VALUE pairs from the file named by $OUTBOX_TEST_ENV.
class TestEnv {
 public:
  static const TestEnv& Get();
  std::string Var(const std::string& key) const;
  std::string pg_conninfo() const { return Var("OUTBOX_PG_CONNINFO"); }
  std::string kafka_brokers() const { return Var("OUTBOX_KAFKA_BROKERS"); }
  std::string kafka_dir() const { return Var("OUTBOX_KAFKA_DIR"); }
  std::string pg_dir() const { return Var("OUTBOX_PG_DIR"); }

 private:
  std::map<std::string, std::string> vars_;
};

// A unique lowercase name for per-test objects (slots, tables, topics).
std::string UniqueName(const std::string& prefix);

// A plain (non-replication) libpq connection.
class PgConn {
 public:
  static std::unique_ptr<PgConn> Connect(const std::string& conninfo);
  ~PgConn();
  // Runs SQL; returns the rows of the last statement, fields as text
  // ("" for NULL), or the server's error.
  absl::StatusOr<std::vector<std::vector<std::string>>> Query(
      const std::string& sql);
  // Query() that must succeed; returns the first field of the first row.
  std::string Scalar(const std::string& sql);
  void Exec(const std::string& sql);

 private:
  explicit PgConn(void* conn) : conn_(conn) {}
  void* conn_;
};

// A record read back from Kafka.
struct KafkaMessage {
  std::string topic;
  int32_t partition = -1;
  int64_t offset = -1;
  std::string key;
  std::string value;
  bool key_null = false;
  bool value_null = false;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string Header(const std::string& name) const;
};

// Produces one record and waits for its delivery report.
absl::Status ProduceSync(const std::string& brokers, const std::string& topic,
                         const std::string& key, const std::string& value);

// Reads topics from the beginning until `want` messages arrived or
// `timeout_ms` passed with no new message; returns what it read.
std::vector<KafkaMessage> ConsumeAll(const std::string& brokers,
                                     const std::vector<std::string>& topics,
                                     size_t want, int timeout_ms = 20000);

}  // namespace outbox::testing

#endif  // OUTBOX_TESTS_INTEGRATION_TEST_ENV_H_
