// Audit: checks what reached Kafka against what the database committed.
//
// The pure half of outbox-audit (src/audit/main.cc does the I/O): given the
// committed outbox events (from the outbox tables) and the records read back
// from Kafka, it counts
//   missing     committed events with no record              (must be 0)
//   duplicates  records beyond the first for an event id      (at-least-once:
//               allowed, bounded by the relay's in-flight window)
//   unknown     records whose id was never committed: rolled-back
//               transactions or foreign writers                (must be 0)
//   misrouted   first record's key differs from the event's   (must be 0)
//   order       per key, first deliveries out of the events'
//               creation order (seq)                           (must be 0)
//   skipped by operator
//               committed events with no record that an operator's
//               applied skip or advance dropped (OperatorSkip,
//               core/operator_actions.h): reported with who, when and
//               why, and not missing

// The order check assumes each aggregate's events are created by
// transactions that serialize on the aggregate (the usual outbox write: the
// aggregate's row is updated in the same transaction), so creation order is
// commit order for one key.
//
// Thread safety: plain functions over values.
#ifndef OUTBOX_AUDIT_AUDIT_H_
#define OUTBOX_AUDIT_AUDIT_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace outbox {

struct CommittedEvent {
  std::string id;
  std::string key;
  int64_t seq = 0;  // creation order
};

struct PublishedRecord {
  std::string id;  // the "id" header; empty when missing
  std::string key;
  std::string topic;
  int32_t partition = 0;
  int64_t offset = -1;  // -1: not known
};

// Why an event has no record on purpose: the operator's action that
// dropped it.
struct OperatorSkip {
  std::string action;  // "skip event X", "advance 0/1..0/2"
  std::string by, at, reason;
};
// Event id -> the action that dropped it.
using OperatorSkips = std::map<std::string, OperatorSkip>;

// The most skipped events the report names one by one.
inline constexpr size_t kMaxSkippedListed = 100;

struct AuditReport {
  int64_t committed = 0;
  int64_t records = 0;
  int64_t delivered = 0;  // distinct committed ids found
  int64_t missing = 0;
  int64_t duplicates = 0;  // an event's records at different offsets
  // Records read again at an offset already read (the consumer's repeat,
  // e.g. after a leader change): left out of every other count.
  int64_t read_twice = 0;
  int64_t unknown = 0;
  int64_t misrouted = 0;
  int64_t order_violations = 0;
  int64_t skipped_by_operator = 0;
  std::vector<std::string> examples;  // a few ids per problem, for humans
  // The rows audited when not every row (RowSelection::Describe): records
  // of other events are left out before Audit(), so unknown counts none.
  std::string rows;
  // The skipped events (at most kMaxSkippedListed), in creation order.
  std::vector<std::pair<std::string, OperatorSkip>> skipped;

  // Pass: nothing missing, unknown, misrouted or out of order, and no more
  // duplicates than max_duplicates (negative: any number).
  bool Passed(int64_t max_duplicates = -1) const;
  std::string ToText() const;
  std::string ToJson() const;
};

// The committed events no record carries (by the "id" header): indices into
// `committed`, in creation order (seq ascending; equal seqs keep their order
// in `committed`). What Audit() counts as missing, and what `outbox-relay
// republish` produces.
std::vector<size_t> MissingEvents(const std::vector<CommittedEvent>& committed,
                                  const std::vector<PublishedRecord>& records);

// `records` must be in partition order (offset ascending within each
// topic-partition); records of different partitions may interleave.
// `skips`: the events operators dropped (may be null): those without a
// record count as skipped_by_operator instead of missing.
AuditReport Audit(const std::vector<CommittedEvent>& committed,
                  const std::vector<PublishedRecord>& records,
                  const OperatorSkips* skips = nullptr);

}  // namespace outbox

#endif  // OUTBOX_AUDIT_AUDIT_H_
