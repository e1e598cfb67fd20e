// RefusedEvents: the events Kafka refused for good inside a Kafka
// transaction (exactly-once mode), remembered across replication sessions
// so that the replay dead-letters them instead of producing them again.
//
// A refused record makes librdkafka's transaction abortable: it cannot be
// dead-lettered inside that transaction, as the at-least-once relay does.
// The transaction is aborted and replayed from the last checkpoint; the
// replayed event is found here by its position, which is the same in every
// replay: the commit LSN of its PostgreSQL transaction and its ordinal
// among that transaction's routed inserts (both plugins replay a
// transaction's rows in the same order; CheckpointFilter relies on it too).
//
// Kept in memory by the Supervisor for the life of the process: after a
// restart a refusal is learned again, at the cost of one more abort.
// Entries go once a committed checkpoint passes their transaction.
//
// Threading: one thread (the relay's; sessions run one after another).
#ifndef OUTBOX_CORE_REFUSED_EVENTS_H_
#define OUTBOX_CORE_REFUSED_EVENTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "outbox/lsn.h"

namespace outbox {

class RefusedEvents {
 public:
  // Kafka refused the event at `ordinal` (0-based) of the PostgreSQL
  // transaction whose commit record is at commit_lsn, with `error`.
  void Add(Lsn commit_lsn, int64_t ordinal, absl::string_view error) {
    refused_[{commit_lsn, ordinal}] = std::string(error);
  }

  // The error Kafka refused that event with, or null. Valid until the next
  // Add() or Forget().
  const std::string* Find(Lsn commit_lsn, int64_t ordinal) const {
    if (refused_.empty()) return nullptr;
    auto it = refused_.find({commit_lsn, ordinal});
    return it == refused_.end() ? nullptr : &it->second;
  }

  // A checkpoint at end_lsn committed: transactions committed before it
  // are never replayed again.
  void Forget(Lsn end_lsn) {
    while (!refused_.empty() && refused_.begin()->first.first < end_lsn) {
      refused_.erase(refused_.begin());
    }
  }

  size_t size() const { return refused_.size(); }

 private:
  std::map<std::pair<Lsn, int64_t>, std::string> refused_;
};

}  // namespace outbox

#endif  // OUTBOX_CORE_REFUSED_EVENTS_H_
