// AckTracker: the delivery watermark. Turns transaction boundaries from the
// replication stream and delivery reports from the sink into the LSN that is
// safe to confirm to PostgreSQL (DESIGN.md section 2).
//
// Invariant: confirmed() never reaches the end LSN of a transaction that
// holds a record whose delivery has not succeeded, and never decreases
// (between Reset() calls). Confirming too little only causes duplicates.
//
// Feeding it, one wal2json record at a time:
//   B          -> Begin(commit_time_us)
//   I (routed) -> ticket = Track(); sink.Produce(record, ticket)
//   C          -> Commit(nextlsn)
//   keepalive  -> Advance(wal_end)
//   report     -> Delivered(ticket) or Failed(ticket)
// and send confirmed() as the flush position.
//
// Model: a FIFO of entries in stream order. Begin() opens a transaction
// entry, Track() counts one pending record in it, Commit() closes it at the
// commit's end LSN. Advance() appends an already-closed empty entry, so a
// keepalive position waits behind everything in flight. confirmed() is the
// LSN of the newest closed entry that, with all entries before it, has no
// pending record; such entries are popped. Only commit end LSNs and
// keepalive positions count: per-record LSNs interleave between transactions
// and must not be used.
//
// A failed delivery blocks its transaction for good: the watermark still
// moves up to the entry just before it as earlier reports arrive, never
// further, and frozen() turns true. The owner then flushes, sends the final
// confirmed(), rebuilds the sink and restarts the stream after Reset().
//
// Tickets are unique for the life of the tracker (never 0, never reused
// after Reset), so a late report from before a Reset is rejected, as is an
// unknown or duplicate one: errors never change the state.
//
// Threading: not thread-safe; one thread (the relay's poll loop, through
// InFlight, pipeline/in_flight.h) calls everything. Cost: O(1) amortized per
// call. Memory is proportional to span(), the records from the oldest
// unreported one on: one ticket slot each, and while not frozen at most 2 *
// span() + 2 entries (each entry after the oldest unsettled one holds a ticket
// of the span or is a run of empty entries coalesced behind one that does). It
// does not depend on how many records were delivered behind a report that never
// comes, so an owner that stops feeding at a span limit bounds it. The ring
// buffers keep their high-water capacity, so the steady state does not
// allocate.
#ifndef OUTBOX_CORE_ACK_TRACKER_H_
#define OUTBOX_CORE_ACK_TRACKER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "outbox/lsn.h"

namespace outbox {

class AckTracker {
 public:
  // `confirmed` is where the stream resumes: the slot's
  // confirmed_flush_lsn, or kInvalidLsn.
  explicit AckTracker(Lsn confirmed = kInvalidLsn);

  AckTracker(const AckTracker&) = delete;
  AckTracker& operator=(const AckTracker&) = delete;

  // Opens a transaction (wal2json B). FailedPrecondition if one is open:
  // the stream is malformed, and the open one stays as it was.
  absl::Status Begin(int64_t commit_time_us = 0);

  // Counts one record of the open transaction handed to the sink and
  // returns the ticket its delivery report must carry. FailedPrecondition
  // outside a transaction.
  absl::StatusOr<uint64_t> Track();
  // The ticket the next successful Track() returns.
  uint64_t next_ticket() const { return next_ticket_; }

  // Closes the open transaction at end_lsn (wal2json C nextlsn).
  // FailedPrecondition outside a transaction, InvalidArgument for
  // kInvalidLsn.
  absl::Status Commit(Lsn end_lsn);

  // A position with nothing in it (keepalive wal_end). Ignored for the
  // watermark inside a transaction and when not past the newest position
  // already queued or confirmed; always raises received().
  void Advance(Lsn lsn);

  // The delivery report for `ticket`. InvalidArgument for a ticket never
  // issued, FailedPrecondition for one already reported or issued before
  // the last Reset().
  absl::Status Delivered(uint64_t ticket);
  absl::Status Failed(uint64_t ticket);

  // Drops every entry and outstanding ticket, clears frozen(), and resumes
  // at `confirmed` (exactly as given: the owner knows where the new stream
  // starts, normally the old confirmed()).
  void Reset(Lsn confirmed);

  // The flush position to send.
  Lsn confirmed() const { return confirmed_; }
  // Commit time of the newest confirmed transaction; 0 until one is.
  int64_t confirmed_commit_time_us() const { return confirmed_commit_time_us_; }
  // Highest LSN given to Commit() or Advance().
  Lsn received() const { return received_; }
  // Records tracked and not yet reported.
  int64_t pending() const { return pending_; }
  // Records from the oldest one not yet reported to the newest tracked,
  // both included (0 when every record is reported): reported records
  // behind an unreported one count, since they cannot be confirmed before
  // it. pending() <= span(). O(1).
  int64_t span() const { return static_cast<int64_t>(tickets_.size()); }
  // Queued entries, the open transaction included.
  size_t open_entries() const { return entries_.size(); }
  bool in_transaction() const { return open_; }
  // A delivery failed since construction or the last Reset().
  bool frozen() const { return frozen_; }

 private:
  // A FIFO ring over a power-of-two vector; grows, never shrinks.
  template <typename T>
  class Ring {
   public:
    bool empty() const { return size_ == 0; }
    size_t size() const { return size_; }
    T& front() { return buf_[head_]; }
    T& back() { return (*this)[size_ - 1]; }
    T& operator[](size_t i) { return buf_[(head_ + i) & (buf_.size() - 1)]; }
    void push_back(const T& value) {
      if (size_ == buf_.size()) Grow();
      ++size_;
      back() = value;
    }
    void pop_front() {
      head_ = (head_ + 1) & (buf_.size() - 1);
      --size_;
    }
    void pop_back() { --size_; }
    void clear() { head_ = size_ = 0; }

   private:
    void Grow() {
      std::vector<T> next(buf_.empty() ? 64 : 2 * buf_.size());
      for (size_t i = 0; i < size_; ++i) next[i] = (*this)[i];
      buf_.swap(next);
      head_ = 0;
    }
    std::vector<T> buf_;
    size_t head_ = 0;
    size_t size_ = 0;
  };

  struct Entry {
    Lsn lsn = kInvalidLsn;
    int64_t commit_time_us = 0;
    int64_t pending = 0;
    bool closed = false;
    bool failed = false;

    // Nothing can happen to it any more but being confirmed.
    bool settled() const { return closed && pending == 0 && !failed; }
  };

  absl::Status Report(uint64_t ticket, bool ok);
  // Appends a closed empty entry, or folds it into a settled last entry.
  void PushSettled(Lsn lsn, int64_t commit_time_us);
  void ConfirmPrefix();

  Ring<Entry> entries_;
  uint64_t front_entry_seq_ = 0;  // sequence number of entries_.front()
  // One slot per ticket from first_ticket_ on: the sequence number of its
  // entry plus one while in flight, 0 once reported. Reported slots at the
  // front are popped.
  Ring<uint64_t> tickets_;
  uint64_t first_ticket_ = 1;
  uint64_t next_ticket_ = 1;

  bool open_ = false;
  bool frozen_ = false;
  int64_t pending_ = 0;
  Lsn confirmed_;
  Lsn received_;
  Lsn tail_;  // newest LSN queued or confirmed
  int64_t confirmed_commit_time_us_ = 0;
};

}  // namespace outbox

#endif  // OUTBOX_CORE_ACK_TRACKER_H_
