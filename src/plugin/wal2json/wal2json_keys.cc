#include "plugin/wal2json/wal2json_keys.h"

namespace outbox::wal2json {

const char* KeyName(Key key) {
  switch (key) {
    case kAction:
      return "action";
    case kXid:
      return "xid";
    case kTimestamp:
      return "timestamp";
    case kLsnKey:
      return "lsn";
    case kNextLsn:
      return "nextlsn";
    case kSchema:
      return "schema";
    case kTable:
      return "table";
    case kColumns:
      return "columns";
    case kTransactional:
      return "transactional";
    case kPrefix:
      return "prefix";
    case kContent:
      return "content";
    case kUnknownKey:
      break;
  }
  return "?";
}

uint32_t RequiredKeys(Change::Kind kind) {
  switch (kind) {
    case Change::Kind::kBegin:
    case Change::Kind::kCommit:
      return kLsnKey | kNextLsn;
    case Change::Kind::kInsert:
      return kSchema | kTable | kColumns;
    case Change::Kind::kUpdate:
    case Change::Kind::kDelete:
      return kSchema | kTable;
    case Change::Kind::kMessage:
      return kTransactional | kPrefix | kContent;
    case Change::Kind::kOther:
      break;
  }
  return 0;
}

bool ActionKind(absl::string_view action, Change::Kind* kind) {
  if (action.size() != 1) return false;
  switch (action[0]) {
    case 'B':
      *kind = Change::Kind::kBegin;
      return true;
    case 'C':
      *kind = Change::Kind::kCommit;
      return true;
    case 'I':
      *kind = Change::Kind::kInsert;
      return true;
    case 'U':
      *kind = Change::Kind::kUpdate;
      return true;
    case 'D':
      *kind = Change::Kind::kDelete;
      return true;
    case 'M':
      *kind = Change::Kind::kMessage;
      return true;
    case 'T':
      *kind = Change::Kind::kOther;
      return true;
    default:
      return false;
  }
}

}  // namespace outbox::wal2json
