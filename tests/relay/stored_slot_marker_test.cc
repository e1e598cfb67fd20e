// StoredSlotMarker with the file store, against a temporary state directory: a
// slot is created only on a genuine first run, and each refusal names the lost
// range.
#include "relay/stored_slot_marker.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pg/libpq_replication_stream.h"

namespace outbox {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr Lsn kL1 = 0x16B3748;  // 0/16B3748
constexpr Lsn kL2 = 0x200000000 + 0x28;

class SlotMarkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/slot_marker_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/state/relay";  // Open() creates the missing parents
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  std::unique_ptr<StoredSlotMarker> Open(Lsn acknowledged = kInvalidLsn) {
    auto h = OpenFileSlotMarker(dir_, "outbox_relay", acknowledged);
    EXPECT_TRUE(h.ok()) << h.status();
    return h.ok() ? std::move(*h) : nullptr;
  }
  static ServerInfo Server(const std::string& system_id, Lsn confirmed) {
    ServerInfo s;
    s.system_id = system_id;
    s.dbname = "app";
    s.slot_confirmed_flush = confirmed;
    return s;
  }
  std::string Marker() const {
    std::ifstream in(dir_ + "/outbox_relay.slot");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  static std::string Refusal(const absl::Status& s) {
    EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
    return std::string(s.message());
  }

  std::string root_, dir_;
};

TEST_F(SlotMarkerTest, AFirstRunMayCreateAndIsRecorded) {
  auto h = Open();
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->where(), dir_ + "/outbox_relay.slot");
  struct stat st;
  ASSERT_EQ(stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(h->CheckCreate(Server("7001", kInvalidLsn)).ok());
  EXPECT_EQ(Marker(), "");  // nothing written before the slot exists
  ASSERT_TRUE(h->Record(Server("7001", kL1)).ok());
  EXPECT_THAT(Marker(), AllOf(HasSubstr("\nslot=outbox_relay\n"),
                              HasSubstr("\nsystem_id=7001\n"),
                              HasSubstr("\ndatabase=app\n"),
                              HasSubstr("\nconfirmed_lsn=0/16B3748\n")));
  // No temporary file is left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);
}

TEST_F(SlotMarkerTest, TheTimelineAndHostAreRecordedForTheNextProcess) {
  auto h = Open();
  EXPECT_FALSE(h->RecordedServer().has_value());  // no marker yet
  ServerInfo s = Server("7001", kL1);
  s.timeline = 1;
  s.endpoint = "127.0.0.1:5432";
  ASSERT_TRUE(h->Record(s).ok());
  // A promotion rewrites the marker even at the same confirmed position.
  s.timeline = 2;
  s.endpoint = "127.0.0.1:5433";
  ASSERT_TRUE(h->Record(s).ok());
  EXPECT_THAT(Marker(), AllOf(HasSubstr("\ntimeline=2\n"),
                              HasSubstr("\nendpoint=127.0.0.1:5433\n")));
  auto next = Open();
  ASSERT_TRUE(next->RecordedServer().has_value());
  EXPECT_EQ(next->RecordedServer()->system_id, "7001");
  EXPECT_EQ(next->RecordedServer()->timeline, 2);
  EXPECT_EQ(next->RecordedServer()->endpoint, "127.0.0.1:5433");
}

TEST_F(SlotMarkerTest, AMarkerWithoutTimelineStillReads) {
  std::filesystem::create_directories(dir_);
  std::ofstream(dir_ + "/outbox_relay.slot")
      << "slot=outbox_relay\nsystem_id=7001\ndatabase=app\n"
         "confirmed_lsn=0/16B3748\n";
  auto h = Open();
  EXPECT_FALSE(h->RecordedServer().has_value());
  // Still the slot's marker: a missing slot is refused.
  EXPECT_THAT(Refusal(h->CheckCreate(Server("7001", kInvalidLsn))),
              HasSubstr("0/16B3748"));
}

TEST_F(SlotMarkerTest, ThisProcessRefusesASlotItHasSeen) {
  auto h = Open();
  ASSERT_TRUE(h->Record(Server("7001", kL1)).ok());
  // Even with the marker gone, this process remembers the slot.
  std::filesystem::remove(h->where());
  std::string why = Refusal(h->CheckCreate(Server("7001", kInvalidLsn)));
  EXPECT_THAT(why, AllOf(HasSubstr("replication slot \"outbox_relay\" does "
                                   "not exist, but this relay streamed from "
                                   "it before"),
                         HasSubstr("events committed after 0/16B3748 are in "
                                   "no slot"),
                         HasSubstr("outbox-relay republish --since"),
                         HasSubstr("--set postgres.acknowledge_slot_loss="
                                   "0/16B3748"),
                         HasSubstr("or delete " + h->where())));
  EXPECT_EQ(why.find('\n'), std::string::npos);
}

// A standby sees the slot held by the other instance. Its file marker is
// its own (a pod's volume): it writes what it saw, so that it refuses to
// create the slot should it be dropped, even after the standby itself was
// restarted or rescheduled without ever holding the slot (found running
// the chart's StatefulSet: kube_play_test.sh statefulset).
TEST_F(SlotMarkerTest, AStandbyWritesTheSlotItSawToItsOwnMarker) {
  std::unique_ptr<StoredSlotMarker> h = Open();
  ASSERT_TRUE(h->Seen(Server("7001", kL1)).ok());
  EXPECT_THAT(Marker(), AllOf(HasSubstr("system_id=7001"),
                              HasSubstr("confirmed_lsn=0/16B3748")));
  std::string why = Refusal(h->CheckCreate(Server("7001", kInvalidLsn)));
  EXPECT_THAT(why, HasSubstr("0/16B3748"));
  // Restarted (a rescheduled pod): the marker refuses.
  h.reset();
  why = Refusal(Open()->CheckCreate(Server("7001", kInvalidLsn)));
  EXPECT_THAT(why, HasSubstr("events committed after 0/16B3748"));
}

// Seen every standby retry (1 s by default): a new server is written at
// once, a new position of the same server not more often than the holder's
// slot monitor writes one.
TEST_F(SlotMarkerTest, AStandbyRewritesItsMarkerForANewServerAtOnce) {
  std::unique_ptr<StoredSlotMarker> h = Open();
  ASSERT_TRUE(h->Seen(Server("7001", kL1)).ok());
  ASSERT_TRUE(h->Seen(Server("7002", kL2)).ok());
  EXPECT_THAT(Marker(), AllOf(HasSubstr("system_id=7002"),
                              HasSubstr("confirmed_lsn=2/28")));
}

TEST_F(SlotMarkerTest, AStandbyThatCannotWriteItsMarkerSaysSo) {
  std::unique_ptr<StoredSlotMarker> h = Open();
  // The state directory gone, a file in its place: unwritable even by root.
  std::filesystem::remove_all(dir_);
  std::ofstream(dir_) << "not a directory";
  absl::Status s = h->Seen(Server("7001", kL1));
  ASSERT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("cannot record replication slot \"outbox_relay\" in "
                        "its marker"));
}

TEST_F(SlotMarkerTest, TheMarkerRefusesAfterARestart) {
  ASSERT_TRUE(Open()->Record(Server("7001", kL1)).ok());
  auto later = Open();
  std::string why = Refusal(later->CheckCreate(Server("7001", kInvalidLsn)));
  EXPECT_THAT(why, HasSubstr("events committed after 0/16B3748"));
  // Deleting the marker is a fresh start.
  std::filesystem::remove(later->where());
  EXPECT_TRUE(Open()->CheckCreate(Server("7001", kInvalidLsn)).ok());
}

TEST_F(SlotMarkerTest, AnotherSystemIdentifierIsNamed) {
  ASSERT_TRUE(Open()->Record(Server("7001", kL1)).ok());
  std::string why = Refusal(Open()->CheckCreate(Server("7999", kInvalidLsn)));
  EXPECT_THAT(why, AllOf(HasSubstr("does not exist on this server (system "
                                   "identifier 7999"),
                         HasSubstr("on another one (system identifier 7001"),
                         HasSubstr("events committed after 0/16B3748")));
}

TEST_F(SlotMarkerTest, TheConfirmedPositionMovesTheRecordedRange) {
  auto h = Open();
  EXPECT_TRUE(h->Confirmed(kL2).ok());  // before Record(): ignored
  EXPECT_EQ(Marker(), "");
  ASSERT_TRUE(h->Record(Server("7001", kL1)).ok());
  ASSERT_TRUE(h->Confirmed(kL2).ok());
  EXPECT_THAT(Marker(), HasSubstr("confirmed_lsn=2/28\n"));
  EXPECT_THAT(Refusal(Open()->CheckCreate(Server("7001", kInvalidLsn))),
              HasSubstr("events committed after 2/28 are in no slot"));
}

// Issue 32 item 3: a caller that read the slot before a newer position was
// recorded (the slot monitor's query racing the session's end, another
// instance) never moves the marker back.
TEST_F(SlotMarkerTest, TheRecordedPositionNeverGoesBackwards) {
  auto h = Open();
  ASSERT_TRUE(h->Record(Server("7001", kL2)).ok());
  ASSERT_TRUE(h->Confirmed(kL1).ok());
  EXPECT_THAT(Marker(), HasSubstr("confirmed_lsn=2/28\n"));
  ASSERT_TRUE(h->Record(Server("7001", kL1)).ok());
  EXPECT_THAT(Marker(), HasSubstr("confirmed_lsn=2/28\n"));
  EXPECT_THAT(Refusal(Open()->CheckCreate(Server("7001", kInvalidLsn))),
              HasSubstr("events committed after 2/28 are in no slot"));
  // Another server's slot is recorded as it is.
  ASSERT_TRUE(h->Record(Server("7999", kL1)).ok());
  EXPECT_THAT(Marker(), HasSubstr("confirmed_lsn=0/16B3748\n"));
}

TEST_F(SlotMarkerTest, AcknowledgingTheNamedLossCreatesOnce) {
  ASSERT_TRUE(Open()->Record(Server("7001", kL1)).ok());
  // Another LSN does not acknowledge this loss.
  std::string why = Refusal(Open(kL2)->CheckCreate(Server("7001", 0)));
  EXPECT_THAT(why, HasSubstr("(postgres.acknowledge_slot_loss is 2/28, not "
                             "0/16B3748)"));
  auto h = Open(kL1);
  ASSERT_TRUE(h->CheckCreate(Server("7001", kInvalidLsn)).ok());
  ASSERT_TRUE(h->Record(Server("7001", kL2)).ok());  // the new slot
  // The same acknowledgement left in the config does not cover a later
  // loss: the new slot recorded a new position.
  EXPECT_THAT(Refusal(Open(kL1)->CheckCreate(Server("7001", 0))),
              HasSubstr("events committed after 2/28"));
}

TEST_F(SlotMarkerTest, AnUnreadableMarkerRefusesUntilRewritten) {
  ASSERT_NE(Open(), nullptr);
  for (const char* text :
       {"garbage", "slot=other\nsystem_id=1\ndatabase=a\nconfirmed_lsn=0/1\n",
        "slot=outbox_relay\nsystem_id=1\ndatabase=a\nconfirmed_lsn=zz\n"}) {
    std::ofstream(dir_ + "/outbox_relay.slot") << text;
    auto h = Open(kL1);
    EXPECT_THAT(Refusal(h->CheckCreate(Server("7001", 0))),
                AllOf(HasSubstr("is unreadable"), HasSubstr("delete")))
        << text;
    // The slot exists after all: its marker is rewritten.
    ASSERT_TRUE(h->Record(Server("7001", kL1)).ok());
    EXPECT_THAT(Marker(), HasSubstr("confirmed_lsn=0/16B3748"));
  }
}

TEST_F(SlotMarkerTest, AStateDirThatCannotBeMadeIsAPrecondition) {
  std::ofstream(root_ + "/file") << "x";
  auto h = OpenFileSlotMarker(root_ + "/file/state", "s", kInvalidLsn);
  ASSERT_FALSE(h.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(h.status())) << h.status();
  EXPECT_THAT(std::string(h.status().message()),
              HasSubstr("postgres.state_dir"));
}

TEST_F(SlotMarkerTest, DefaultStateDirFollowsXdgThenHome) {
  const char* xdg = getenv("XDG_STATE_HOME");
  const char* home = getenv("HOME");
  std::string saved_xdg = xdg ? xdg : "", saved_home = home ? home : "";
  setenv("XDG_STATE_HOME", "/x/state", 1);
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(*DefaultStateDir(), "/x/state/outbox-relay");
  unsetenv("XDG_STATE_HOME");
  EXPECT_EQ(*DefaultStateDir(), "/home/u/.local/state/outbox-relay");
  unsetenv("HOME");
  EXPECT_TRUE(absl::IsFailedPrecondition(DefaultStateDir().status()));
  if (xdg) setenv("XDG_STATE_HOME", saved_xdg.c_str(), 1);
  if (home) setenv("HOME", saved_home.c_str(), 1);
}

}  // namespace
}  // namespace outbox

namespace outbox {
namespace {

// A store keyed by system identifier (as KafkaSlotMarkerStore is), in memory,
// that can be made unreachable.
class MemoryStore final : public SlotMarkerStore {
 public:
  explicit MemoryStore(std::map<std::string, std::string>* records)
      : records_(records) {}
  absl::StatusOr<std::optional<std::string>> Load(
      const std::string& system_id) override {
    ++loads;
    if (down) return absl::UnavailableError("kafka down");
    auto it = records_->find(system_id);
    if (it == records_->end()) return std::nullopt;
    return it->second;
  }
  absl::Status Save(const std::string& system_id,
                    const std::string& text) override {
    if (down) return absl::UnavailableError("kafka down");
    (*records_)[system_id] = text;
    return absl::OkStatus();
  }
  bool keyed_by_system() const override { return true; }
  bool shared() const override { return true; }
  std::string where(const std::string& system_id) const override {
    return "record " + system_id;
  }
  bool down = false;
  int loads = 0;

 private:
  std::map<std::string, std::string>* records_;
};

ServerInfo At(const std::string& system_id, Lsn confirmed) {
  ServerInfo s;
  s.system_id = system_id;
  s.dbname = "app";
  s.slot_confirmed_flush = confirmed;
  return s;
}

// postgres.slot_marker kafka: the marker is shared, so a new instance with
// nothing of its own refuses a slot another instance streamed from.
TEST(SlotMarkerKeyedStoreTest, ANewInstanceRefusesWhatAnotherRecorded) {
  std::map<std::string, std::string> topic;
  {
    auto store = std::make_unique<MemoryStore>(&topic);
    MemoryStore* s = store.get();
    auto first = StoredSlotMarker::Open(std::move(store), "outbox_relay", 0);
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(s->loads, 0);  // read once the server is known
    ASSERT_TRUE((*first)->CheckCreate(At("7001", 0)).ok());
    ASSERT_TRUE((*first)->Record(At("7001", 0x16B3748)).ok());
    ASSERT_TRUE((*first)->Confirmed(0x200000028).ok());
  }
  auto store = std::make_unique<MemoryStore>(&topic);
  MemoryStore* s = store.get();
  auto replaced = StoredSlotMarker::Open(std::move(store), "outbox_relay", 0);
  ASSERT_TRUE(replaced.ok());
  s->down = true;  // Kafka unreachable: retried, not a first run
  EXPECT_TRUE(absl::IsUnavailable((*replaced)->CheckCreate(At("7001", 0))));
  s->down = false;
  absl::Status refused = (*replaced)->CheckCreate(At("7001", 0));
  ASSERT_TRUE(absl::IsFailedPrecondition(refused)) << refused;
  EXPECT_THAT(std::string(refused.message()),
              AllOf(HasSubstr("events committed after 2/28 are in no slot"),
                    HasSubstr("record 7001")));
  // Another cluster's key holds no marker: this process still remembers.
  EXPECT_TRUE(
      absl::IsFailedPrecondition((*replaced)->CheckCreate(At("7999", 0))));
}

// A shared marker is the holder's to write: a standby remembers what it saw
// (and refuses to create the slot) but writes nothing, so one instance at
// a time writes the record.
TEST(SlotMarkerKeyedStoreTest, AStandbyRemembersASharedMarkerWithoutWriting) {
  std::map<std::string, std::string> topic;
  auto marker = StoredSlotMarker::Open(std::make_unique<MemoryStore>(&topic),
                                       "outbox_relay", 0);
  ASSERT_TRUE(marker.ok());
  ASSERT_TRUE((*marker)->Seen(At("7001", 0x16B3748)).ok());
  EXPECT_TRUE(topic.empty());
  absl::Status refused = (*marker)->CheckCreate(At("7001", 0));
  ASSERT_TRUE(absl::IsFailedPrecondition(refused)) << refused;
  ASSERT_TRUE((*marker)->Record(At("7001", 0x16B3748)).ok());  // the holder
  EXPECT_THAT(topic["7001"], HasSubstr("confirmed_lsn=0/16B3748"));
}

TEST(SlotMarkerKeyedStoreTest, ARecordKafkaRefusedIsSavedAgain) {
  std::map<std::string, std::string> topic;
  auto store = std::make_unique<MemoryStore>(&topic);
  MemoryStore* s = store.get();
  auto h = StoredSlotMarker::Open(std::move(store), "outbox_relay", 0);
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE((*h)->CheckCreate(At("7001", 0)).ok());
  s->down = true;
  EXPECT_TRUE(absl::IsUnavailable((*h)->Record(At("7001", 0x16B3748))));
  s->down = false;
  ASSERT_TRUE((*h)->Record(At("7001", 0x16B3748)).ok());  // unchanged, saved
  EXPECT_THAT(topic["7001"], HasSubstr("confirmed_lsn=0/16B3748"));
}

// A keyed store whose Save() blocks, while `hold` is set, until released:
// a Kafka flush during an outage (up to kafka.flush_timeout_ms, 30 s).
class HeldStore final : public SlotMarkerStore {
 public:
  absl::StatusOr<std::optional<std::string>> Load(const std::string&) override {
    return std::nullopt;
  }
  absl::Status Save(const std::string&, const std::string& text) override {
    std::unique_lock<std::mutex> lock(mu);
    ++saving;
    changed.notify_all();
    changed.wait(lock, [&] { return !hold; });
    --saving;
    saved = text;
    return absl::OkStatus();
  }
  bool keyed_by_system() const override { return true; }
  bool shared() const override { return true; }
  std::string where(const std::string&) const override { return "held"; }
  void Release() {
    std::lock_guard<std::mutex> lock(mu);
    hold = false;
    changed.notify_all();
  }

  std::mutex mu;
  std::condition_variable changed;
  bool hold = false;
  int saving = 0;
  std::string saved;
};

// Issue 32 item 3: while one thread's write waits for Kafka, where() (the
// supervisor's logs, the status page) and another Confirmed() (the
// supervisor at a session's end) return at once: the liveness heartbeat,
// which the supervisor turns, is never held up behind the marker's flush.
TEST(SlotMarkerKeyedStoreTest, NothingWaitsForAWriteUnderWay) {
  auto store = std::make_unique<HeldStore>();
  HeldStore* s = store.get();
  auto h = StoredSlotMarker::Open(std::move(store), "outbox_relay", 0);
  ASSERT_TRUE(h.ok());
  StoredSlotMarker* marker = h->get();
  ASSERT_TRUE(marker->Record(At("7001", 0x100)).ok());
  s->hold = true;
  std::thread writer([&] { marker->Confirmed(0x200).IgnoreError(); });
  bool writing = false;
  {
    std::unique_lock<std::mutex> lock(s->mu);
    writing = s->changed.wait_for(lock, std::chrono::seconds(30),
                                  [&] { return s->saving == 1; });
  }
  auto ready = [](auto& f) {
    return f.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  };
  auto where = std::async(std::launch::async, [&] { return marker->where(); });
  auto confirmed =
      std::async(std::launch::async, [&] { return marker->Confirmed(0x300); });
  // The next session's Record() of the slot the store guards already.
  auto recorded = std::async(std::launch::async,
                             [&] { return marker->Record(At("7001", 0x180)); });
  const bool where_returned = ready(where);
  const bool confirmed_returned = ready(confirmed);
  const bool recorded_returned = ready(recorded);
  s->Release();  // before any assertion can end the test
  writer.join();
  ASSERT_TRUE(writing);
  EXPECT_TRUE(where_returned) << "where() waited for the marker's write";
  EXPECT_TRUE(confirmed_returned)
      << "Confirmed() waited for another thread's write";
  EXPECT_TRUE(recorded_returned)
      << "Record() waited for another thread's write";
  EXPECT_TRUE(confirmed.get().ok());
  EXPECT_TRUE(recorded.get().ok());
  // The position remembered meanwhile (never moved back by the older
  // Record()) is written by the next call.
  ASSERT_TRUE(marker->Confirmed(0x300).ok());
  EXPECT_THAT(s->saved, HasSubstr("confirmed_lsn=0/300\n"));
}

}  // namespace
}  // namespace outbox
