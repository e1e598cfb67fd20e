#include "plugin/pgoutput/pgoutput_decoder.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "plugin/pgoutput/pgoutput_reader.h"
#include "plugin/pgoutput/pgoutput_state.h"

namespace outbox {
namespace {

using pgoutput::Invalid;
using pgoutput::Reader;
using pgoutput::Relation;

// Microseconds from the Unix epoch to PostgreSQL's (2000-01-01 UTC).
constexpr int64_t kPostgresEpochUnixMicros = 946684800LL * 1000000;

const char* MessageName(char type) {
  switch (type) {
    case 'B':
      return "Begin";
    case 'C':
      return "Commit";
    case 'O':
      return "Origin";
    case 'R':
      return "Relation";
    case 'Y':
      return "Type";
    case 'I':
      return "Insert";
    case 'U':
      return "Update";
    case 'D':
      return "Delete";
    case 'T':
      return "Truncate";
    case 'M':
      return "Message";
    default:
      return nullptr;
  }
}

// A PostgreSQL timestamp (microseconds since 2000-01-01 UTC) as Unix
// microseconds.
absl::Status UnixMicros(uint64_t pg_micros, int64_t* unix_micros) {
  if (__builtin_add_overflow(static_cast<int64_t>(pg_micros),
                             kPostgresEpochUnixMicros, unix_micros)) {
    return Invalid("timestamp out of range");
  }
  return absl::OkStatus();
}

}  // namespace

// ---------------------------------------------------------------------------

PgOutputDecoder::PgOutputDecoder(bool binary, Unformattable* unformattable)
    : state_(std::make_unique<State>()) {
  state_->binary = binary;
  state_->unformattable = unformattable;
}
PgOutputDecoder::~PgOutputDecoder() = default;

absl::Status PgOutputDecoder::Decode(absl::string_view data, Change* out) {
  return Decode(data, kInvalidLsn, out);
}

absl::Status PgOutputDecoder::Decode(absl::string_view data, Lsn wal_start,
                                     Change* out) {
  State& s = *state_;
  out->Clear();
  if (data.empty()) return Invalid("empty message");
  const char type = data[0];
  const char* name = MessageName(type);
  if (name == nullptr) {
    switch (type) {
      case 'S':
      case 'E':
      case 'c':
      case 'A':
        return Invalid(absl::StrCat("streamed transaction message '",
                                    absl::string_view(&type, 1),
                                    "' (streaming was not requested)"));
      case 'b':
      case 'P':
      case 'K':
      case 'r':
      case 'p':
        return Invalid(absl::StrCat("two-phase message '",
                                    absl::string_view(&type, 1),
                                    "' (two_phase was not requested)"));
      default:
        return Invalid(absl::StrCat(
            "unknown message type 0x",
            absl::Hex(static_cast<uint8_t>(type), absl::kZeroPad2)));
    }
  }
  Reader r(s.CopyInput(data).substr(1));
  const auto truncated = [name] {
    return Invalid(absl::StrCat("truncated ", name, " message"));
  };
  absl::Status st;
  out->lsn = wal_start;
  switch (type) {
    case 'B': {
      out->kind = Change::Kind::kBegin;
      uint64_t timestamp;
      if (!r.U64(&out->lsn) || !r.U64(&timestamp) || !r.U32(&out->xid)) {
        return truncated();
      }
      st = UnixMicros(timestamp, &out->commit_time_us);
      s.xid = out->xid;
      s.commit_time_us = out->commit_time_us;
      break;
    }
    case 'C': {
      out->kind = Change::Kind::kCommit;
      uint8_t flags;
      uint64_t timestamp;
      if (!r.U8(&flags) || !r.U64(&out->lsn) || !r.U64(&out->end_lsn) ||
          !r.U64(&timestamp)) {
        return truncated();
      }
      if (flags != 0) {
        return Invalid(absl::StrCat("unknown Commit flags 0x",
                                    absl::Hex(flags, absl::kZeroPad2)));
      }
      st = UnixMicros(timestamp, &out->commit_time_us);
      out->xid = s.xid;
      s.xid = 0;
      s.commit_time_us = 0;
      break;
    }
    case 'O': {
      uint64_t origin_lsn;
      absl::string_view origin;
      if (!r.U64(&origin_lsn) || !r.CString(&origin)) return truncated();
      break;
    }
    case 'R':
      st = s.ReadRelation(r);
      break;
    case 'Y':
      st = s.ReadType(r);
      break;
    case 'I':
    case 'U':
    case 'D': {
      absl::StatusOr<const Relation*> rel = s.ReadRelationId(r);
      if (!rel.ok()) return rel.status();
      out->schema = (*rel)->schema;
      out->table = (*rel)->name;
      out->xid = s.xid;
      out->commit_time_us = s.commit_time_us;
      uint8_t tag;
      if (!r.U8(&tag)) return truncated();
      if (type != 'I' && (tag == 'K' || tag == 'O')) {
        // An old row may hold unchanged TOAST values (REPLICA IDENTITY FULL).
        st = s.ReadTuple(r, **rel, /*allow_unchanged=*/true, nullptr);
        if (!st.ok()) return st;
        if (type == 'D') {
          out->kind = Change::Kind::kDelete;
          break;
        }
        if (!r.U8(&tag)) return truncated();
      }
      if (tag != 'N' || type == 'D') {
        return Invalid(absl::StrCat(name, " message with tuple tag 0x",
                                    absl::Hex(tag, absl::kZeroPad2)));
      }
      out->kind = type == 'I' ? Change::Kind::kInsert : Change::Kind::kUpdate;
      out->columns.reserve((*rel)->columns.size());
      st =
          s.ReadTuple(r, **rel, /*allow_unchanged=*/type == 'U', &out->columns);
      break;
    }
    case 'T': {
      uint32_t count;
      uint8_t options;
      if (!r.U32(&count) || !r.U8(&options)) return truncated();
      for (uint32_t i = 0; i < count; ++i) {
        uint32_t oid;
        if (!r.U32(&oid)) return truncated();
      }
      out->xid = s.xid;
      out->commit_time_us = s.commit_time_us;
      break;
    }
    case 'M': {
      out->kind = Change::Kind::kMessage;
      uint8_t flags;
      uint32_t len;
      if (!r.U8(&flags) || !r.U64(&out->lsn) || !r.CString(&out->prefix) ||
          !r.U32(&len) || len > INT32_MAX || !r.Bytes(len, &out->content)) {
        return truncated();
      }
      if ((flags & ~1u) != 0) {
        return Invalid(absl::StrCat("unknown Message flags 0x",
                                    absl::Hex(flags, absl::kZeroPad2)));
      }
      out->transactional = (flags & 1) != 0;
      if (out->transactional) {
        out->xid = s.xid;
        out->commit_time_us = s.commit_time_us;
      }
      break;
    }
  }
  if (!st.ok()) return st;
  if (!r.AtEnd()) {
    return Invalid(absl::StrCat("bytes after the end of a ", name, " message"));
  }
  return absl::OkStatus();
}

absl::string_view PgOutputDecoder::DeadLetterForm(absl::string_view data) {
  State& s = *state_;
  if (!s.binary || data.empty() || (data[0] != 'I' && data[0] != 'U')) {
    return data;
  }
  Reader r(data.substr(1));
  absl::StatusOr<const Relation*> rel = s.ReadRelationId(r);
  if (!rel.ok()) return data;
  std::string& out = s.dead_letter;
  out.assign(data.data(), 5);  // type, relation OID
  uint8_t tag;
  while (r.U8(&tag)) {  // an Update's 'K' or 'O' tuple, then 'N'
    out.push_back(static_cast<char>(tag));
    if ((tag != 'K' && tag != 'O' && tag != 'N') ||
        !s.AppendTextTuple(r, **rel, &out).ok()) {
      return data;
    }
  }
  return out;
}

}  // namespace outbox
