// OperatorActions: what an operator asked the relay to drop on purpose
// (`outbox-relay skip --event ID`, `outbox-relay advance --to LSN`), and
// the relay's side of it: which decoded event a pending action names, and
// when an action is done.
//
// The records live in kafka.state_topic beside the pair's pause record
// (kafka/control_records.h), keyed under "<pair>/<slot>/":
//   operator/<at>-<uuid>          the request, written by the command:
//     {"action":"skip","event_id":"...","by":"...","at":"...","reason":"..."}
//     {"action":"advance","from_lsn":"0/16B3748","to_lsn":"0/16B9000",...}
//   operator/<at>-<uuid>/ids/<commit lsn>-<lsn>  a page of the ids it dropped,
//     written by the relay each time kMaxAppliedIds of them are dropped,
//     keyed by the first one's position: {"event_ids":[...]}
//   operator/<at>-<uuid>/applied  written once by the relay that applied it:
//     {"applied_at":"...","events":N,"event_ids":[...],"id_pages":P}
// Every record names at most kMaxAppliedIds event ids, so each stays far
// below Kafka's message.max.bytes and the relay holds at most that many,
// whatever the range: the applied record names the ids after its last full
// page. A session that ends before its action is applied leaves its pages;
// the next session drops the same events again (the action still pending)
// and may write overlapping pages, so readers take the union of the ids.
// Records older than the pages may carry "ids_truncated":true (the ids
// named are the first ones only).
//
// Semantics, kept by the Relay (relay/relay_changes.cc):
//   skip     drops the outbox events whose id is event_id (one event; a
//            re-inserted row with the same id in the same range too), until
//            the action is applied: its transaction confirmed.
//   advance  drops every outbox event whose transaction's commit record
//            starts below to_lsn: what PostgreSQL itself skips when a slot's
//            confirmed position is moved there (pg_replication_slot_advance).
//            Applied once the confirmed position reaches to_lsn.
// A dropped event is never tracked, so its transaction closes like one
// with no outbox rows and the watermark moves past it: nothing else is
// confirmed early (the LSN invariant holds for every event not named).
//
// Threading: OperatorActions is owned by one thread (the Relay's).
// The parsing and formatting functions are pure.
#ifndef OUTBOX_CORE_OPERATOR_ACTIONS_H_
#define OUTBOX_CORE_OPERATOR_ACTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "outbox/lsn.h"

namespace outbox {

// The most event ids one record (a page or the applied record) names.
inline constexpr size_t kMaxAppliedIds = 1000;

// A full page of the ids one action dropped, to write under
// OperatorIdsSuffix(action_id, first).
struct OperatorIdPage {
  std::string action_id;
  std::string first;  // "<commit lsn>-<lsn>" of its first id, hex, fixed width
  std::vector<std::string> event_ids;
};

struct OperatorAction {
  enum class Kind { kSkip, kAdvance };
  std::string id;  // "<at>-<uuid>", the key's last part
  Kind kind = Kind::kSkip;
  std::string event_id;    // skip
  Lsn from = kInvalidLsn;  // advance: the slot's confirmed position then
  Lsn to = kInvalidLsn;    // advance
  std::string by, at, reason;

  // From the applied record.
  bool applied = false;
  std::string applied_at;
  int64_t events = 0;
  // Pending: the ids dropped since the last full page. Read back: every
  // id its pages and applied record name, each once.
  std::vector<std::string> event_ids;
  int64_t id_pages = 0;  // the full pages written before the applied record
  bool ids_truncated = false;  // an old record naming only the first ids

  // "skip event X" / "advance 0/1..0/2", for logs and reports.
  std::string What() const;
};

// The key suffix of a request ("operator/<id>") and of its applied record.
std::string OperatorRequestSuffix(const std::string& id);
std::string OperatorAppliedSuffix(const std::string& id);
std::string OperatorIdsSuffix(const std::string& id, const std::string& first);

// The request record's JSON (kind, event_id or from/to, by, at, reason).
std::string FormatOperatorRequest(const OperatorAction& a);
// The applied record's JSON (applied_at, events, event_ids, id_pages).
std::string FormatOperatorApplied(const OperatorAction& a);
// A page's JSON (event_ids).
std::string FormatOperatorIds(const OperatorIdPage& page);

// The actions in the records read under "<pair>/<slot>/operator/" (keys
// whole or from "operator/" on; values JSON), in key order (the time they
// were asked), each with its applied record and id pages merged. A
// malformed record is left out and named in *malformed (one line each),
// never guessed at.
std::vector<OperatorAction> ParseOperatorRecords(
    const std::vector<std::pair<std::string, std::string>>& records,
    std::vector<std::string>* malformed);

class OperatorActions {
 public:
  OperatorActions() = default;
  explicit OperatorActions(const std::vector<OperatorAction>& actions) {
    Add(actions);
  }

  // Keeps the pending (not applied) ones of `actions` not kept yet (by id);
  // returns those it added. Actions under way keep what they dropped.
  std::vector<OperatorAction> Add(const std::vector<OperatorAction>& actions);

  bool empty() const { return pending_.empty(); }
  bool has_skips() const { return skips_ > 0; }
  // Match()'s action `index`.
  const OperatorAction& action(int index) const { return pending_[index]; }
  // The actions not complete yet (a skip whose event never came stays).
  std::vector<OperatorAction> pending() const;

  // The pending action that names an event `event_id` of the transaction
  // whose commit record starts at `commit_lsn`, or -1.
  int Match(absl::string_view event_id, Lsn commit_lsn) const;
  // Records that action `index` dropped `event_id` (at `lsn`) of the open
  // transaction, which commits at `commit_lsn`. Returns the page this id
  // filled, for the caller to write, else nothing.
  std::optional<OperatorIdPage> Dropped(int index, absl::string_view event_id,
                                        Lsn commit_lsn, Lsn lsn);
  // That transaction committed, ending at `end_lsn` (pgoutput's Begin does
  // not say where its transaction ends, so the commit does).
  void Committed(Lsn end_lsn);

  // The actions done now that `confirmed` is confirmed to PostgreSQL: a
  // skip whose event was dropped and whose transaction is confirmed, an
  // advance once `confirmed` reaches its target. Each is returned once
  // (events, id_pages and the ids after the last page filled; applied_at
  // left to the caller).
  std::vector<OperatorAction> Complete(Lsn confirmed);

 private:
  struct Progress {
    Lsn end = kInvalidLsn;  // the last dropped event's transaction end
    bool in_open_transaction = false;  // dropped one since the last commit
    bool done = false;
    std::string page_first;  // the current page's first id's position
  };
  std::vector<OperatorAction> pending_;
  std::vector<Progress> progress_;
  int skips_ = 0;
};

}  // namespace outbox

#endif  // OUTBOX_CORE_OPERATOR_ACTIONS_H_
