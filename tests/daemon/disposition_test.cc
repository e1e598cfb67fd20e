// Every row of Dispose()'s table (daemon/disposition.h), and the two
// outcomes of creating a missing topic.
#include "daemon/disposition.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace outbox {
namespace {

using Action = Disposition::Action;
using Wait = Disposition::Wait;

Disposition Stop(int code) {
  Disposition d;
  d.action = Action::kStop;
  d.exit_code = code;
  return d;
}

Disposition Retry(Wait wait, const char* waiting_for, bool reset = false) {
  Disposition d;
  d.action = Action::kRetry;
  d.wait = wait;
  d.waiting_for = waiting_for;
  d.reset_backoff = reset;
  return d;
}

Disposition Only(Action action) {
  Disposition d;
  d.action = action;
  return d;
}

struct Row {
  std::string name;
  SessionEnd end;
  Disposition want;
};

SessionEnd End(SessionStage stage, absl::Status status) {
  SessionEnd e;
  e.stage = stage;
  e.status = std::move(status);
  return e;
}

std::vector<Row> Rows() {
  using S = SessionStage;
  std::vector<Row> rows;
  auto add = [&rows](std::string name, SessionEnd end, Disposition want) {
    rows.push_back({std::move(name), std::move(end), want});
  };
  // Start-up.
  add("configure", End(S::kConfigure, absl::InvalidArgumentError("x")),
      Stop(kExitUsage));
  add("slot marker", End(S::kOpenSlotMarker, absl::UnavailableError("x")),
      Stop(kExitPrecondition));
  add("connect refused", End(S::kConnect, absl::FailedPreconditionError("x")),
      Stop(kExitPrecondition));
  add("connect bad option", End(S::kConnect, absl::InvalidArgumentError("x")),
      Stop(kExitPrecondition));
  add("connect down", End(S::kConnect, absl::UnavailableError("x")),
      Retry(Wait::kBackoff, "PostgreSQL"));
  SessionEnd held = End(S::kConnect, absl::UnavailableError("slot active"));
  held.slot_held_elsewhere = true;
  add("connect slot held", held, Retry(Wait::kStandbyInterval, "PostgreSQL"));
  add("producer unavailable",
      End(S::kCreateProducer, absl::UnavailableError("x")),
      Retry(Wait::kBackoff, "Kafka"));
  add("producer invalid", End(S::kCreateProducer, absl::InternalError("x")),
      Stop(kExitUsage));
  add("checkpoint data loss", End(S::kReadCheckpoint, absl::DataLossError("x")),
      Stop(kExitStream));
  add("checkpoint precondition",
      End(S::kReadCheckpoint, absl::FailedPreconditionError("x")),
      Stop(kExitPrecondition));
  add("checkpoint unavailable",
      End(S::kReadCheckpoint, absl::UnavailableError("x")),
      Retry(Wait::kBackoff, "Kafka"));
  // The end of streaming.
  add("stopped", End(S::kStream, absl::OkStatus()), Stop(kExitOk));
  SessionEnd restart = End(S::kStream, absl::UnavailableError("binary"));
  restart.restart_requested = true;
  add("plugin restart", restart, Only(Action::kRestartNow));
  SessionEnd restart_poison = End(S::kStream, absl::InvalidArgumentError("x"));
  restart_poison.restart_requested = true;
  add("plugin restart first", restart_poison, Only(Action::kRestartNow));
  add("poison", End(S::kStream, absl::InvalidArgumentError("x")),
      Stop(kExitHalted));
  add("undecodable", End(S::kStream, absl::DataLossError("x")),
      Stop(kExitStream));
  add("slot gone", End(S::kStream, absl::FailedPreconditionError("x")),
      Stop(kExitPrecondition));
  SessionEnd missing = End(S::kStream, absl::NotFoundError("no topic"));
  missing.blocked_topic = std::string(1, 't');
  missing.topic_creation = true;
  add("create topic", missing, Only(Action::kCreateTopic));
  SessionEnd no_name = missing;
  no_name.blocked_topic.clear();
  add("missing topic unnamed", no_name, Retry(Wait::kBlockedTopic, "Kafka"));
  SessionEnd not_enabled = missing;
  not_enabled.topic_creation = false;
  not_enabled.progressed = true;
  add("missing topic, no creation", not_enabled,
      Retry(Wait::kBlockedTopic, "Kafka"));
  SessionEnd acl = End(S::kStream, absl::PermissionDeniedError("acl"));
  acl.blocked_topic = std::string(1, 't');
  acl.topic_creation = true;
  acl.progressed = true;
  add("missing ACL", acl, Retry(Wait::kBlockedTopic, "Kafka"));
  add("transient", End(S::kStream, absl::UnavailableError("x")),
      Retry(Wait::kBackoff, "PostgreSQL"));
  SessionEnd progressed = End(S::kStream, absl::InternalError("fatal"));
  progressed.progressed = true;
  add("transient after progress", progressed,
      Retry(Wait::kBackoff, "PostgreSQL", /*reset=*/true));
  SessionEnd taken = End(S::kStream, absl::UnavailableError("slot active"));
  taken.slot_held_elsewhere = true;
  add("slot taken", taken, Retry(Wait::kStandbyInterval, "PostgreSQL"));
  return rows;
}

TEST(DispositionTest, EveryRow) {
  for (const Row& row : Rows()) {
    SCOPED_TRACE(row.name);
    Disposition got = Dispose(row.end);
    EXPECT_EQ(static_cast<int>(got.action), static_cast<int>(row.want.action));
    EXPECT_EQ(got.exit_code, row.want.exit_code);
    EXPECT_EQ(static_cast<int>(got.wait), static_cast<int>(row.want.wait));
    EXPECT_STREQ(got.waiting_for, row.want.waiting_for);
    EXPECT_EQ(got.reset_backoff, row.want.reset_backoff);
  }
}

SessionEnd MissingTopic() {
  SessionEnd e = End(SessionStage::kStream, absl::NotFoundError("no topic"));
  e.blocked_topic = std::string(1, 't');  // GCC 12: -Wrestrict on "t"
  e.topic_creation = true;
  return e;
}

TEST(DispositionTest, CreatedTopicRetriesSoon) {
  absl::Status wait_on;
  Disposition d =
      AfterTopicCreation(MissingTopic(), absl::OkStatus(), &wait_on);
  EXPECT_TRUE(d == Retry(Wait::kBackoff, "PostgreSQL", /*reset=*/true));
  EXPECT_TRUE(absl::IsNotFound(wait_on));
}

TEST(DispositionTest, TopicNotCreatedWaitsForIt) {
  absl::Status wait_on;
  Disposition d = AfterTopicCreation(
      MissingTopic(), absl::InvalidArgumentError("replication factor 3 > 1"),
      &wait_on);
  EXPECT_TRUE(d == Retry(Wait::kBlockedTopic, "Kafka"));
  EXPECT_TRUE(absl::IsNotFound(wait_on));
  EXPECT_EQ(wait_on.message(), "replication factor 3 > 1");
}

TEST(DispositionTest, TopicCreationDeniedWaitsForTheAcl) {
  absl::Status wait_on;
  Disposition d = AfterTopicCreation(
      MissingTopic(), absl::PermissionDeniedError("no CREATE"), &wait_on);
  EXPECT_TRUE(d == Retry(Wait::kBlockedTopic, "Kafka"));
  EXPECT_TRUE(absl::IsPermissionDenied(wait_on));
}

}  // namespace
}  // namespace outbox
