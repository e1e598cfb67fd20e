// outbox-relay end to end on its replication slot's life: the slot is
// created only on a genuine first run, a slot that disappeared is refused
// with the lost range and the fix, and an invalidated slot is a clear stop,
// not an endless retry. The real binary against the fixture's PostgreSQL
// (and, for invalidation, a cluster of its own with a small
// max_slot_wal_keep_size) and Kafka.
#include <filesystem>

#include "e2e/relay/relay_e2e_fixture.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class SlotLifeTest : public PreconditionTest {
 protected:
  std::string SlotCount(PgConn* db) {
    return db->Scalar(
        "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '" +
        slot_ + "'");
  }
  std::string MarkerPath() const { return StateDir() + "/" + slot_ + ".slot"; }
  // Stops the relay with SIGTERM (flush, confirm, exit 0); returns the
  // slot's confirmed position.
  std::string StopRelay() {
    relay_->Signal(SIGTERM);
    EXPECT_EQ(relay_->Wait(30000), 0) << relay_->Output();
    return ConfirmedFlush();
  }

  std::vector<Event> committed_;
  std::vector<std::string> rolled_back_;
};

TEST_F(SlotLifeTest, ADroppedSlotIsNotCreatedAnew) {
  StartRelay();
  // The slot is briefly active while it is being created: wait for the
  // relay's own word.
  ASSERT_TRUE(WaitUntil(
      [&] {
        return relay_->Output().find("slot_created=true") != std::string::npos;
      },
      30000))
      << relay_->Output();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  EXPECT_THAT(relay_->Output(), HasSubstr("slot_marker=" + MarkerPath()));
  Write(1, 5, 2, 0, &committed_, &rolled_back_);
  Audit(committed_, rolled_back_, committed_.size());
  const std::string confirmed = StopRelay();
  ASSERT_TRUE(std::filesystem::exists(MarkerPath()));

  // A DBA drops the "inactive" slot while the application commits events.
  db_->Exec("SELECT pg_drop_replication_slot('" + slot_ + "')");
  std::vector<Event> lost;
  Write(2, 3, 2, 0, &lost, &rolled_back_);
  ExpectRefusal("events committed after " + confirmed + " are in no slot");
  EXPECT_THAT(relay_->Output(),
              HasSubstr("replication slot \"" + slot_ +
                        "\" does not exist, but this relay streamed from it "
                        "before"));
  EXPECT_THAT(relay_->Output(),
              HasSubstr("--set postgres.acknowledge_slot_loss=" + confirmed));
  EXPECT_THAT(relay_->Output(), HasSubstr("or delete " + MarkerPath()));
  EXPECT_EQ(SlotCount(db_.get()), "0");
  // Restarting changes nothing, nor does acknowledging another position.
  ExpectRefusal("events committed after " + confirmed);
  ExpectRefusal("(postgres.acknowledge_slot_loss is 0/1, not " + confirmed,
                {"--set", "postgres.acknowledge_slot_loss=0/1"});
  EXPECT_EQ(SlotCount(db_.get()), "0");

  // The operator re-publishes the lost range, then acknowledges that loss.
  StartRelay({"--set", "postgres.acknowledge_slot_loss=" + confirmed});
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  EXPECT_THAT(relay_->Output(),
              HasSubstr("creating the replication slot anew"));
  Write(3, 3, 2, 0, &committed_, &rolled_back_);
  Audit(committed_, rolled_back_, committed_.size());

  // The acknowledgement covered that loss only: left in the config, it
  // does not let a later drop pass.
  const std::string confirmed2 = StopRelay();
  ASSERT_NE(confirmed2, confirmed);
  db_->Exec("SELECT pg_drop_replication_slot('" + slot_ + "')");
  ExpectRefusal("events committed after " + confirmed2 + " are in no slot",
                {"--set", "postgres.acknowledge_slot_loss=" + confirmed});
  EXPECT_EQ(SlotCount(db_.get()), "0");
}

TEST_F(SlotLifeTest, ASlotDroppedUnderTheRunningRelayStopsIt) {
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  Write(1, 3, 2, 0, &committed_, &rolled_back_);
  Audit(committed_, rolled_back_, committed_.size());
  // Without its marker only the process remembers the slot.
  std::filesystem::remove(MarkerPath());
  // End the walsender and drop the slot before the relay reconnects.
  ASSERT_TRUE(WaitUntil(
      [&] {
        db_->Query(
               "SELECT pg_terminate_backend(active_pid) FROM "
               "pg_replication_slots WHERE slot_name = '" +
               slot_ + "' AND active_pid IS NOT NULL")
            .status()
            .IgnoreError();
        return db_->Query("SELECT pg_drop_replication_slot('" + slot_ + "')")
            .ok();
      },
      30000));
  EXPECT_EQ(relay_->Wait(30000), 3) << relay_->Output();
  EXPECT_THAT(relay_->Output(),
              HasSubstr("does not exist, but this relay streamed from it "
                        "before"));
  EXPECT_THAT(relay_->Output(), HasSubstr("are in no slot"));
  EXPECT_EQ(SlotCount(db_.get()), "0");
}

TEST_F(SlotLifeTest, AnotherSystemIdentifierIsNamed) {
  // The marker of a relay that streamed from this slot on another cluster
  // (this one was restored from a dump, say).
  std::filesystem::create_directories(StateDir());
  std::ofstream(MarkerPath()) << "slot=" << slot_
                              << "\nsystem_id=1234567890123456789\n"
                                 "database=postgres\nconfirmed_lsn=0/ABCDEF\n";
  const std::string system_id =
      db_->Scalar("SELECT system_identifier FROM pg_control_system()");
  ExpectRefusal("does not exist on this server (system identifier " +
                system_id);
  EXPECT_THAT(relay_->Output(), HasSubstr("on another one (system identifier "
                                          "1234567890123456789"));
  EXPECT_THAT(relay_->Output(),
              HasSubstr("events committed after 0/ABCDEF are in no slot"));
  EXPECT_EQ(SlotCount(db_.get()), "0");
}

// postgres.slot_marker kafka (issue 32, items 1 and 2), as the Helm chart
// runs the relay: two relays with the default slot name and the same
// database name on two clusters share one state topic, each keyed by its
// postgres.slot_marker_id. Each first run creates its slot (neither reads
// the other's marker); a dropped slot is refused after a restart; and when
// a cluster is replaced by a fresh one at the same place (a new system
// identifier: pg_upgrade, a restore) its relay is refused naming the old
// identifier, not given a new slot.
TEST_F(SlotLifeTest, TheKafkaMarkerRefusesADroppedSlotAndANewCluster) {
  const std::string state_topic = UniqueName("state");
  const std::string pgdir = TempDir("pg_marker") + "/pg";
  auto start_cluster = [&]() -> std::string {
    EXPECT_EQ(RunScript("pg.sh start " + pgdir + " >/dev/null"), 0);
    std::string port = ReadFile(pgdir + "/port");
    while (!port.empty() && port.back() == '\n') port.pop_back();
    return "host=127.0.0.1 port=" + port + " user=postgres dbname=postgres";
  };
  std::string conninfo_b = start_cluster();
  auto db_b = PgConn::Connect(conninfo_b);
  ASSERT_NE(db_b, nullptr);
  CreateOutboxTable(*db_b, table_);
  auto relay_args = [&](const std::string& conninfo, const std::string& id) {
    auto args = RelayArgs();
    args[2] = conninfo;
    args.insert(args.end(), {"--set", "postgres.slot_marker=kafka", "--set",
                             "postgres.slot_marker_id=" + id, "--set",
                             "kafka.state_topic=" + state_topic});
    return args;
  };
  const std::string id_a = "relay-a-" + slot_;
  const std::string id_b = "relay-b-" + slot_;
  auto active_on = [&](PgConn* db) {
    return WaitUntil(
        [&] {
          return db->Scalar(
                     "SELECT count(*) FROM pg_replication_slots WHERE "
                     "slot_name = '" +
                     slot_ + "' AND active") == "1";
        },
        60000);
  };
  auto stop = [](Process* p) {
    p->Signal(SIGTERM);
    EXPECT_EQ(p->Wait(30000), 0) << p->Output();
  };
  // Both first runs, one topic, the same slot and database names.
  relay_ = Process::Start(relay_args(pg_conninfo_, id_a), dir_ + "/a.log");
  ASSERT_TRUE(active_on(db_.get())) << relay_->Output();
  auto relay_b = Process::Start(relay_args(conninfo_b, id_b), dir_ + "/b.log");
  ASSERT_TRUE(active_on(db_b.get())) << relay_b->Output();
  // Each relay's own word (logged just after it took its slot).
  EXPECT_TRUE(WaitUntil(
      [&] {
        return relay_b->Output().find("slot_created=true") != std::string::npos;
      },
      30000))
      << relay_b->Output();
  EXPECT_TRUE(WaitUntil(
      [&] {
        return relay_->Output().find("the record keyed " + id_a + "/" +
                                     slot_) != std::string::npos;
      },
      30000))
      << relay_->Output();
  Write(1, 3, 2, 0, &committed_, &rolled_back_);
  Audit(committed_, rolled_back_, committed_.size());
  stop(relay_.get());
  stop(relay_b.get());
  const std::string confirmed_a = ConfirmedFlush();
  const std::string confirmed_b = db_b->Scalar(
      "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE "
      "slot_name = '" +
      slot_ + "'");
  const std::string system_b =
      db_b->Scalar("SELECT system_identifier FROM pg_control_system()");

  // A's slot is dropped: refused after the restart, from A's own marker.
  db_->Exec("SELECT pg_drop_replication_slot('" + slot_ + "')");
  ExpectRefusal("events committed after " + confirmed_a + " are in no slot", {},
                relay_args(pg_conninfo_, id_a));
  EXPECT_THAT(relay_->Output(),
              HasSubstr("does not exist, but this relay streamed from it "
                        "before"));
  EXPECT_THAT(relay_->Output(),
              HasSubstr("--set postgres.acknowledge_slot_loss=" + confirmed_a));
  EXPECT_EQ(SlotCount(db_.get()), "0");

  // B's cluster is replaced by a fresh one at the same place.
  db_b.reset();
  ASSERT_EQ(RunScript("pg.sh stop " + pgdir), 0);
  conninfo_b = start_cluster();
  db_b = PgConn::Connect(conninfo_b);
  ASSERT_NE(db_b, nullptr);
  CreateOutboxTable(*db_b, table_);
  ASSERT_NE(db_b->Scalar("SELECT system_identifier FROM pg_control_system()"),
            system_b);
  ExpectRefusal("on another one (system identifier " + system_b, {},
                relay_args(conninfo_b, id_b));
  EXPECT_THAT(relay_->Output(), HasSubstr("events committed after " +
                                          confirmed_b + " are in no slot"));
  EXPECT_THAT(relay_->Output(),
              HasSubstr("--set postgres.acknowledge_slot_loss=" + confirmed_b));
  EXPECT_EQ(SlotCount(db_b.get()), "0");
  db_b.reset();
  RunScript("pg.sh stop " + pgdir);
}

// Without postgres.slot_marker_id a relay could share another's marker:
// refused at load, naming the key.
TEST_F(SlotLifeTest, TheKafkaMarkerNeedsAnIdentity) {
  auto args = RelayArgs();
  args.insert(args.end(), {"--set", "postgres.slot_marker=kafka"});
  relay_ = Process::Start(args, dir_ + "/relay.log");
  EXPECT_NE(relay_->Wait(30000), 0) << relay_->Output();
  EXPECT_THAT(relay_->Output(),
              HasSubstr("\"postgres.slot_marker_id\": must be set when "
                        "postgres.slot_marker is kafka"));
  EXPECT_EQ(SlotCount(db_.get()), "0");
}

TEST_F(SlotLifeTest, CreateSlotFalseNeverCreatesNorKeepsAMarker) {
  // The refusal gives the command that creates the slot (issue 32 item 13),
  // as the slot-loss refusal does.
  ExpectRefusal("replication slot \"" + slot_ +
                    "\" does not exist: create it (SELECT "
                    "pg_create_logical_replication_slot('" +
                    slot_ + "', 'wal2json'); postgres.create_slot is false)",
                {"--set", "postgres.create_slot=false"});
  EXPECT_EQ(SlotCount(db_.get()), "0");
  EXPECT_FALSE(std::filesystem::exists(StateDir()));
}

// PostgreSQL 15 invalidates a slot at a checkpoint once it holds back more
// WAL than max_slot_wal_keep_size. The relay then stops with exit 3 naming
// the slot, its last confirmed LSN and the fix, instead of retrying for
// ever; the fix then works.
TEST_F(SlotLifeTest, AnInvalidatedSlotIsAClearStop) {
  const std::string pgdir = TempDir("pg_small_keep") + "/pg";
  ASSERT_EQ(RunScript("pg.sh start " + pgdir + " >/dev/null"), 0);
  std::string port = ReadFile(pgdir + "/port");
  while (!port.empty() && port.back() == '\n') port.pop_back();
  const std::string conninfo =
      "host=127.0.0.1 port=" + port + " user=postgres dbname=postgres";
  auto db = PgConn::Connect(conninfo);
  ASSERT_NE(db, nullptr);
  db->Exec("ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'");
  db->Exec("SELECT pg_reload_conf()");
  db->Exec(ReadFile(std::string(getenv("OUTBOX_ROOT")) + "/sql/outbox.sql"));
  db->Exec("CREATE TABLE public." + table_ +
           " (LIKE public.outbox INCLUDING ALL)");
  auto args = RelayArgs();
  args[2] = conninfo;
  auto active = [&] {
    return WaitUntil(
        [&] {
          return db->Scalar(
                     "SELECT count(*) FROM pg_replication_slots WHERE "
                     "slot_name = '" +
                     slot_ + "' AND active") == "1";
        },
        30000);
  };
  auto insert = [&](const std::string& id) {
    db->Exec("INSERT INTO public." + table_ +
             " (id, aggregatetype, aggregateid, type, payload) VALUES ('" + id +
             "', '" + aggtype_ + "', 'k', 'Created', '{}')");
  };
  relay_ = Process::Start(args, dir_ + "/relay.log");
  ASSERT_TRUE(active()) << relay_->Output();
  insert("00000000-0000-4000-8000-00000000c001");
  ASSERT_EQ(ConsumeAll(env_->kafka_brokers(), {topic_}, 1, 30000).size(), 1u);
  relay_->Signal(SIGTERM);
  ASSERT_EQ(relay_->Wait(30000), 0) << relay_->Output();
  const std::string confirmed = db->Scalar(
      "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE "
      "slot_name = '" +
      slot_ + "'");

  // With the relay stopped, WAL moves on until a checkpoint invalidates
  // the slot.
  db->Exec("CREATE TABLE filler (x text)");
  ASSERT_TRUE(WaitUntil(
      [&] {
        db->Exec(
            "INSERT INTO filler SELECT repeat('x', 1000) FROM "
            "generate_series(1, 100)");
        db->Exec("SELECT pg_switch_wal()");
        db->Exec("CHECKPOINT");
        return db->Scalar(
                   "SELECT wal_status FROM pg_replication_slots WHERE "
                   "slot_name = '" +
                   slot_ + "'") == "lost";
      },
      60000));

  relay_ = Process::Start(args, dir_ + "/relay.log");
  EXPECT_EQ(relay_->Wait(30000), 3) << relay_->Output();
  const std::string out = relay_->Output();
  EXPECT_THAT(out,
              HasSubstr("replication slot \"" + slot_ + "\" was invalidated"));
  EXPECT_THAT(out, HasSubstr("Its last confirmed LSN is " + confirmed));
  EXPECT_THAT(out, HasSubstr("drop it (SELECT pg_drop_replication_slot('" +
                             slot_ + "'))"));
  EXPECT_THAT(out, HasSubstr("events committed after " + confirmed +
                             " are in no slot"));
  EXPECT_THAT(out, Not(HasSubstr("waiting for PostgreSQL")));

  // The fix as the line gives it: drop, re-publish, acknowledge.
  db->Exec("SELECT pg_drop_replication_slot('" + slot_ + "')");
  args.insert(args.end(),
              {"--set", "postgres.acknowledge_slot_loss=" + confirmed});
  relay_ = Process::Start(args, dir_ + "/relay.log");
  ASSERT_TRUE(active()) << relay_->Output();
  insert("00000000-0000-4000-8000-00000000c002");
  EXPECT_EQ(ConsumeAll(env_->kafka_brokers(), {topic_}, 2, 30000).size(), 2u)
      << relay_->Output();
  relay_.reset();
  db.reset();
  RunScript("pg.sh stop " + pgdir);
}

// Issue 32 item 11, on a PostgreSQL 18 of its own: the start-up checks
// warn that idle_replication_slot_timeout is shorter than
// postgres.expected_outage_s; then, with every relay down for longer than
// it, a checkpoint invalidates the slot (invalidation_reason
// idle_timeout), and the relay refuses it with its own words, not those of
// removed WAL. 18.4's timeout is in seconds (the betas' was in minutes):
// ten of them, then a CHECKPOINT, produce a real invalidation; nothing of
// it is simulated.
TEST_F(SlotLifeTest, AnIdleTimeoutIsWarnedOfAndRefusedInItsOwnWords) {
  const std::string pgdir = TempDir("pg18_idle") + "/pg";
  const std::string conninfo = StartPgCluster(18, pgdir);
  ASSERT_FALSE(conninfo.empty());
  auto db = PgConn::Connect(conninfo);
  ASSERT_NE(db, nullptr);
  ASSERT_THAT(db->Scalar("SHOW server_version_num"),
              ::testing::StartsWith("18"));
  db->Exec("ALTER SYSTEM SET idle_replication_slot_timeout = '10s'");
  db->Exec("SELECT pg_reload_conf()");
  ASSERT_TRUE(WaitUntil(
      [&] { return db->Scalar("SHOW idle_replication_slot_timeout") == "10s"; },
      10000));
  db->Exec(ReadFile(std::string(getenv("OUTBOX_ROOT")) + "/sql/outbox.sql"));
  db->Exec("CREATE TABLE public." + table_ +
           " (LIKE public.outbox INCLUDING ALL)");
  auto args = RelayArgs();
  args[2] = conninfo;
  args.insert(args.end(), {"--set", "postgres.plugin=pgoutput", "--set",
                           "postgres.publication=" + slot_ + "_pub"});
  auto slot = [&](const std::string& column) {
    return db->Scalar("SELECT " + column +
                      " FROM pg_replication_slots WHERE slot_name = '" + slot_ +
                      "'");
  };
  relay_ = Process::Start(args, dir_ + "/relay.log");
  ASSERT_TRUE(WaitUntil([&] { return slot("active") == "t"; }, 30000))
      << relay_->Output();
  ASSERT_TRUE(WaitUntil(
      [&] {
        return relay_->Output().find(
                   "idle_replication_slot_timeout is 10 s, shorter than "
                   "postgres.expected_outage_s (86400 s)") != std::string::npos;
      },
      30000))
      << relay_->Output();
  db->Exec("INSERT INTO public." + table_ +
           " (id, aggregatetype, aggregateid, type, payload) VALUES "
           "('00000000-0000-4000-8000-00000000d001', '" +
           aggtype_ + "', 'k', 'Created', '{}')");
  ASSERT_EQ(ConsumeAll(env_->kafka_brokers(), {topic_}, 1, 30000).size(), 1u);
  relay_->Signal(SIGTERM);
  ASSERT_EQ(relay_->Wait(30000), 0) << relay_->Output();
  const std::string confirmed = slot("confirmed_flush_lsn");

  // Every instance down: past the timeout, a checkpoint invalidates it.
  ASSERT_TRUE(WaitUntil(
      [&] {
        return slot("now() - inactive_since > interval '11 seconds'") == "t";
      },
      180000))
      << slot("inactive_since");
  ASSERT_TRUE(WaitUntil(
      [&] {
        db->Exec("CHECKPOINT");
        return slot("invalidation_reason") == "idle_timeout";
      },
      60000))
      << slot("inactive_since") << " " << slot("invalidation_reason");
  relay_ = Process::Start(args, dir_ + "/relay.log");
  EXPECT_EQ(relay_->Wait(30000), 3) << relay_->Output();
  const std::string out = relay_->Output();
  EXPECT_THAT(out, HasSubstr("replication slot \"" + slot_ +
                             "\" was invalidated: nobody streamed from it "
                             "for longer than idle_replication_slot_timeout"));
  EXPECT_THAT(out, HasSubstr("Its last confirmed LSN is " + confirmed));
  EXPECT_THAT(out, HasSubstr("events committed after " + confirmed +
                             " are in no slot"));
  EXPECT_THAT(out, Not(HasSubstr("max_slot_wal_keep_size")));
  relay_.reset();
  db.reset();
  RunScript("pg.sh stop " + pgdir);
}

}  // namespace
}  // namespace outbox::testing
