// EndingError(): which of the loop's result, the first failed delivery
// report and the producer's health ends a relay session.
#include "pipeline/ending_error.h"

#include <string>

#include "gtest/gtest.h"

namespace outbox {
namespace {

enum class Pick { kLoop, kReport, kHealth };

struct Case {
  std::string name;
  absl::Status loop, failed_report, health;
  Pick want;
};

TEST(EndingErrorTest, Precedence) {
  const absl::Status ok = absl::OkStatus();
  const absl::Status stopped = absl::InvalidArgumentError("producer stopped");
  const absl::Status fatal = absl::InternalError("fatal producer error");
  const absl::Status lost = absl::UnavailableError("connection lost");
  const absl::Status undecodable = absl::DataLossError("cannot decode");
  const absl::Status halt = absl::InvalidArgumentError("invalid outbox row");
  const absl::Status refused = absl::InvalidArgumentError("event e1 refused");
  const absl::Status no_acl = absl::PermissionDeniedError("no ACL");
  const absl::Status no_topic = absl::NotFoundError("no topic");
  const absl::Status transient = absl::UnavailableError("timed out");
  const Case cases[] = {
      // A healthy producer (or one with any other error): the loop's.
      {"stop, healthy", ok, ok, ok, Pick::kLoop},
      {"lost, healthy", lost, ok, ok, Pick::kLoop},
      {"report, healthy", transient, transient, ok, Pick::kLoop},
      {"stop, fatal producer", ok, ok, fatal, Pick::kLoop},
      {"refused report, fatal producer", refused, refused, fatal, Pick::kLoop},
      // Stopped at a refused record (gapless guarantee):
      {"undecodable wins", undecodable, refused, stopped, Pick::kLoop},
      {"undecodable, no report", undecodable, ok, stopped, Pick::kLoop},
      {"the refusal's report", ok, refused, stopped, Pick::kReport},
      {"the refusal's report over a lost stream", lost, refused, stopped,
       Pick::kReport},
      {"the refusal's report over a halt", halt, refused, stopped,
       Pick::kReport},
      {"missing ACL: waited for", ok, no_acl, stopped, Pick::kReport},
      {"missing topic: waited for", lost, no_topic, stopped, Pick::kReport},
      {"the loop's halt, no report", halt, ok, stopped, Pick::kLoop},
      {"the loop's halt, transient report", halt, transient, stopped,
       Pick::kLoop},
      {"stop, no report: the producer's", ok, ok, stopped, Pick::kHealth},
      {"lost, no report: the producer's", lost, ok, stopped, Pick::kHealth},
      {"transient report: the producer's", transient, transient, stopped,
       Pick::kHealth},
  };
  for (const Case& c : cases) {
    const absl::Status want = c.want == Pick::kLoop     ? c.loop
                              : c.want == Pick::kReport ? c.failed_report
                                                        : c.health;
    EXPECT_EQ(EndingError(c.loop, c.failed_report, c.health), want) << c.name;
  }
}

}  // namespace
}  // namespace outbox
