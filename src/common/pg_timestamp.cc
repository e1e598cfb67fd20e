#include "common/pg_timestamp.h"

namespace outbox {
namespace {

bool IsDigit(char c) { return static_cast<unsigned char>(c - '0') < 10; }

// Days since 1970-01-01 of a proleptic Gregorian date, year >= 0
// (H. Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = y / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int DaysInMonth(int64_t y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30,
                                  31, 31, 30, 31, 30, 31};
  if (m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)) return 29;
  return kDays[m - 1];
}

}  // namespace

bool ParsePgTimestamp(absl::string_view text, UtcOffset offset,
                      int64_t* unix_micros) {
  const char* p = text.data();
  const char* const end = p + text.size();
  auto two = [&](int* v) {
    if (end - p < 2 || !IsDigit(p[0]) || !IsDigit(p[1])) return false;
    *v = (p[0] - '0') * 10 + (p[1] - '0');
    p += 2;
    return true;
  };
  auto lit = [&](char c) {
    if (p == end || *p != c) return false;
    ++p;
    return true;
  };
  int64_t year = 0;
  int year_digits = 0;
  while (p < end && IsDigit(*p)) {
    if (++year_digits > 6) return false;
    year = year * 10 + (*p++ - '0');
  }
  int month, day, hour, minute, second;
  if (year_digits < 4 || !lit('-') || !two(&month) || !lit('-') || !two(&day) ||
      !lit(' ') || !two(&hour) || !lit(':') || !two(&minute) || !lit(':') ||
      !two(&second)) {
    return false;
  }
  int64_t micros = 0;
  if (lit('.')) {
    int digits = 0;
    while (p < end && IsDigit(*p)) {
      if (++digits > 6) return false;
      micros = micros * 10 + (*p++ - '0');
    }
    if (digits == 0) return false;
    for (; digits < 6; ++digits) micros *= 10;
  }
  int sign = 1;
  int off_h = 0, off_m = 0, off_s = 0;
  if (p == end && offset == UtcOffset::kOptional) {
    // A timestamp without time zone: UTC.
  } else {
    if (p == end || (*p != '+' && *p != '-')) return false;
    sign = *p++ == '-' ? -1 : 1;
    if (!two(&off_h)) return false;
    if (lit(':')) {
      if (!two(&off_m)) return false;
      if (lit(':') && !two(&off_s)) return false;
    }
  }
  // Past year 200000 int64 microseconds would overflow; PostgreSQL never
  // commits there.
  if (p != end || year < 1 || year > 200000 || month < 1 || month > 12 ||
      day < 1 || day > DaysInMonth(year, month) || hour > 23 || minute > 59 ||
      second > 59 || off_h > 23 || off_m > 59 || off_s > 59) {
    return false;
  }
  const int64_t seconds = DaysFromCivil(year, month, day) * 86400 +
                          hour * 3600 + minute * 60 + second -
                          sign * (off_h * 3600 + off_m * 60 + off_s);
  *unix_micros = seconds * 1000000 + micros;
  return true;
}

}  // namespace outbox
