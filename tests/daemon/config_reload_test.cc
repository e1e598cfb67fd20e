// ConfigReloader (daemon/config_reload.h): what a SIGHUP does with the
// configuration read again from the same file, flags and environment.
// The process side (the signal, the drained session) is tested end to end
// in relay_e2e_test and poller_e2e_test.
#include "daemon/config_reload.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace outbox {
namespace {

class ConfigReloaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/reload_test.yaml";
    setenv("OUTBOX_RELOAD_TEST_PW", "one", 1);
    Write("outbox.event.{aggregatetype}", "");
    std::vector<std::string> args = {"outbox-relay",
                                     "--config",
                                     path_,
                                     "--tables",
                                     "public.outbox",
                                     "--set",
                                     "log.progress_interval_s=3"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    absl::StatusOr<CommandLine> cl = ParseCommandLine(
        static_cast<int>(argv.size()), argv.data(), Tool::kRelay);
    ASSERT_TRUE(cl.ok()) << cl.status();
    command_line_ = *cl;
    absl::StatusOr<Config> config = LoadConfig(command_line_);
    ASSERT_TRUE(config.ok()) << config.status();
    config_ = *config;
  }

  void Write(const std::string& topic, const std::string& extra) {
    std::ofstream(path_, std::ios::trunc)
        << "postgres:\n  conninfo: \"host=db password=${OUTBOX_RELOAD_TEST_PW}"
        << "\"\nkafka:\n  brokers: \"k:9092\"\noutbox:\n  topic: \"" << topic
        << "\"\n"
        << extra;
  }

  std::optional<StatusSnapshot::ConfigReload> Last() {
    StatusSnapshot s;
    status_.Fill(&s);
    return s.config_reload;
  }

  std::string path_;
  CommandLine command_line_;
  Config config_;
  std::atomic<bool> requested_{false};
  prometheus::Registry registry_;
  ConfigReloadStatus status_{registry_, "outbox_relay"};
};

TEST_F(ConfigReloaderTest, NothingWithoutASignal) {
  ConfigReloader r(command_line_, config_, &requested_, &status_);
  Write("changed.{aggregatetype}", "");
  EXPECT_FALSE(r.Check(config_).has_value());
  EXPECT_FALSE(Last().has_value());
}

TEST_F(ConfigReloaderTest, UnchangedChangedInvalidAndRestartOnly) {
  ConfigReloader r(command_line_, config_, &requested_, &status_);
  requested_ = true;
  EXPECT_FALSE(r.Check(config_).has_value());
  ASSERT_TRUE(Last().has_value());
  EXPECT_TRUE(Last()->ok);
  EXPECT_EQ(Last()->result, "unchanged");

  // A changed template: the new Config, with the flags applied again.
  Write("changed.{aggregatetype}", "");
  requested_ = true;
  std::optional<Config> next = r.Check(config_);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->outbox.topic, "changed.{aggregatetype}");
  EXPECT_EQ(next->log.progress_interval_s, 3);
  EXPECT_FALSE(requested_.load());
  r.Applied(*next);
  EXPECT_EQ(Last()->result, "applied");
  EXPECT_EQ(r.current()->outbox.topic, "changed.{aggregatetype}");

  // The environment is read again: a rotated password is a change.
  Write("outbox.event.{aggregatetype}", "");
  setenv("OUTBOX_RELOAD_TEST_PW", "two", 1);
  requested_ = true;
  next = r.Check(config_);
  ASSERT_TRUE(next.has_value());
  EXPECT_NE(next->postgres.conninfo, config_.postgres.conninfo);

  Write("outbox.event.{aggregatetype}", "  nope: 1\n");
  setenv("OUTBOX_RELOAD_TEST_PW", "one", 1);
  requested_ = true;
  EXPECT_FALSE(r.Check(config_).has_value());
  EXPECT_FALSE(Last()->ok);
  EXPECT_EQ(Last()->result, "invalid");
  EXPECT_NE(Last()->error.find("nope"), std::string::npos) << Last()->error;

  Write("outbox.event.{aggregatetype}", "log:\n  format: json\n");
  requested_ = true;
  EXPECT_FALSE(r.Check(config_).has_value());
  EXPECT_EQ(Last()->result, "needs restart");
  EXPECT_NE(Last()->error.find("log.format"), std::string::npos);
}

TEST_F(ConfigReloaderTest, TheCallersCheckRefusesLikeAnInvalidFile) {
  ConfigReloader r(command_line_, config_, &requested_, &status_);
  Write("changed.{aggregatetype}", "");
  requested_ = true;
  EXPECT_FALSE(r.Check(config_, [](const Config&) {
                  return absl::InvalidArgumentError("the route is wrong");
                }).has_value());
  EXPECT_EQ(Last()->result, "invalid");
  EXPECT_EQ(Last()->error, "the route is wrong");
}

}  // namespace
}  // namespace outbox
