// PgOutputDecoder: one pgoutput protocol message -> one Change.
//
// Input is the payload of one XLogData message from a walsender started with
// the pgoutput plugin (or one row of pg_logical_slot_get_binary_changes()):
// first byte the message type, integers in network byte order, strings
// NUL-terminated. Accepted: protocol version 1, and any later version
// requested without 'streaming' and 'two_phase': then versions 2 and 3 send
// exactly version 1's messages (checked on PostgreSQL 15, which knows up to
// 3: tests/testdata/pgoutput/README.md), and version 4 (16+) changes only
// streamed-transaction messages. Messages:
//   B Begin     -> kBegin: lsn = final (commit record) LSN, xid,
//                  commit_time_us; end_lsn stays kInvalidLsn (not sent)
//   C Commit    -> kCommit: lsn = commit LSN, end_lsn = end LSN (the
//                  position to confirm), commit_time_us, and the xid of
//                  its Begin. Flags must be 0, as the in-core subscriber
//                  demands.
//   R Relation  -> kOther; cached by relation OID for the decoder's
//                  lifetime (one replication session), replaced by each R
//   Y Type      -> kOther; cached type OID -> name, used by later R
//   O Origin    -> kOther
//   I Insert    -> kInsert: schema, table and one Column per relation
//                  column (the Relation must have come first)
//   U Update    -> kUpdate: the new row's columns (old key/row parsed, not
//                  kept); an unchanged TOAST value ('u') leaves its column
//                  out, as wal2json does
//   D Delete    -> kDelete: schema and table only (old key parsed)
//   T Truncate  -> kOther (one message for all its relations)
//   M Message   -> kMessage: transactional, prefix, content (any bytes,
//                  never checked as UTF-8), lsn = the message's LSN
// I, U, D, T and transactional M take xid and commit_time_us from the
// Begin before them (pgoutput repeats neither), so they equal what wal2json
// gives. Their own LSN is not in the message: it is the XLogData start,
// which the three-argument Decode() puts in Change::lsn.
// Streaming (S, E, c, A) and two-phase (b, P, K, r, p) messages are
// InvalidArgument: the relay never requests them, and a streamed chunk
// arrives before its transaction commits.
//
// Column values: 'n' -> kNull; 't' (text) by the column's type
// OID (see pgoutput_types.h): bool "t"/"f" -> kBool "true"/"false"; bytea
// "\x..." -> kBytes, raw bytes (escape format is an error: the connection
// must set bytea_output = hex); int2/int4/int8/oid/float4/float8/numeric
// -> kNumber, the text as is, except NaN, Infinity and -Infinity -> kNull,
// as wal2json prints null for them; any other type (json and jsonb
// included: their text is the JSON) -> kText, the text as is. So an outbox
// row gives the Router the same bytes as wal2json. 'b' (binary, pgoutput's
// `binary 'true'`, PostgreSQL 14+): bytea -> kBytes, the bytes as sent;
// the other types pgoutput_binary.h knows are turned back into the text
// their output function gives (on the replication connection's settings),
// then classified as above, so each Column is byte for byte what text mode
// gives; a 'b' value of any other type is an error. A decoder made for
// binary refuses a Relation with a column of a type it cannot format, before
// any row of it: the session must restart in text (see Unformattable).
// Column::type spells built-in types as wal2json does ("jsonb", "character
// varying(20)", "integer[]"); other types get their Type message's name,
// schema-qualified unless in public (which differs from wal2json for a
// domain, reported as its base type, and for arrays of user types,
// "_name"), or the OID in decimal if none came. The Router and relay use
// types for nothing.
//
// Errors: InvalidArgument with a short description (no LSN: the caller adds
// it) for an empty or truncated message, bytes after its end, an unknown
// message type, a change to a relation with no Relation message, a tuple
// whose column count is not its relation's, an unknown tuple value kind,
// an unchanged-TOAST value in an Insert (old rows of U and D may hold them),
// a value that does not fit its type, or an out-of-range length or
// timestamp.
// Nothing is read past `data`.
//
// Lifetime: the Change's string_views point into buffers owned by this
// decoder (its copy of the message, its relation cache) and stay valid until
// its next Decode() call or its destruction. Not thread safe: one decoder
// per stream. Besides growing out->columns, Decode() allocates only for a
// message larger than any before it, for Relation and Type messages, or to
// build an error.
#ifndef OUTBOX_DECODE_PGOUTPUT_DECODER_H_
#define OUTBOX_DECODE_PGOUTPUT_DECODER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "outbox/change.h"
#include "outbox/decoder.h"
#include "outbox/lsn.h"

namespace outbox {

class PgOutputDecoder final : public Decoder {
 public:
  // The table, column and type of the Relation a binary decoder refused.
  struct Unformattable {
    std::string table;  // schema.name
    std::string column;
    std::string type;  // Column::type's spelling
  };

  // With `binary` (the session asked for binary 'true'), a Relation with a
  // column whose type pgoutput_binary cannot format is InvalidArgument,
  // naming it, and also recorded in *unformattable when not null (which
  // must outlive the decoder).
  explicit PgOutputDecoder(bool binary = false,
                           Unformattable* unformattable = nullptr);
  ~PgOutputDecoder() override;
  PgOutputDecoder(const PgOutputDecoder&) = delete;
  PgOutputDecoder& operator=(const PgOutputDecoder&) = delete;

  // Change::lsn of I, U, D, T, R, Y and O is kInvalidLsn.
  absl::Status Decode(absl::string_view data, Change* out) override;

  // The same, with `wal_start` (the XLogData header's start LSN) as
  // Change::lsn for the messages that carry no LSN of their own.
  absl::Status Decode(absl::string_view data, Lsn wal_start, Change* out);

  // An Insert or Update with binary ('b') values re-encoded as text mode
  // sends it: each 'b' value becomes a 't' value holding the text its
  // output function gives on the replication connection's settings (bytea
  // "\x" and lower-case hex, as bytea_output=hex), every other byte kept.
  // Any other message, or one this decoder cannot read, is `data` as is.
  absl::string_view DeadLetterForm(absl::string_view data) override;

 private:
  struct State;  // caches and buffers (pgoutput_state.h)
  std::unique_ptr<State> state_;
};

}  // namespace outbox

#endif  // OUTBOX_DECODE_PGOUTPUT_DECODER_H_
