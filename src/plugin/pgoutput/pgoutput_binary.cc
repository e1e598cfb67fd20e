#include "plugin/pgoutput/pgoutput_binary.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "plugin/pgoutput/pgoutput_reader.h"

namespace outbox::pgoutput {
namespace {

// Built-in type OIDs (pg_type.dat; fixed across majors).
constexpr uint32_t kBool = 16, kBytea = 17, kName = 19, kInt8 = 20, kInt2 = 21,
                   kInt4 = 23, kText = 25, kOid = 26, kJson = 114,
                   kFloat4 = 700, kFloat8 = 701, kBpchar = 1042,
                   kVarchar = 1043, kDate = 1082, kTimestamp = 1114,
                   kTimestamptz = 1184, kNumeric = 1700, kUuid = 2950,
                   kJsonb = 3802;

constexpr int64_t kMicrosPerDay = 86400LL * 1000000;
// 2000-01-01 in days since 1970-01-01.
constexpr int64_t kPostgresEpochDays = 10957;

template <typename T>
void AppendInt(T v, std::string* out) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, end);
}

// Zero-padded to at least `width` digits.
void AppendPadded(int64_t v, int width, std::string* out) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  for (int n = static_cast<int>(end - buf); n < width; ++n) out->push_back('0');
  out->append(buf, end);
}

// IEEE layout of float and double.
template <typename F>
struct FloatBits;
template <>
struct FloatBits<float> {
  using U = uint32_t;
  static constexpr int kMantissaBits = 23, kBias = 127, kMaxDigits = 9;
};
template <>
struct FloatBits<double> {
  using U = uint64_t;
  static constexpr int kMantissaBits = 52, kBias = 1023, kMaxDigits = 17;
};

// Whether digits * 10^exp (digits > 0, without trailing zeros) is exactly
// halfway between |v| and one of its neighbours. Exact: both sides as
// odd * 2^f.
template <typename F>
bool IsMidpoint(F v, uint64_t digits, int exp) {
  using B = FloatBits<F>;
  const auto bits = std::bit_cast<typename B::U>(v);
  const uint64_t frac = bits & ((typename B::U{1} << B::kMantissaBits) - 1);
  const int biased =
      static_cast<int>((bits >> B::kMantissaBits) &
                       ((1u << (sizeof(F) * 8 - 1 - B::kMantissaBits)) - 1));
  uint64_t m = frac;
  int e = 1 - B::kBias - B::kMantissaBits;
  if (biased != 0) {
    m |= uint64_t{1} << B::kMantissaBits;
    e = biased - B::kBias - B::kMantissaBits;
  }
  // The decimal as odd * 2^f, if it is dyadic at all; a midpoint's odd part
  // has at most kMantissaBits + 3 bits.
  constexpr uint64_t kLimit = uint64_t{1} << (B::kMantissaBits + 3);
  uint64_t odd = digits;
  int f = exp;
  while ((odd & 1) == 0) {
    odd >>= 1;
    ++f;
  }
  if (exp >= 0) {
    for (int i = 0; i < exp; ++i) {
      if (odd > kLimit / 5) return false;
      odd *= 5;
    }
  } else {
    for (int i = 0; i < -exp; ++i) {
      if (odd % 5 != 0) return false;  // not dyadic
      odd /= 5;
    }
  }
  // Upper midpoint (2m+1) * 2^(e-1); lower (2m-1) * 2^(e-1), or
  // (4m-1) * 2^(e-2) below a power of two (the gap below is half).
  if (odd == 2 * m + 1 && f == e - 1) return true;
  if (frac == 0 && biased > 1) return odd == 4 * m - 1 && f == e - 2;
  return odd == 2 * m - 1 && f == e - 1;
}

// The significant digits (no sign, no point, no trailing zeros) and decimal
// exponent of the leading digit of std::to_chars' scientific output.
void SplitScientific(absl::string_view sci, std::string* digits, int* exp) {
  digits->clear();
  const size_t e = sci.find('e');
  for (size_t i = sci[0] == '-' ? 1 : 0; i < e; ++i) {
    if (sci[i] != '.') digits->push_back(sci[i]);
  }
  while (digits->size() > 1 && digits->back() == '0') digits->pop_back();
  *exp = 0;
  std::from_chars(sci.data() + e + (sci[e + 1] == '+' ? 2 : 1),
                  sci.data() + sci.size(), *exp);
}

template <typename F>
bool StrictlyRoundTrips(F v, const std::string& digits, int exp) {
  uint64_t d = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), d);
  const int unit_exp = exp - static_cast<int>(digits.size()) + 1;
  if (IsMidpoint(v, d, unit_exp)) return false;
  std::string text = digits + "e" + std::to_string(unit_exp);
  F back = 0;
  std::from_chars(text.data(), text.data() + text.size(), back);
  return back == std::fabs(v);
}

// float4out/float8out with extra_float_digits > 0: PostgreSQL's Ryu, which
// gives the shortest digits strictly inside v's rounding interval (it never
// accepts a bound), the closest to v among those. std::to_chars gives the
// same digits except that it accepts a bound when v's mantissa is even;
// then the next candidates are tried: the same length one step towards v,
// then v correctly rounded to more digits. Laid out as PostgreSQL's
// to_chars does: fixed notation when the decimal exponent is in
// [-4, fixed_below), else d[.ddd]e+XX (a sign and at least two exponent
// digits).
template <typename F>
void AppendFloat(F v, int fixed_below, std::string* out) {
  if (std::isnan(v)) {
    out->append("NaN");
    return;
  }
  if (std::isinf(v)) {
    out->append(v < 0 ? "-Infinity" : "Infinity");
    return;
  }
  if (v == 0) {
    out->append(std::signbit(v) ? "-0" : "0");
    return;
  }
  const F a = std::fabs(v);
  char buf[64];
  auto [end, ec] =
      std::to_chars(buf, buf + sizeof(buf), a, std::chars_format::scientific);
  std::string digits;
  int exp;
  SplitScientific(absl::string_view(buf, end - buf), &digits, &exp);
  uint64_t d = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), d);
  const int unit_exp = exp - static_cast<int>(digits.size()) + 1;
  if (IsMidpoint(a, d, unit_exp)) {
    // digits sits on a bound: one unit in its last place towards v.
    // Which side of v the bound is: a midpoint of floats is exact in a
    // long double (64 significant bits).
    const std::string text = digits + "e" + std::to_string(unit_exp);
    const bool above =
        std::strtold(text.c_str(), nullptr) > static_cast<long double>(a);
    std::string step = std::to_string(above ? d - 1 : d + 1);
    int step_exp = exp + static_cast<int>(step.size() - digits.size());
    while (step.size() > 1 && step.back() == '0') step.pop_back();
    if ((!above || d > 1) && StrictlyRoundTrips(a, step, step_exp)) {
      digits = step;
      exp = step_exp;
    } else {
      for (int p = static_cast<int>(digits.size()) + 1;
           p <= FloatBits<F>::kMaxDigits; ++p) {
        auto [e2, ec2] = std::to_chars(buf, buf + sizeof(buf), a,
                                       std::chars_format::scientific, p - 1);
        SplitScientific(absl::string_view(buf, e2 - buf), &digits, &exp);
        if (StrictlyRoundTrips(a, digits, exp)) break;
      }
    }
  }
  if (v < 0) out->push_back('-');
  const int n = static_cast<int>(digits.size());
  if (exp < -4 || exp >= fixed_below) {
    out->push_back(digits[0]);
    if (n > 1) {
      out->push_back('.');
      out->append(digits, 1);
    }
    out->push_back('e');
    out->push_back(exp < 0 ? '-' : '+');
    AppendPadded(exp < 0 ? -exp : exp, 2, out);
  } else if (exp < 0) {
    out->append("0.");
    out->append(static_cast<size_t>(-exp - 1), '0');
    out->append(digits);
  } else if (n <= exp + 1) {
    out->append(digits);
    out->append(static_cast<size_t>(exp + 1 - n), '0');
  } else {
    out->append(digits, 0, exp + 1);
    out->push_back('.');
    out->append(digits, exp + 1);
  }
}

// Days since 1970-01-01 -> proleptic Gregorian (astronomical year: 0 is
// 1 BC), as PostgreSQL's j2date.
void CivilFromDays(int64_t z, int64_t* y, int* m, int* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  *d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  *m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2 ? 1 : 0);
}

// "YYYY-MM-DD" with the BC year number; returns whether it is BC.
bool AppendYmd(int64_t unix_days, std::string* out) {
  int64_t year;
  int month, day;
  CivilFromDays(unix_days, &year, &month, &day);
  const bool bc = year <= 0;
  AppendPadded(bc ? 1 - year : year, 4, out);
  out->push_back('-');
  AppendPadded(month, 2, out);
  out->push_back('-');
  AppendPadded(day, 2, out);
  return bc;
}

}  // namespace

bool HasBinaryFormat(uint32_t type_oid) {
  switch (type_oid) {
    case kBool:
    case kBytea:
    case kName:
    case kInt8:
    case kInt2:
    case kInt4:
    case kText:
    case kOid:
    case kJson:
    case kFloat4:
    case kFloat8:
    case kBpchar:
    case kVarchar:
    case kDate:
    case kTimestamp:
    case kTimestamptz:
    case kNumeric:
    case kUuid:
    case kJsonb:
      return true;
    default:
      return false;
  }
}

void AppendFloat4(float v, std::string* out) { AppendFloat(v, 6, out); }
void AppendFloat8(double v, std::string* out) { AppendFloat(v, 15, out); }

bool AppendNumeric(absl::string_view raw, std::string* out) {
  // numeric_send: ndigits, weight, sign, dscale (Int16 each), then ndigits
  // base-10000 digits, the first of weight `weight`.
  Reader r(raw);
  uint16_t ndigits, weight_bits, sign, dscale;
  if (!r.U16(&ndigits) || !r.U16(&weight_bits) || !r.U16(&sign) ||
      !r.U16(&dscale) || ndigits > 0x7fff || raw.size() != 8 + 2u * ndigits) {
    return false;
  }
  switch (sign) {
    case 0xC000:
      out->append("NaN");
      return true;
    case 0xD000:
      out->append("Infinity");
      return true;
    case 0xF000:
      out->append("-Infinity");
      return true;
    case 0x0000:
    case 0x4000:
      break;
    default:
      return false;
  }
  if (dscale > 0x3fff) return false;
  const int weight = static_cast<int16_t>(weight_bits);
  const auto digit = [raw, ndigits](int i) -> int {
    if (i < 0 || i >= ndigits) return 0;
    return (static_cast<uint8_t>(raw[8 + 2 * i]) << 8) |
           static_cast<uint8_t>(raw[9 + 2 * i]);
  };
  for (int i = 0; i < ndigits; ++i) {
    if (digit(i) > 9999) return false;
  }
  if (sign == 0x4000) out->push_back('-');
  if (weight < 0) {
    out->push_back('0');
  } else {
    AppendInt(digit(0), out);  // the first without leading zeros
    for (int i = 1; i <= weight; ++i) AppendPadded(digit(i), 4, out);
  }
  if (dscale > 0) {
    out->push_back('.');
    const size_t end = out->size() + dscale;
    for (int i = weight + 1; out->size() < end; ++i) {
      AppendPadded(digit(i), 4, out);
    }
    out->resize(end);
  }
  return true;
}

void AppendTimestamp(int64_t pg_micros, bool with_zone, std::string* out) {
  if (pg_micros == std::numeric_limits<int64_t>::min()) {
    out->append("-infinity");
    return;
  }
  if (pg_micros == std::numeric_limits<int64_t>::max()) {
    out->append("infinity");
    return;
  }
  int64_t days = pg_micros / kMicrosPerDay;
  int64_t time = pg_micros % kMicrosPerDay;
  if (time < 0) {
    time += kMicrosPerDay;
    --days;
  }
  const bool bc = AppendYmd(days + kPostgresEpochDays, out);
  const int64_t secs = time / 1000000;
  const int64_t fsec = time % 1000000;
  out->push_back(' ');
  AppendPadded(secs / 3600, 2, out);
  out->push_back(':');
  AppendPadded(secs / 60 % 60, 2, out);
  out->push_back(':');
  AppendPadded(secs % 60, 2, out);
  if (fsec != 0) {
    out->push_back('.');
    const size_t at = out->size();
    AppendPadded(fsec, 6, out);
    size_t end = out->size();
    while (end > at && (*out)[end - 1] == '0') --end;
    out->resize(end);
  }
  if (with_zone) out->append("+00");
  if (bc) out->append(" BC");
}

void AppendDate(int32_t pg_days, std::string* out) {
  if (pg_days == std::numeric_limits<int32_t>::min()) {
    out->append("-infinity");
    return;
  }
  if (pg_days == std::numeric_limits<int32_t>::max()) {
    out->append("infinity");
    return;
  }
  if (AppendYmd(int64_t{pg_days} + kPostgresEpochDays, out)) {
    out->append(" BC");
  }
}

void AppendUuid(absl::string_view raw16, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out->push_back('-');
    const auto b = static_cast<uint8_t>(raw16[i]);
    out->push_back(kHex[b >> 4]);
    out->push_back(kHex[b & 15]);
  }
}

bool FormatBinary(uint32_t type_oid, absl::string_view raw, std::string* buf,
                  absl::string_view* view, bool* appended) {
  *appended = false;
  Reader r(raw);
  const size_t before = buf->size();
  switch (type_oid) {
    case kBool:
      if (raw.size() != 1) return false;
      *view = raw[0] != 0 ? "t" : "f";
      return true;
    case kText:
    case kVarchar:
    case kBpchar:
    case kName:
    case kJson:
      *view = raw;
      return true;
    case kJsonb:
      if (raw.empty() || raw[0] != 1) return false;
      *view = raw.substr(1);
      return true;
    case kInt2: {
      uint16_t v;
      if (raw.size() != 2 || !r.U16(&v)) return false;
      AppendInt(static_cast<int16_t>(v), buf);
      break;
    }
    case kInt4: {
      uint32_t v;
      if (raw.size() != 4 || !r.U32(&v)) return false;
      AppendInt(static_cast<int32_t>(v), buf);
      break;
    }
    case kOid: {
      uint32_t v;
      if (raw.size() != 4 || !r.U32(&v)) return false;
      AppendInt(v, buf);
      break;
    }
    case kInt8: {
      uint64_t v;
      if (raw.size() != 8 || !r.U64(&v)) return false;
      AppendInt(static_cast<int64_t>(v), buf);
      break;
    }
    case kFloat4: {
      uint32_t v;
      if (raw.size() != 4 || !r.U32(&v)) return false;
      AppendFloat4(std::bit_cast<float>(v), buf);
      break;
    }
    case kFloat8: {
      uint64_t v;
      if (raw.size() != 8 || !r.U64(&v)) return false;
      AppendFloat8(std::bit_cast<double>(v), buf);
      break;
    }
    case kNumeric:
      if (!AppendNumeric(raw, buf)) return false;
      break;
    case kUuid:
      if (raw.size() != 16) return false;
      AppendUuid(raw, buf);
      break;
    case kDate: {
      uint32_t v;
      if (raw.size() != 4 || !r.U32(&v)) return false;
      AppendDate(static_cast<int32_t>(v), buf);
      break;
    }
    case kTimestamp:
    case kTimestamptz: {
      uint64_t v;
      if (raw.size() != 8 || !r.U64(&v)) return false;
      AppendTimestamp(static_cast<int64_t>(v), type_oid == kTimestamptz, buf);
      break;
    }
    default:
      return false;
  }
  *appended = true;
  *view = absl::string_view(buf->data() + before, buf->size() - before);
  return true;
}

}  // namespace outbox::pgoutput
