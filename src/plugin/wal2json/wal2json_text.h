// wal2json_text: the scalar codecs under Wal2JsonDecoder, as pure functions
// over bytes so tests and the fuzzer can reach them directly.
//
// Functions marked PADDED read up to 15 bytes past the end they are given:
// pass only text inside a buffer with SIMDJSON_PADDING bytes after it (the
// decoder's copy of the record). None allocates; none is stateful, so all
// are thread safe.
#ifndef OUTBOX_DECODE_WAL2JSON_TEXT_H_
#define OUTBOX_DECODE_WAL2JSON_TEXT_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace outbox::wal2json {

// True if `text` is exactly one RFC 8259 number (no surrounding space).
bool IsJsonNumber(absl::string_view text);

// Writes hex.size() / 2 bytes to out. False on odd length or a non-hex
// character (either case is accepted).
bool DecodeHex(absl::string_view hex, char* out);

// PADDED. True if [p, p + n) holds a backslash.
bool HasBackslash(const char* p, size_t n);

// PADDED. Unescapes the body of a JSON string (between its quotes) into
// dst, which needs room for end - p + 16 bytes; the output is never longer
// than the input. Returns the end of the output, or nullptr on an unknown
// escape, a truncated \u escape or an unpaired UTF-16 surrogate (the inputs
// simdjson rejects too). Bytes that are not escapes are copied as they are,
// valid UTF-8 or not (a logical message's content may hold any bytes).
char* UnescapeJsonString(const char* p, const char* end, char* dst);

// Overwrites each byte of [p, p + n) that does not belong to a well-formed
// UTF-8 sequence (Unicode Table 3-7: no overlong forms, no surrogates,
// nothing above U+10FFFF) with `replacement`, which should be ASCII, so the
// text keeps its length and every byte its offset. Returns how many bytes
// it replaced.
size_t ReplaceInvalidUtf8(char* p, size_t n, char replacement);

// PostgreSQL timestamptz text in DateStyle ISO ->  Unix microseconds:
// "YYYY-MM-DD HH:MM:SS[.f{1,6}]" then a UTC offset "+HH", "-HH:MM" or
// "+HH:MM:SS". Years 1 to 200000 (no BC, no infinity). False otherwise.
bool ParseTimestamptz(absl::string_view text, int64_t* unix_micros);

}  // namespace outbox::wal2json

#endif  // OUTBOX_DECODE_WAL2JSON_TEXT_H_
