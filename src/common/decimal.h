// Decimal: an exact fixed-point number, the value of a DECIMAL(p,s) column
// and of MySQL's exact arithmetic (`1.5`, `1/3`, SUM/AVG of exact values).
//
// A Decimal is a 128-bit signed count of units of 10^-scale. It holds up to
// kMaxDigits (38) significant digits; MySQL allows 65, so a result that
// needs more is an out-of-range error (1690 / 1264) here rather than a value.
// Scale is at most kMaxScale (30), as in MySQL.
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
  static constexpr int kMaxDigits = 38;
  static constexpr int kMaxScale = 30;
  // MySQL's div_precision_increment default: a quotient's scale is the
  // dividend's scale plus this.
  static constexpr int kDivPrecisionIncrement = 4;

  Decimal() = default;
  Decimal(__int128 units, int scale) : units_(units), scale_(scale) {}
  static Decimal FromInt(int64_t v) { return Decimal(v, 0); }

  // Parses [space][sign]digits[.digits][e[sign]digits][space]. Returns
  // nullopt if the text is not entirely such a number or needs more than
  // kMaxDigits digits at its scale (after dropping fraction digits beyond
  // kMaxScale, rounded).
  static std::optional<Decimal> Parse(std::string_view text);
  // The decimal nearest `d` with `scale` fraction digits (d's shortest
  // round-trip digits, rounded). nullopt if it does not fit or d is not finite.
  static std::optional<Decimal> FromDouble(double d, int scale);

  __int128 units() const { return units_; }
  int scale() const { return scale_; }
  bool is_zero() const { return units_ == 0; }
  bool is_negative() const { return units_ < 0; }

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
  // a MOD b, sign of a, scale max(scales). REQUIRES: !b.is_zero().
  static std::optional<Decimal> Mod(const Decimal& a, const Decimal& b);

  Decimal Negate() const { return Decimal(-units_, scale_); }
  Decimal Abs() const { return Decimal(units_ < 0 ? -units_ : units_, scale_); }

  // <0, 0, >0 by numeric value (scales may differ).
  static int Compare(const Decimal& a, const Decimal& b);

  double ToDouble() const;
  // The integer part, rounded half away from zero; saturates at the int64 limits.
  int64_t ToInt64Rounded(bool* overflow = nullptr) const;
  // "-12.340": exactly `scale` fraction digits.
  std::string ToString() const;

  bool operator==(const Decimal& o) const { return units_ == o.units_ && scale_ == o.scale_; }

 private:
  __int128 units_ = 0;
  int scale_ = 0;
};

// 10^n for 0 <= n <= 38.
__int128 Pow10_128(int n);

}  // namespace shale
