// The OutputPlugin seam without a server: the registry, each plugin's
// START_REPLICATION options, its hints for server refusals, and that its
// decoder is the right one.
#include "plugin/output_plugin.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "outbox/change.h"
#include "plugin/pgoutput/pgoutput_plugin.h"
#include "plugin/wal2json/wal2json_plugin.h"

namespace outbox {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

PluginOptions Options() {
  PluginOptions o;
  o.tables.push_back({"public", "outbox"});
  o.tables.push_back({"billing", "it's"});
  return o;
}

std::unique_ptr<OutputPlugin> Make(absl::string_view name,
                                   const PluginOptions& o = Options()) {
  auto p = OutputPlugin::Create(name, o);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? std::move(*p) : nullptr;
}

TEST(OutputPluginTest, KnowsWal2JsonAndPgOutputByName) {
  EXPECT_THAT(OutputPlugin::Names(),
              ::testing::ElementsAre("wal2json", "pgoutput"));
  EXPECT_EQ(Make("wal2json")->name(), "wal2json");
  EXPECT_EQ(Make("pgoutput")->name(), "pgoutput");
  auto unknown = OutputPlugin::Create("decoderbufs", Options());
  ASSERT_FALSE(unknown.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(unknown.status()));
  EXPECT_THAT(std::string(unknown.status().message()),
              HasSubstr("wal2json or pgoutput"));
}

TEST(Wal2JsonPluginTest, KeepsOnlyTheReservedMessagePrefixByDefault) {
  // wal2json hands on every pg_logical_emit_message() unless
  // add-msg-prefixes names the prefixes to keep; nothing else can drop
  // them all.
  std::string opts = Make("wal2json")->StartOptions({});
  EXPECT_THAT(opts, HasSubstr("\"add-msg-prefixes\" 'outbox-relay.reserved'"));
  EXPECT_THAT(opts, HasSubstr("\"add-tables\" 'public.outbox,billing.it''s'"));
  EXPECT_THAT(opts, HasSubstr("\"actions\" 'insert'"));
  EXPECT_THAT(opts, HasSubstr("\"format-version\" '2'"));
}

TEST(Wal2JsonPluginTest, ListsConfiguredMessagePrefixes) {
  PluginOptions o = Options();
  o.message_prefixes = {"orders", "o'k"};
  std::string opts = Make("wal2json", o)->StartOptions({});
  EXPECT_THAT(opts, HasSubstr("\"add-msg-prefixes\" 'orders,o''k'"));
  EXPECT_THAT(opts, Not(HasSubstr(kReservedMessagePrefix)));
}

// The tableless outbox alone: an empty add-tables would stream every
// table, so no table is named and no row action is asked for.
TEST(Wal2JsonPluginTest, NoTablesAsksForMessagesOnly) {
  PluginOptions o;
  o.message_prefixes = {"orders"};
  for (bool updates : {false, true}) {
    o.decode_updates = updates;
    std::string opts = Make("wal2json", o)->StartOptions({});
    EXPECT_THAT(opts, Not(HasSubstr("add-tables")));
    EXPECT_THAT(opts, HasSubstr("\"actions\" '',"));
    EXPECT_THAT(opts, HasSubstr("\"add-msg-prefixes\" 'orders'"));
  }
}

TEST(Wal2JsonPluginTest, PrefixesWal2JsonCannotListAreRefused) {
  for (const char* prefix : {"", "a,b", "a b", "a\\b", "\t"}) {
    PluginOptions o = Options();
    o.message_prefixes = {prefix};
    auto p = OutputPlugin::Create("wal2json", o);
    ASSERT_FALSE(p.ok()) << prefix;
    EXPECT_TRUE(absl::IsInvalidArgument(p.status())) << p.status();
    EXPECT_THAT(std::string(p.status().message()), HasSubstr("message prefix"));
  }
}

TEST(Wal2JsonPluginTest, AMissingWal2JsonNamesPgOutputAsTheAlternative) {
  absl::Status st =
      Make("wal2json")
          ->Explain(absl::UnavailableError(
              "could not access file \"wal2json\": No such file or directory"));
  EXPECT_TRUE(absl::IsFailedPrecondition(st)) << st;
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("postgres.plugin: pgoutput"));
  absl::Status other = absl::UnavailableError("connection reset");
  EXPECT_EQ(Make("wal2json")->Explain(other), other);
}

TEST(PluginTest, NotAllowedByOutputPluginLibrariesNamesTheSetting) {
  for (const char* name : {"wal2json", "pgoutput"}) {
    absl::Status st = Make(name)->Explain(absl::UnavailableError(absl::StrCat(
        "library \"", name, "\" may not be used as an output plugin")));
    EXPECT_TRUE(absl::IsFailedPrecondition(st)) << st;
    EXPECT_THAT(std::string(st.message()),
                HasSubstr("ALTER SYSTEM SET output_plugin_libraries"));
  }
}

TEST(PgOutputPluginTest, StreamsThePublicationWithProtocolOne) {
  PluginOptions o = Options();
  o.publication = "Outbox \"pub\"";
  std::string opts = Make("pgoutput", o)->StartOptions({150018, "app"});
  EXPECT_EQ(opts,
            "proto_version '1', publication_names '\"Outbox \"\"pub\"\"\"'");
  // Never streaming of in-progress transactions, and no messages unless
  // some are wanted.
  EXPECT_THAT(opts, Not(HasSubstr("streaming")));
  o.message_prefixes = {"orders"};
  EXPECT_THAT(Make("pgoutput", o)->StartOptions({150018, "app"}),
              HasSubstr("messages 'true'"));
}

TEST(PgOutputPluginTest, CreatePublicationSqlCoversTheTablesForInserts) {
  PluginOptions o = Options();
  auto p = PgOutputPlugin::Create(o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(static_cast<PgOutputPlugin&>(**p).CreatePublicationSql(),
            "CREATE PUBLICATION outbox_relay FOR TABLE public.outbox, "
            "billing.\"it's\" WITH (publish = 'insert')");
  absl::Status st = (*p)->Explain(
      absl::UnavailableError("publication \"outbox_relay\" does not exist"));
  EXPECT_TRUE(absl::IsFailedPrecondition(st));
  EXPECT_THAT(std::string(st.message()), HasSubstr("CREATE PUBLICATION"));
  o.publication = "";
  EXPECT_FALSE(PgOutputPlugin::Create(o).ok());
}

TEST(PgOutputPluginTest, NoTablesCreatesAPublicationOfNoTable) {
  PluginOptions o;
  o.message_prefixes = {"orders"};
  auto p = PgOutputPlugin::Create(o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(static_cast<PgOutputPlugin&>(**p).CreatePublicationSql(),
            "CREATE PUBLICATION outbox_relay WITH (publish = 'insert')");
}

TEST(OutputPluginTest, EachPluginDecodesItsOwnFormat) {
  Change c;
  auto w = Make("wal2json")->NewDecoder();
  ASSERT_TRUE(
      w->Decode(R"({"action":"B","xid":7,"lsn":"0/10","nextlsn":"0/20"})", &c)
          .ok());
  EXPECT_EQ(c.kind, Change::Kind::kBegin);
  auto p = Make("pgoutput")->NewDecoder();
  // Begin: final LSN, commit time, xid.
  const char begin[] = {'B', 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0,
                        0,   0, 0, 0, 0, 0, 0, 0, 0,    7};
  ASSERT_TRUE(p->Decode(absl::string_view(begin, sizeof(begin)), &c).ok());
  EXPECT_EQ(c.kind, Change::Kind::kBegin);
  EXPECT_EQ(c.xid, 7u);
  EXPECT_FALSE(w->Decode(absl::string_view(begin, sizeof(begin)), &c).ok());
}

// outbox.on_update other than ignore: updates must reach the relay.
TEST(OutputPluginTest, DecodeUpdatesAsksEachPluginForUpdates) {
  PluginOptions o = Options();
  o.decode_updates = true;
  EXPECT_THAT(Make("wal2json", o)->StartOptions({150018, "app"}),
              HasSubstr("\"actions\" 'insert,update'"));
  auto p = PgOutputPlugin::Create(o);
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(static_cast<PgOutputPlugin&>(**p).CreatePublicationSql(),
              HasSubstr("WITH (publish = 'insert, update')"));
}

}  // namespace
}  // namespace outbox
