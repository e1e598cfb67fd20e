// FakeStore: an in-memory OutboxStore with the claim semantics of the real
// SQL (eligible rows in seq order, a transaction that Settle commits and
// Abandon rolls back), a fake clock for next_attempt_at and sent_at, and
// fault injection.
#ifndef OUTBOX_TESTS_POLLER_FAKE_STORE_H_
#define OUTBOX_TESTS_POLLER_FAKE_STORE_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "outbox/clock.h"
#include "poller/outbox_store.h"

namespace outbox::testing {

class FakeStore : public OutboxStore {
 public:
  struct Row {
    int64_t seq = 0;
    std::string id, aggregatetype, key, payload;
    bool key_null = false, payload_null = false;
    int32_t attempts = 0;
    int64_t next_attempt_us = 0;  // 0: none
    int64_t sent_us = 0;          // 0: unsent
    bool deleted = false;
    bool dead = false;
    std::string last_error;
  };

  // Columns in Router::RequiredColumns() order for the default mapping.
  explicit FakeStore(FakeClock* clock) : clock_(clock) {
    tables_.push_back({"public",
                       "outbox",
                       {{"id", "uuid"},
                        {"aggregateid", "text"},
                        {"payload", "jsonb"},
                        {"aggregatetype", "text"}}});
  }

  Row& Add(const std::string& key, const std::string& payload) {
    Row r;
    r.seq = ++last_seq_;
    r.id = absl::StrCat("00000000-0000-4000-8000-", 100000000000 + r.seq);
    r.aggregatetype = "order";
    r.key = key;
    r.payload = payload;
    rows_.push_back(r);
    return rows_.back();
  }

  const std::vector<TableShape>& tables() const override { return tables_; }

  absl::Status Claim(size_t table, int limit,
                     std::vector<OutboxRow>* out) override {
    out->clear();
    ++claims_;
    if (on_claim) on_claim();
    if (!claim_error.ok()) return claim_error;
    in_tx_ = true;
    claimed_.clear();
    int64_t now = clock_->NowMicros();
    for (size_t i = 0;
         i < rows_.size() && static_cast<int>(out->size()) < limit; ++i) {
      const Row& r = rows_[i];
      if (r.deleted || r.sent_us != 0 || r.dead) continue;
      if (r.next_attempt_us != 0 && r.next_attempt_us > now) continue;
      OutboxRow row;
      row.seq = r.seq;
      row.attempts = r.attempts;
      row.kinds = {ValueKind::kText,
                   r.key_null ? ValueKind::kNull : ValueKind::kText,
                   r.payload_null ? ValueKind::kNull : ValueKind::kText,
                   ValueKind::kText};
      row.values = {r.id, r.key_null ? "" : r.key,
                    r.payload_null ? "" : r.payload, r.aggregatetype};
      out->push_back(std::move(row));
      claimed_.push_back(i);
    }
    if (out->empty()) in_tx_ = false;
    return absl::OkStatus();
  }

  absl::Status Settle(size_t table, PollerMode mode,
                      absl::Span<const int64_t> delivered,
                      absl::Span<const RowFailure> failed) override {
    ++settles_;
    in_tx_ = false;
    if (!settle_error.ok()) return settle_error;  // rolled back
    int64_t now = clock_->NowMicros();
    for (int64_t seq : delivered) {
      Row& r = BySeq(seq);
      if (mode == PollerMode::kDelete) {
        r.deleted = true;
      } else {
        r.sent_us = now;
      }
    }
    for (const RowFailure& f : failed) {
      Row& r = BySeq(f.seq);
      r.attempts = f.attempts;
      r.last_error = f.error;
      r.dead = f.dead;
      r.next_attempt_us = f.dead ? 0 : now + f.retry_delay_ms * 1000;
    }
    return absl::OkStatus();
  }

  void Abandon() override {
    if (in_tx_) ++abandons_;
    in_tx_ = false;
  }

  absl::StatusOr<int64_t> DeleteSent(size_t table, int64_t older_than_s,
                                     int limit) override {
    ++janitor_calls_;
    int64_t cutoff = clock_->NowMicros() - older_than_s * 1'000'000;
    int64_t n = 0;
    for (Row& r : rows_) {
      if (n == limit) break;
      if (!r.deleted && r.sent_us != 0 && r.sent_us < cutoff) {
        r.deleted = true;
        ++n;
      }
    }
    return n;
  }

  absl::StatusOr<Backlog> ReadBacklog(size_t table) override {
    Backlog b;
    for (const Row& r : rows_) {
      b.unsent += !r.deleted && r.sent_us == 0 && !r.dead;
    }
    return b;
  }

  absl::StatusOr<bool> WaitForNotify(int timeout_ms) override {
    ++waits_;
    if (notify_pending) {
      notify_pending = false;
      return true;
    }
    clock_->Advance(int64_t{timeout_ms} * 1000);
    return false;
  }

  Row& BySeq(int64_t seq) {
    for (Row& r : rows_) {
      if (r.seq == seq) return r;
    }
    return rows_.at(rows_.size());  // throws: a seq the store never had
  }
  const std::vector<Row>& rows() const { return rows_; }
  bool in_transaction() const { return in_tx_; }
  int claims() const { return claims_; }
  int settles() const { return settles_; }
  int abandons() const { return abandons_; }
  int waits() const { return waits_; }
  int janitor_calls() const { return janitor_calls_; }

  absl::Status claim_error;
  absl::Status settle_error;
  bool notify_pending = false;
  std::function<void()> on_claim;

 private:
  FakeClock* clock_;
  std::vector<TableShape> tables_;
  std::vector<Row> rows_;
  std::vector<size_t> claimed_;
  int64_t last_seq_ = 0;
  bool in_tx_ = false;
  int claims_ = 0, settles_ = 0, abandons_ = 0, waits_ = 0, janitor_calls_ = 0;
};

}  // namespace outbox::testing

#endif  // OUTBOX_TESTS_POLLER_FAKE_STORE_H_
