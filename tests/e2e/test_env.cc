#include "e2e/test_env.h"

#include <fcntl.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace outbox::testing {

namespace {

// KEY=VALUE lines of the file named by the environment variable `var`.
std::map<std::string, std::string> ReadEnvFile(const char* var) {
  std::map<std::string, std::string> vars;
  const char* path = std::getenv(var);
  if (path == nullptr) {
    ADD_FAILURE() << var << " is not set: run through ctest";
    return vars;
  }
  std::ifstream in(path);
  if (!in) ADD_FAILURE() << "cannot read " << path;
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) {
      vars[line.substr(0, eq)] = line.substr(eq + 1);
    }
  }
  return vars;
}

std::string EnvVar(const std::map<std::string, std::string>& vars,
                   const std::string& key) {
  auto it = vars.find(key);
  if (it == vars.end()) {
    ADD_FAILURE() << key << " missing from the test environment file";
    return "";
  }
  return it->second;
}

// `arg` as one word for sh -c.
std::string ShellQuote(const std::string& arg) {
  return absl::StrCat("'", absl::StrReplaceAll(arg, {{"'", "'\\''"}}), "'");
}

}  // namespace

const TestEnv& TestEnv::Get() {
  static const TestEnv* env = [] {
    auto* e = new TestEnv;
    e->vars_ = ReadEnvFile("OUTBOX_TEST_ENV");
    return e;
  }();
  return *env;
}

std::string TestEnv::Var(const std::string& key) const {
  return EnvVar(vars_, key);
}

const ClusterEnv& ClusterEnv::Get() {
  static const ClusterEnv* env = [] {
    auto* e = new ClusterEnv;
    e->vars_ = ReadEnvFile("OUTBOX_CLUSTER_ENV");
    return e;
  }();
  return *env;
}

std::string ClusterEnv::Var(const std::string& key) const {
  return EnvVar(vars_, key);
}

std::string ClusterEnv::broker(int node) const {
  std::vector<std::string> all = absl::StrSplit(brokers(), ',');
  return node >= 1 && node <= static_cast<int>(all.size()) ? all[node - 1] : "";
}

absl::StatusOr<std::string> ClusterEnv::Run(
    const std::string& command, const std::vector<std::string>& args) const {
  const char* root = std::getenv("OUTBOX_ROOT");
  const std::string out = TempDir("cluster_cmd");
  std::string cmd = absl::StrCat(
      ShellQuote(absl::StrCat(root ? root : ".", "/scripts/kafka_cluster.sh")),
      " ", ShellQuote(command), " ", ShellQuote(dir()));
  for (const auto& arg : args) absl::StrAppend(&cmd, " ", ShellQuote(arg));
  absl::StrAppend(&cmd, " >", out, "/stdout 2>", out, "/stderr");
  const int st = system(cmd.c_str());
  std::string stdout_text(
      absl::StripTrailingAsciiWhitespace(ReadFile(out + "/stdout")));
  std::string stderr_text(
      absl::StripTrailingAsciiWhitespace(ReadFile(out + "/stderr")));
  std::filesystem::remove_all(out);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    return absl::InternalError(absl::StrCat(
        "kafka_cluster.sh ", command, " ", absl::StrJoin(args, " "), " exited ",
        WIFEXITED(st) ? WEXITSTATUS(st) : -1, ": ", stderr_text));
  }
  return stdout_text;
}

absl::StatusOr<int> ClusterEnv::NodeNumber(
    const std::string& command, const std::vector<std::string>& args) const {
  auto out = Run(command, args);
  if (!out.ok()) return out.status();
  int node = 0;
  if (!absl::SimpleAtoi(*out, &node) || node < 1) {
    return absl::InternalError(absl::StrCat("kafka_cluster.sh ", command,
                                            " printed '", *out,
                                            "', not a node number"));
  }
  return node;
}

absl::StatusOr<int> ClusterEnv::Leader(const std::string& topic,
                                       int partition) const {
  return NodeNumber("leader", {topic, std::to_string(partition)});
}

absl::StatusOr<int> ClusterEnv::Coordinator(
    const std::string& transactional_id) const {
  return NodeNumber("coordinator", {transactional_id});
}

absl::StatusOr<int> ClusterEnv::Controller() const {
  return NodeNumber("controller", {});
}

std::vector<int> ClusterEnv::Alive() const {
  std::vector<int> nodes;
  auto out = Run("alive");
  if (!out.ok()) {
    ADD_FAILURE() << out.status();
    return nodes;
  }
  for (absl::string_view line : absl::StrSplit(*out, '\n', absl::SkipEmpty())) {
    int node = 0;
    if (absl::SimpleAtoi(line, &node)) nodes.push_back(node);
  }
  return nodes;
}

absl::Status ClusterEnv::Restore(int timeout_s) const {
  auto healed = Run("heal");
  if (!healed.ok()) return healed.status();
  std::vector<int> alive = Alive();
  const int n = static_cast<int>(
      std::vector<std::string>(absl::StrSplit(brokers(), ',')).size());
  for (int node = 1; node <= n; ++node) {
    if (std::find(alive.begin(), alive.end(), node) != alive.end()) continue;
    auto started = Run("restart", {std::to_string(node)});
    if (!started.ok()) return started.status();
  }
  auto whole = Run("wait-isr", {std::to_string(timeout_s)});
  return whole.ok() ? absl::OkStatus() : whole.status();
}

std::string UniqueName(const std::string& prefix) {
  static std::atomic<int> counter{0};
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return absl::StrCat(
      prefix, "_", getpid(), "_",
      std::chrono::duration_cast<std::chrono::milliseconds>(now).count() %
          100000000,
      "_", counter++);
}

std::unique_ptr<PgConn> PgConn::Connect(const std::string& conninfo) {
  PGconn* conn = PQconnectdb(conninfo.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    ADD_FAILURE() << "connect " << conninfo << ": " << PQerrorMessage(conn);
    PQfinish(conn);
    return nullptr;
  }
  return std::unique_ptr<PgConn>(new PgConn(conn));
}

std::unique_ptr<PgConn> PgConn::ConnectQuietly(const std::string& conninfo) {
  PGconn* conn = PQconnectdb(conninfo.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    PQfinish(conn);
    return nullptr;
  }
  return std::unique_ptr<PgConn>(new PgConn(conn));
}

PgConn::~PgConn() { PQfinish(static_cast<PGconn*>(conn_)); }

absl::StatusOr<std::vector<std::vector<std::string>>> PgConn::Query(
    const std::string& sql) {
  auto* conn = static_cast<PGconn*>(conn_);
  if (!PQsendQuery(conn, sql.c_str())) {
    return absl::UnavailableError(PQerrorMessage(conn));
  }
  std::vector<std::vector<std::string>> rows;
  std::string error;
  while (PGresult* res = PQgetResult(conn)) {
    ExecStatusType st = PQresultStatus(res);
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
      rows.clear();
      for (int r = 0; r < PQntuples(res); ++r) {
        std::vector<std::string> row;
        for (int c = 0; c < PQnfields(res); ++c) {
          row.emplace_back(PQgetvalue(res, r, c));
        }
        rows.push_back(std::move(row));
      }
    } else if (error.empty()) {
      error = PQresultErrorMessage(res);
    }
    PQclear(res);
  }
  if (!error.empty()) return absl::InternalError(error);
  return rows;
}

std::string PgConn::Scalar(const std::string& sql) {
  auto rows = Query(sql);
  EXPECT_TRUE(rows.ok()) << sql << ": " << rows.status();
  if (!rows.ok() || rows->empty() || rows->front().empty()) return "";
  return rows->front().front();
}

void PgConn::Exec(const std::string& sql) {
  auto rows = Query(sql);
  ASSERT_TRUE(rows.ok()) << sql << ": " << rows.status();
}

std::unique_ptr<Process> Process::Start(const std::vector<std::string>& argv,
                                        const std::string& log_path) {
  auto p = std::make_unique<Process>();
  p->log_path_ = log_path;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    execv(args[0], args.data());
    _exit(127);
  }
  p->pid_ = pid;
  return p;
}

Process::~Process() {
  if (Running()) {
    Signal(SIGKILL);
    Wait(10000);
  }
}

void Process::Signal(int sig) {
  if (pid_ > 0 && status_ < 0) kill(pid_, sig);
}

bool Process::Running() {
  if (status_ >= 0) return false;
  int st;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return false;
  }
  return true;
}

int Process::Wait(int timeout_ms) {
  WaitUntil([this] { return !Running(); }, timeout_ms);
  return status_;
}

std::string Process::Output() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> AtATerminal(const std::vector<std::string>& argv) {
  // script -c takes one shell command: quote each word ('...', with ' as
  // '\'').
  std::vector<std::string> words;
  for (const std::string& a : argv) {
    std::string q = "'";
    for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    words.push_back(q + "'");
  }
  // -q: no banner; -e: its exit code; -f: flush as it goes.
  return {"/usr/bin/script", "-qefc", absl::StrJoin(words, " "), "/dev/null"};
}

std::string BinaryPath(const std::string& name) {
  const char* dir = std::getenv("OUTBOX_BIN_DIR");
  return absl::StrCat(dir ? dir : ".", "/", name);
}

int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void RunSqlFile(PgConn& db, const std::string& name) {
  const char* root = getenv("OUTBOX_ROOT");
  // One file at a time across the tests running in parallel: CREATE ...
  // IF NOT EXISTS is not safe against itself (two tests creating
  // public.outbox at once on a fresh server: one failed with a duplicate
  // key in pg_type). A session lock: a file may hold statements that cannot
  // run in a transaction block; the connection's end releases it too.
  db.Exec("SELECT pg_advisory_lock(hashtext('outbox-relay tests: sql/'))");
  db.Exec(ReadFile(absl::StrCat(root ? root : ".", "/sql/", name)));
  db.Exec("SELECT pg_advisory_unlock(hashtext('outbox-relay tests: sql/'))");
}

void CreateOutboxTable(PgConn& db, const std::string& table) {
  RunSqlFile(db, "outbox.sql");
  db.Exec("CREATE TABLE public." + table +
          " (LIKE public.outbox INCLUDING ALL)");
}

std::string HugeEventSql(const std::string& table, const std::string& aggtype,
                         const std::string& id) {
  return "INSERT INTO public." + table +
         " (id, aggregatetype, aggregateid, type, payload) VALUES ('" + id +
         "', '" + aggtype +
         "', 'big', 'Huge', jsonb_build_object('blob', repeat('y', "
         "2000000)))";
}

std::string TempDir(const std::string& prefix) {
  std::string templ = absl::StrCat("/tmp/", prefix, "_XXXXXX");
  char* d = mkdtemp(templ.data());
  EXPECT_NE(d, nullptr);
  chmod(templ.c_str(), 0755);  // scripts may run servers as another user
  return templ;
}

AclBroker StartAclBroker(const std::string& base_dir) {
  AclBroker broker;
  broker.dir = base_dir + "/broker";
  const std::string props = base_dir + "/acl.properties";
  std::ofstream(props)
      << "auto.create.topics.enable=false\n"
         "authorizer.class.name=org.apache.kafka.metadata.authorizer."
         "StandardAuthorizer\n"
         "super.users=User:admin;User:ANONYMOUS\n"
         "sasl.enabled.mechanisms=PLAIN\n"
         "listener.name.sasl_plaintext.plain.sasl.jaas.config="
         "org.apache.kafka.common.security.plain.PlainLoginModule required "
         "username=\"admin\" password=\"admin-secret\" "
         "user_admin=\"admin-secret\" user_relay=\"relay-secret\";\n";
  setenv("OUTBOX_KAFKA_LISTENERS", "SASL_PLAINTEXT", 1);
  setenv("OUTBOX_KAFKA_PROPERTIES", props.c_str(), 1);
  const int rc = RunScript("kafka.sh start " + broker.dir + " >" + base_dir +
                           "/broker.env");
  unsetenv("OUTBOX_KAFKA_LISTENERS");
  unsetenv("OUTBOX_KAFKA_PROPERTIES");
  if (rc != 0) return broker;
  std::ifstream in(base_dir + "/broker.env");
  for (std::string line; std::getline(in, line);) {
    auto value = [&](const std::string& key) -> std::string {
      return line.rfind(key + "=", 0) == 0 ? line.substr(key.size() + 1) : "";
    };
    if (auto v = value("OUTBOX_KAFKA_BROKERS"); !v.empty())
      broker.plaintext = v;
    if (auto v = value("OUTBOX_KAFKA_SASL_PLAINTEXT_BROKERS"); !v.empty()) {
      broker.sasl = v;
    }
  }
  return broker;
}

int RunScript(const std::string& args) {
  const char* root = std::getenv("OUTBOX_ROOT");
  std::string cmd = absl::StrCat(root ? root : ".", "/scripts/", args);
  int st = system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

bool WaitUntil(const std::function<bool()>& done, int timeout_ms) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

}  // namespace outbox::testing
