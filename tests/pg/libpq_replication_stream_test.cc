// LibpqReplicationStream's pure parts, without a server: the wal2json
// options it streams with and the server options of its connection.
#include "pg/libpq_replication_stream.h"

#include <stdlib.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

ReplicationOptions Options() {
  ReplicationOptions o;
  o.tables.push_back({"public", "outbox", {}});
  o.tables.push_back({"billing", "it's", {}});
  return o;
}

TEST(PluginOptionsTest, KeepsOnlyTheReservedMessagePrefixByDefault) {
  // wal2json hands on every pg_logical_emit_message() unless
  // add-msg-prefixes names the prefixes to keep; nothing else can drop
  // them all.
  std::string opts = LibpqReplicationStream::PluginOptions(Options());
  EXPECT_THAT(opts, HasSubstr("\"add-msg-prefixes\" 'outbox-relay.reserved'"));
  EXPECT_THAT(opts, HasSubstr("\"add-tables\" 'public.outbox,billing.it''s'"));
  EXPECT_THAT(opts, HasSubstr("\"actions\" 'insert'"));
  EXPECT_THAT(opts, HasSubstr("\"format-version\" '2'"));
}

TEST(PluginOptionsTest, ListsConfiguredMessagePrefixes) {
  ReplicationOptions o = Options();
  o.message_prefixes = {"orders", "o'k"};
  std::string opts = LibpqReplicationStream::PluginOptions(o);
  EXPECT_THAT(opts, HasSubstr("\"add-msg-prefixes\" 'orders,o''k'"));
  EXPECT_THAT(opts, Not(HasSubstr(kReservedMessagePrefix)));
}

TEST(PluginOptionsTest, PrefixesWal2JsonCannotListAreRefused) {
  for (const char* prefix : {"", "a,b", "a b", "a\\b", "\t"}) {
    ReplicationOptions o = Options();
    o.message_prefixes = {prefix};
    auto stream = LibpqReplicationStream::Connect(o);
    ASSERT_FALSE(stream.ok()) << prefix;
    EXPECT_TRUE(absl::IsInvalidArgument(stream.status())) << stream.status();
    EXPECT_THAT(std::string(stream.status().message()),
                HasSubstr("message prefix"));
  }
}

class ConnectionOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* env = getenv("PGOPTIONS");
    if (env != nullptr) saved_ = env;
    had_env_ = env != nullptr;
    unsetenv("PGOPTIONS");
  }
  void TearDown() override {
    if (had_env_) {
      setenv("PGOPTIONS", saved_.c_str(), 1);
    } else {
      unsetenv("PGOPTIONS");
    }
  }
  static std::string Get(const std::string& conninfo) {
    absl::StatusOr<std::string> o =
        LibpqReplicationStream::ConnectionOptions(conninfo);
    EXPECT_TRUE(o.ok()) << o.status();
    return o.ok() ? *o : "";
  }

  static constexpr char kOurs[] =
      "-c TimeZone=UTC -c DateStyle=ISO -c bytea_output=hex";
  std::string saved_;
  bool had_env_ = false;
};

TEST_F(ConnectionOptionsTest, OursAloneWithoutUserOptions) {
  EXPECT_EQ(Get(""), kOurs);
  EXPECT_EQ(Get("host=db dbname=app"), kOurs);
  EXPECT_EQ(Get("postgresql://db/app"), kOurs);
  EXPECT_EQ(Get("app"), kOurs);  // a bare database name
}

TEST_F(ConnectionOptionsTest, UserOptionsComeFirstSoOursWin) {
  EXPECT_EQ(Get("host=db options='-c statement_timeout=5s  -c search_path=x'"),
            std::string("-c statement_timeout=5s  -c search_path=x ") + kOurs);
  EXPECT_EQ(Get("postgresql://db/app?options=-c%20bytea_output%3Descape"),
            std::string("-c bytea_output=escape ") + kOurs);
  EXPECT_THAT(Get("options=-cwork_mem=64MB dbname=app"),
              EndsWith(std::string("-cwork_mem=64MB ") + kOurs));
}

TEST_F(ConnectionOptionsTest, PgOptionsWhenTheConninfoHasNone) {
  setenv("PGOPTIONS", "-c lock_timeout=3s", 1);
  EXPECT_EQ(Get(""), std::string("-c lock_timeout=3s ") + kOurs);
  EXPECT_EQ(Get("host=db"), std::string("-c lock_timeout=3s ") + kOurs);
  // The conninfo's own options replace PGOPTIONS, as in libpq.
  EXPECT_EQ(Get("host=db options='-c geqo=off'"),
            std::string("-c geqo=off ") + kOurs);
}

TEST_F(ConnectionOptionsTest, UnparsableConninfoIsAPrecondition) {
  for (const char* conninfo : {"host=db options='unterminated", "nosuchkey=1",
                               "host=db =x", "postgresql://db/app?nosuch=1"}) {
    absl::StatusOr<std::string> o =
        LibpqReplicationStream::ConnectionOptions(conninfo);
    ASSERT_FALSE(o.ok()) << conninfo;
    EXPECT_TRUE(absl::IsFailedPrecondition(o.status())) << o.status();
    EXPECT_THAT(std::string(o.status().message()),
                HasSubstr("invalid postgres.conninfo"));
  }
}

}  // namespace
}  // namespace outbox
