// Decimal: an exact fixed-point number, the value of a DECIMAL(p,s) column
// and of MySQL's exact arithmetic (`1.5`, `1/3`, SUM/AVG of exact values).
//
// A Decimal is a signed count of units of 10^-scale, held as a sign and a
// 270-bit magnitude. A column holds up to kMaxDigits (65, MySQL's maximum
// precision) digits; like MySQL's and MariaDB's decimal buffers, a value
// computed by arithmetic may have up to kMaxValueDigits (81) before it is
// stored or cast, and a result that needs more is an out-of-range error
// (1690). Scale is at most kMaxScale (30), as in MySQL. Arithmetic works on
// 512-bit intermediates, so products and quotients are exact before they
// are rounded.
//
// Rounding everywhere is MySQL's: half away from zero.
//
// Thread-safety: a value type; no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shale {

class Decimal {
 public:
  static constexpr int kMaxDigits = 65;       // of a column (DECIMAL(65, s))
  static constexpr int kMaxValueDigits = 81;  // of any value (9 words of 9 digits in MySQL)
  static constexpr int kMaxScale = 30;
  // MySQL's div_precision_increment default: a quotient's scale is the
  // dividend's scale plus this.
  static constexpr int kDivPrecisionIncrement = 4;

  Decimal() = default;
  // `units` units of 10^-scale (any __int128).
  Decimal(__int128 units, int scale);
  static Decimal FromInt(int64_t v) { return Decimal(v, 0); }

  // Parses [space][sign]digits[.digits][e[sign]digits][space]. Returns
  // nullopt if the text is not entirely such a number or needs more than
  // kMaxValueDigits digits at its scale (after dropping fraction digits
  // beyond kMaxScale, rounded).
  static std::optional<Decimal> Parse(std::string_view text);
  // The decimal nearest `d` with `scale` fraction digits (d's shortest
  // round-trip digits, rounded). nullopt if it does not fit or d is not finite.
  static std::optional<Decimal> FromDouble(double d, int scale);
  // The largest value of DECIMAL(precision, scale) (all nines), negated if
  // `negative`. REQUIRES: scale <= precision <= kMaxDigits.
  static Decimal Max(int precision, int scale, bool negative = false);

  // Whether the units fit a signed 128-bit integer (|units| < 2^127).
  bool FitsInt128() const { return w_[2] == 0 && w_[3] == 0 && TopLimb() == 0 && (w_[1] >> 63) == 0; }
  // The units as a 128-bit integer. REQUIRES: FitsInt128().
  __int128 units() const;
  int scale() const { return static_cast<int>(w_[4] >> kScaleShift); }
  bool is_zero() const { return (w_[0] | w_[1] | w_[2] | w_[3] | TopLimb()) == 0; }
  bool is_negative() const { return (w_[4] & kNegativeBit) != 0; }

  // Digits before the point (at least 1 for 0.x as MySQL counts "0").
  int IntegerDigits() const;
  // Whether |value| < 10^(precision - scale), i.e. fits DECIMAL(precision, scale)
  // once rescaled.
  bool FitsPrecision(int precision) const;

  // The same number with `scale` fraction digits: rounded half away from zero
  // when shortening. nullopt on overflow.
  std::optional<Decimal> Rescale(int scale) const;
  // Truncates (toward zero) to `scale` fraction digits; scale may be negative
  // (TRUNCATE(x, -2)); the result keeps max(scale, 0) fraction digits.
  std::optional<Decimal> Truncate(int scale) const;
  // Rounds half away from zero to `scale` digits; negative scales round to
  // tens, hundreds, ...; the result keeps max(scale, 0) fraction digits.
  std::optional<Decimal> Round(int scale) const;
  // Floor / ceiling, scale 0.
  std::optional<Decimal> Floor() const;
  std::optional<Decimal> Ceil() const;

  // Exact + - *: + and - keep max(scale), * adds scales (rounded to
  // kMaxScale). nullopt on overflow.
  static std::optional<Decimal> Add(const Decimal& a, const Decimal& b);
  static std::optional<Decimal> Sub(const Decimal& a, const Decimal& b);
  static std::optional<Decimal> Mul(const Decimal& a, const Decimal& b);
  // a / b rounded to `scale` fraction digits. REQUIRES: !b.is_zero().
  static std::optional<Decimal> Div(const Decimal& a, const Decimal& b, int scale);
  // a / b truncated toward zero to an integer (a DIV b). nullopt if it does
  // not fit. REQUIRES: !b.is_zero().
  static std::optional<Decimal> IntDiv(const Decimal& a, const Decimal& b);
  // a MOD b, sign of a, scale max(scales). REQUIRES: !b.is_zero().
  static std::optional<Decimal> Mod(const Decimal& a, const Decimal& b);

  Decimal Negate() const {
    Decimal d = *this;
    if (!is_zero()) d.w_[4] ^= kNegativeBit;
    return d;
  }
  Decimal Abs() const {
    Decimal d = *this;
    d.w_[4] &= ~kNegativeBit;
    return d;
  }

  // <0, 0, >0 by numeric value (scales may differ).
  static int Compare(const Decimal& a, const Decimal& b);

  double ToDouble() const;
  // The integer part, rounded half away from zero; saturates at the int64 limits.
  int64_t ToInt64Rounded(bool* overflow = nullptr) const;
  // "-12.340": exactly `scale` fraction digits.
  std::string ToString() const;

  // Memcomparable key bytes of the units (the scale is the column's and is
  // not stored): a length byte then the big-endian magnitude without
  // leading zero bytes — 0x80 + n for a value >= 0, 0x7F - n and the bytes
  // complemented for a negative one (docs/formats/values.md).
  void AppendKeyBytes(std::string* out) const;
  // Reads what AppendKeyBytes wrote, at `scale`. False if malformed.
  static bool DecodeKeyBytes(std::string_view* in, int scale, Decimal* out);
  // Compact row bytes: the scale byte, a byte (n << 1 | negative) and the n
  // little-endian magnitude bytes without trailing zeros.
  void AppendRowBytes(std::string* out) const;
  static bool DecodeRowBytes(std::string_view* in, Decimal* out);

  bool operator==(const Decimal& o) const {
    return w_[0] == o.w_[0] && w_[1] == o.w_[1] && w_[2] == o.w_[2] && w_[3] == o.w_[3] && w_[4] == o.w_[4];
  }

 private:
  friend struct DecimalAccess;
  static constexpr int kScaleShift = 56;
  static constexpr uint64_t kNegativeBit = uint64_t{1} << 55;
  static constexpr uint64_t kTopMask = kNegativeBit - 1;
  uint64_t TopLimb() const { return w_[4] & kTopMask; }
  // |units| in 5 limbs, least significant first (81 digits < 2^270, so the
  // top limb uses at most 14 bits); the top limb also holds the sign
  // (kNegativeBit, never set for zero) and the scale (bits 56..63). Packed
  // so a Value stays 48 bytes.
  uint64_t w_[5] = {0, 0, 0, 0, 0};
};

// 10^n for 0 <= n <= 38.
__int128 Pow10_128(int n);

}  // namespace shale
