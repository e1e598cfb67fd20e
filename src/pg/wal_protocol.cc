#include "pg/wal_protocol.h"

#include <limits>

#include "absl/strings/str_cat.h"

namespace outbox {
namespace {

uint64_t LoadBigEndian64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

char* StoreBigEndian64(uint64_t v, char* p) {
  for (int i = 7; i >= 0; --i) {
    p[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  return p + 8;
}

absl::Status ShortMessage(char type, size_t got, size_t want) {
  return absl::DataLossError(absl::StrCat(
      "malformed replication message: '", absl::string_view(&type, 1),
      "' too short: ", got, " bytes, need at least ", want));
}

}  // namespace

absl::StatusOr<StreamMessage> ParseCopyData(absl::string_view bytes) {
  if (bytes.empty()) {
    return absl::DataLossError(
        "malformed replication message: empty CopyData message");
  }
  const char* p = bytes.data();
  StreamMessage msg;
  switch (p[0]) {
    case 'w':
      if (bytes.size() < kXLogDataHeaderSize) {
        return ShortMessage('w', bytes.size(), kXLogDataHeaderSize);
      }
      msg.type = StreamMessage::Type::kXLogData;
      msg.data_start = LoadBigEndian64(p + 1);
      msg.wal_end = LoadBigEndian64(p + 9);
      msg.send_time_us =
          PgEpochToUnixMicros(static_cast<int64_t>(LoadBigEndian64(p + 17)));
      msg.payload = bytes.substr(kXLogDataHeaderSize);
      return msg;
    case 'k':
      if (bytes.size() < kKeepaliveSize) {
        return ShortMessage('k', bytes.size(), kKeepaliveSize);
      }
      msg.type = StreamMessage::Type::kKeepalive;
      msg.wal_end = LoadBigEndian64(p + 1);
      msg.send_time_us =
          PgEpochToUnixMicros(static_cast<int64_t>(LoadBigEndian64(p + 9)));
      msg.reply_requested = p[17] != 0;
      return msg;
    default:
      return absl::DataLossError(absl::StrCat(
          "malformed replication message: unknown type 0x",
          absl::Hex(static_cast<unsigned char>(p[0]), absl::kZeroPad2), " (",
          bytes.size(), " bytes)"));
  }
}

std::string EncodeStandbyStatus(Lsn write, Lsn flush, Lsn apply,
                                int64_t now_unix_us, bool reply_requested) {
  std::string out(kStandbyStatusSize, '\0');
  char* p = out.data();
  *p++ = 'r';
  p = StoreBigEndian64(write, p);
  p = StoreBigEndian64(flush, p);
  p = StoreBigEndian64(apply, p);
  p = StoreBigEndian64(static_cast<uint64_t>(UnixMicrosToPgEpoch(now_unix_us)),
                       p);
  *p = reply_requested ? 1 : 0;
  return out;
}

int64_t PgEpochToUnixMicros(int64_t pg_us) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (pg_us == kMin) return kMin;
  if (pg_us > kMax - kPgEpochOffsetMicros) return kMax;
  return pg_us + kPgEpochOffsetMicros;
}

int64_t UnixMicrosToPgEpoch(int64_t unix_us) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (unix_us == kMax) return kMax;
  if (unix_us < kMin + kPgEpochOffsetMicros) return kMin;
  return unix_us - kPgEpochOffsetMicros;
}

}  // namespace outbox
