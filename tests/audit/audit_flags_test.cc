// outbox-audit's own flags: numbers are integers in range or a one-line
// error (issue 23, item 12: "--max-duplicates abc" used to become 0).
#include "audit/audit_flags.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<AuditFlags> Parse(std::vector<std::string> args) {
  static auto* keep = new std::vector<std::vector<std::string>>;
  args.insert(args.begin(), "outbox-audit");
  keep->push_back(std::move(args));
  std::vector<char*> argv;
  for (std::string& a : keep->back()) argv.push_back(a.data());
  return ParseAuditFlags(static_cast<int>(argv.size()), argv.data());
}

TEST(AuditFlagsTest, NumbersAndTheRestInOrder) {
  auto f = Parse({"--config", "r.yaml", "--max-duplicates", "3", "--json",
                  "--timeout-s=30", "--read-committed", "--set", "a=b"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->max_duplicates, 3);
  EXPECT_EQ(f->timeout_s, 30);
  EXPECT_TRUE(f->json);
  EXPECT_TRUE(f->read_committed);
  std::vector<std::string> rest(f->rest.begin(), f->rest.end());
  EXPECT_THAT(
      rest, ElementsAre("outbox-audit", "--config", "r.yaml", "--set", "a=b"));
  auto defaults = Parse({});
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->max_duplicates, -1);
  EXPECT_EQ(defaults->timeout_s, 120);
  EXPECT_EQ(Parse({"--max-duplicates=0"})->max_duplicates, 0);
}

TEST(AuditFlagsTest, ANumericFlagThatIsNoNumberIsOneLineError) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  for (const Case& tc : std::vector<Case>{
           {{"--max-duplicates", "abc"},
            "--max-duplicates needs an integer from 0, got \"abc\""},
           {{"--max-duplicates=abc"}, "--max-duplicates needs an integer"},
           {{"--max-duplicates", "-1"}, "got \"-1\""},
           {{"--max-duplicates", "1.5"}, "got \"1.5\""},
           {{"--max-duplicates", "10x"}, "got \"10x\""},
           {{"--max-duplicates", "+3"}, "got \"+3\""},
           {{"--max-duplicates", " 3"}, "got \" 3\""},
           {{"--max-duplicates="}, "got \"\""},
           {{"--max-duplicates", "99999999999999999999"}, "needs an integer"},
           {{"--max-duplicates"}, "--max-duplicates needs a value"},
           {{"--timeout-s", "0"}, "--timeout-s needs an integer from 1"},
           {{"--timeout-s", "abc"}, "--timeout-s needs an integer from 1"},
           {{"--timeout-s", "9999999999"}, "--timeout-s needs an integer"},
           {{"--json", "--timeout-s"}, "--timeout-s needs a value"},
       }) {
    auto f = Parse(tc.args);
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument)
        << tc.args[0];
    EXPECT_THAT(f.status().message(), HasSubstr(tc.message)) << tc.args[0];
    EXPECT_THAT(f.status().message(), testing::Not(HasSubstr("\n")));
  }
}

}  // namespace
}  // namespace outbox
