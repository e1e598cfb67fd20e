// pgoutput::Reader: bounds-checked reads of one pgoutput message, the way
// the protocol encodes its fields: integers big-endian, strings
// NUL-terminated. Each read returns false, and consumes nothing, when the
// message has too few bytes left; nothing is ever read past its end.
//
// A view of the caller's bytes, which must outlive it. Not thread safe.
#ifndef OUTBOX_DECODE_PGOUTPUT_READER_H_
#define OUTBOX_DECODE_PGOUTPUT_READER_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/strings/string_view.h"

namespace outbox::pgoutput {

class Reader {
 public:
  explicit Reader(absl::string_view data)
      : p_(data.data()), left_(data.size()) {}

  bool AtEnd() const { return left_ == 0; }

  bool U8(uint8_t* v) {
    if (left_ < 1) return false;
    *v = static_cast<uint8_t>(*p_);
    Skip(1);
    return true;
  }
  bool U16(uint16_t* v) { return Int(v); }
  bool U32(uint32_t* v) { return Int(v); }
  bool U64(uint64_t* v) { return Int(v); }

  // A NUL-terminated string, without its NUL.
  bool CString(absl::string_view* s) {
    const void* nul = left_ == 0 ? nullptr : std::memchr(p_, '\0', left_);
    if (nul == nullptr) return false;
    const size_t n = static_cast<const char*>(nul) - p_;
    *s = absl::string_view(p_, n);
    Skip(n + 1);
    return true;
  }

  bool Bytes(size_t n, absl::string_view* s) {
    if (left_ < n) return false;
    *s = absl::string_view(p_, n);
    Skip(n);
    return true;
  }

 private:
  template <typename T>
  bool Int(T* v) {
    if (left_ < sizeof(T)) return false;
    T x = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      x = static_cast<T>((x << 8) | static_cast<uint8_t>(p_[i]));
    }
    *v = x;
    Skip(sizeof(T));
    return true;
  }
  void Skip(size_t n) {
    p_ += n;
    left_ -= n;
  }

  const char* p_;
  size_t left_;
};

}  // namespace outbox::pgoutput

#endif  // OUTBOX_DECODE_PGOUTPUT_READER_H_
