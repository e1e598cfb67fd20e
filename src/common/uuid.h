// UUIDv7 (RFC 9562, section 5.7) in the canonical text form: 48 bits of Unix
// time in milliseconds, the version nibble 7, 12 random bits, the variant
// bits 10, 62 random bits; lower-case hex 8-4-4-4-12, as Java's
// UUID.toString() writes it. Later milliseconds sort later, as text too.
//
// Debezium 3.4 and later make one per connector task start (its
// CdcSourceTaskContext runId) and write it in the __debezium.context.runId
// header; the Router does the same per process (route/router.h).
//
// Thread safety: FormatUuidV7 is pure; NewUuidV7 may be called from any
// thread.
#ifndef OUTBOX_COMMON_UUID_H_
#define OUTBOX_COMMON_UUID_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace outbox {

// The UUIDv7 of `unix_ms` with the given random bits: the low 12 bits of
// rand_a and the low 62 bits of rand_b are used.
std::string FormatUuidV7(int64_t unix_ms, uint64_t rand_a, uint64_t rand_b);

// A UUIDv7 of the current time with random bits from std::random_device.
std::string NewUuidV7();

// True for the canonical text of a UUIDv7: 36 characters, lower-case hex and
// dashes at 8, 13, 18, 23, version 7, variant 10.
bool IsUuidV7(absl::string_view text);

}  // namespace outbox

#endif  // OUTBOX_COMMON_UUID_H_
