// Test-only access to the real servers the `outbox_servers` CTest fixture
// started (and the Kafka cluster of the kafka_cluster_4/_39 fixtures):
// connection details, a plain SQL connection, a Kafka producer and
// consumer. Fails the test (ADD_FAILURE / ASSERT) on any server error.
#ifndef OUTBOX_TESTS_E2E_TEST_ENV_H_
#define OUTBOX_TESTS_E2E_TEST_ENV_H_

#include <functional>
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

// The Kafka cluster a cluster case runs on (outbox_cluster_test in
// tests/CMakeLists.txt): KEY=VALUE pairs from the file named by
// $OUTBOX_CLUSTER_ENV, and scripts/kafka_cluster.sh's commands on it. A
// case holds the cluster alone (RESOURCE_LOCK) and must leave it whole:
// call Restore() in TearDown, whatever the case did.
class ClusterEnv {
 public:
  static const ClusterEnv& Get();
  std::string Var(const std::string& key) const;
  // Every node's client listener, "127.0.0.1:p1,127.0.0.1:p2,...".
  std::string brokers() const { return Var("OUTBOX_KAFKA_CLUSTER_BROKERS"); }
  std::string dir() const { return Var("OUTBOX_KAFKA_CLUSTER_DIR"); }
  // The Kafka version the nodes run (3.9.1, 4.4.0).
  std::string version() const { return Var("OUTBOX_KAFKA_CLUSTER_VERSION"); }
  // Node `node`'s (1..N) client address alone, "" when there is none.
  std::string broker(int node) const;

  // scripts/kafka_cluster.sh COMMAND dir() ARGS...: its output (trimmed),
  // or an error with its exit status and what it printed on stderr.
  absl::StatusOr<std::string> Run(
      const std::string& command,
      const std::vector<std::string>& args = {}) const;
  // Node numbers: the leader of topic-partition, the transaction
  // coordinator of a transactional id, the active controller.
  absl::StatusOr<int> Leader(const std::string& topic, int partition) const;
  absl::StatusOr<int> Coordinator(const std::string& transactional_id) const;
  absl::StatusOr<int> Controller() const;
  // The node numbers running.
  std::vector<int> Alive() const;
  // Makes the cluster whole again: every network partition healed, every
  // node not running started, every partition with its full ISR (within
  // timeout_s). For TearDown: call it even when the case failed.
  absl::Status Restore(int timeout_s = 300) const;

 private:
  absl::StatusOr<int> NodeNumber(const std::string& command,
                                 const std::vector<std::string>& args) const;
  std::map<std::string, std::string> vars_;
};

// A unique lowercase name for per-test objects (slots, tables, topics).
std::string UniqueName(const std::string& prefix);

// A plain (non-replication) libpq connection.
class PgConn {
 public:
  static std::unique_ptr<PgConn> Connect(const std::string& conninfo);
  // Connect() that returns nullptr without failing the test (for loops that
  // wait through a server restart).
  static std::unique_ptr<PgConn> ConnectQuietly(const std::string& conninfo);
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
  int64_t timestamp_ms = -1;  // the record's timestamp (CreateTime)
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

// Creates `topic` with `partitions` partitions (replication factor 1) and
// the given topic configs.
absl::Status CreateTopic(const std::string& brokers, const std::string& topic,
                         int partitions,
                         const std::map<std::string, std::string>& configs);

// The topic's effective configs (DescribeConfigs), name -> value.
absl::StatusOr<std::map<std::string, std::string>> TopicConfigs(
    const std::string& brokers, const std::string& topic);

// Reads topics from the beginning until `want` messages arrived or
// `timeout_ms` passed with no new message; returns what it read.
std::vector<KafkaMessage> ConsumeAll(const std::string& brokers,
                                     const std::vector<std::string>& topics,
                                     size_t want, int timeout_ms = 20000);

// Like ConsumeAll, but stops when done(messages so far) returns true.
std::vector<KafkaMessage> ConsumeUntil(
    const std::string& brokers, const std::vector<std::string>& topics,
    const std::function<bool(const std::vector<KafkaMessage>&)>& done,
    int timeout_ms = 20000);

// Reads topics from the beginning to their end as it is now: every
// partition up to its high watermark (the last stable offset: the consumer
// reads committed records only, librdkafka's default isolation level),
// told by librdkafka's partition-EOF event. Returns as soon as all of it
// is read, so "the whole topic" costs no quiet period (ConsumeAll with a
// `want` never reached waits out its timeout). Call it once what it must
// see is acknowledged (the producer stopped or confirmed past it). A topic
// without partitions, or a partition not read to its end within
// timeout_ms, fails the test; what was read is returned.
// settle_ms > 0: a transactional topic's end is its last stable offset, and
// a producer's commit returns before the broker wrote the commit markers
// that move it; so it reads on until every partition's end is its high
// watermark (nothing undecided) or settle_ms passed since all partitions
// reached their end (a transaction left open by a SIGKILLed producer stays
// undecided until the next one fences it).
std::vector<KafkaMessage> ConsumeToEnd(const std::string& brokers,
                                       const std::vector<std::string>& topics,
                                       int timeout_ms = 60000,
                                       int settle_ms = 0);

// Whether every partition of `topics` has its last stable offset at its
// high watermark: no transaction on them is undecided (its commit or abort
// marker written). False when Kafka cannot say (a topic without metadata, a
// partition without a leader) or `problem` (when given) says which
// partition is not.
bool TransactionsDecided(const std::string& brokers,
                         const std::vector<std::string>& topics,
                         std::string* problem = nullptr);

// A child process (the relay binary) with its output in a log file.
class Process {
 public:
  // Starts argv; stdout and stderr go to log_path.
  static std::unique_ptr<Process> Start(const std::vector<std::string>& argv,
                                        const std::string& log_path);
  ~Process();  // SIGKILLs it if still running
  void Signal(int sig);
  // Exit code, 128+signal if killed, or -1 if still running after
  // timeout_ms.
  int Wait(int timeout_ms);
  bool Running();
  std::string Output() const;
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
  int status_ = -1;
  std::string log_path_;
};

// argv run at a pseudo-terminal (util-linux `script`), as a person at a
// shell would; its output, terminal escapes and all, goes where Process
// sends it.
std::vector<std::string> AtATerminal(const std::vector<std::string>& argv);
// $OUTBOX_BIN_DIR/name (the built binaries).
std::string BinaryPath(const std::string& name);
// A fresh temporary directory.
std::string TempDir(const std::string& prefix);
// A loopback TCP port nothing listens on right now (the kernel's pick for
// port 0, released); 0 when none could be had.
int FreeLoopbackPort();
// Runs a repo script ($OUTBOX_ROOT/scripts/...) through the shell; returns
// its exit status.
int RunScript(const std::string& args);
// A broker of a test's own, started by scripts/kafka.sh in `dir`: auto
// topic creation off, the StandardAuthorizer, super users admin and
// ANONYMOUS, and a SASL/PLAIN listener with users admin (admin-secret) and
// relay (relay-secret). `plaintext` and `sasl` are empty when it did not
// start. Stop it with RunScript("kafka.sh stop " + dir).
struct AclBroker {
  std::string dir;
  std::string plaintext;  // bootstrap servers of the plaintext listener
  std::string sasl;       // and of the SASL_PLAINTEXT one
};
AclBroker StartAclBroker(const std::string& base_dir);
// Polls `done` every 50 ms until true or timeout_ms; returns its last value.
bool WaitUntil(const std::function<bool()>& done, int timeout_ms);
// The whole file at path ("" when it cannot be read).
std::string ReadFile(const std::string& path);
// Runs the repository's sql/<name> ($OUTBOX_ROOT/sql: outbox.sql,
// roles.sql, ...) on db, one file at a time across the tests (an advisory
// lock).
void RunSqlFile(PgConn& db, const std::string& name);
// sql/outbox.sql, then public.<table> LIKE public.outbox INCLUDING ALL: a
// test's own outbox table.
void CreateOutboxTable(PgConn& db, const std::string& table);
// An INSERT into public.<table> of one event (aggregateid 'big', type
// 'Huge') whose payload is 2 MB: over the producer's message.max.bytes (1 MB).
std::string HugeEventSql(const std::string& table, const std::string& aggtype,
                         const std::string& id);

}  // namespace outbox::testing

#endif  // OUTBOX_TESTS_E2E_TEST_ENV_H_
