#include "src/common/user_variables.h"
#include "sierra/eval.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <clocale>
#include <cmath>
#include <cwctype>
#include <random>
#include <vector>

#include <locale.h>

#include <fmt/format.h>

#include "sierra/scalar_functions.h"
#include "sierra/temporal.h"
#include "src/common/datetime.h"
#include "src/common/collation.h"
#include "src/common/errors.h"
#include "src/common/hex.h"
#include "src/common/like.h"
#include "src/common/warnings.h"

namespace shale::sierra {
namespace {

int64_t ToInt(const Value& v) { return ToInt64Lenient(v); }

// LOWER/UPPER of UTF-8 text: each character mapped by Unicode's simple
// case mapping (glibc's C.UTF-8 tables: 'Ä' <-> 'ä', Greek, Cyrillic; 'ß'
// has no one-character upper case and stays), as MySQL's utf8mb4
// collations do. Bytes that are not UTF-8 are kept. Without the C.UTF-8
// locale only ASCII letters change.
std::string ChangeCase(const std::string& s, bool lower) {
  static const locale_t kUtf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    bool valid = len != 0 && i + len <= s.size();
    uint32_t cp = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
    for (size_t k = 1; valid && k < len; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      valid = (c & 0xC0) == 0x80;
      cp = (cp << 6) | (c & 0x3F);
    }
    if (!valid) {
      out.push_back(s[i++]);
      continue;
    }
    uint32_t mapped = cp;
    if (cp < 0x80) {
      mapped = static_cast<uint32_t>(lower ? std::tolower(static_cast<int>(cp)) : std::toupper(static_cast<int>(cp)));
    } else if (kUtf8 != static_cast<locale_t>(nullptr)) {
      mapped = static_cast<uint32_t>(lower ? towlower_l(static_cast<wint_t>(cp), kUtf8)
                                           : towupper_l(static_cast<wint_t>(cp), kUtf8));
    }
    if (mapped < 0x80) {
      out.push_back(static_cast<char>(mapped));
    } else if (mapped < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (mapped >> 6)));
      out.push_back(static_cast<char>(0x80 | (mapped & 0x3F)));
    } else if (mapped < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (mapped >> 12)));
      out.push_back(static_cast<char>(0x80 | ((mapped >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (mapped & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (mapped >> 18)));
      out.push_back(static_cast<char>(0x80 | ((mapped >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((mapped >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (mapped & 0x3F)));
    }
    i += len;
  }
  return out;
}

Value Bool(bool b) { return Value::Int(b ? 1 : 0); }

Status OutOfRange(const Expr& e) {
  const char* kind = e.type.is_decimal() ? "DECIMAL" : (e.type.is_floating() ? "DOUBLE" : "BIGINT");
  return SqlError(ErrorCode::kDataOutOfRangeExpr, "{} value is out of range in '{}'", kind,
                  e.ToString());
}

thread_local bool t_division_by_zero_error = false;

Result<Value> DivisionByZero() {
  if (t_division_by_zero_error) return SqlError(ErrorCode::kDivisionByZero, "Division by 0");
  PushWarning("Warning", static_cast<uint16_t>(ErrorCode::kDivisionByZero), "Division by 0");
  return Value::Null();
}

Result<Value> CheckedDouble(const Expr& e, double d) {
  if (!std::isfinite(d)) return OutOfRange(e);
  return Value::Double(d);
}

// A DOUBLE result that is NULL outside the function's domain (SQRT(-1)).
Value DomainDouble(double d) {
  if (!std::isfinite(d)) return Value::Null();
  return Value::Double(d);
}

// The value of a DECIMAL-typed expression at the expression's scale.
Result<Value> DecimalResult(const Expr& e, std::optional<Decimal> d) {
  if (!d) return OutOfRange(e);
  auto scaled = d->Rescale(e.type.scale);
  if (!scaled) return OutOfRange(e);
  return Value::Dec(*scaled);
}

// A value as the 64 bits the bit operators work on: integers as they are
// (negatives in two's complement), other numbers rounded, clamped to
// [-2^63, 2^64 - 1]; strings by their integer prefix.
uint64_t ToBits(const Value& v) {
  if (v.is_int()) return static_cast<uint64_t>(v.as_int());
  if (v.is_decimal()) {
    auto r = v.as_decimal().Round(0);
    if (r && !r->is_negative() && r->FitsInt128()) {
      __int128 u = r->units();
      if (u > static_cast<__int128>(INT64_MAX)) {
        return u > static_cast<__int128>(UINT64_MAX) ? UINT64_MAX : static_cast<uint64_t>(u);
      }
    } else if (r && !r->is_negative()) {
      return UINT64_MAX;
    }
  }
  if (v.is_double()) {
    double d = std::round(v.as_double());
    if (d >= 18446744073709551616.0) return UINT64_MAX;
    if (d >= 9223372036854775808.0) return static_cast<uint64_t>(d);
  }
  if (v.is_string()) {
    const std::string& s = v.as_string();
    size_t i = 0;
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
    if (i < s.size() && s[i] == '+') ++i;
    if (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      uint64_t n = 0;
      for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
        if (__builtin_mul_overflow(n, uint64_t{10}, &n) ||
            __builtin_add_overflow(n, static_cast<uint64_t>(s[i] - '0'), &n)) {
          return UINT64_MAX;
        }
      }
      return n;
    }
  }
  return static_cast<uint64_t>(ToInt(v));
}

// A BIGINT UNSIGNED result: an integer, or beyond 2^63-1 an exact DECIMAL
// (as BIT_AND does).
Value UnsignedValue(uint64_t bits) {
  if (bits <= static_cast<uint64_t>(INT64_MAX)) return Value::Int(static_cast<int64_t>(bits));
  return Value::Dec(Decimal(static_cast<__int128>(bits), 0));
}

Result<Value> EvaluateArith(const Expr& e, const Value& l, const Value& r) {
  const ArithOp op = e.arith_op;
  if (IsBitOp(op)) {
    uint64_t a = ToBits(l), b = ToBits(r);
    switch (op) {
      case ArithOp::kBitAnd: return UnsignedValue(a & b);
      case ArithOp::kBitOr: return UnsignedValue(a | b);
      case ArithOp::kBitXor: return UnsignedValue(a ^ b);
      case ArithOp::kShiftLeft: return UnsignedValue(b >= 64 ? 0 : a << b);
      case ArithOp::kShiftRight: return UnsignedValue(b >= 64 ? 0 : a >> b);
      default: break;
    }
    return Status::Internal("bad bit operator");
  }
  if (op == ArithOp::kIntDiv && !(l.is_int() && r.is_int())) {
    // DIV of non-integers: the truncated quotient of the exact values.
    if (l.is_double() || r.is_double() || l.is_string() || r.is_string()) {
      double a = ToDoubleLenient(l), b = ToDoubleLenient(r);
      if (b == 0) return DivisionByZero();
      double q = std::trunc(a / b);
      if (!(q >= -9223372036854775808.0 && q < 9223372036854775808.0)) return OutOfRange(e);
      return Value::Int(static_cast<int64_t>(q));
    }
    auto a = ToDecimalLenient(l), b = ToDecimalLenient(r);
    if (!a || !b) return OutOfRange(e);
    if (b->is_zero()) return DivisionByZero();
    auto q = Decimal::IntDiv(*a, *b);
    bool overflow = false;
    int64_t n = q ? q->ToInt64Rounded(&overflow) : 0;
    if (!q || overflow) return OutOfRange(e);
    return Value::Int(n);
  }
  if (e.type.is_floating()) {
    double a = ToDoubleLenient(l), b = ToDoubleLenient(r);
    switch (op) {
      case ArithOp::kAdd: return CheckedDouble(e, a + b);
      case ArithOp::kSub: return CheckedDouble(e, a - b);
      case ArithOp::kMul: return CheckedDouble(e, a * b);
      case ArithOp::kDiv:
        if (b == 0) return DivisionByZero();
        return CheckedDouble(e, a / b);
      case ArithOp::kMod:
        if (b == 0) return DivisionByZero();
        return CheckedDouble(e, std::fmod(a, b));
      case ArithOp::kIntDiv:
      default: break;
    }
    return Status::Internal("bad arithmetic");
  }
  if (e.type.is_decimal()) {
    auto a = ToDecimalLenient(l), b = ToDecimalLenient(r);
    if (!a || !b) return OutOfRange(e);
    switch (op) {
      case ArithOp::kAdd: return DecimalResult(e, Decimal::Add(*a, *b));
      case ArithOp::kSub: return DecimalResult(e, Decimal::Sub(*a, *b));
      case ArithOp::kMul: return DecimalResult(e, Decimal::Mul(*a, *b));
      case ArithOp::kDiv:
        if (b->is_zero()) return DivisionByZero();
        return DecimalResult(e, Decimal::Div(*a, *b, e.type.scale));
      case ArithOp::kMod:
        if (b->is_zero()) return DivisionByZero();
        return DecimalResult(e, Decimal::Mod(*a, *b));
      case ArithOp::kIntDiv:
      default: break;
    }
    return Status::Internal("bad arithmetic");
  }
  int64_t a = ToInt(l), b = ToInt(r), out = 0;
  switch (op) {
    case ArithOp::kAdd:
      if (__builtin_add_overflow(a, b, &out)) return OutOfRange(e);
      return Value::Int(out);
    case ArithOp::kSub:
      if (__builtin_sub_overflow(a, b, &out)) return OutOfRange(e);
      return Value::Int(out);
    case ArithOp::kMul:
      if (__builtin_mul_overflow(a, b, &out)) return OutOfRange(e);
      return Value::Int(out);
    case ArithOp::kIntDiv:
      if (b == 0) return DivisionByZero();
      if (a == INT64_MIN && b == -1) return OutOfRange(e);
      return Value::Int(a / b);
    case ArithOp::kMod:
      if (b == 0) return DivisionByZero();
      if (b == -1) return Value::Int(0);
      return Value::Int(a % b);
    case ArithOp::kDiv: {
      // Only reached if the type was not inferred (never for bound plans).
      if (b == 0) return DivisionByZero();
      return Value::Double(static_cast<double>(a) / static_cast<double>(b));
    }
    default: break;
  }
  return Status::Internal("bad arithmetic");
}

}  // namespace

ScopedDivisionByZeroError::ScopedDivisionByZeroError(bool on) : previous_(t_division_by_zero_error) {
  t_division_by_zero_error = on;
}

ScopedDivisionByZeroError::~ScopedDivisionByZeroError() { t_division_by_zero_error = previous_; }

Result<Value> ConvertToType(const Value& v, const SqlType& t) {
  if (v.is_null()) return v;
  if (t.is_temporal()) return CastToTemporal(v, t);
  if (t.is_decimal()) {
    auto d = ToDecimalLenient(v);
    std::optional<Decimal> scaled = d ? d->Rescale(t.scale) : std::nullopt;
    if (!scaled || !scaled->FitsPrecision(static_cast<int>(t.length))) {
      // MySQL clamps to the largest value of the type, with warning 1264.
      PushWarning("Warning", static_cast<uint16_t>(ErrorCode::kDataOutOfRange),
                  "Out of range value for column 'cast' at row 1");
      int digits = std::min(static_cast<int>(t.length), Decimal::kMaxDigits);
      bool neg = d ? d->is_negative() : ToDoubleLenient(v) < 0;
      return Value::Dec(Decimal::Max(digits, t.scale, neg));
    }
    return Value::Dec(*scaled);
  }
  if (t.is_floating()) {
    if (v.is_double() && !v.is_float()) return v;
    return Value::Double(ToDoubleLenient(v));
  }
  if (t.is_integer() && t.is_unsigned) {
    // CAST(x AS UNSIGNED): the 64 bits of x as BIGINT UNSIGNED, so a
    // negative integer wraps (CAST(-1 AS UNSIGNED) is 18446744073709551615),
    // as MySQL; but a negative DECIMAL or DOUBLE is 0, as MariaDB.
    if ((v.is_decimal() && v.as_decimal().is_negative()) || (v.is_double() && v.as_double() < 0)) {
      return Value::Int(0);
    }
    return UnsignedValue(ToBits(v));
  }
  if (t.is_integer()) {
    if (v.is_int()) return v;
    return Value::Int(ToInt64Lenient(v));
  }
  if (t.is_string()) {
    if (v.is_string()) return v;
    return Value::String(v.ToText());
  }
  return v;
}

namespace {

// A value of a CASE/COALESCE/GREATEST result in the expression's numeric
// type, so IF(c, 1, 2.5) prints 1.0 as MySQL does. Strings stay as they are.
Result<Value> InType(const Expr& e, Value v) {
  if (v.is_null()) return v;
  if (e.type.is_decimal() || e.type.is_floating()) return ConvertToType(v, e.type);
  return v;
}

// Byte offsets of the characters (UTF-8 code points) of `s`, then s.size().
std::vector<size_t> CharOffsets(const std::string& s) {
  std::vector<size_t> out;
  out.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) out.push_back(i);
  }
  out.push_back(s.size());
  return out;
}

// Characters [from, from + count) of `s` (clamped).
std::string CharSlice(const std::string& s, int64_t from, int64_t count) {
  std::vector<size_t> at = CharOffsets(s);
  const int64_t n = static_cast<int64_t>(at.size()) - 1;
  from = std::clamp<int64_t>(from, 0, n);
  int64_t to = count < 0 ? from : std::min<int64_t>(n, from + std::min<int64_t>(count, n));
  return s.substr(at[from], at[to] - at[from]);
}

// The padded text of LPAD/RPAD: `s` cut or filled with `pad` to n characters.
Value Pad(const std::string& s, int64_t n, const std::string& pad, bool left) {
  if (n < 0) return Value::Null();
  std::vector<size_t> at = CharOffsets(s);
  const int64_t len = static_cast<int64_t>(at.size()) - 1;
  if (n <= len) return Value::String(s.substr(0, at[n]));
  if (pad.empty()) return Value::Null();
  constexpr int64_t kMaxAllowedPacket = 16 << 20;
  if (n > kMaxAllowedPacket) return Value::Null();
  std::vector<size_t> pat = CharOffsets(pad);
  const int64_t plen = static_cast<int64_t>(pat.size()) - 1;
  std::string fill;
  for (int64_t i = 0; i < n - len; ++i) {
    int64_t k = i % plen;
    fill += pad.substr(pat[k], pat[k + 1] - pat[k]);
  }
  return Value::String(left ? fill + s : s + fill);
}

Result<Value> EvaluateFunction(const Expr& e, const Row& row) {
  if (e.function == ScalarFunction::kGetUserVar) return GetUserVariable(e.children[0]->constant.ToText());
  if (e.function == ScalarFunction::kSetUserVar) {
    // NULL is assigned too, so this is not one of the NULL-in, NULL-out
    // functions below.
    SHALE_ASSIGN_OR_RETURN(Value v, Evaluate(*e.children[1], row));
    SetUserVariable(e.children[0]->constant.ToText(), v);
    return v;
  }
  std::vector<Value> args;
  for (const ExprPtr& c : e.children) {
    SHALE_ASSIGN_OR_RETURN(Value v, Evaluate(*c, row));
    if (e.function == ScalarFunction::kCoalesce) {
      if (!v.is_null()) return InType(e, std::move(v));
      continue;
    }
    if (e.function == ScalarFunction::kConcatWs && !args.empty()) {
      if (!v.is_null()) args.push_back(std::move(v));  // NULLs after the separator are skipped
      continue;
    }
    if (v.is_null() && !FunctionTakesNulls(e.function)) return Value::Null();  // NULL in, NULL out
    args.push_back(std::move(v));
  }
  if (IsTemporalFunction(e.function)) return EvaluateTemporalFunction(e, args);
  if (e.function == ScalarFunction::kBitCount) return Value::Int(std::popcount(ToBits(args[0])));
  if (IsLibraryFunction(e.function)) return EvaluateLibraryFunction(e, args);
  switch (e.function) {
    case ScalarFunction::kCoalesce:
      return Value::Null();
    case ScalarFunction::kAbs: {
      if (e.type.is_decimal()) return DecimalResult(e, ToDecimalLenient(args[0])->Abs());
      if (e.type.is_floating()) return Value::Double(std::fabs(ToDoubleLenient(args[0])));
      int64_t a = ToInt(args[0]);
      if (a == INT64_MIN) return OutOfRange(e);
      return Value::Int(a < 0 ? -a : a);
    }
    case ScalarFunction::kSign: {
      if (args[0].is_int()) return Value::Int(args[0].as_int() > 0 ? 1 : (args[0].as_int() < 0 ? -1 : 0));
      if (args[0].is_decimal()) {
        const Decimal& d = args[0].as_decimal();
        return Value::Int(d.is_zero() ? 0 : (d.is_negative() ? -1 : 1));
      }
      double d = ToDoubleLenient(args[0]);
      return Value::Int(d > 0 ? 1 : (d < 0 ? -1 : 0));
    }
    case ScalarFunction::kRound:
    case ScalarFunction::kTruncate: {
      const bool round = e.function == ScalarFunction::kRound;
      int64_t places = args.size() > 1 ? ToInt(args[1]) : 0;
      places = std::clamp<int64_t>(places, -60, 60);
      if (e.type.is_decimal()) {
        auto d = ToDecimalLenient(args[0]);
        if (!d) return OutOfRange(e);
        auto r = round ? d->Round(static_cast<int>(places)) : d->Truncate(static_cast<int>(places));
        return DecimalResult(e, r);
      }
      if (e.type.is_integer()) {
        int64_t v = ToInt(args[0]);
        if (places >= 0) return Value::Int(v);
        if (places < -18) return Value::Int(0);
        int64_t p = 1;
        for (int64_t i = 0; i < -places; ++i) p *= 10;
        int64_t q = v / p, rem = v % p;
        if (round && (rem >= p - rem || -rem >= p + rem) && rem != 0) q += v < 0 ? -1 : 1;
        int64_t out = 0;
        if (__builtin_mul_overflow(q, p, &out)) return OutOfRange(e);
        return Value::Int(out);
      }
      double x = ToDoubleLenient(args[0]);
      double p = std::pow(10.0, static_cast<double>(std::abs(places)));
      double scaled = places >= 0 ? x * p : x / p;
      // ROUND of a DOUBLE rounds half to even like rint() in MySQL.
      double r = round ? std::nearbyint(scaled) : std::trunc(scaled);
      if (!std::isfinite(scaled)) return Value::Double(x);
      return Value::Double(places >= 0 ? r / p : r * p);
    }
    case ScalarFunction::kFloor:
    case ScalarFunction::kCeil: {
      const bool floor = e.function == ScalarFunction::kFloor;
      if (args[0].is_int()) return args[0];
      if (e.type.is_floating()) {
        double x = ToDoubleLenient(args[0]);
        return Value::Double(floor ? std::floor(x) : std::ceil(x));
      }
      auto d = ToDecimalLenient(args[0]);
      if (!d) return OutOfRange(e);
      auto r = floor ? d->Floor() : d->Ceil();
      if (!r) return OutOfRange(e);
      if (e.type.is_integer()) {
        bool overflow = false;
        int64_t n = r->ToInt64Rounded(&overflow);
        if (overflow) return OutOfRange(e);
        return Value::Int(n);
      }
      return DecimalResult(e, r);
    }
    case ScalarFunction::kPower: {
      double r = std::pow(ToDoubleLenient(args[0]), ToDoubleLenient(args[1]));
      if (std::isnan(r)) return Value::Null();
      return CheckedDouble(e, r);
    }
    case ScalarFunction::kSqrt: {
      double x = ToDoubleLenient(args[0]);
      return x < 0 ? Value::Null() : Value::Double(std::sqrt(x));
    }
    case ScalarFunction::kLn:
    case ScalarFunction::kLog2:
    case ScalarFunction::kLog10: {
      double x = ToDoubleLenient(args[0]);
      if (x <= 0) return Value::Null();
      return DomainDouble(e.function == ScalarFunction::kLn     ? std::log(x)
                          : e.function == ScalarFunction::kLog2 ? std::log2(x)
                                                                 : std::log10(x));
    }
    case ScalarFunction::kLog: {
      double b = ToDoubleLenient(args[0]), x = ToDoubleLenient(args[1]);
      if (x <= 0 || b <= 0 || b == 1) return Value::Null();
      return DomainDouble(std::log(x) / std::log(b));
    }
    case ScalarFunction::kExp:
      return CheckedDouble(e, std::exp(ToDoubleLenient(args[0])));
    case ScalarFunction::kPi:
      return Value::Double(M_PI);
    case ScalarFunction::kRand: {
      thread_local std::mt19937_64 rng{std::random_device{}()};
      return Value::Double(std::uniform_real_distribution<double>(0.0, 1.0)(rng));
    }
    case ScalarFunction::kGreatest:
    case ScalarFunction::kLeast: {
      const bool greatest = e.function == ScalarFunction::kGreatest;
      size_t best = 0;
      for (size_t i = 1; i < args.size(); ++i) {
        int c = CompareValuesCollated(args[i], args[best], e.collation);
        if (greatest ? c > 0 : c < 0) best = i;
      }
      return InType(e, args[best]);
    }
    case ScalarFunction::kCast:
      return ConvertToType(args[0], e.type);
    case ScalarFunction::kSubstring: {
      std::string str = args[0].ToText();
      int64_t pos = ToInt(args[1]);
      int64_t len = args.size() > 2 ? ToInt(args[2]) : INT64_MAX;
      if (pos == 0 || len <= 0) return Value::String("");
      int64_t n = static_cast<int64_t>(CharOffsets(str).size()) - 1;
      int64_t from = pos > 0 ? pos - 1 : n + pos;
      if (from < 0 || from >= n) return Value::String("");
      return Value::String(CharSlice(str, from, len));
    }
    case ScalarFunction::kLeft:
    case ScalarFunction::kRight: {
      std::string str = args[0].ToText();
      int64_t k = ToInt(args[1]);
      if (k <= 0) return Value::String("");
      int64_t n = static_cast<int64_t>(CharOffsets(str).size()) - 1;
      if (e.function == ScalarFunction::kLeft) return Value::String(CharSlice(str, 0, k));
      return Value::String(CharSlice(str, std::max<int64_t>(0, n - k), k));
    }
    case ScalarFunction::kTrim:
    case ScalarFunction::kLtrim:
    case ScalarFunction::kRtrim: {
      std::string str = args[0].ToText();
      std::string rem = args.size() > 1 ? args[1].ToText() : " ";
      if (rem.empty()) return Value::String(std::move(str));
      size_t begin = 0, end = str.size();
      if (e.function != ScalarFunction::kRtrim) {
        while (end - begin >= rem.size() && str.compare(begin, rem.size(), rem) == 0) begin += rem.size();
      }
      if (e.function != ScalarFunction::kLtrim) {
        while (end - begin >= rem.size() && str.compare(end - rem.size(), rem.size(), rem) == 0) end -= rem.size();
      }
      return Value::String(str.substr(begin, end - begin));
    }
    case ScalarFunction::kReplace: {
      std::string str = args[0].ToText(), from = args[1].ToText(), to = args[2].ToText();
      if (from.empty()) return Value::String(std::move(str));
      std::string out;
      size_t i = 0;
      for (size_t hit; (hit = str.find(from, i)) != std::string::npos; i = hit + from.size()) {
        out.append(str, i, hit - i);
        out += to;
      }
      out.append(str, i, std::string::npos);
      return Value::String(std::move(out));
    }
    case ScalarFunction::kReverse: {
      std::string str = args[0].ToText();
      std::vector<size_t> at = CharOffsets(str);
      std::string out;
      for (size_t k = at.size() - 1; k > 0; --k) out.append(str, at[k - 1], at[k] - at[k - 1]);
      return Value::String(std::move(out));
    }
    case ScalarFunction::kRepeat:
    case ScalarFunction::kSpace: {
      const bool space = e.function == ScalarFunction::kSpace;
      std::string unit = space ? " " : args[0].ToText();
      int64_t times = ToInt(args[space ? 0 : 1]);
      if (times <= 0 || unit.empty()) return Value::String("");
      if (static_cast<double>(times) * static_cast<double>(unit.size()) > (16 << 20)) return Value::Null();
      std::string out;
      out.reserve(unit.size() * static_cast<size_t>(times));
      for (int64_t k = 0; k < times; ++k) out += unit;
      return Value::String(std::move(out));
    }
    case ScalarFunction::kLpad:
    case ScalarFunction::kRpad:
      return Pad(args[0].ToText(), ToInt(args[1]), args.size() > 2 ? args[2].ToText() : " ",
                 e.function == ScalarFunction::kLpad);
    case ScalarFunction::kLocate: {
      std::string needle = args[0].ToText(), hay = args[1].ToText();
      // Under a case-insensitive collation of both strings (the default)
      // LOCATE/INSTR/POSITION match as the collation compares: 'B' is
      // found in 'abc', 'e' in 'é'. FoldForMatch maps each character to
      // one character, so character positions are those of the original.
      bool fold = false;
      uint16_t collation = kDefaultCollation;
      for (size_t k = 0; k < 2 && k < e.children.size(); ++k) {
        const SqlType& t = e.children[k]->type;
        if (!t.is_string()) continue;
        if (!IsCaseInsensitive(t.Collation())) {
          fold = false;
          break;
        }
        fold = true;
        collation = t.Collation();
      }
      if (fold) {
        needle = FoldForMatch(needle, collation);
        hay = FoldForMatch(hay, collation);
      }
      int64_t start = args.size() > 2 ? ToInt(args[2]) : 1;
      std::vector<size_t> at = CharOffsets(hay);
      const int64_t n = static_cast<int64_t>(at.size()) - 1;
      if (start < 1 || start > n + 1) return Value::Int(0);
      size_t hit = hay.find(needle, at[start - 1]);
      if (hit == std::string::npos) return Value::Int(0);
      return Value::Int(static_cast<int64_t>(std::lower_bound(at.begin(), at.end(), hit) - at.begin()) + 1);
    }
    case ScalarFunction::kConcatWs: {
      std::string out;
      for (size_t k = 1; k < args.size(); ++k) {
        if (k > 1) out += args[0].ToText();
        out += args[k].ToText();
      }
      return Value::String(std::move(out));
    }
    case ScalarFunction::kCharLength:
      return Value::Int(static_cast<int64_t>(CharOffsets(args[0].ToText()).size()) - 1);
    case ScalarFunction::kAscii: {
      std::string str = args[0].ToText();
      return Value::Int(str.empty() ? 0 : static_cast<unsigned char>(str[0]));
    }
    case ScalarFunction::kHex: {
      if (args[0].is_string()) return Value::String(ToHex(args[0].as_string()));
      // A number: its (rounded) integer value in hex, as unsigned 64-bit.
      uint64_t n = static_cast<uint64_t>(ToInt(args[0]));
      return Value::String(fmt::format("{:X}", n));
    }
    case ScalarFunction::kUnhex: {
      std::string str = args[0].ToText();
      if (str.size() % 2 == 1) str.insert(0, 1, '0');
      std::string out;
      if (!FromHex(str, &out)) return Value::Null();
      return Value::String(std::move(out));
    }
    case ScalarFunction::kStrcmp: {
      return Value::Int(CompareStrings(args[0].ToText(), args[1].ToText(), e.collation));
    }
    case ScalarFunction::kFindInSet: {
      // Names compare under the operands' collation; a name holding a
      // comma is never found.
      const std::string needle = args[0].ToText();
      const std::string list = args[1].ToText();
      if (list.empty() || needle.find(',') != std::string::npos) return Value::Int(0);
      int64_t position = 1;
      size_t start = 0;
      while (true) {
        const size_t comma = list.find(',', start);
        const std::string_view item =
            std::string_view(list).substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (CompareStrings(item, needle, e.collation) == 0) return Value::Int(position);
        if (comma == std::string::npos) return Value::Int(0);
        start = comma + 1;
        ++position;
      }
    }
    case ScalarFunction::kLength:
      return Value::Int(static_cast<int64_t>(args[0].ToText().size()));
    case ScalarFunction::kConcat: {
      std::string out;
      for (const Value& v : args) out += v.ToText();
      return Value::String(std::move(out));
    }
    case ScalarFunction::kLower:
    case ScalarFunction::kUpper: {
      std::string s = args[0].ToText();
      // A binary string has no letters: LOWER/UPPER leave it as it is.
      if (!e.children.empty() && e.children[0]->type.is_string() &&
          e.children[0]->type.Collation() == kCollationBinary) {
        return Value::String(std::move(s));
      }
      return Value::String(ChangeCase(s, e.function == ScalarFunction::kLower));
    }
    default:
      break;
  }
  return Status::Internal("bad function");
}

}  // namespace

bool IsTrue(const Value& v) {
  if (v.is_null()) return false;
  if (v.is_int()) return v.as_int() != 0;
  if (v.is_decimal()) return !v.as_decimal().is_zero();
  return ToDoubleLenient(v) != 0;
}

Result<Value> Evaluate(const Expr& e, const Row& row) {
  switch (e.kind) {
    case ExprKind::kConstant:
      return e.constant;
    case ExprKind::kColumnRef:
      if (e.column < 0 || static_cast<size_t>(e.column) >= row.size()) {
        return Status::Internal("column reference out of range");
      }
      return row[e.column];
    case ExprKind::kCompare: {
      SHALE_ASSIGN_OR_RETURN(Value l, Evaluate(*e.children[0], row));
      SHALE_ASSIGN_OR_RETURN(Value r, Evaluate(*e.children[1], row));
      if (e.compare_op == CompareOp::kNullSafeEq) {
        if (l.is_null() || r.is_null()) return Bool(l.is_null() && r.is_null());
        return Bool(CompareValuesCollated(l, r, e.collation) == 0);
      }
      if (l.is_null() || r.is_null()) return Value::Null();
      int c = CompareValuesCollated(l, r, e.collation);
      switch (e.compare_op) {
        case CompareOp::kEq: return Bool(c == 0);
        case CompareOp::kNe: return Bool(c != 0);
        case CompareOp::kLt: return Bool(c < 0);
        case CompareOp::kLe: return Bool(c <= 0);
        case CompareOp::kGt: return Bool(c > 0);
        case CompareOp::kGe: return Bool(c >= 0);
        case CompareOp::kNullSafeEq: break;
      }
      return Status::Internal("bad comparison");
    }
    case ExprKind::kAnd: {
      SHALE_ASSIGN_OR_RETURN(Value l, Evaluate(*e.children[0], row));
      if (!l.is_null() && !IsTrue(l)) return Bool(false);
      SHALE_ASSIGN_OR_RETURN(Value r, Evaluate(*e.children[1], row));
      if (!r.is_null() && !IsTrue(r)) return Bool(false);
      if (l.is_null() || r.is_null()) return Value::Null();
      return Bool(true);
    }
    case ExprKind::kOr: {
      SHALE_ASSIGN_OR_RETURN(Value l, Evaluate(*e.children[0], row));
      if (IsTrue(l)) return Bool(true);
      SHALE_ASSIGN_OR_RETURN(Value r, Evaluate(*e.children[1], row));
      if (IsTrue(r)) return Bool(true);
      if (l.is_null() || r.is_null()) return Value::Null();
      return Bool(false);
    }
    case ExprKind::kXor: {
      SHALE_ASSIGN_OR_RETURN(Value l, Evaluate(*e.children[0], row));
      SHALE_ASSIGN_OR_RETURN(Value r, Evaluate(*e.children[1], row));
      if (l.is_null() || r.is_null()) return Value::Null();
      return Bool(IsTrue(l) != IsTrue(r));
    }
    case ExprKind::kNot: {
      SHALE_ASSIGN_OR_RETURN(Value v, Evaluate(*e.children[0], row));
      if (v.is_null()) return Value::Null();
      return Bool(!IsTrue(v));
    }
    case ExprKind::kArith: {
      SHALE_ASSIGN_OR_RETURN(Value l, Evaluate(*e.children[0], row));
      SHALE_ASSIGN_OR_RETURN(Value r, Evaluate(*e.children[1], row));
      if (l.is_null() || r.is_null()) return Value::Null();
      return EvaluateArith(e, l, r);
    }
    case ExprKind::kNegate: {
      SHALE_ASSIGN_OR_RETURN(Value v, Evaluate(*e.children[0], row));
      if (v.is_null()) return Value::Null();
      if (e.type.is_decimal()) return DecimalResult(e, ToDecimalLenient(v)->Negate());
      if (e.type.is_floating()) return Value::Double(-ToDoubleLenient(v));
      int64_t a = ToInt(v);
      if (a == INT64_MIN) return OutOfRange(e);
      return Value::Int(-a);
    }
    case ExprKind::kIsNull: {
      SHALE_ASSIGN_OR_RETURN(Value v, Evaluate(*e.children[0], row));
      return Bool(v.is_null() != e.negated);
    }
    case ExprKind::kInList: {
      SHALE_ASSIGN_OR_RETURN(Value v, Evaluate(*e.children[0], row));
      if (v.is_null()) return Value::Null();
      bool saw_null = false;
      for (size_t i = 1; i < e.children.size(); ++i) {
        SHALE_ASSIGN_OR_RETURN(Value item, Evaluate(*e.children[i], row));
        if (item.is_null()) {
          saw_null = true;
        } else if (CompareValuesCollated(v, item, e.collation) == 0) {
          return Bool(!e.negated);
        }
      }
      if (saw_null) return Value::Null();
      return Bool(e.negated);
    }
    case ExprKind::kCase: {
      size_t pairs = (e.children.size() - (e.has_else ? 1 : 0)) / 2;
      for (size_t i = 0; i < pairs; ++i) {
        SHALE_ASSIGN_OR_RETURN(Value cond, Evaluate(*e.children[2 * i], row));
        if (IsTrue(cond)) {
          SHALE_ASSIGN_OR_RETURN(Value then, Evaluate(*e.children[2 * i + 1], row));
          return InType(e, std::move(then));
        }
      }
      if (e.has_else) {
        SHALE_ASSIGN_OR_RETURN(Value otherwise, Evaluate(*e.children.back(), row));
        return InType(e, std::move(otherwise));
      }
      return Value::Null();
    }
    case ExprKind::kFunction:
      return EvaluateFunction(e, row);
    case ExprKind::kLike: {
      SHALE_ASSIGN_OR_RETURN(Value text, Evaluate(*e.children[0], row));
      SHALE_ASSIGN_OR_RETURN(Value pattern, Evaluate(*e.children[1], row));
      if (text.is_null() || pattern.is_null()) return Value::Null();
      std::string escape = "\\";
      if (e.children.size() > 2) {
        SHALE_ASSIGN_OR_RETURN(Value esc, Evaluate(*e.children[2], row));
        if (!esc.is_null()) escape = esc.ToText();
      }
      if (IsCaseInsensitive(e.collation)) {
        return Bool(MatchLike(FoldForMatch(text.ToText(), e.collation), FoldForMatch(pattern.ToText(), e.collation),
                              /*case_sensitive=*/false, FoldForMatch(escape, e.collation)) != e.negated);
      }
      return Bool(MatchLike(text.ToText(), pattern.ToText(), /*case_sensitive=*/true, escape) != e.negated);
    }
  }
  return Status::Internal("bad expression kind");
}

constexpr size_t kGroupConcatMaxLen = 1024;  // group_concat_max_len default

Status Accumulator::Add(const Row& row) {
  const AggregateCall& c = *call_;
  if (c.kind == AggregateKind::kCountStar) {
    ++count_;
    return Status::OK();
  }
  SHALE_ASSIGN_OR_RETURN(Value v, Evaluate(*c.arg, row));
  if (c.kind == AggregateKind::kAnyValue) {
    if (count_++ == 0) value_ = std::move(v);
    return Status::OK();
  }
  if (v.is_null()) return Status::OK();
  Row more;
  for (const ExprPtr& m : c.more_args) {
    SHALE_ASSIGN_OR_RETURN(Value x, Evaluate(*m, row));
    if (x.is_null()) return Status::OK();  // a row counts only without NULLs
    more.push_back(std::move(x));
  }
  if (c.distinct) {
    // Equal under the collations: one value (one tuple).
    Row forms{KeyForm(v, c.arg->type)};
    for (size_t i = 0; i < more.size(); ++i) forms.push_back(KeyForm(more[i], c.more_args[i]->type));
    std::string key;
    EncodeRow(forms, &key);
    if (!seen_.insert(std::move(key)).second) return Status::OK();
  }
  ++count_;
  switch (c.kind) {
    case AggregateKind::kCount:
      break;
    case AggregateKind::kSum:
    case AggregateKind::kAvg: {
      if (c.type.is_decimal()) {
        auto add = ToDecimalLenient(v);
        auto sum = add ? Decimal::Add(exact_sum_, *add) : std::nullopt;
        if (!sum) {
          return SqlError(ErrorCode::kDataOutOfRangeExpr, "DECIMAL value is out of range in '{}'",
                          c.ToString());
        }
        exact_sum_ = *sum;
      } else {
        sum_ += ToDoubleLenient(v);
      }
      has_value_ = true;
      break;
    }
    case AggregateKind::kStddevPop:
    case AggregateKind::kStddevSamp:
    case AggregateKind::kVarPop:
    case AggregateKind::kVarSamp: {
      double x = ToDoubleLenient(v);
      double delta = x - mean_;
      mean_ += delta / static_cast<double>(count_);
      m2_ += delta * (x - mean_);
      has_value_ = true;
      break;
    }
    case AggregateKind::kBitAnd:
    case AggregateKind::kBitOr:
    case AggregateKind::kBitXor: {
      uint64_t x = static_cast<uint64_t>(ToInt(v));
      if (c.kind == AggregateKind::kBitAnd) bits_ = has_value_ ? (bits_ & x) : x;
      if (c.kind == AggregateKind::kBitOr) bits_ |= x;
      if (c.kind == AggregateKind::kBitXor) bits_ ^= x;
      has_value_ = true;
      break;
    }
    case AggregateKind::kGroupConcat: {
      std::string text = v.ToText();
      for (const Value& x : more) text += x.ToText();
      if (c.distinct || !c.order_by.empty()) {
        // Joined in order at the end: ORDER BY's, else (DISTINCT) the
        // values' sorted order, as MySQL.
        Row keys;
        if (c.order_by.empty()) {
          keys.push_back(std::move(v));
          for (Value& x : more) keys.push_back(std::move(x));
        } else {
          for (const AggregateOrder& o : c.order_by) {
            SHALE_ASSIGN_OR_RETURN(Value k, Evaluate(*o.expr, row));
            keys.push_back(std::move(k));
          }
        }
        pending_.emplace_back(std::move(keys), std::move(text));
        has_value_ = true;
        break;
      }
      if (cut_) break;
      if (has_value_) text_ += c.separator;
      text_ += text;
      has_value_ = true;
      if (text_.size() > kGroupConcatMaxLen) {
        text_.resize(kGroupConcatMaxLen);
        cut_ = true;
        PushWarning("Warning", 1260, "Row 1 was cut by GROUP_CONCAT()");
      }
      break;
    }
    case AggregateKind::kMin:
    case AggregateKind::kMax: {
      if (!has_value_) {
        value_ = std::move(v);
        has_value_ = true;
        break;
      }
      int cmp = CompareValuesCollated(v, value_, c.arg->type.Collation());  // ENUM too: as text
      if (c.kind == AggregateKind::kMin ? cmp < 0 : cmp > 0) value_ = std::move(v);
      break;
    }
    default:
      return Status::Internal("aggregate " + c.ToString() + " cannot be computed");
  }
  return Status::OK();
}

Value Accumulator::Result() const {
  const AggregateCall& c = *call_;
  switch (c.kind) {
    case AggregateKind::kCountStar:
    case AggregateKind::kCount:
      return Value::Int(count_);
    case AggregateKind::kAnyValue:
      return value_;
    case AggregateKind::kSum:
      if (!has_value_) return Value::Null();
      if (c.type.is_decimal()) {
        auto r = exact_sum_.Rescale(c.type.scale);
        return r ? Value::Dec(*r) : Value::Dec(exact_sum_);
      }
      return Value::Double(sum_);
    case AggregateKind::kAvg: {
      if (!has_value_) return Value::Null();
      if (c.type.is_decimal()) {
        auto r = Decimal::Div(exact_sum_, Decimal::FromInt(count_), c.type.scale);
        return r ? Value::Dec(*r) : Value::Null();
      }
      return Value::Double(sum_ / static_cast<double>(count_));
    }
    case AggregateKind::kStddevPop:
    case AggregateKind::kStddevSamp:
    case AggregateKind::kVarPop:
    case AggregateKind::kVarSamp: {
      if (!has_value_) return Value::Null();
      const bool sample = c.kind == AggregateKind::kStddevSamp || c.kind == AggregateKind::kVarSamp;
      if (sample && count_ < 2) return Value::Null();
      double var = m2_ / static_cast<double>(sample ? count_ - 1 : count_);
      if (var < 0) var = 0;
      const bool root = c.kind == AggregateKind::kStddevPop || c.kind == AggregateKind::kStddevSamp;
      return Value::Double(root ? std::sqrt(var) : var);
    }
    case AggregateKind::kBitAnd:
    case AggregateKind::kBitOr:
    case AggregateKind::kBitXor: {
      uint64_t bits = c.kind == AggregateKind::kBitAnd && !has_value_ ? ~uint64_t{0} : bits_;
      if (bits <= static_cast<uint64_t>(INT64_MAX)) return Value::Int(static_cast<int64_t>(bits));
      return Value::Dec(Decimal(static_cast<__int128>(bits), 0));  // beyond BIGINT: exact
    }
    case AggregateKind::kGroupConcat: {
      if (!has_value_) return Value::Null();
      if (!c.distinct && c.order_by.empty()) return Value::String(text_);
      std::vector<const std::pair<Row, std::string>*> sorted;
      for (const auto& p : pending_) sorted.push_back(&p);
      auto less = [&c](const std::pair<Row, std::string>* a, const std::pair<Row, std::string>* b) {
        for (size_t i = 0; i < a->first.size(); ++i) {
          const Value &x = a->first[i], &y = b->first[i];
          int cmp = 0;
          if (x.is_null() || y.is_null()) {
            cmp = x.is_null() == y.is_null() ? 0 : (x.is_null() ? -1 : 1);  // NULL first
          } else {
            const ExprPtr& key = c.order_by.empty() ? (i == 0 ? c.arg : c.more_args[i - 1]) : c.order_by[i].expr;
            cmp = CompareValuesCollated(x, y, key->type.Collation());
          }
          if (cmp != 0) return c.order_by.empty() || !c.order_by[i].desc ? cmp < 0 : cmp > 0;
        }
        return false;
      };
      std::stable_sort(sorted.begin(), sorted.end(), less);
      std::string out;
      for (size_t i = 0; i < sorted.size(); ++i) {
        if (i > 0) out += c.separator;
        out += sorted[i]->second;
        if (out.size() > kGroupConcatMaxLen) {
          out.resize(kGroupConcatMaxLen);
          PushWarning("Warning", 1260, "Row 1 was cut by GROUP_CONCAT()");
          break;
        }
      }
      return Value::String(std::move(out));
    }
    default:
      return has_value_ ? value_ : Value::Null();
  }
}

bool Accumulator::Mergeable(const AggregateCall& call) {
  if (call.distinct || !call.more_args.empty() || !call.order_by.empty()) return false;
  switch (call.kind) {
    case AggregateKind::kCountStar:
    case AggregateKind::kCount:
    case AggregateKind::kMin:
    case AggregateKind::kMax:
      return true;
    case AggregateKind::kSum:
    case AggregateKind::kAvg:
      return call.type.is_decimal();
    default:
      return false;
  }
}

void Accumulator::AppendPartial(Row* out) const {
  out->push_back(Value::Int(count_));
  const AggregateCall& c = *call_;
  if (!has_value_) {
    out->push_back(Value::Null());
  } else if (c.kind == AggregateKind::kSum || c.kind == AggregateKind::kAvg) {
    out->push_back(Value::Dec(exact_sum_));  // unrounded: Result() rescales once, at the end
  } else {
    out->push_back(value_);
  }
}

Status Accumulator::Merge(const Row& in, size_t pos) {
  const AggregateCall& c = *call_;
  if (pos + kPartialWidth > in.size() || !in[pos].is_int()) {
    return Status::InvalidArgument("malformed partial state of " + c.ToString());
  }
  count_ += in[pos].as_int();
  const Value& v = in[pos + 1];
  if (v.is_null()) return Status::OK();
  switch (c.kind) {
    case AggregateKind::kSum:
    case AggregateKind::kAvg: {
      auto add = ToDecimalLenient(v);
      auto sum = add ? Decimal::Add(exact_sum_, *add) : std::nullopt;
      if (!sum) {
        return SqlError(ErrorCode::kDataOutOfRangeExpr, "DECIMAL value is out of range in '{}'", c.ToString());
      }
      exact_sum_ = *sum;
      has_value_ = true;
      return Status::OK();
    }
    case AggregateKind::kMin:
    case AggregateKind::kMax: {
      // As Add: the earlier value wins a tie, so merging in slice order
      // keeps the one a row-by-row pass would.
      if (!has_value_) {
        value_ = v;
        has_value_ = true;
        return Status::OK();
      }
      int cmp = CompareValuesCollated(v, value_, c.arg->type.Collation());
      if (c.kind == AggregateKind::kMin ? cmp < 0 : cmp > 0) value_ = v;
      return Status::OK();
    }
    case AggregateKind::kCountStar:
    case AggregateKind::kCount:
      return Status::OK();
    default:
      return Status::InvalidArgument("aggregate " + c.ToString() + " has no partial state");
  }
}

}  // namespace shale::sierra
