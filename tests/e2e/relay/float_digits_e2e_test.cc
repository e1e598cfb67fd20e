// extra_float_digits against pgoutput's binary transfer: floats give the
// same record bytes through a binary and a text pgoutput relay and a
// wal2json one, whatever the database, role or conninfo sets
// (pgoutput_binary_e2e_test's binary; its fixture is
// pgoutput_binary_e2e_fixture.h).
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "e2e/relay/pgoutput_binary_e2e_fixture.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

// How a session's extra_float_digits is set before the relay connects.
enum class DigitsSetBy { kDatabase, kRole, kConninfo };

// Floats (float4 and float8: shortest and rounded forms, the largest,
// denormals, -0, NaN, Infinity) in a message key, headers, an envelope field
// and the topic template, through three relays on one database (pgoutput
// binary, pgoutput text, wal2json), with extra_float_digits at -15, 0, 1
// and 3 set by `by` on the relays' own database, role or conninfo options:
// every record the same bytes in all three (partition included), and each
// value the text PostgreSQL gives at extra_float_digits 3 (the setting the
// replication connection pins).
class FloatDigitsE2ETest : public PgOutputBinaryE2ETest {
 protected:
  void Run(DigitsSetBy by) {
    const std::string dbname = UniqueName("floats");
    const std::string role = UniqueName("floats");
    db_->Exec("CREATE DATABASE " + dbname);
    db_->Exec("CREATE ROLE " + role + " LOGIN SUPERUSER REPLICATION");
    const std::string conninfo =
        pg_conninfo_ + " user=" + role + " dbname=" + dbname;
    auto d = PgConn::Connect(conninfo);
    ASSERT_NE(d, nullptr);
    CreateOutboxTable(*d, table_);
    d->Exec("ALTER TABLE public." + table_ +
            " ADD COLUMN kf float8, ADD COLUMN f4 float4, ADD COLUMN f8 "
            "float8, ADD COLUMN ef float8, ADD COLUMN tf float4");
    const std::vector<std::string> f8 = {"0.3",
                                         "0.1::float8 + 0.2::float8",
                                         "1e23",
                                         "1.7976931348623157e308",
                                         "5e-324",
                                         "1e-310",
                                         "2.2250738585072014e-308",
                                         "'-0'",
                                         "'NaN'",
                                         "'Infinity'",
                                         "'-Infinity'",
                                         "123456789.123456789",
                                         "1 / 3.0",
                                         "100",
                                         "1e15",
                                         "1e16",
                                         "pi()",
                                         "-2.5e-5"};
    const std::vector<std::string> f4 = {"0.3",
                                         "3.40282e38",
                                         "3.4028235e38",
                                         "1e-45",
                                         "1e-40",
                                         "'-0'",
                                         "'NaN'",
                                         "'Infinity'",
                                         "'-Infinity'",
                                         "1.0000001",
                                         "16777217",
                                         "0.1",
                                         "1.17549435e-38",
                                         "123456.7",
                                         "7e-5",
                                         "1 / 3.0",
                                         "2.5",
                                         "1e10"};
    std::string pins;  // the texts at extra_float_digits 3
    for (size_t i = 0; i < f8.size(); ++i) {
      pins += (i ? ", " : "") + ("(" + f8[i]) + ")::float8::text, (" + f4[i] +
              ")::float4::text";
    }
    const std::string pin_sql = "SET extra_float_digits = 3; SELECT " + pins;
    auto pinned = db_->Query(pin_sql);
    ASSERT_TRUE(pinned.ok()) << pinned.status();
    const std::string tf = "1.0000001";  // "1" at 0 and below
    const std::vector<std::string> prefixes = {"b", "t", "w"};
    const std::vector<std::vector<std::string>> modes = {
        {"--set", "postgres.plugin=pgoutput", "--set",
         "postgres.publication=" + slot_ + "_pub"},
        {"--set", "postgres.plugin=pgoutput", "--set",
         "postgres.publication=" + slot_ + "_tpub", "--set",
         "postgres.pgoutput_binary=off"},
        {}};  // wal2json
    for (int digits : {-15, 0, 1, 3}) {
      SCOPED_TRACE("extra_float_digits " + std::to_string(digits));
      db_->Exec("ALTER DATABASE " + dbname + " RESET extra_float_digits");
      db_->Exec("ALTER ROLE " + role + " RESET extra_float_digits");
      std::string relay_conninfo = conninfo;
      const std::string set =
          " SET extra_float_digits = " + std::to_string(digits);
      switch (by) {
        case DigitsSetBy::kDatabase:
          db_->Exec("ALTER DATABASE " + dbname + set);
          break;
        case DigitsSetBy::kRole:
          db_->Exec("ALTER ROLE " + role + set);
          break;
        case DigitsSetBy::kConninfo:
          relay_conninfo +=
              " options='-c extra_float_digits=" + std::to_string(digits) + "'";
          break;
      }
      // The setting reaches a session made as the relays make theirs.
      auto probe = PgConn::Connect(relay_conninfo);
      ASSERT_NE(probe, nullptr);
      ASSERT_EQ(probe->Scalar("SHOW extra_float_digits"),
                std::to_string(digits));
      const std::string agg = aggtype_ + "_" + std::to_string(digits + 20);
      std::vector<std::unique_ptr<Process>> relays;
      for (size_t m = 0; m < modes.size(); ++m) {
        std::vector<std::string> args = RelayArgs();
        for (size_t i = 0; i + 1 < args.size(); ++i) {
          if (args[i] == "--pg") args[i + 1] = relay_conninfo;
          if (args[i] == "--slot") args[i + 1] = slot_ + "_" + prefixes[m];
        }
        args.insert(args.end(), modes[m].begin(), modes[m].end());
        args.insert(
            args.end(),
            {"--topic", prefixes[m] + ".{aggregatetype}.{tf}", "--set",
             "outbox.key=kf", "--set",
             "outbox.fields=f4:header,f8:header:h8,ef:envelope:e8,tf:header",
             "--set", "postgres.state_dir=" + StateDir() + "/" + prefixes[m]});
        relays.push_back(Process::Start(
            args, dir_ + "/" + prefixes[m] + std::to_string(digits) + ".log"));
      }
      ASSERT_TRUE(WaitUntil(
          [&] {
            return db_->Scalar(
                       "SELECT count(*) FROM pg_replication_slots WHERE "
                       "active AND slot_name IN ('" +
                       slot_ + "_b', '" + slot_ + "_t', '" + slot_ + "_w')") ==
                   "3";
          },
          60000))
          << relays[0]->Output() << relays[1]->Output() << relays[2]->Output();
      EXPECT_THAT(StartReplicationCommand(slot_ + "_b"),
                  HasSubstr("binary 'true'"));
      for (size_t i = 0; i < f8.size(); ++i) {
        // The key is never NaN or infinite (a NULL key is poison).
        const std::string key =
            (*pinned)[0][2 * i] == "NaN" ||
                    absl::StrContains((*pinned)[0][2 * i], "Infinity")
                ? "0.1 * " + std::to_string(i)
                : f8[i];
        d->Exec("INSERT INTO public." + table_ +
                " (id, aggregatetype, aggregateid, type, payload, kf, f4, f8, "
                "ef, tf) VALUES (gen_random_uuid(), '" +
                agg + "', 'a', 'T', '{\"i\": " + std::to_string(i) + "}', " +
                key + ", " + f4[i] + ", " + f8[i] + ", " +
                f8[f8.size() - 1 - i] + ", " + tf + ")");
      }
      const std::string suffix = "." + agg + "." + tf;
      ExpectSameRecords("b" + suffix, "t" + suffix, f8.size(), *relays[0],
                        *relays[1]);
      ExpectSameRecords("b" + suffix, "w" + suffix, f8.size(), *relays[0],
                        *relays[2]);
      // And the texts are extra_float_digits 3's.
      auto got = ConsumeAll(env_->kafka_brokers(), {"b" + suffix}, f8.size());
      ASSERT_EQ(got.size(), f8.size()) << relays[0]->Output();
      for (const KafkaMessage& k : got) {
        const size_t i = static_cast<size_t>(
            std::stoi(k.value.substr(k.value.find("\"i\": ") + 5)));
        const std::string& want8 = (*pinned)[0][2 * i];
        const std::string& want4 = (*pinned)[0][2 * i + 1];
        const auto finite = [](const std::string& t) {
          return t != "NaN" && !absl::StrContains(t, "Infinity");
        };
        if (finite(want8)) {
          EXPECT_EQ(k.key, want8) << i;
          EXPECT_EQ(k.Header("h8"), want8) << i;
        }
        if (finite(want4)) {
          EXPECT_EQ(k.Header("f4"), want4) << i;
        }
      }
      for (auto& r : relays) {
        r->Signal(SIGTERM);
        EXPECT_EQ(r->Wait(30000), 0) << r->Output();
      }
    }
    for (const std::string& p : prefixes) {
      db_->Query("SELECT pg_drop_replication_slot('" + slot_ + "_" + p + "')")
          .status()
          .IgnoreError();
    }
    d.reset();
    db_->Query("DROP DATABASE " + dbname + " WITH (FORCE)")
        .status()
        .IgnoreError();
    db_->Query("DROP ROLE " + role).status().IgnoreError();
  }
};

TEST_F(FloatDigitsE2ETest, ByTheDatabaseFloatsDoNotDependOnTheTransferMode) {
  Run(DigitsSetBy::kDatabase);
}

TEST_F(FloatDigitsE2ETest, ByTheRoleFloatsDoNotDependOnTheTransferMode) {
  Run(DigitsSetBy::kRole);
}

TEST_F(FloatDigitsE2ETest, ByConninfoFloatsDoNotDependOnTheTransferMode) {
  Run(DigitsSetBy::kConninfo);
}

}  // namespace
}  // namespace outbox::testing
