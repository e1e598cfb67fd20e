// ${VAR} expansion in the YAML file and the _file settings (config/secrets.h),
// through the loader as the daemons use it.
#include "config/secrets.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "config/command_line.h"
#include "config/config.h"
#include "config/load_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

absl::StatusOr<Config> LoadYaml(absl::string_view yaml) {
  return Load({"--config", WriteFile("secrets.yaml", yaml)});
}

class SecretsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("OUTBOX_T_PASSWORD", "s3cret'pw", 1);
    setenv("OUTBOX_T_EMPTY", "", 1);
    unsetenv("OUTBOX_T_UNSET");
  }
  void TearDown() override {
    unsetenv("OUTBOX_T_PASSWORD");
    unsetenv("OUTBOX_T_EMPTY");
  }
};

TEST_F(SecretsTest, ExpandVariables) {
  EXPECT_EQ(*ExpandVariables("plain"), "plain");
  EXPECT_EQ(*ExpandVariables("a${OUTBOX_T_PASSWORD}b"), "as3cret'pwb");
  EXPECT_EQ(*ExpandVariables("${OUTBOX_T_UNSET:-dflt}"), "dflt");
  EXPECT_EQ(*ExpandVariables("${OUTBOX_T_EMPTY:-dflt}"), "dflt");
  EXPECT_EQ(*ExpandVariables("${OUTBOX_T_EMPTY}"), "");
  EXPECT_EQ(*ExpandVariables("${OUTBOX_T_UNSET:-}"), "");
  EXPECT_EQ(*ExpandVariables("$$1 $${name} $1 a$b $"), "$1 ${name} $1 a$b $");
  EXPECT_THAT(ExpandVariables("x${OUTBOX_T_UNSET}").status().message(),
              HasSubstr("environment variable OUTBOX_T_UNSET is not set"));
  EXPECT_THAT(ExpandVariables("${OUTBOX_T_UNSET").status().message(),
              HasSubstr("unterminated"));
  EXPECT_THAT(ExpandVariables("${1x}").status().message(),
              HasSubstr("is not ${VAR}"));
}

TEST_F(SecretsTest, YamlScalarsAreExpanded) {
  absl::StatusOr<Config> c = LoadYaml(R"yaml(
postgres:
  conninfo: "host=db user=relay password=${OUTBOX_T_PASSWORD}"
  slot: ${OUTBOX_T_UNSET:-from_default}
outbox:
  topic_replacement: "events.$${kind}"
  fields: ["${OUTBOX_T_UNSET:-a}:header"]
  tables:
    - ${OUTBOX_T_UNSET:-public.outbox}
kafka:
  properties:
    sasl.password: ${OUTBOX_T_PASSWORD}
)yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->postgres.conninfo, "host=db user=relay password=s3cret'pw");
  EXPECT_EQ(c->postgres.slot, "from_default");
  EXPECT_EQ(c->outbox.topic_replacement, "events.${kind}");
  EXPECT_EQ(c->outbox.fields, "a:header");
  EXPECT_EQ(c->outbox.tables.at(0).QualifiedName(), "public.outbox");
  EXPECT_EQ(c->kafka.properties.at("sasl.password"), "s3cret'pw");
  // What the start-up log shows.
  EXPECT_THAT(c->Redacted(), Not(HasSubstr("s3cret")));
}

TEST_F(SecretsTest, UnsetVariableIsOneLineNamingTheKey) {
  absl::StatusOr<Config> c =
      LoadYaml("kafka:\n  properties:\n    sasl.password: ${OUTBOX_T_UNSET}\n");
  ASSERT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(),
              HasSubstr("\"kafka.properties.sasl.password\": environment "
                        "variable OUTBOX_T_UNSET is not set"));
  EXPECT_THAT(c.status().message(), HasSubstr("(line 3)"));
  EXPECT_THAT(c.status().message(), Not(HasSubstr("\n")));
}

TEST_F(SecretsTest, SetValuesAreNotExpanded) {
  absl::StatusOr<Config> c = Load({"--set", "outbox.topic=a${X}"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->outbox.topic, "a${X}");
}

TEST_F(SecretsTest, PasswordFile) {
  std::string file = WriteFile("pg-password", "p a'ss\\QZV\n");
  absl::StatusOr<Config> c =
      Load({"--pg", "host=db user=relay", "--set",
            absl::StrCat("postgres.password_file=", file)});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->postgres.conninfo,
            "host=db user=relay password='p a\\'ss\\\\QZV'");
  EXPECT_THAT(c->Redacted(), Not(HasSubstr("QZV")));
  EXPECT_THAT(c->Redacted(), HasSubstr("postgres.conninfo: host=db user=relay "
                                       "password=****"));
}

TEST_F(SecretsTest, ConninfoWithPassword) {
  EXPECT_EQ(ConninfoWithPassword("", "pw"), "password='pw'");
  EXPECT_EQ(ConninfoWithPassword("mydb", "pw"), "dbname='mydb' password='pw'");
  EXPECT_EQ(ConninfoWithPassword("postgresql://u@h/db", "p@ss/w"),
            "postgresql://u@h/db?password=p%40ss%2fw");
  EXPECT_EQ(ConninfoWithPassword("postgres://u@h/db?sslmode=require", "x"),
            "postgres://u@h/db?sslmode=require&password=x");
}

TEST_F(SecretsTest, KafkaPropertyFiles) {
  std::string sasl = WriteFile("kafka-password", "kafka-pw\r\n");
  std::string key = WriteFile("key-password", "key-pw");
  absl::StatusOr<Config> c = LoadYaml(
      absl::StrCat("kafka:\n  properties:\n    sasl.password_file: ", sasl,
                   "\n    ssl.key.password_file: ", key, "\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kafka.properties.at("sasl.password"), "kafka-pw");
  EXPECT_EQ(c->kafka.properties.at("ssl.key.password"), "key-pw");
  EXPECT_EQ(c->kafka.properties.count("sasl.password_file"), 0u);
  EXPECT_THAT(c->Redacted(), Not(HasSubstr("-pw")));
}

// http.control.token_file (issue 35): read when http.control.enabled,
// required then; the token is never printed.
TEST_F(SecretsTest, ControlTokenFile) {
  auto error = [](const absl::StatusOr<Config>& c) {
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(c.status().message());
  };
  const std::string token = WriteFile("token", "t0k3n-value\n");
  absl::StatusOr<Config> c =
      Load({"--set", "http.control.enabled=true", "--set",
            absl::StrCat("http.control.token_file=", token)});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->http.control_token, "t0k3n-value");
  EXPECT_THAT(c->Redacted(), Not(HasSubstr("t0k3n-value")));
  // Not enabled: not read.
  c = Load({"--set", "http.control.token_file=/no/such/file"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->http.control_token, "");
  EXPECT_THAT(error(Load({"--set", "http.control.enabled=true"})),
              HasSubstr("\"http.control.token_file\": is required when "
                        "http.control.enabled is true"));
  EXPECT_THAT(error(Load({"--set", "http.control.enabled=true", "--set",
                          "http.control.token_file=/no/such/file"})),
              HasSubstr("\"http.control.token_file\": cannot read "
                        "/no/such/file: No such file or directory"));
  EXPECT_THAT(error(Load({"--set", "http.control.enabled=true", "--set",
                          absl::StrCat("http.control.token_file=",
                                       WriteFile("empty-token", "\n"))})),
              HasSubstr("is empty"));
  EXPECT_THAT(error(Load({"--set", "http.control.enabled=true", "--set",
                          "http.listen=", "--set",
                          absl::StrCat("http.control.token_file=", token)})),
              HasSubstr("http.listen is empty"));
}

TEST_F(SecretsTest, FileErrorsNameTheKey) {
  std::string missing = absl::StrCat(::testing::TempDir(), "/no-such-file");
  auto error = [](const absl::StatusOr<Config>& c) {
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(c.status().message());
  };
  EXPECT_THAT(
      error(Load({"--set", absl::StrCat("postgres.password_file=", missing)})),
      HasSubstr("config: \"postgres.password_file\": cannot read " + missing +
                ": No such file or directory"));
  EXPECT_THAT(
      error(Load({"--set", absl::StrCat("kafka.properties.sasl.password_file=",
                                        missing)})),
      HasSubstr("\"kafka.properties.sasl.password_file\": cannot read"));
  std::string empty = WriteFile("empty", "\n");
  EXPECT_THAT(
      error(Load({"--set", absl::StrCat("postgres.password_file=", empty)})),
      HasSubstr("is empty"));
  std::string pw = WriteFile("pw", "x");
  EXPECT_THAT(error(Load({"--pg", "host=h password=y", "--set",
                          absl::StrCat("postgres.password_file=", pw)})),
              HasSubstr("postgres.conninfo holds a password already"));
  EXPECT_THAT(
      error(Load({"--set", "kafka.properties.sasl.password=a", "--set",
                  absl::StrCat("kafka.properties.sasl.password_file=", pw)})),
      HasSubstr("kafka.properties.sasl.password is set too"));
  EXPECT_THAT(
      error(
          Load({"--set", absl::StrCat("postgres.standby_password_file=", pw)})),
      HasSubstr("postgres.standby_conninfo is empty"));
}

// Issue 32 item 10: password=${PGPASSWORD} (the Kubernetes page's pattern)
// with a password holding a space. libpq ends the unquoted value at the
// space and reads the rest as keywords; its parse error quoted them.
TEST_F(SecretsTest, APasswordWithASpaceIsRefusedAtLoadWithoutItsParts) {
  setenv("OUTBOX_T_SPACED", "FIRSTPART SECONDPART THIRDPART", 1);
  absl::StatusOr<Config> c = LoadYaml(
      "postgres: {conninfo: \"host=db user=relay "
      "password=${OUTBOX_T_SPACED} dbname=app\"}\n");
  unsetenv("OUTBOX_T_SPACED");
  ASSERT_FALSE(c.ok());
  const std::string msg(c.status().message());
  for (const char* part : {"FIRSTPART", "SECONDPART", "THIRDPART"}) {
    EXPECT_THAT(msg, Not(HasSubstr(part))) << msg;
  }
  EXPECT_THAT(msg, HasSubstr("\"postgres.conninfo\": its password holds a "
                             "space"));
  EXPECT_THAT(msg, HasSubstr("postgres.password_file"));
  EXPECT_THAT(msg, HasSubstr("PGPASSWORD"));
  EXPECT_EQ(msg.find('\n'), std::string::npos);
  // The standby's conninfo too; an unclosed quote as well.
  c = Load({"--set", "postgres.standby_conninfo=host=s password=a b"});
  EXPECT_THAT(c.status().message(),
              HasSubstr("\"postgres.standby_conninfo\": its password"));
  c = Load({"--pg", "host=db password='abc"});
  EXPECT_THAT(c.status().message(),
              HasSubstr("its password opens a quote it does not close"));
  EXPECT_THAT(c.status().message(), Not(HasSubstr("abc")));
  // Quoted or escaped, a space is fine.
  EXPECT_TRUE(Load({"--pg", "host=db password='a b' user=u"}).ok());
  EXPECT_TRUE(Load({"--pg", "host=db password=a\\ b user=u"}).ok());
}

// Issue 32 item 13: a client key passphrase is not a password.
TEST_F(SecretsTest, PasswordFileWithAnSslPasswordInTheConninfo) {
  std::string file = WriteFile("pg-password-2", "PWFROMFILE\n");
  absl::StatusOr<Config> c =
      Load({"--pg", "host=db sslkey=k.key sslpassword=KEYPASS", "--set",
            absl::StrCat("postgres.password_file=", file)});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->postgres.conninfo,
            "host=db sslkey=k.key sslpassword=KEYPASS password='PWFROMFILE'");
  // A password given both ways is still refused.
  c = Load({"--pg", "host=db password=x sslpassword=y", "--set",
            absl::StrCat("postgres.password_file=", file)});
  EXPECT_THAT(c.status().message(), HasSubstr("holds a password already"));
  c = Load({"--pg", "postgresql://u:x@db/app", "--set",
            absl::StrCat("postgres.password_file=", file)});
  EXPECT_THAT(c.status().message(), HasSubstr("holds a password already"));
}

}  // namespace
}  // namespace outbox
