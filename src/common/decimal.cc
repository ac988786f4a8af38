#include "src/common/decimal.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

namespace shale {
namespace {

using u128 = unsigned __int128;

constexpr u128 MakePow10(int n) {
  u128 v = 1;
  for (int i = 0; i < n; ++i) v *= 10;
  return v;
}

struct Pow10Table {
  u128 v[39];
  constexpr Pow10Table() : v() {
    for (int i = 0; i <= 38; ++i) v[i] = MakePow10(i);
  }
};
constexpr Pow10Table kPow10;

// The exclusive bound on |units|: kMaxDigits digits.
constexpr u128 kLimit = MakePow10(Decimal::kMaxDigits);

u128 Magnitude(__int128 v) { return v < 0 ? static_cast<u128>(0) - static_cast<u128>(v) : static_cast<u128>(v); }

std::optional<Decimal> Checked(__int128 units, int scale) {
  if (Magnitude(units) >= kLimit) return std::nullopt;
  return Decimal(units, scale);
}

// |v| / 10^n rounded half away from zero (n may exceed 38: then 0).
__int128 DivPow10Round(__int128 v, int n) {
  if (n <= 0) return v;
  if (n > 38) return 0;
  u128 m = Magnitude(v);
  u128 p = kPow10.v[n];
  u128 q = m / p, r = m % p;
  if (r >= p - r) ++q;
  return v < 0 ? -static_cast<__int128>(q) : static_cast<__int128>(q);
}

__int128 DivPow10Trunc(__int128 v, int n) {
  if (n <= 0) return v;
  if (n > 38) return 0;
  u128 q = Magnitude(v) / kPow10.v[n];
  return v < 0 ? -static_cast<__int128>(q) : static_cast<__int128>(q);
}

bool MulPow10(__int128 v, int n, __int128* out) {
  if (n > 38) return v == 0 ? (*out = 0, true) : false;
  return !__builtin_mul_overflow(v, static_cast<__int128>(kPow10.v[n]), out);
}

std::string MagnitudeDigits(u128 m) {
  if (m == 0) return "0";
  std::string s;
  while (m > 0) {
    s.push_back(static_cast<char>('0' + static_cast<int>(m % 10)));
    m /= 10;
  }
  return std::string(s.rbegin(), s.rend());
}

}  // namespace

__int128 Pow10_128(int n) { return static_cast<__int128>(kPow10.v[n]); }

std::optional<Decimal> Decimal::Parse(std::string_view s) {
  size_t i = 0;
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (i < s.size() && space(s[i])) ++i;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  std::string digits;
  int frac = 0;
  size_t ndigits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') digits.push_back(s[i++]), ++ndigits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') digits.push_back(s[i++]), ++frac, ++ndigits;
  }
  if (ndigits == 0) return std::nullopt;
  int64_t exp = 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool eneg = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) eneg = s[i++] == '-';
    if (i >= s.size() || s[i] < '0' || s[i] > '9') return std::nullopt;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      exp = exp * 10 + (s[i++] - '0');
      if (exp > 1000) return std::nullopt;
    }
    if (eneg) exp = -exp;
  }
  while (i < s.size() && space(s[i])) ++i;
  if (i != s.size()) return std::nullopt;
  int64_t scale = frac - exp;
  // Drop leading zeros; they carry no value.
  size_t lead = digits.find_first_not_of('0');
  if (lead == std::string::npos) return Decimal(0, static_cast<int>(std::clamp<int64_t>(scale, 0, kMaxScale)));
  digits.erase(0, lead);
  bool round_up = false;
  if (scale > kMaxScale) {
    int64_t drop = scale - kMaxScale;
    if (drop >= static_cast<int64_t>(digits.size())) {
      round_up = drop == static_cast<int64_t>(digits.size()) && digits[0] >= '5';
      digits.clear();
    } else {
      round_up = digits[digits.size() - drop] >= '5';
      digits.resize(digits.size() - drop);
    }
    scale = kMaxScale;
  }
  if (scale < 0) {
    if (static_cast<int64_t>(digits.size()) - scale > kMaxDigits) return std::nullopt;
    digits.append(static_cast<size_t>(-scale), '0');
    scale = 0;
  }
  if (digits.size() > static_cast<size_t>(kMaxDigits)) return std::nullopt;
  __int128 units = 0;
  for (char c : digits) units = units * 10 + (c - '0');
  if (round_up) ++units;
  if (neg) units = -units;
  return Checked(units, static_cast<int>(scale));
}

std::optional<Decimal> Decimal::FromDouble(double d, int scale) {
  if (!std::isfinite(d)) return std::nullopt;
  auto parsed = Parse(fmt::format("{}", d));
  if (!parsed) return std::nullopt;
  return parsed->Rescale(scale);
}

int Decimal::IntegerDigits() const {
  u128 ip = Magnitude(units_) / kPow10.v[scale_];
  int n = 1;
  while (ip >= 10) ip /= 10, ++n;
  return n;
}

bool Decimal::FitsPrecision(int precision) const {
  int int_digits = precision - scale_;
  if (int_digits < 0) return false;
  u128 ip = Magnitude(units_) / kPow10.v[scale_];
  if (int_digits > 38) return true;
  return ip < kPow10.v[int_digits];
}

std::optional<Decimal> Decimal::Rescale(int scale) const {
  if (scale == scale_) return *this;
  if (scale > scale_) {
    __int128 out = 0;
    if (!MulPow10(units_, scale - scale_, &out)) return std::nullopt;
    return Checked(out, scale);
  }
  return Checked(DivPow10Round(units_, scale_ - scale), scale);
}

std::optional<Decimal> Decimal::Truncate(int scale) const {
  if (scale >= scale_) return *this;
  if (scale >= 0) return Decimal(DivPow10Trunc(units_, scale_ - scale), scale);
  __int128 q = DivPow10Trunc(units_, scale_ - scale), out = 0;
  if (!MulPow10(q, -scale, &out)) return std::nullopt;
  return Checked(out, 0);
}

std::optional<Decimal> Decimal::Round(int scale) const {
  if (scale >= scale_) return *this;
  if (scale >= 0) return Rescale(scale);
  __int128 q = DivPow10Round(units_, scale_ - scale), out = 0;
  if (!MulPow10(q, -scale, &out)) return std::nullopt;
  return Checked(out, 0);
}

std::optional<Decimal> Decimal::Floor() const {
  if (scale_ == 0) return *this;
  u128 p = kPow10.v[scale_];
  __int128 q = DivPow10Trunc(units_, scale_);
  if (units_ < 0 && Magnitude(units_) % p != 0) --q;
  return Decimal(q, 0);
}

std::optional<Decimal> Decimal::Ceil() const {
  if (scale_ == 0) return *this;
  u128 p = kPow10.v[scale_];
  __int128 q = DivPow10Trunc(units_, scale_);
  if (units_ > 0 && Magnitude(units_) % p != 0) ++q;
  return Decimal(q, 0);
}

std::optional<Decimal> Decimal::Add(const Decimal& a, const Decimal& b) {
  int s = std::max(a.scale_, b.scale_);
  auto x = a.Rescale(s), y = b.Rescale(s);
  if (!x || !y) return std::nullopt;
  __int128 out = 0;
  if (__builtin_add_overflow(x->units_, y->units_, &out)) return std::nullopt;
  return Checked(out, s);
}

std::optional<Decimal> Decimal::Sub(const Decimal& a, const Decimal& b) { return Add(a, b.Negate()); }

std::optional<Decimal> Decimal::Mul(const Decimal& a, const Decimal& b) {
  __int128 out = 0;
  int s = a.scale_ + b.scale_;
  if (__builtin_mul_overflow(a.units_, b.units_, &out)) return std::nullopt;
  if (s > kMaxScale) {
    out = DivPow10Round(out, s - kMaxScale);
    s = kMaxScale;
  }
  return Checked(out, s);
}

std::optional<Decimal> Decimal::Div(const Decimal& a, const Decimal& b, int scale) {
  // a/b * 10^scale = a.units * 10^(scale + b.scale - a.scale) / b.units.
  int k = scale + b.scale_ - a.scale_;
  __int128 num = a.units_, den = b.units_;
  if (k >= 0) {
    if (!MulPow10(num, k, &num)) return std::nullopt;
  } else if (!MulPow10(den, -k, &den)) {
    return Decimal(0, scale);  // |den| beyond 10^38 > |num|: rounds to 0
  }
  u128 n = Magnitude(num), d = Magnitude(den);
  u128 q = n / d, r = n % d;
  if (r >= d - r) ++q;
  bool neg = (num < 0) != (den < 0);
  if (q >= kLimit) return std::nullopt;
  __int128 v = static_cast<__int128>(q);
  return Decimal(neg ? -v : v, scale);
}

std::optional<Decimal> Decimal::Mod(const Decimal& a, const Decimal& b) {
  int s = std::max(a.scale_, b.scale_);
  auto x = a.Rescale(s), y = b.Rescale(s);
  if (!x || !y) return std::nullopt;
  return Decimal(x->units_ % y->units_, s);
}

int Decimal::Compare(const Decimal& a, const Decimal& b) {
  bool an = a.units_ < 0, bn = b.units_ < 0;
  if (an != bn) return an ? -1 : 1;
  if (a.scale_ == b.scale_) return a.units_ < b.units_ ? -1 : (a.units_ > b.units_ ? 1 : 0);
  // Same sign: compare magnitudes by integer part, then aligned fractions.
  u128 ma = Magnitude(a.units_), mb = Magnitude(b.units_);
  u128 ia = ma / kPow10.v[a.scale_], ib = mb / kPow10.v[b.scale_];
  int c = 0;
  if (ia != ib) {
    c = ia < ib ? -1 : 1;
  } else {
    int s = std::max(a.scale_, b.scale_);
    u128 fa = (ma % kPow10.v[a.scale_]) * kPow10.v[s - a.scale_];
    u128 fb = (mb % kPow10.v[b.scale_]) * kPow10.v[s - b.scale_];
    c = fa < fb ? -1 : (fa > fb ? 1 : 0);
  }
  return an ? -c : c;
}

double Decimal::ToDouble() const { return std::strtod(ToString().c_str(), nullptr); }

int64_t Decimal::ToInt64Rounded(bool* overflow) const {
  __int128 q = DivPow10Round(units_, scale_);
  if (overflow) *overflow = false;
  if (q > std::numeric_limits<int64_t>::max() || q < std::numeric_limits<int64_t>::min()) {
    if (overflow) *overflow = true;
    return q < 0 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
  }
  return static_cast<int64_t>(q);
}

std::string Decimal::ToString() const {
  std::string digits = MagnitudeDigits(Magnitude(units_));
  if (scale_ > 0) {
    if (digits.size() <= static_cast<size_t>(scale_)) {
      digits.insert(0, static_cast<size_t>(scale_) + 1 - digits.size(), '0');
    }
    digits.insert(digits.size() - scale_, 1, '.');
  }
  if (units_ < 0) digits.insert(0, 1, '-');
  return digits;
}

}  // namespace shale
