// MessageOutboxTest: the fixture of the tableless outbox's end-to-end tests,
// parameterized by the output plugin ("wal2json", "pgoutput"). Loads
// sql/outbox_emit.sql, enables outbox.messages under a prefix of the test's
// own, gives pgoutput a publication of the test's own (dropped after), and
// writes events with outbox_emit().
#ifndef OUTBOX_TESTS_E2E_RELAY_MESSAGE_OUTBOX_FIXTURE_H_
#define OUTBOX_TESTS_E2E_RELAY_MESSAGE_OUTBOX_FIXTURE_H_

#include <string>

#include "e2e/relay/relay_e2e_fixture.h"

namespace outbox::testing {

class MessageOutboxTest : public RelayE2ETest,
                          public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    RelayE2ETest::SetUp();
    if (HasFatalFailure()) return;
    db_->Exec(
        ReadFile(std::string(getenv("OUTBOX_ROOT")) + "/sql/outbox_emit.sql"));
    prefix_ = UniqueName("msgs");
    publication_ = slot_ + "_pub";
    extra_relay_args_ = {"--set", "postgres.plugin=" + GetParam(),
                         "--set", "postgres.publication=" + publication_,
                         "--set", "outbox.messages.enabled=true",
                         "--set", "outbox.messages.prefix=" + prefix_};
  }

  void TearDown() override {
    RelayE2ETest::TearDown();
    if (db_ != nullptr) {
      db_->Query("DROP PUBLICATION IF EXISTS " + publication_)
          .status()
          .IgnoreError();
    }
  }

  // SQL that emits an event of type `type` with outbox_emit().
  std::string Emit(const std::string& id, const std::string& key,
                   const std::string& payload,
                   const std::string& headers = "NULL",
                   const std::string& type = "Msg") {
    return "SELECT outbox_emit('" + aggtype_ + "', '" + key + "', '" + type +
           "', '" + payload + "', " + headers + ", '" + id + "', '" + prefix_ +
           "');";
  }

  std::string prefix_, publication_;
};

}  // namespace outbox::testing

#endif  // OUTBOX_TESTS_E2E_RELAY_MESSAGE_OUTBOX_FIXTURE_H_
