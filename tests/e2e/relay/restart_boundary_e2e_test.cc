// Restarts at the boundaries where other CDC tools skipped events (issue 32,
// item 7). Debezium matched its stored offset against change LSNs: on
// PostgreSQL 17+ a commit's end LSN can equal the LSN of the next
// transaction's first change, and it skipped that transaction after a
// restart (its issues 76 and 51); a transaction that held a transactional
// logical message lost its DML (its issue 2058: PostgreSQL reports a
// message at its record's end, the LSN of the change after it).
//
// Each round builds these on purpose and asserts, from a test_decoding
// slot of the test's own, that the LSNs did coincide (the test cannot pass
// without the condition it is about):
//   - A commits and B opens in one statement string, so nothing else writes
//     WAL in between: B's first change (a row) is at A's end LSN;
//   - every transactional message in B (under the heartbeat prefix,
//     outbox-relay-heartbeat, or a tableless-outbox one from outbox_emit(),
//     outbox.messages.*) is followed by a row at the same LSN; by round, B
//     starts with a row, a heartbeat message or an outbox message, and A
//     holds rows, messages or only an outbox message; the relay's own
//     heartbeats run every 2 s besides (in exactly-once mode A is written
//     right after one committed);
//   - a transaction C opened before A commits after it (its first change
//     below A's end LSN, its commit above).
// The relay is stopped (SIGKILL, or SIGTERM: a clean stop) once the slot
// confirmed A, and B and C commit while it is down. In exactly-once mode
// the newest checkpoint in Kafka must name A's end LSN exactly (asserted;
// a round where a heartbeat's commit shared A's Kafka transaction is
// repeated), and after a SIGKILL the slot is put back to before C and A (a
// copy taken earlier replaces it: what a crash between the Kafka commit
// and the status update leaves), so the relay's own checkpoint filter must
// drop A and keep B and C.
//
// Run on PostgreSQL 17 and 18 with pgoutput, and with wal2json on 15, the
// only major with wal2json here (Debian 12's postgresql-15-wal2json; the
// npm registry's server builds of 14 and 16-18 ship none), each in
// at-least-once and exactly-once mode. One cluster per major for the whole
// binary (scripts/pg.sh), the suite's Kafka. A read_committed consumer must
// see every event in commit order: exactly once in exactly-once mode, at
// least once (first occurrences in commit order) otherwise.
#include <csignal>
#include <iostream>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/checkpoint.h"
#include "e2e/relay/relay_e2e_fixture.h"
#include "outbox/lsn.h"

namespace outbox::testing {
namespace {

using ::testing::HasSubstr;

struct Setup {
  int major;
  std::string plugin;
  bool exactly_once;
};

std::string SetupName(const ::testing::TestParamInfo<Setup>& info) {
  return absl::StrCat(
      "pg", info.param.major, "_", info.param.plugin, "_",
      info.param.exactly_once ? "exactly_once" : "at_least_once");
}

// What B (the transaction after the boundary) starts with.
enum class First { kRow, kHeartbeatMessage, kOutboxMessage };

const char* FirstName(First f) {
  switch (f) {
    case First::kRow:
      return "row";
    case First::kHeartbeatMessage:
      return "heartbeat message";
    case First::kOutboxMessage:
      return "outbox message";
  }
  return "?";
}

// A test_decoding row: lsn, xid, data.
struct Decoded {
  Lsn lsn;
  std::string xid, data;
};

class RestartBoundaryTest : public RelayE2ETest,
                            public ::testing::WithParamInterface<Setup> {
 protected:
  std::string PgConninfo() override {
    return SharedPgClusters::Conninfo(GetParam().major);
  }

  void SetUp() override {
    RelayE2ETest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_THAT(db_->Scalar("SHOW server_version_num"),
                ::testing::StartsWith(std::to_string(GetParam().major)));
    db_->Exec(
        ReadFile(std::string(getenv("OUTBOX_ROOT")) + "/sql/outbox_emit.sql"));
    prefix_ = UniqueName("msgs");
    extra_relay_args_ = {"--set", "postgres.plugin=" + GetParam().plugin,
                         "--set", "postgres.publication=" + slot_ + "_pub",
                         "--set", "outbox.messages.enabled=true",
                         "--set", "outbox.messages.prefix=" + prefix_,
                         "--set", "postgres.heartbeat_interval_s=2"};
    if (GetParam().exactly_once) {
      checkpoint_topic_ = UniqueName("cp");
      extra_relay_args_.insert(extra_relay_args_.end(),
                               {"--set", "kafka.exactly_once=true", "--set",
                                "kafka.checkpoint_topic=" + checkpoint_topic_});
    }
    aux_ = UniqueName("lsns");
    backup_ = UniqueName("rewind");
    db_->Exec("SELECT pg_create_logical_replication_slot('" + aux_ +
              "', 'test_decoding')");
  }

  void TearDown() override {
    if (relay_ != nullptr && relay_->Running()) {
      relay_->Signal(SIGKILL);
      relay_->Wait(10000);
    }
    if (db_ != nullptr) {
      for (const auto& s : {aux_, backup_}) {
        db_->Query(
               "SELECT pg_drop_replication_slot(slot_name) FROM "
               "pg_replication_slots WHERE slot_name = '" +
               s + "'")
            .status()
            .IgnoreError();
      }
    }
    RelayE2ETest::TearDown();
    if (db_ != nullptr) {
      db_->Query("DROP PUBLICATION IF EXISTS " + slot_ + "_pub")
          .status()
          .IgnoreError();
    }
  }

  // A new event id (a uuid) and its SQL: an outbox row or an outbox_emit()
  // message, both on key "k" (one partition: one total order).
  std::string Row() {
    std::string id = NewId();
    return absl::StrCat("INSERT INTO public.", table_,
                        " (id, aggregatetype, aggregateid, type, payload) "
                        "VALUES ('",
                        id, "', '", aggtype_,
                        "', 'k', 'Created', jsonb_build_object('n', ",
                        pending_.size(), "));");
  }
  std::string OutboxMessage() {
    std::string id = NewId();
    return absl::StrCat("SELECT outbox_emit('", aggtype_, "', 'k', 'Msg', '",
                        "{\"n\": ", pending_.size(), "}', NULL, '", id, "', '",
                        prefix_, "');");
  }
  // A transactional message under the relay's heartbeat prefix, with a
  // nonce no relay has (never an event); `marker` finds it in the
  // test_decoding output.
  static std::string HeartbeatMessage(const std::string& marker) {
    return "SELECT pg_logical_emit_message(true, 'outbox-relay-heartbeat', "
           "'" +
           marker + " 1700000000000000');";
  }
  std::string NewId() {
    std::string id = db_->Scalar("SELECT gen_random_uuid()");
    pending_.push_back(id);
    return id;
  }
  // The events written since the last call, now committed.
  void Committed() {
    expected_.insert(expected_.end(), pending_.begin(), pending_.end());
    pending_.clear();
  }

  // The test_decoding slot's rows (peek: nothing consumed).
  std::vector<Decoded> Peek() {
    auto rows = db_->Query(
        "SELECT lsn::text, xid::text, data FROM "
        "pg_logical_slot_peek_changes('" +
        aux_ + "', NULL, NULL, 'include-xids', '1')");
    EXPECT_TRUE(rows.ok()) << rows.status();
    std::vector<Decoded> out;
    if (!rows.ok()) return out;
    for (const auto& r : *rows) {
      absl::StatusOr<Lsn> lsn = ParseLsn(r[0]);
      EXPECT_TRUE(lsn.ok()) << r[0];
      out.push_back(Decoded{lsn.ok() ? *lsn : kInvalidLsn, r[1], r[2]});
    }
    return out;
  }
  // The xid of the transaction whose change mentions `needle`; "" if none.
  static std::string XidOf(const std::vector<Decoded>& rows,
                           const std::string& needle) {
    for (const auto& r : rows) {
      if (r.data.find(needle) != std::string::npos) return r.xid;
    }
    return "";
  }
  // The end LSN of `xid`'s commit (test_decoding reports a COMMIT at
  // txn->end_lsn) and the LSN of its first change.
  static Lsn CommitEnd(const std::vector<Decoded>& rows,
                       const std::string& xid) {
    for (const auto& r : rows) {
      if (r.xid == xid && r.data == "COMMIT " + xid) return r.lsn;
    }
    return kInvalidLsn;
  }
  static Lsn FirstChange(const std::vector<Decoded>& rows,
                         const std::string& xid) {
    for (const auto& r : rows) {
      if (r.xid == xid && r.data.rfind("BEGIN", 0) != 0) return r.lsn;
    }
    return kInvalidLsn;
  }

  // Waits (up to 10 s) until one of the relay's own heartbeats commits
  // after this call: a message under the heartbeat prefix that is not one
  // of the test's (theirs end in a fixed sent time).
  void AfterRelayHeartbeat() {
    absl::StatusOr<Lsn> from =
        ParseLsn(db_->Scalar("SELECT pg_current_wal_insert_lsn()::text"));
    ASSERT_TRUE(from.ok());
    const bool seen = WaitUntil(
        [&] {
          for (const auto& r : Peek()) {
            if (r.lsn > *from &&
                r.data.find("prefix: outbox-relay-heartbeat") !=
                    std::string::npos &&
                r.data.find(" 1700000000000000") == std::string::npos) {
              return true;
            }
          }
          return false;
        },
        10000);
    EXPECT_TRUE(seen) << "no heartbeat of the relay's committed in 10 s";
  }

  Lsn SlotConfirmed() {
    absl::StatusOr<Lsn> lsn = ParseLsn(ConfirmedFlush());
    return lsn.ok() ? *lsn : kInvalidLsn;
  }

  // The newest checkpoint record on this test's checkpoint topic, once one
  // covers `at_least` or 30 s passed (the slot confirms after the Kafka
  // commit, and the broker writes the commit's markers, which make it
  // readable, a moment after that). The topic is read to its end, and on
  // for up to 3 s while a transaction on it is undecided (a checkpoint
  // committed just before the relay stopped).
  Checkpoint LastCheckpoint(Lsn at_least) {
    Checkpoint last;
    WaitUntil(
        [&] {
          last = Checkpoint();
          for (const auto& m : ConsumeToEnd(env_->kafka_brokers(),
                                            {checkpoint_topic_}, 60000, 3000)) {
            absl::StatusOr<Checkpoint> c = Checkpoint::Parse(m.value);
            EXPECT_TRUE(c.ok()) << c.status();
            if (c.ok() && c->slot == slot_) last = *c;
          }
          return last.end_lsn >= at_least;
        },
        30000);
    return last;
  }

  bool SlotInactive() {
    return db_->Scalar(
               "SELECT count(*) FROM pg_replication_slots WHERE "
               "slot_name = '" +
               slot_ + "' AND NOT active") == "1";
  }

  // One round: the boundary built, the relay stopped with `sig` after it
  // confirmed A, B and C committed while it is down, the relay started
  // again. Returns whether every boundary of the round occurred.
  bool Round(int sig, First first) {
    const bool eos = GetParam().exactly_once;
    const bool rewind = eos && sig == SIGKILL;
    auto conn_ab = PgConn::Connect(pg_conninfo_);
    auto conn_c = PgConn::Connect(pg_conninfo_);
    if (conn_ab == nullptr || conn_c == nullptr) {
      ADD_FAILURE() << "cannot connect";
      return false;
    }
    if (rewind) {
      // A copy of the slot once it confirmed everything so far: put back
      // after the SIGKILL, it replays A, which the checkpoint covers.
      ExpectConfirmedReachesCurrentWal(60000);
      db_->Exec("SELECT pg_copy_logical_replication_slot('" + slot_ + "', '" +
                backup_ + "')");
    }
    // C: open before A, so its first change lies below A's end LSN.
    std::string c_sql = "BEGIN;";
    c_sql += Row();
    const std::string c_id = pending_.back();
    conn_c->Exec(c_sql);
    std::vector<std::string> c_events = pending_;
    pending_.clear();
    // A, then B's first change right after A's commit record. Built one
    // statement at a time: ids are recorded in the order they are written.
    const std::string marker = absl::StrCat(absl::Hex(0xbe000000 + rounds_));
    std::string a_sql = "BEGIN;";
    switch (first) {
      case First::kRow:
        a_sql += Row();
        break;
      case First::kHeartbeatMessage:
        a_sql += Row();
        a_sql += OutboxMessage();
        a_sql += HeartbeatMessage("a" + marker);
        break;
      case First::kOutboxMessage:
        a_sql += OutboxMessage();
        break;
    }
    const std::string a_id = pending_.front();
    a_sql += "COMMIT;";
    std::vector<std::string> a_events = pending_;
    pending_.clear();
    // B: each transactional message followed by a row, whose change LSN is
    // the message's (PostgreSQL reports a message at its record's end).
    std::string b_sql = "BEGIN;";
    switch (first) {
      case First::kRow:
        b_sql += Row();
        b_sql += HeartbeatMessage("b" + marker);
        b_sql += Row();
        b_sql += OutboxMessage();
        b_sql += Row();
        break;
      case First::kHeartbeatMessage:
        b_sql += HeartbeatMessage("b" + marker);
        b_sql += Row();
        b_sql += OutboxMessage();
        b_sql += Row();
        break;
      case First::kOutboxMessage:
        b_sql += OutboxMessage();
        b_sql += Row();
        b_sql += HeartbeatMessage("b" + marker);
        b_sql += Row();
        break;
    }
    const std::string b_id = pending_.front();
    // Exactly once: A and B right after one of the relay's own heartbeats
    // committed, so that the next one (2 s later) does not commit while A's
    // Kafka transaction is open and move the checkpoint past A. Written at
    // a fixed time after the relay's start instead, a round met the
    // heartbeat at the same point of its period in every attempt on a slow
    // machine, and the boundary never occurred.
    if (eos) AfterRelayHeartbeat();
    conn_ab->Exec(a_sql + b_sql);
    expected_.insert(expected_.end(), a_events.begin(), a_events.end());
    std::vector<std::string> b_events = pending_;
    pending_.clear();

    // A's end LSN, from the test_decoding slot (A is committed).
    std::vector<Decoded> rows = Peek();
    const std::string a_xid = XidOf(rows, a_id);
    const Lsn a_end = CommitEnd(rows, a_xid);
    if (a_end == kInvalidLsn) {
      ADD_FAILURE() << "A not decoded by the test_decoding slot";
      return false;
    }
    // The relay confirms A (in exactly-once mode: after the Kafka
    // transaction holding A and its checkpoint committed).
    EXPECT_TRUE(WaitUntil([&] { return SlotConfirmed() >= a_end; }, 60000))
        << "A (end " << FormatLsn(a_end)
        << ") not confirmed: " << ConfirmedFlush() << "\n"
        << relay_->Output();
    relay_->Signal(sig);
    const int code = relay_->Wait(60000);
    if (sig == SIGTERM) {
      EXPECT_EQ(code, 0) << relay_->Output();
    }
    EXPECT_TRUE(WaitUntil([&] { return SlotInactive(); }, 30000));
    const Lsn confirmed_at_stop = SlotConfirmed();
    // The newest committed checkpoint: what the next session starts from.
    Checkpoint checkpoint;
    if (eos) checkpoint = LastCheckpoint(a_end);
    // In exactly-once mode the checkpoint covers A; it names A's end LSN
    // exactly unless one of the relay's heartbeat transactions committed
    // in the same Kafka transaction (then the round is repeated).
    if (eos) {
      EXPECT_GE(checkpoint.end_lsn, a_end);
    }
    if (rewind) {
      db_->Exec("SELECT pg_drop_replication_slot('" + slot_ + "')");
      db_->Exec("SELECT pg_copy_logical_replication_slot('" + backup_ + "', '" +
                slot_ + "')");
      db_->Exec("SELECT pg_drop_replication_slot('" + backup_ + "')");
      EXPECT_LT(SlotConfirmed(), a_end) << "the slot was not put back";
    }
    // B and C commit while the relay is down.
    conn_ab->Exec("COMMIT;");
    expected_.insert(expected_.end(), b_events.begin(), b_events.end());
    conn_c->Exec("COMMIT;");
    expected_.insert(expected_.end(), c_events.begin(), c_events.end());

    rows = Peek();
    const std::string b_xid = XidOf(rows, b_id);
    const std::string c_xid = XidOf(rows, c_id);
    const Lsn b_first = FirstChange(rows, b_xid);
    const Lsn c_first = FirstChange(rows, c_xid);
    const Lsn c_end = CommitEnd(rows, c_xid);
    // C interleaves with A: first change below A's end, commit after it.
    EXPECT_LT(c_first, a_end);
    EXPECT_GT(c_end, a_end);
    // The boundaries: B's first change at A's end LSN (B starting with a
    // row; a message's LSN is its record's end, so a message-first B starts
    // past it), and every message of B at the same LSN as the row after it.
    std::string shared;  // "<message LSN>=<row LSN>" pairs
    bool boundary = first != First::kRow || b_first == a_end;
    const Decoded* message = nullptr;
    for (const auto& r : rows) {
      if (r.xid != b_xid || r.data.rfind("BEGIN", 0) == 0 ||
          r.data.rfind("COMMIT", 0) == 0) {
        continue;
      }
      if (message != nullptr) {
        absl::StrAppend(&shared, " ", FormatLsn(message->lsn), "=",
                        FormatLsn(r.lsn));
        boundary = boundary && message->lsn == r.lsn;
        message = nullptr;
      }
      if (r.data.rfind("message:", 0) == 0) message = &r;
    }
    boundary =
        boundary && !shared.empty() && (!eos || checkpoint.end_lsn == a_end);
    std::cerr << "pg" << GetParam().major << " " << GetParam().plugin
              << (eos ? " exactly-once" : " at-least-once") << " "
              << (sig == SIGKILL ? "SIGKILL" : "SIGTERM") << ", B starts with "
              << FirstName(first) << ": A.end_lsn=" << FormatLsn(a_end)
              << " B.first_change_lsn=" << FormatLsn(b_first)
              << " B.message_lsn=next_row_lsn:" << shared
              << " C.first_change_lsn=" << FormatLsn(c_first)
              << " confirmed_flush_at_stop=" << FormatLsn(confirmed_at_stop)
              << (eos ? " checkpoint.end_lsn=" + FormatLsn(checkpoint.end_lsn)
                      : "")
              << (rewind ? " slot put back to " + ConfirmedFlush() : "")
              << (boundary ? "" : " (boundary missed: round repeated)") << "\n";
    // Consume the test_decoding slot's rows so far.
    db_->Exec("SELECT count(*) FROM pg_logical_slot_get_changes('" + aux_ +
              "', NULL, NULL)");
    ++rounds_;
    StartRelay();
    EXPECT_TRUE(WaitActive()) << relay_->Output();
    return boundary;
  }

  std::string prefix_, checkpoint_topic_, aux_, backup_;
  std::vector<std::string> pending_;   // written, not committed yet
  std::vector<std::string> expected_;  // committed, in commit order
  int rounds_ = 0;
};

TEST_P(RestartBoundaryTest, NothingSkippedNorReorderedAcrossRestarts) {
  StartRelay();
  ASSERT_TRUE(WaitActive()) << relay_->Output();
  // An event before the first boundary.
  db_->Exec(Row());
  Committed();
  for (int sig : {SIGKILL, SIGTERM}) {
    for (First first :
         {First::kRow, First::kHeartbeatMessage, First::kOutboxMessage}) {
      bool boundary = false;
      // Another backend writing WAL between A's commit and B's first change
      // (rare: one statement string writes both), or in exactly-once mode a
      // heartbeat committed in A's Kafka transaction, misses the boundary;
      // the round is then repeated, and the boundary must occur.
      for (int attempt = 0; attempt < 4 && !boundary; ++attempt) {
        boundary = Round(sig, first);
        if (HasFatalFailure()) return;
      }
      EXPECT_TRUE(boundary)
          << "the boundary never occurred (A's end LSN at B's first change, "
             "messages at the next change's LSN, the checkpoint at A's end) ("
          << (sig == SIGKILL ? "SIGKILL" : "SIGTERM") << ", "
          << FirstName(first) << ")";
    }
  }
  db_->Exec(Row());
  Committed();
  // Everything arrives; then a clean stop, and the whole topic is read.
  std::set<std::string> want(expected_.begin(), expected_.end());
  ConsumeUntil(
      env_->kafka_brokers(), {topic_},
      [&](const std::vector<KafkaMessage>& msgs) {
        std::set<std::string> seen;
        for (const auto& m : msgs) {
          if (want.count(m.Header("id"))) seen.insert(m.Header("id"));
        }
        return seen.size() == want.size();
      },
      120000);
  relay_->Signal(SIGTERM);
  EXPECT_EQ(relay_->Wait(60000), 0) << relay_->Output();
  // The whole topic (the relay stopped cleanly: in exactly-once mode its
  // last commit's markers may still be on their way, hence the settling).
  auto got = ConsumeToEnd(env_->kafka_brokers(), {topic_}, 60000, 5000);
  std::vector<std::string> firsts;
  std::map<std::string, int> count;
  for (const auto& m : got) {
    const std::string id = m.Header("id");
    EXPECT_TRUE(want.count(id)) << "unknown event " << id;
    if (count[id]++ == 0) firsts.push_back(id);
  }
  int missing = 0, duplicates = 0;
  for (const auto& id : expected_) {
    if (count[id] == 0) ++missing;
    if (count[id] > 1) duplicates += count[id] - 1;
  }
  std::cerr << expected_.size() << " events committed, " << got.size()
            << " records read, " << missing << " missing, " << duplicates
            << " duplicates\n";
  EXPECT_EQ(missing, 0) << relay_->Output();
  // Commit order (one key, one partition): first occurrences in order.
  EXPECT_EQ(firsts, expected_);
  if (GetParam().exactly_once) {
    EXPECT_EQ(duplicates, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Majors, RestartBoundaryTest,
                         ::testing::Values(Setup{17, "pgoutput", false},
                                           Setup{17, "pgoutput", true},
                                           Setup{18, "pgoutput", false},
                                           Setup{18, "pgoutput", true},
                                           Setup{15, "wal2json", false},
                                           Setup{15, "wal2json", true}),
                         SetupName);

}  // namespace
}  // namespace outbox::testing
