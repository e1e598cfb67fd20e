// PgConnection's parts that need no server: the libpq options it connects
// with (the user's, then the replication stream's settings, which win), and
// one-line errors.
#include "pg/pg_connection.h"

#include <stdlib.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pg/libpq_replication_stream.h"

namespace outbox {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

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
    absl::StatusOr<std::string> o = PgConnection::MergedOptions(
        conninfo, LibpqReplicationStream::kServerSettings);
    EXPECT_TRUE(o.ok()) << o.status();
    return o.ok() ? *o : "";
  }

  static constexpr char kOurs[] =
      "-c TimeZone=UTC -c DateStyle=ISO -c bytea_output=hex "
      "-c extra_float_digits=3";
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
  // A user's extra_float_digits is overridden: floats must not depend on
  // it (pgoutput_binary formats the shortest exact form).
  EXPECT_EQ(Get("host=db options='-c extra_float_digits=0'"),
            std::string("-c extra_float_digits=0 ") + kOurs);
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
    absl::StatusOr<std::string> o = PgConnection::MergedOptions(
        conninfo, LibpqReplicationStream::kServerSettings);
    ASSERT_FALSE(o.ok()) << conninfo;
    EXPECT_TRUE(absl::IsFailedPrecondition(o.status())) << o.status();
    EXPECT_THAT(std::string(o.status().message()),
                HasSubstr("invalid postgres.conninfo"));
  }
}

// Issue 32 item 10: libpq's parse errors quote the conninfo around the
// fault ("missing \"=\" after \"SECONDPART\" ...", "invalid percent-encoded
// token: \"...\""), which may be a password's: the error tells the kind of
// fault only, in the log and on the status page alike.
TEST_F(ConnectionOptionsTest, ParseErrorsNeverEchoTheConninfo) {
  for (const char* conninfo :
       {"host=db password=FIRSTPART SECONDPART THIRDPART",
        "host=db password=FIRSTPART SECONDPART=THIRDPART",
        "host=db password='FIRSTPART SECONDPART",
        "postgresql://relay:FIRSTPART%zzSECONDPART@db/app"}) {
    for (absl::Status st :
         {PgConnection::MergedOptions(conninfo, "").status(),
          PgConnection::ParseConninfo(conninfo).status(),
          PgConnection::Connect({conninfo, "test", 1}).status()}) {
      ASSERT_FALSE(st.ok()) << conninfo;
      EXPECT_TRUE(absl::IsFailedPrecondition(st)) << st;
      const std::string msg(st.message());
      EXPECT_THAT(msg, HasSubstr("invalid postgres.conninfo: libpq cannot "
                                 "parse it: "));
      for (const char* part : {"FIRSTPART", "SECONDPART", "THIRDPART"}) {
        EXPECT_THAT(msg, Not(HasSubstr(part))) << msg;
      }
    }
  }
  EXPECT_THAT(std::string(PgConnection::ParseConninfo(
                              "host=db password=FIRSTPART SECONDPART")
                              .status()
                              .message()),
              HasSubstr("quote a value that holds one"));
}

TEST(OneLineTest, DropsTheSeverityAndJoinsLines) {
  EXPECT_EQ(OneLine("ERROR:  relation \"x\" does not exist\nLINE 1: ...\n"),
            "relation \"x\" does not exist LINE 1: ...");
  EXPECT_EQ(OneLine("FATAL:  no pg_hba.conf entry\n"), "no pg_hba.conf entry");
}

TEST(ClassifyServerErrorTest, OperatorProblemsArePreconditionsTheRestRetries) {
  EXPECT_TRUE(absl::IsFailedPrecondition(ClassifyServerError(
      "c",
      "FATAL:  must be superuser or replication role to start walsender")));
  EXPECT_TRUE(absl::IsFailedPrecondition(ClassifyServerError(
      "c", "FATAL:  password authentication failed for user \"x\"")));
  EXPECT_TRUE(absl::IsFailedPrecondition(
      ClassifyServerError("c", "ERROR:  must be owner of table outbox")));
  EXPECT_TRUE(absl::IsUnavailable(
      ClassifyServerError("c", "server closed the connection unexpectedly")));
  EXPECT_THAT(
      std::string(ClassifyServerError("ctx", "could not connect").message()),
      HasSubstr("ctx: could not connect"));
}

// TLS and credential failures (issue 24): no reconnect fixes them. An SSL
// error of a dropped connection still retries.
TEST(ClassifyServerErrorTest, TlsRefusalsArePreconditions) {
  for (const char* refusal : {
           "connection to server at \"127.0.0.1\", port 5432 failed: SSL "
           "error: certificate verify failed",
           "connection to server at \"127.0.0.1\", port 5432 failed: SSL "
           "error: sslv3 alert certificate expired",
           "server certificate for \"db\" does not match host name \"x\"",
           "FATAL:  connection requires a valid client certificate",
           "root certificate file \"/nope\" does not exist",
           "private key file \"client.key\" has group or world access",
           "server does not support SSL, but SSL was required",
           "fe_sendauth: no password supplied",
       }) {
    EXPECT_TRUE(absl::IsFailedPrecondition(ClassifyServerError("c", refusal)))
        << refusal;
  }
  for (const char* transient : {
           "SSL error: unexpected eof while reading",
           "SSL SYSCALL error: EOF detected",
           "connection to server at \"127.0.0.1\", port 5432 failed: "
           "Connection refused",
       }) {
    EXPECT_TRUE(absl::IsUnavailable(ClassifyServerError("c", transient)))
        << transient;
  }
}

}  // namespace
}  // namespace outbox
