// TEMPORARY: ClusterEnv (tests/e2e/test_env.h on branch i34-cluster) until
// that branch is merged; removed by the merge.
#pragma once
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
namespace outbox::testing {
class ClusterEnv {
 public:
  static const ClusterEnv& Get() {
    static ClusterEnv* env = [] {
      auto* e = new ClusterEnv;
      const char* p = std::getenv("OUTBOX_CLUSTER_ENV");
      std::ifstream in(p ? p : "");
      for (std::string l; std::getline(in, l);) {
        auto eq = l.find('=');
        if (eq != std::string::npos) e->v_[l.substr(0, eq)] = l.substr(eq + 1);
      }
      return e;
    }();
    return *env;
  }
  std::string brokers() const { return Var("OUTBOX_KAFKA_CLUSTER_BROKERS"); }
  std::string dir() const { return Var("OUTBOX_KAFKA_CLUSTER_DIR"); }
  std::string version() const { return Var("OUTBOX_KAFKA_CLUSTER_VERSION"); }
  std::string Var(const std::string& k) const {
    auto it = v_.find(k);
    return it == v_.end() ? "" : it->second;
  }

 private:
  std::map<std::string, std::string> v_;
};
}  // namespace outbox::testing
