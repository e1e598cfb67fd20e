// Relay's handling of each decoded change (relay.h): keepalives,
// transaction boundaries, inserts of outbox rows, logical messages (the
// tableless outbox and the heartbeat) and updates. The loop and status
// updates are in relay.cc, producing and the delivery reports in
// relay_delivery.cc, the session's end in relay_shutdown.cc.
#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "outbox/status_macros.h"
#include "relay/heartbeat.h"
#include "relay/relay.h"
#include "route/message_router.h"

namespace outbox {

absl::Status Relay::HandleMessage(const StreamMessage& msg) {
  if (msg.type == StreamMessage::Type::kKeepalive) return HandleKeepalive(msg);
  received_ = std::max(received_, msg.data_start);
  ++xlog_messages_;
  if (absl::Status s = decoder_->Decode(msg.payload, &change_); !s.ok()) {
    return absl::DataLossError(
        absl::StrCat("cannot decode the replication record at LSN ",
                     FormatLsn(msg.data_start), ": ", s.message(),
                     "; stopping without confirming it"));
  }
  // A decoder whose records carry no LSN of their own (pgoutput's changes)
  // leaves it to the XLogData start, which is that LSN.
  if (change_.lsn == kInvalidLsn) change_.lsn = msg.data_start;
  switch (change_.kind) {
    case Change::Kind::kBegin:
      return HandleBegin(msg);
    case Change::Kind::kCommit:
      return HandleCommit(msg);
    case Change::Kind::kInsert:
      if (!in_transaction_) {
        return absl::DataLossError(absl::StrCat(
            "replication stream has an insert outside a transaction at LSN ",
            FormatLsn(msg.data_start)));
      }
      return HandleEvent(msg, /*from_message=*/false);
    case Change::Kind::kMessage:
      return HandleLogicalMessage(msg);
    case Change::Kind::kUpdate:
      return HandleUpdate(msg);
    default:
      // Updates, deletes and truncates are filtered out by the plugin
      // options ("actions" 'insert'): nothing to deliver.
      return absl::OkStatus();
  }
}

absl::Status Relay::HandleKeepalive(const StreamMessage& msg) {
  received_ = std::max(received_, msg.wal_end);
  // Between transactions everything committed before walEnd has been
  // sent to us, so walEnd may be confirmed once all before it is.
  if (!in_transaction_) in_flight_.Advance(msg.wal_end);
  if (msg.reply_requested) reply_requested_ = true;
  return absl::OkStatus();
}

absl::Status Relay::HandleBegin(const StreamMessage& msg) {
  if (in_transaction_) {
    return absl::DataLossError(absl::StrCat(
        "replication stream has a second Begin without Commit at LSN ",
        FormatLsn(msg.data_start)));
  }
  in_transaction_ = true;
  txn_commit_lsn_ = change_.lsn;
  policy_->OnBegin(change_.lsn);
  const int64_t since_commit_us =
      change_.commit_time_us > 0 ? clock_->UnixMicros() - change_.commit_time_us
                                 : -1;
  txn_receive_s_ =
      since_commit_us < 0 ? -1 : std::max<int64_t>(0, since_commit_us) / 1e6;
  policy_->OnBacklog(std::max<int64_t>(since_commit_us, 0));
  return in_flight_.Begin(change_.commit_time_us);
}

absl::Status Relay::HandleCommit(const StreamMessage& msg) {
  if (!in_transaction_) {
    return absl::DataLossError(
        absl::StrCat("replication stream has a Commit without Begin at LSN ",
                     FormatLsn(msg.data_start)));
  }
  in_transaction_ = false;
  ++counters_.transactions;
  received_ = std::max(received_, change_.end_lsn);
  RETURN_IF_ERROR(in_flight_.Commit(change_.end_lsn));
  if (options_.operator_actions != nullptr) {
    options_.operator_actions->Committed(change_.end_lsn);
  }
  return policy_->OnCommit(change_.end_lsn, turn_now_us_);
}

absl::Status Relay::HandleLogicalMessage(const StreamMessage& msg) {
  if (options_.heartbeat_nonce != 0 && change_.prefix == kHeartbeatPrefix) {
    // Any session may emit this prefix: only our own content counts, and
    // no heartbeat is ever an event.
    HeartbeatContent beat;
    if (ParseHeartbeatContent(change_.content, &beat) &&
        beat.nonce == options_.heartbeat_nonce) {
      ++counters_.heartbeats_seen;
      observer_->OnHeartbeatReturned(
          std::max<int64_t>(0, clock_->UnixMicros() - beat.sent_unix_us) / 1e6,
          clock_->NowMicros());
    }
    return absl::OkStatus();
  }
  MessageRouter* router = options_.message_router;
  // pgoutput sends every message when any is wanted: other prefixes are
  // someone else's.
  if (router == nullptr || change_.prefix != router->prefix()) {
    return absl::OkStatus();
  }
  if (!change_.transactional) {
    // Decoded as soon as written, whether its transaction commits or not,
    // and outside the commit order: never an event.
    ++counters_.messages_ignored;
    observer_->OnMessageIgnored();
    if (!nontransactional_logged_) {
      nontransactional_logged_ = true;
      Log(Severity::kWarn,
          "ignoring non-transactional logical messages under the outbox "
          "prefix (pg_logical_emit_message(false, ...)): only transactional "
          "ones are events; counted in "
          "outbox_relay_nontransactional_messages_total",
          {{"prefix", router->prefix()}, {"lsn", FormatLsn(change_.lsn)}});
    }
    return absl::OkStatus();
  }
  if (!in_transaction_) {
    return absl::DataLossError(
        absl::StrCat("replication stream has a transactional message outside a "
                     "transaction at LSN ",
                     FormatLsn(msg.data_start)));
  }
  return HandleEvent(msg, /*from_message=*/true);
}

absl::Status Relay::HandleEvent(const StreamMessage& msg, bool from_message) {
  in_event_ = true;
  absl::Status s = AdmitAndProduce(msg, from_message);
  in_event_ = false;
  return s;
}

absl::Status Relay::AdmitAndProduce(const StreamMessage& msg,
                                    bool from_message) {
  // Named by the operator: never produced, never tracked (the transaction
  // closes as if it had no outbox rows), poison or not.
  if (SkippedByOperator(from_message)) return absl::OkStatus();
  // Dropped events (published before, per the policy) are never tracked.
  ASSIGN_OR_RETURN(CommitPolicy::Admission admission,
                   policy_->Admit(in_flight_.next_ticket(), turn_now_us_));
  if (admission.kind == CommitPolicy::Admission::kDrop) {
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(uint64_t ticket, in_flight_.Track());
  observer_->ObserveReceiveLatency(txn_receive_s_);
  // A poison message is dead-lettered as its content (what the application
  // wrote), a row as the plugin's record of it in text (the same whatever
  // the transfer mode; made only for a dead letter).
  const auto raw = [&] {
    return from_message ? change_.content
                        : decoder_->DeadLetterForm(msg.payload);
  };
  const absl::string_view what = from_message ? "outbox message" : "outbox row";
  absl::Status s = from_message
                       ? options_.message_router->Route(change_, &record_)
                       : router_->Route(change_, &record_);
  auto produce = [this](const Record& r, uint64_t t) {
    return ProduceTracked(r, t);
  };
  if (!s.ok()) {
    return poison_.Invalid(s, ticket, record_.event_id, change_.lsn, raw(),
                           what, produce);
  }
  if (admission.kind == CommitPolicy::Admission::kDeadLetter) {
    // Kafka refused it in an earlier attempt of this Kafka transaction:
    // what the at-least-once relay does after the refusal, done up front.
    return poison_.DeadLetterUndeliverable(
        FailedRecord{ticket, std::string(record_.event_id), record_.topic,
                     std::string(record_.key), std::string(record_.value),
                     std::string(admission.refusal)},
        produce);
  }
  s = ProduceTracked(record_, ticket);
  if (absl::IsInvalidArgument(s)) {
    // The sink refused this record itself (too large, bad topic...).
    return poison_.Invalid(s, ticket, record_.event_id, change_.lsn, raw(),
                           what, produce);
  }
  return s;
}

bool Relay::SkippedByOperator(bool from_message) {
  OperatorActions* actions = options_.operator_actions;
  if (actions == nullptr || actions->empty()) return false;
  // The id as the poison line names it; a message's only by routing it
  // (into the scratch record: HandleEvent routes again).
  const auto event_id = [&] {
    if (!from_message) return std::string(router_->EventId(change_));
    options_.message_router->Route(change_, &record_).IgnoreError();
    return std::string(record_.event_id);
  };
  std::string id = actions->has_skips() ? event_id() : "";
  const int index = actions->Match(id, txn_commit_lsn_);
  if (index < 0) return false;
  if (id.empty()) id = event_id();
  if (std::optional<OperatorIdPage> page =
          actions->Dropped(index, id, txn_commit_lsn_, change_.lsn);
      page && options_.on_operator_ids) {
    options_.on_operator_ids(*page);
  }
  ++counters_.skipped_by_operator;
  observer_->OnSkippedByOperator();
  const OperatorAction& a = actions->action(index);
  Log(Severity::kWarn, "event skipped by operator",
      {{"event_id", id},
       {"lsn", FormatLsn(change_.lsn)},
       {"commit_lsn", FormatLsn(txn_commit_lsn_)},
       {"action", a.What()},
       {"by", a.by},
       {"at", a.at},
       {"reason", a.reason}});
  return true;
}

absl::Status Relay::HandleUpdate(const StreamMessage& msg) {
  // Decoded only when on_update asks (the plugin's actions or publication),
  // so any UPDATE seen under kIgnore comes from a wider publication.
  if (options_.on_update == OnUpdate::kIgnore) return absl::OkStatus();
  absl::string_view id = router_->EventId(change_);
  std::string where = absl::StrCat(change_.schema, ".", change_.table,
                                   " at LSN ", FormatLsn(msg.data_start));
  if (options_.on_update == OnUpdate::kHalt) {
    return absl::InvalidArgumentError(absl::StrCat(
        "UPDATE of outbox row ", id.empty() ? "" : absl::StrCat(id, " "), "in ",
        where,
        "; halting (outbox.on_update = halt), nothing at or past it is "
        "confirmed"));
  }
  ++counters_.updates_ignored;
  observer_->OnUpdateIgnored();
  Log(options_.on_update == OnUpdate::kError ? Severity::kError
                                             : Severity::kWarn,
      "UPDATE of an outbox row ignored: only inserts are published",
      {{"event_id", std::string(id)},
       {"table", absl::StrCat(change_.schema, ".", change_.table)},
       {"lsn", FormatLsn(msg.data_start)}});
  return absl::OkStatus();
}

}  // namespace outbox
