#include "src/common/decimal.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

namespace shale {
namespace {

using u128 = unsigned __int128;

// A 512-bit unsigned integer, least significant limb first: the working
// type of every operation (a stored magnitude has 4 limbs; products and
// scaled dividends need up to 8).
struct Wide {
  static constexpr int kLimbs = 8;
  uint64_t w[kLimbs] = {};

  int Len() const {
    int n = kLimbs;
    while (n > 0 && w[n - 1] == 0) --n;
    return n;
  }
  bool IsZero() const { return Len() == 0; }
  bool FitsU128() const { return Len() <= 2; }
  u128 ToU128() const { return (static_cast<u128>(w[1]) << 64) | w[0]; }
  static Wide FromU128(u128 v) {
    Wide x;
    x.w[0] = static_cast<uint64_t>(v);
    x.w[1] = static_cast<uint64_t>(v >> 64);
    return x;
  }
  int Bits() const {
    int n = Len();
    if (n == 0) return 0;
    return (n - 1) * 64 + (64 - __builtin_clzll(w[n - 1]));
  }
};

int Cmp(const Wide& a, const Wide& b) {
  for (int i = Wide::kLimbs - 1; i >= 0; --i) {
    if (a.w[i] != b.w[i]) return a.w[i] < b.w[i] ? -1 : 1;
  }
  return 0;
}

// a += b; returns false on overflow.
bool AddTo(Wide* a, const Wide& b) {
  uint64_t carry = 0;
  for (int i = 0; i < Wide::kLimbs; ++i) {
    u128 s = static_cast<u128>(a->w[i]) + b.w[i] + carry;
    a->w[i] = static_cast<uint64_t>(s);
    carry = static_cast<uint64_t>(s >> 64);
  }
  return carry == 0;
}

// a -= b. REQUIRES: a >= b.
void SubFrom(Wide* a, const Wide& b) {
  uint64_t borrow = 0;
  for (int i = 0; i < Wide::kLimbs; ++i) {
    u128 d = static_cast<u128>(a->w[i]) - b.w[i] - borrow;
    a->w[i] = static_cast<uint64_t>(d);
    borrow = static_cast<uint64_t>(d >> 64) ? 1 : 0;
  }
}

// a *= m; returns false on overflow.
bool MulSmall(Wide* a, uint64_t m) {
  uint64_t carry = 0;
  for (int i = 0; i < Wide::kLimbs; ++i) {
    u128 p = static_cast<u128>(a->w[i]) * m + carry;
    a->w[i] = static_cast<uint64_t>(p);
    carry = static_cast<uint64_t>(p >> 64);
  }
  return carry == 0;
}

// a /= d; returns the remainder. REQUIRES: d > 0.
uint64_t DivSmall(Wide* a, uint64_t d) {
  u128 rem = 0;
  for (int i = Wide::kLimbs - 1; i >= 0; --i) {
    u128 cur = (rem << 64) | a->w[i];
    a->w[i] = static_cast<uint64_t>(cur / d);
    rem = cur % d;
  }
  return static_cast<uint64_t>(rem);
}

// a * b; returns false on overflow.
bool MulWide(const Wide& a, const Wide& b, Wide* out) {
  Wide r;
  int la = a.Len(), lb = b.Len();
  for (int i = 0; i < la; ++i) {
    uint64_t carry = 0;
    for (int j = 0; j < lb; ++j) {
      if (i + j >= Wide::kLimbs) {
        if (a.w[i] != 0 && b.w[j] != 0) return false;
        continue;
      }
      u128 p = static_cast<u128>(a.w[i]) * b.w[j] + r.w[i + j] + carry;
      r.w[i + j] = static_cast<uint64_t>(p);
      carry = static_cast<uint64_t>(p >> 64);
    }
    if (carry != 0) {
      if (i + lb >= Wide::kLimbs) return false;
      r.w[i + lb] = carry;
    }
  }
  *out = r;
  return true;
}

void ShiftLeft1(Wide* a) {
  for (int i = Wide::kLimbs - 1; i > 0; --i) a->w[i] = (a->w[i] << 1) | (a->w[i - 1] >> 63);
  a->w[0] <<= 1;
}

// n / d and n % d. REQUIRES: d != 0.
void DivMod(const Wide& n, const Wide& d, Wide* q, Wide* r) {
  if (n.FitsU128() && d.FitsU128()) {
    u128 a = n.ToU128(), b = d.ToU128();
    *q = Wide::FromU128(a / b);
    *r = Wide::FromU128(a % b);
    return;
  }
  if (d.Len() == 1) {
    *q = n;
    *r = Wide::FromU128(DivSmall(q, d.w[0]));
    return;
  }
  // Shift-subtract over the dividend's bits (divisors this wide are rare).
  Wide quo, rem;
  for (int bit = n.Bits() - 1; bit >= 0; --bit) {
    ShiftLeft1(&rem);
    rem.w[0] |= (n.w[bit / 64] >> (bit % 64)) & 1;
    if (Cmp(rem, d) >= 0) {
      SubFrom(&rem, d);
      quo.w[bit / 64] |= uint64_t{1} << (bit % 64);
    }
  }
  *q = quo;
  *r = rem;
}

constexpr int kPow10Count = 154;  // 10^0 .. 10^153 (< 2^512)

struct Pow10Table {
  Wide v[kPow10Count];
  Pow10Table() {
    v[0].w[0] = 1;
    for (int i = 1; i < kPow10Count; ++i) {
      v[i] = v[i - 1];
      MulSmall(&v[i], 10);
    }
  }
};

const Wide& Pow10(int n) {
  static const Pow10Table table;
  return table.v[n];
}

// The exclusive bound on a magnitude: kMaxValueDigits digits.
const Wide& Limit() { return Pow10(Decimal::kMaxValueDigits); }

// a * 10^n; false on overflow.
bool MulPow10(Wide* a, int n) {
  if (n <= 0 || a->IsZero()) return true;
  if (n >= kPow10Count) return false;
  return MulWide(*a, Pow10(n), a);
}

// a / 10^n truncated, *rem_nonzero whether anything was dropped, *half_up
// whether the dropped part is at least half a unit.
Wide DivPow10(const Wide& a, int n, bool* rem_nonzero = nullptr, bool* half_up = nullptr) {
  if (n <= 0) {
    if (rem_nonzero) *rem_nonzero = false;
    if (half_up) *half_up = false;
    return a;
  }
  if (n >= kPow10Count) {
    if (rem_nonzero) *rem_nonzero = !a.IsZero();
    if (half_up) *half_up = false;
    return Wide();
  }
  Wide q, r;
  DivMod(a, Pow10(n), &q, &r);
  if (rem_nonzero) *rem_nonzero = !r.IsZero();
  if (half_up) {
    // r >= 10^n / 2  <=>  2r >= 10^n.
    Wide twice = r;
    *half_up = !AddTo(&twice, r) || Cmp(twice, Pow10(n)) >= 0;
  }
  return q;
}

Wide DivPow10Round(const Wide& a, int n) {
  bool up = false;
  Wide q = DivPow10(a, n, nullptr, &up);
  if (up) {
    Wide one;
    one.w[0] = 1;
    AddTo(&q, one);
  }
  return q;
}

std::string MagnitudeDigits(Wide m) {
  if (m.IsZero()) return "0";
  constexpr uint64_t kChunk = 10000000000000000000ull;  // 10^19
  std::string out;
  while (!m.IsZero()) {
    uint64_t part = DivSmall(&m, kChunk);
    std::string digits = std::to_string(part);
    if (!m.IsZero()) digits.insert(0, 19 - digits.size(), '0');
    out.insert(0, digits);
  }
  return out;
}

}  // namespace

// Converts between Decimal and the working type.
struct DecimalAccess {
  static Wide Mag(const Decimal& d) {
    Wide x;
    for (int i = 0; i < 4; ++i) x.w[i] = d.w_[i];
    x.w[4] = d.TopLimb();
    return x;
  }
  // nullopt if m has kMaxValueDigits + 1 digits or more.
  static std::optional<Decimal> Make(const Wide& m, bool neg, int scale) {
    if (Cmp(m, Limit()) >= 0) return std::nullopt;
    Decimal d;
    for (int i = 0; i < 5; ++i) d.w_[i] = m.w[i];
    if (neg && !m.IsZero()) d.w_[4] |= Decimal::kNegativeBit;
    d.w_[4] |= static_cast<uint64_t>(scale) << Decimal::kScaleShift;
    return d;
  }
  // The magnitude's bytes, most significant first, without leading zeros.
  static std::string BytesBE(const Decimal& d) {
    Wide m = Mag(d);
    std::string bytes;
    for (int limb = 4; limb >= 0; --limb) {
      for (int shift = 56; shift >= 0; shift -= 8) {
        auto b = static_cast<char>(m.w[limb] >> shift);
        if (bytes.empty() && b == 0) continue;
        bytes.push_back(b);
      }
    }
    return bytes;
  }
  // The Decimal whose magnitude has big-endian bytes `be` (complemented if
  // `flip`). False if it has too many digits.
  static bool FromBytesBE(std::string_view be, bool flip, bool neg, int scale, Decimal* out) {
    if (be.size() > 40) return false;
    Wide m;
    for (size_t i = 0; i < be.size(); ++i) {
      auto b = static_cast<uint8_t>(be[i]);
      if (flip) b = static_cast<uint8_t>(~b);
      size_t pos = be.size() - 1 - i;  // byte index from the least significant end
      m.w[pos / 8] |= static_cast<uint64_t>(b) << (8 * (pos % 8));
    }
    auto d = Make(m, neg, scale);
    if (!d) return false;
    *out = *d;
    return true;
  }
};

namespace {

Wide Mag(const Decimal& d) { return DecimalAccess::Mag(d); }
std::optional<Decimal> Make(const Wide& m, bool neg, int scale) { return DecimalAccess::Make(m, neg, scale); }

// a's magnitude at scale s >= a.scale(); false on overflow of the working type.
bool MagAt(const Decimal& a, int s, Wide* out) {
  *out = Mag(a);
  return MulPow10(out, s - a.scale());
}

}  // namespace

Decimal::Decimal(__int128 units, int scale) {
  u128 m = units < 0 ? static_cast<u128>(0) - static_cast<u128>(units) : static_cast<u128>(units);
  w_[0] = static_cast<uint64_t>(m);
  w_[1] = static_cast<uint64_t>(m >> 64);
  w_[4] = static_cast<uint64_t>(scale) << kScaleShift;
  if (units < 0) w_[4] |= kNegativeBit;
}

__int128 Decimal::units() const {
  u128 m = (static_cast<u128>(w_[1]) << 64) | w_[0];
  return is_negative() ? -static_cast<__int128>(m) : static_cast<__int128>(m);
}

__int128 Pow10_128(int n) { return static_cast<__int128>(Pow10(n).ToU128()); }

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
    if (static_cast<int64_t>(digits.size()) - scale > kMaxValueDigits) return std::nullopt;
    digits.append(static_cast<size_t>(-scale), '0');
    scale = 0;
  }
  if (digits.size() > static_cast<size_t>(kMaxValueDigits)) return std::nullopt;
  Wide m;
  for (char c : digits) {
    MulSmall(&m, 10);
    Wide d;
    d.w[0] = static_cast<uint64_t>(c - '0');
    AddTo(&m, d);
  }
  if (round_up) {
    Wide one;
    one.w[0] = 1;
    AddTo(&m, one);
  }
  return Make(m, neg, static_cast<int>(scale));
}

std::optional<Decimal> Decimal::FromDouble(double d, int scale) {
  if (!std::isfinite(d)) return std::nullopt;
  auto parsed = Parse(fmt::format("{}", d));
  if (!parsed) return std::nullopt;
  return parsed->Rescale(scale);
}

Decimal Decimal::Max(int precision, int scale, bool negative) {
  Wide m = Pow10(precision);
  Wide one;
  one.w[0] = 1;
  SubFrom(&m, one);
  return *Make(m, negative, scale);
}

int Decimal::IntegerDigits() const {
  Wide ip = DivPow10(Mag(*this), scale());
  int n = 1;
  while (n < kPow10Count && Cmp(ip, Pow10(n)) >= 0) ++n;
  return n;
}

bool Decimal::FitsPrecision(int precision) const {
  int int_digits = precision - scale();
  if (int_digits < 0) return false;
  if (int_digits >= kPow10Count) return true;
  return Cmp(DivPow10(Mag(*this), scale()), Pow10(int_digits)) < 0;
}

std::optional<Decimal> Decimal::Rescale(int to) const {
  if (to == scale()) return *this;
  if (to > scale()) {
    Wide m;
    if (!MagAt(*this, to, &m)) return std::nullopt;
    return Make(m, is_negative(), to);
  }
  return Make(DivPow10Round(Mag(*this), scale() - to), is_negative(), to);
}

std::optional<Decimal> Decimal::Truncate(int to) const {
  if (to >= scale()) return *this;
  Wide q = DivPow10(Mag(*this), scale() - to);
  if (to >= 0) return Make(q, is_negative(), to);
  if (!MulPow10(&q, -to)) return std::nullopt;
  return Make(q, is_negative(), 0);
}

std::optional<Decimal> Decimal::Round(int to) const {
  if (to >= scale()) return *this;
  if (to >= 0) return Rescale(to);
  Wide q = DivPow10Round(Mag(*this), scale() - to);
  if (!MulPow10(&q, -to)) return std::nullopt;
  return Make(q, is_negative(), 0);
}

std::optional<Decimal> Decimal::Floor() const {
  if (scale() == 0) return *this;
  bool dropped = false;
  Wide q = DivPow10(Mag(*this), scale(), &dropped);
  if (is_negative() && dropped) {
    Wide one;
    one.w[0] = 1;
    AddTo(&q, one);
  }
  return Make(q, is_negative(), 0);
}

std::optional<Decimal> Decimal::Ceil() const {
  if (scale() == 0) return *this;
  bool dropped = false;
  Wide q = DivPow10(Mag(*this), scale(), &dropped);
  if (!is_negative() && dropped) {
    Wide one;
    one.w[0] = 1;
    AddTo(&q, one);
  }
  return Make(q, is_negative(), 0);
}

std::optional<Decimal> Decimal::Add(const Decimal& a, const Decimal& b) {
  int s = std::max(a.scale(), b.scale());
  Wide x, y;
  if (!MagAt(a, s, &x) || !MagAt(b, s, &y)) return std::nullopt;
  if (a.is_negative() == b.is_negative()) {
    if (!AddTo(&x, y)) return std::nullopt;
    return Make(x, a.is_negative(), s);
  }
  // Opposite signs: the larger magnitude keeps its sign.
  if (Cmp(x, y) >= 0) {
    SubFrom(&x, y);
    return Make(x, a.is_negative(), s);
  }
  SubFrom(&y, x);
  return Make(y, b.is_negative(), s);
}

std::optional<Decimal> Decimal::Sub(const Decimal& a, const Decimal& b) { return Add(a, b.Negate()); }

std::optional<Decimal> Decimal::Mul(const Decimal& a, const Decimal& b) {
  Wide p;
  if (!MulWide(Mag(a), Mag(b), &p)) return std::nullopt;
  int s = a.scale() + b.scale();
  if (s > kMaxScale) {
    p = DivPow10Round(p, s - kMaxScale);
    s = kMaxScale;
  }
  return Make(p, a.is_negative() != b.is_negative(), s);
}

std::optional<Decimal> Decimal::Div(const Decimal& a, const Decimal& b, int scale) {
  // a/b * 10^scale = a.units * 10^(scale + b.scale - a.scale) / b.units.
  int k = scale + b.scale() - a.scale();
  Wide num = Mag(a), den = Mag(b);
  if (k >= 0) {
    if (!MulPow10(&num, k)) return std::nullopt;
  } else if (!MulPow10(&den, -k)) {
    return Decimal(0, scale);  // |den| beyond the working range > |num|: rounds to 0
  }
  Wide q, r;
  DivMod(num, den, &q, &r);
  // Round half away from zero: r >= den - r.
  Wide rest = den;
  SubFrom(&rest, r);
  if (Cmp(r, rest) >= 0) {
    Wide one;
    one.w[0] = 1;
    AddTo(&q, one);
  }
  return Make(q, a.is_negative() != b.is_negative(), scale);
}

std::optional<Decimal> Decimal::IntDiv(const Decimal& a, const Decimal& b) {
  int s = std::max(a.scale(), b.scale());
  Wide x, y, q, r;
  if (!MagAt(a, s, &x) || !MagAt(b, s, &y)) return std::nullopt;
  DivMod(x, y, &q, &r);
  return Make(q, a.is_negative() != b.is_negative(), 0);
}

std::optional<Decimal> Decimal::Mod(const Decimal& a, const Decimal& b) {
  int s = std::max(a.scale(), b.scale());
  Wide x, y, q, r;
  if (!MagAt(a, s, &x) || !MagAt(b, s, &y)) return std::nullopt;
  DivMod(x, y, &q, &r);
  return Make(r, a.is_negative(), s);
}

int Decimal::Compare(const Decimal& a, const Decimal& b) {
  if (a.is_negative() != b.is_negative()) return a.is_negative() ? -1 : 1;
  int s = std::max(a.scale(), b.scale());
  Wide x, y;
  MagAt(a, s, &x);  // at most 65 + 30 digits: never overflows 512 bits
  MagAt(b, s, &y);
  int c = Cmp(x, y);
  return a.is_negative() ? -c : c;
}

double Decimal::ToDouble() const { return std::strtod(ToString().c_str(), nullptr); }

int64_t Decimal::ToInt64Rounded(bool* overflow) const {
  Wide q = DivPow10Round(Mag(*this), scale());
  if (overflow) *overflow = false;
  u128 limit = is_negative() ? (u128{1} << 63) : (u128{1} << 63) - 1;
  if (!q.FitsU128() || q.ToU128() > limit) {
    if (overflow) *overflow = true;
    return is_negative() ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
  }
  u128 m = q.ToU128();
  return is_negative() ? static_cast<int64_t>(static_cast<uint64_t>(0) - static_cast<uint64_t>(m))
              : static_cast<int64_t>(m);
}

std::string Decimal::ToString() const {
  std::string digits = MagnitudeDigits(Mag(*this));
  if (scale() > 0) {
    if (digits.size() <= static_cast<size_t>(scale())) {
      digits.insert(0, static_cast<size_t>(scale()) + 1 - digits.size(), '0');
    }
    digits.insert(digits.size() - scale(), 1, '.');
  }
  if (is_negative()) digits.insert(0, 1, '-');
  return digits;
}

void Decimal::AppendKeyBytes(std::string* out) const {
  std::string bytes = DecimalAccess::BytesBE(*this);
  auto n = static_cast<int>(bytes.size());
  if (!is_negative()) {
    out->push_back(static_cast<char>(0x80 + n));
    out->append(bytes);
    return;
  }
  out->push_back(static_cast<char>(0x7F - n));
  for (char c : bytes) out->push_back(static_cast<char>(~static_cast<uint8_t>(c)));
}

bool Decimal::DecodeKeyBytes(std::string_view* in, int scale, Decimal* out) {
  if (in->empty()) return false;
  auto head = static_cast<uint8_t>((*in)[0]);
  bool neg = head < 0x80;
  int n = neg ? 0x7F - head : head - 0x80;
  if (n < 0 || in->size() < static_cast<size_t>(n) + 1) return false;
  if (!DecimalAccess::FromBytesBE(in->substr(1, static_cast<size_t>(n)), neg, neg, scale, out)) return false;
  in->remove_prefix(static_cast<size_t>(n) + 1);
  return true;
}

void Decimal::AppendRowBytes(std::string* out) const {
  std::string be = DecimalAccess::BytesBE(*this);
  out->push_back(static_cast<char>(scale()));
  out->push_back(static_cast<char>((be.size() << 1) | (is_negative() ? 1 : 0)));
  out->append(be.rbegin(), be.rend());
}

bool Decimal::DecodeRowBytes(std::string_view* in, Decimal* out) {
  if (in->size() < 2) return false;
  auto scale = static_cast<uint8_t>((*in)[0]);
  auto head = static_cast<uint8_t>((*in)[1]);
  size_t n = head >> 1;
  if (scale > kMaxScale || in->size() < n + 2) return false;
  std::string be(in->substr(2, n));
  std::reverse(be.begin(), be.end());
  if (!DecimalAccess::FromBytesBE(be, false, (head & 1) != 0, scale, out)) return false;
  in->remove_prefix(n + 2);
  return true;
}

}  // namespace shale
