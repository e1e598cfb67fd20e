// Fault-injecting fakes of the pipeline's outside world, for unit tests of
// the Relay loop: a scripted ReplicationStream and a controllable EventSink.
#ifndef OUTBOX_TESTS_RELAY_FAKES_H_
#define OUTBOX_TESTS_RELAY_FAKES_H_

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "outbox/event_sink.h"
#include "outbox/replication_stream.h"

namespace outbox::testing {

// Plays a script of messages; records every status update.
class FakeStream : public ReplicationStream {
 public:
  struct Status {
    Lsn received, flushed;
  };

  void AddData(Lsn lsn, std::string json) {
    script_.push_back({StreamMessage::Type::kXLogData, lsn, lsn, false,
                       std::move(json), false});
  }
  void AddKeepalive(Lsn wal_end, bool reply = false) {
    script_.push_back(
        {StreamMessage::Type::kKeepalive, 0, wal_end, reply, "", false});
  }
  // The connection drops when the script reaches this point.
  void AddDisconnect() { script_.push_back({{}, 0, 0, false, "", true}); }

  absl::Status Start(Lsn start) override {
    started_at_ = start;
    return absl::OkStatus();
  }
  absl::StatusOr<bool> Read(StreamMessage* out) override {
    if (script_.empty()) return false;
    current_ = std::move(script_.front());
    script_.pop_front();
    if (current_.disconnect) {
      return absl::UnavailableError("fake connection dropped");
    }
    out->type = current_.type;
    out->data_start = current_.data_start;
    out->wal_end = current_.wal_end;
    out->reply_requested = current_.reply;
    out->payload = current_.payload;
    ++reads_;
    return true;
  }
  absl::Status SendStatus(Lsn received, Lsn flushed, bool) override {
    statuses_.push_back({received, flushed});
    if (on_status) on_status(flushed);
    return absl::OkStatus();
  }
  int socket() const override { return -1; }
  absl::Status Stop() override {
    stopped_ = true;
    return absl::OkStatus();
  }

  bool done() const { return script_.empty(); }
  size_t remaining() const { return script_.size(); }
  int reads() const { return reads_; }
  Lsn started_at() const { return started_at_; }
  bool stopped() const { return stopped_; }
  const std::vector<Status>& statuses() const { return statuses_; }
  Lsn last_flushed() const {
    return statuses_.empty() ? kInvalidLsn : statuses_.back().flushed;
  }
  std::function<void(Lsn flushed)> on_status;

 private:
  struct Item {
    StreamMessage::Type type = StreamMessage::Type::kKeepalive;
    Lsn data_start = 0, wal_end = 0;
    bool reply = false;
    std::string payload;
    bool disconnect = false;
  };
  std::deque<Item> script_;
  Item current_;
  int reads_ = 0;
  Lsn started_at_ = kInvalidLsn;
  bool stopped_ = false;
  std::vector<Status> statuses_;
};

// Keeps produced records until the test (or on_poll) reports them.
class FakeSink : public EventSink {
 public:
  struct Produced {
    uint64_t ticket;
    std::string topic, key, value, event_id;
    bool value_is_null;
    std::map<std::string, std::string> headers;
    bool reported = false;
  };

  void SetDeliveryHandler(DeliveryHandler handler) override {
    handler_ = std::move(handler);
  }
  absl::Status Produce(const Record& r, uint64_t ticket) override {
    if (!health_.ok()) return health_;  // as the contract says
    if (!produce_error.ok()) return produce_error;
    if (queue_limit >= 0 && outstanding() >= queue_limit) {
      return absl::ResourceExhaustedError("fake queue full");
    }
    if (!reject_topic.empty() && r.topic == reject_topic) {
      return absl::InvalidArgumentError("fake: topic rejected");
    }
    Produced p{ticket,
               r.topic,
               std::string(r.key),
               std::string(r.value),
               std::string(r.event_id),
               r.value_is_null,
               {}};
    for (const Header& h : r.headers) {
      p.headers[h.name] = std::string(h.value);
    }
    produced_.push_back(std::move(p));
    return absl::OkStatus();
  }
  int Poll(int) override {
    ++polls_;
    if (on_poll) on_poll();
    return 0;
  }
  absl::Status Flush(int) override {
    if (on_flush_extra) on_flush_extra();
    if (on_flush) on_flush();
    return outstanding() == 0 ? absl::OkStatus()
                              : absl::DeadlineExceededError("fake flush");
  }
  // Fails every unreported record with a purge error, as RdKafkaSink does.
  void Purge() override {
    ++purges_;
    for (size_t i = 0; i < produced_.size(); ++i) {
      Report(i, absl::UnavailableError("fake: purged"));
    }
  }
  absl::Status health() const override { return health_; }
  int64_t outstanding() const override {
    int64_t n = 0;
    for (const auto& p : produced_) n += !p.reported;
    return n;
  }

  // Reports produced record i with `status`.
  void Report(size_t i, absl::Status status = absl::OkStatus()) {
    Produced& p = produced_.at(i);
    if (p.reported) return;
    p.reported = true;
    DeliveryReport r;
    r.ticket = p.ticket;
    r.status = std::move(status);
    r.record.topic = p.topic;
    r.record.key = p.key;
    r.record.value = p.value;
    r.record.event_id = p.event_id;
    handler_(r);
  }
  void ReportAll() {
    for (size_t i = 0; i < produced_.size(); ++i) Report(i);
  }
  std::vector<size_t> Unreported() const {
    std::vector<size_t> out;
    for (size_t i = 0; i < produced_.size(); ++i) {
      if (!produced_[i].reported) out.push_back(i);
    }
    return out;
  }

  const std::vector<Produced>& produced() const { return produced_; }
  int polls() const { return polls_; }
  int purges() const { return purges_; }
  void set_health(absl::Status s) { health_ = std::move(s); }

  int64_t queue_limit = -1;
  std::string reject_topic;
  absl::Status produce_error;  // when set, Produce() returns it
  std::function<void()> on_poll;
  std::function<void()> on_flush;
  std::function<void()> on_flush_extra;  // runs first; for a test's own checks

 private:
  DeliveryHandler handler_;
  std::vector<Produced> produced_;
  int polls_ = 0;
  int purges_ = 0;
  absl::Status health_;
};

}  // namespace outbox::testing

#endif  // OUTBOX_TESTS_RELAY_FAKES_H_
