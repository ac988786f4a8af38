#include "src/common/value.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "src/common/datetime.h"
#include "src/common/collation.h"
#include "src/common/errors.h"
#include "src/common/json.h"
#include "src/common/warnings.h"

namespace shale {

SqlType SqlType::Integer(TypeId id, bool is_unsigned) {
  uint32_t width = 0;
  switch (id) {
    case TypeId::kTinyInt: width = is_unsigned ? 3 : 4; break;
    case TypeId::kSmallInt: width = is_unsigned ? 5 : 6; break;
    case TypeId::kMediumInt: width = is_unsigned ? 8 : 9; break;
    case TypeId::kInt: width = is_unsigned ? 10 : 11; break;
    default: width = 20; break;
  }
  SqlType t{id, width};
  t.is_unsigned = is_unsigned;
  return t;
}

SqlType SqlType::Temporal(TypeId id, int fsp) {
  uint32_t length = 0;
  switch (id) {
    case TypeId::kDate: length = 10; break;
    case TypeId::kTime: length = 10; break;
    case TypeId::kYear: length = 4; break;
    default: length = 19; break;
  }
  if (fsp > 0 && id != TypeId::kDate && id != TypeId::kYear) length += static_cast<uint32_t>(fsp) + 1;
  SqlType t{id, length};
  t.scale = static_cast<uint8_t>(id == TypeId::kDate || id == TypeId::kYear ? 0 : fsp);
  return t;
}

uint32_t SqlType::DecimalPrecision() const {
  switch (id) {
    case TypeId::kTinyInt: return 3;
    case TypeId::kSmallInt: return 5;
    case TypeId::kMediumInt: return 8;
    case TypeId::kInt: return 10;
    case TypeId::kBigInt: return is_unsigned ? 20 : 19;
    case TypeId::kDecimal: return length;
    default: return 17;
  }
}

std::string SqlType::ToString() const {
  const char* u = is_unsigned ? " unsigned" : "";
  switch (id) {
    case TypeId::kNull: return "null";
    case TypeId::kTinyInt: return fmt::format("tinyint{}", u);
    case TypeId::kSmallInt: return fmt::format("smallint{}", u);
    case TypeId::kMediumInt: return fmt::format("mediumint{}", u);
    case TypeId::kInt: return is_unsigned ? "int unsigned" : "int";
    case TypeId::kBigInt: return is_unsigned ? "bigint unsigned" : "bigint";
    case TypeId::kVarchar: return fmt::format("varchar({})", length);
    case TypeId::kDouble:
      return scale == kNotFixedDecimals ? fmt::format("double{}", u)
                                        : fmt::format("double({},{}){}", length, scale, u);
    case TypeId::kFloat:
      return scale == kNotFixedDecimals ? fmt::format("float{}", u)
                                        : fmt::format("float({},{}){}", length, scale, u);
    case TypeId::kDecimal: return fmt::format("decimal({},{}){}", length, scale, u);
    case TypeId::kDate: return "date";
    case TypeId::kDatetime: return scale ? fmt::format("datetime({})", scale) : "datetime";
    case TypeId::kTimestamp: return scale ? fmt::format("timestamp({})", scale) : "timestamp";
    case TypeId::kTime: return scale ? fmt::format("time({})", scale) : "time";
    case TypeId::kYear: return "year(4)";
    case TypeId::kChar: return fmt::format("char({})", length);
    case TypeId::kBinary: return fmt::format("binary({})", length);
    case TypeId::kVarbinary: return fmt::format("varbinary({})", length);
    case TypeId::kText:
    case TypeId::kBlob: {
      const char* kind = id == TypeId::kText ? "text" : "blob";
      if (length <= kTinyLobBytes) return fmt::format("tiny{}", kind);
      if (length <= kLobBytes) return kind;
      if (length <= kMediumLobBytes) return fmt::format("medium{}", kind);
      return fmt::format("long{}", kind);
    }
    case TypeId::kEnum:
    case TypeId::kSet: {
      std::string out = id == TypeId::kEnum ? "enum(" : "set(";
      for (size_t i = 0; i < elements.size(); ++i) {
        if (i > 0) out += ',';
        out += '\'';
        for (char c : elements[i]) {
          if (c == '\'') out += '\'';
          out += c;
        }
        out += '\'';
      }
      return out + ")";
    }
    case TypeId::kJson: return "json";
  }
  return "unknown";
}

uint16_t SqlType::Collation() const {
  if (is_binary_string() || id == TypeId::kJson || !is_string()) return kCollationBinary;
  return collation == 0 ? kDefaultCollation : collation;
}

uint32_t SqlType::MaxBytes() const {
  switch (id) {
    case TypeId::kVarchar:
    case TypeId::kChar:
      return static_cast<uint32_t>(
          std::min<uint64_t>(uint64_t{length} * CharsetOfCollation(Collation()).maxlen, 0xFFFFFFFFu));
    case TypeId::kEnum: {
      size_t longest = 0;
      for (const std::string& e : elements) longest = std::max(longest, e.size());
      return static_cast<uint32_t>(longest * 4);
    }
    case TypeId::kSet: {
      size_t all = elements.empty() ? 0 : elements.size() - 1;  // the commas
      for (const std::string& e : elements) all += e.size();
      return static_cast<uint32_t>(all * 4);
    }
    default:
      return length;
  }
}

namespace {

// Lays out significant `digits` (no trailing zeros) of a number whose first
// digit has decimal exponent `exp`, as MySQL prints doubles.
std::string LayoutDigits(bool negative, std::string digits, int exp) {
  std::string out = negative ? "-" : "";
  if (exp < -15 || exp >= 15) {
    out += digits[0];
    if (digits.size() > 1) out += "." + digits.substr(1);
    return out + "e" + std::to_string(exp);
  }
  if (exp >= 0) {
    if (digits.size() <= static_cast<size_t>(exp) + 1) {
      return out + digits + std::string(exp + 1 - digits.size(), '0');
    }
    return out + digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
  }
  return out + "0." + std::string(-exp - 1, '0') + digits;
}

// Splits to_chars scientific output "d.ddde±x" into digits and exponent.
std::string FormatScientific(std::string_view sci) {
  bool neg = !sci.empty() && sci[0] == '-';
  if (neg) sci.remove_prefix(1);
  size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') digits.push_back(c);
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  int exp = std::atoi(std::string(sci.substr(e + 1)).c_str());
  if (digits == "0") return "0";
  return LayoutDigits(neg, std::move(digits), exp);
}

}  // namespace

std::string FormatDouble(double d) {
  if (d == 0) return "0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  return FormatScientific(std::string_view(buf, res.ptr - buf));
}

std::string FormatFloat(float f) {
  if (f == 0) return "0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), f, std::chars_format::scientific, 5);
  return FormatScientific(std::string_view(buf, res.ptr - buf));
}

std::string Value::ToText() const {
  if (is_int()) return std::to_string(as_int());
  if (is_string()) return as_string();
  if (is_float()) return FormatFloat(std::get<5>(v_));
  if (is_double()) return FormatDouble(as_double());
  if (is_decimal()) return as_decimal().ToString();
  if (is_temporal()) return TemporalText(*this);
  return "NULL";
}

std::string Value::ToSqlLiteral() const {
  if (is_null()) return "NULL";
  if (is_string() || is_temporal()) return "'" + ToText() + "'";
  return ToText();
}

namespace {

// MySQL's string-to-number conversion: leading whitespace, an optional sign,
// digits; stops at the first other character. Returns false if the string
// holds no number at all (MySQL then uses 0 with a warning).
enum class IntParse { kOk, kNotANumber, kOutOfRange };

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Reads a whole string as an integer as MySQL stores it into an integer
// column: surrounding whitespace and a leading '+' allowed, nothing else.
IntParse ParseWholeInt(std::string_view s, int64_t* out) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return IntParse::kNotANumber;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (ec == std::errc::result_out_of_range) {
    // Out of range only if the rest is digits too; "9...9x" is not a number.
    for (const char* p = ptr; p < s.data() + s.size(); ++p) {
      if (*p < '0' || *p > '9') return IntParse::kNotANumber;
    }
    return IntParse::kOutOfRange;
  }
  if (ec != std::errc() || ptr != s.data() + s.size()) return IntParse::kNotANumber;
  return IntParse::kOk;
}

}  // namespace

int64_t ToInt64Lenient(const Value& v) {
  if (v.is_int()) return v.as_int();
  if (v.is_null()) return 0;
  if (v.is_decimal()) return v.as_decimal().ToInt64Rounded();
  if (v.is_temporal()) {
    int32_t micro = 0;
    int64_t n = TemporalNumber(v, &micro);
    if (micro >= 500000) n += n < 0 ? -1 : 1;
    return n;
  }
  if (v.is_double()) {
    double r = std::round(v.as_double());
    if (r >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
    if (r < -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(r);
  }
  const std::string& s = v.as_string();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
  bool neg = false;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
  int64_t n = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    int digit = s[i] - '0';
    if (__builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, neg ? -digit : digit, &n)) {
      return neg ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
    }
  }
  return n;
}

size_t NumericPrefix(std::string_view s, double* out) {
  size_t i = 0;
  while (i < s.size() && IsSpace(s[i])) ++i;
  size_t start = i;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  }
  if (digits == 0) {
    *out = 0;
    return 0;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    if (j < s.size() && s[j] >= '0' && s[j] <= '9') {
      while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
      i = j;
    }
  }
  std::string number(s.substr(start, i - start));
  *out = std::strtod(number.c_str(), nullptr);
  return i;
}

double ToDoubleLenient(const Value& v) {
  if (v.is_int()) return static_cast<double>(v.as_int());
  if (v.is_double()) return v.as_double();
  if (v.is_decimal()) return v.as_decimal().ToDouble();
  if (v.is_temporal()) return TemporalDouble(v);
  double d = 0;
  if (v.is_string()) NumericPrefix(v.as_string(), &d);
  return d;
}

std::optional<Decimal> ToDecimalLenient(const Value& v) {
  if (v.is_int()) return Decimal::FromInt(v.as_int());
  if (v.is_decimal()) return v.as_decimal();
  if (v.is_double()) return Decimal::FromDouble(v.as_double(), Decimal::kMaxScale / 2);
  if (v.is_string()) {
    double d = 0;
    size_t used = NumericPrefix(v.as_string(), &d);
    if (used == 0) return Decimal();
    auto exact = Decimal::Parse(std::string_view(v.as_string()).substr(0, used));
    if (exact) return exact;
    return Decimal::FromDouble(d, Decimal::kMaxScale / 2);
  }
  if (v.is_temporal()) {
    int32_t micro = 0;
    int64_t n = TemporalNumber(v, &micro);
    int fsp = v.as_temporal().fsp;
    if (fsp == 0) return Decimal::FromInt(n);
    __int128 units = static_cast<__int128>(n) * 1000000 + (n < 0 ? -micro : micro);
    Decimal d(units, 6);
    auto scaled = d.Rescale(fsp);
    return scaled ? *scaled : d;
  }
  return Decimal();
}

int CompareValues(const Value& a, const Value& b) {
  if (a.is_temporal() || b.is_temporal()) {
    int c = 0;
    if (CompareTemporal(a, b, &c)) return c;
    if (a.is_temporal() && b.is_string()) return CompareValues(Value::String(a.ToText()), b);
    if (b.is_temporal() && a.is_string()) return CompareValues(a, Value::String(b.ToText()));
  }
  if (a.is_int() && b.is_int()) {
    return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  // Integers and decimals compare exactly; anything with a DOUBLE or a
  // string (read by its numeric prefix) compares as doubles (MySQL's
  // comparison of mixed types).
  if ((a.is_int() || a.is_decimal()) && (b.is_int() || b.is_decimal())) {
    auto x = ToDecimalLenient(a), y = ToDecimalLenient(b);
    return Decimal::Compare(*x, *y);
  }
  double x = ToDoubleLenient(a), y = ToDoubleLenient(b);
  return x < y ? -1 : (x > y ? 1 : 0);
}

int CompareValuesCollated(const Value& a, const Value& b, uint16_t collation) {
  if (a.is_string() && b.is_string()) return CompareStrings(a.as_string(), b.as_string(), collation);
  return CompareValues(a, b);
}

uint32_t EnumIndex(const SqlType& t, std::string_view text) {
  const uint16_t coll = t.collation == 0 ? kDefaultCollation : t.collation;
  for (size_t i = 0; i < t.elements.size(); ++i) {
    if (CompareStrings(t.elements[i], text, coll) == 0) return static_cast<uint32_t>(i + 1);
  }
  return 0;
}

std::optional<uint64_t> SetBits(const SqlType& t, std::string_view text) {
  const uint16_t coll = t.collation == 0 ? kDefaultCollation : t.collation;
  uint64_t bits = 0;
  if (text.empty()) return bits;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string_view name = text.substr(start, comma == std::string_view::npos ? std::string_view::npos
                                                                                      : comma - start);
    bool found = false;
    for (size_t i = 0; i < t.elements.size() && !found; ++i) {
      if (CompareStrings(t.elements[i], name, coll) == 0) {
        bits |= uint64_t{1} << i;
        found = true;
      }
    }
    // An empty name between commas is ignored, as MySQL does.
    if (!found && !name.empty()) return std::nullopt;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return bits;
}

std::string SetText(const SqlType& t, uint64_t bits) {
  std::string out;
  for (size_t i = 0; i < t.elements.size() && i < 64; ++i) {
    if (!(bits & (uint64_t{1} << i))) continue;
    if (!out.empty()) out += ',';
    out += t.elements[i];
  }
  return out;
}

int CompareOfType(const Value& a, const Value& b, const SqlType& t) {
  if (t.id == TypeId::kEnum && a.is_string() && b.is_string()) {
    uint32_t x = EnumIndex(t, a.as_string()), y = EnumIndex(t, b.as_string());
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (t.id == TypeId::kSet && a.is_string() && b.is_string()) {
    uint64_t x = SetBits(t, a.as_string()).value_or(0), y = SetBits(t, b.as_string()).value_or(0);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  return CompareValuesCollated(a, b, t.Collation());
}

Value KeyForm(const Value& v, const SqlType& t) {
  if (!v.is_string() || !t.is_string()) return v;
  if (t.id == TypeId::kEnum) return Value::Int(EnumIndex(t, v.as_string()));
  if (t.id == TypeId::kSet) return Value::Int(static_cast<int64_t>(SetBits(t, v.as_string()).value_or(0)));
  const uint16_t coll = t.Collation();
  if (coll == kCollationBinary) return v;
  return Value::String(SortKey(v.as_string(), coll));
}

namespace {

Status OutOfRangeFor(std::string_view column) {
  return SqlError(ErrorCode::kDataOutOfRange, "Out of range value for column '{}' at row 1", column);
}

Status TooLong(std::string_view column) {
  return SqlError(ErrorCode::kDataTooLong, "Data too long for column '{}' at row 1", column);
}

Status EnumTruncated(std::string_view column) {
  return SqlError(ErrorCode::kWarnDataTruncated, "Data truncated for column '{}' at row 1", column);
}

void NoteTruncated(std::string_view column) {
  PushWarning("Note", static_cast<uint16_t>(ErrorCode::kWarnDataTruncated),
              fmt::format("Data truncated for column '{}' at row 1", column));
}

// Reads a string stored into a numeric column: the whole text must be a
// number (surrounding spaces allowed). A number followed by other text is
// 1265; no number at all is 1366 naming `type_word` ("integer", "double",
// "decimal").
Status ReadNumericString(const std::string& s, std::string_view column, const char* type_word,
                         double* out, size_t* used) {
  *used = NumericPrefix(s, out);
  if (*used == 0) {
    return SqlError(ErrorCode::kTruncatedWrongValueForField,
                    "Incorrect {} value: '{}' for column '{}' at row 1", type_word, s, column);
  }
  for (char c : std::string_view(s).substr(*used)) {
    if (!IsSpace(c)) {
      return SqlError(ErrorCode::kWarnDataTruncated, "Data truncated for column '{}' at row 1", column);
    }
  }
  return Status::OK();
}

}  // namespace

void IntegerRange(const SqlType& t, int64_t* lo, int64_t* hi) {
  int bits = 64;
  switch (t.id) {
    case TypeId::kTinyInt: bits = 8; break;
    case TypeId::kSmallInt: bits = 16; break;
    case TypeId::kMediumInt: bits = 24; break;
    case TypeId::kInt: bits = 32; break;
    default: bits = 64; break;
  }
  if (t.is_unsigned) {
    *lo = 0;
    // BIGINT UNSIGNED holds 0..2^63-1 for now (values are signed 64-bit).
    *hi = bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << bits) - 1;
  } else {
    *lo = bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1));
    *hi = bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
  }
}

Result<Value> CoerceToColumn(const Value& v, const SqlType& t, std::string_view column) {
  if (v.is_null()) return v;
  if (t.is_integer()) {
    int64_t n = 0;
    if (v.is_int()) {
      n = v.as_int();
    } else if (v.is_double()) {
      double r = std::round(v.as_double());
      if (!(r >= -9223372036854775808.0 && r < 9223372036854775808.0)) return OutOfRangeFor(column);
      n = static_cast<int64_t>(r);
    } else if (v.is_decimal()) {
      bool overflow = false;
      n = v.as_decimal().ToInt64Rounded(&overflow);
      if (overflow) return OutOfRangeFor(column);
    } else {
      switch (ParseWholeInt(v.as_string(), &n)) {
        case IntParse::kOk:
          break;
        case IntParse::kOutOfRange:
          return OutOfRangeFor(column);
        case IntParse::kNotANumber: {
          // MySQL reads a decimal or exponent string and rounds it; a
          // number followed by other text is truncated data; no number at
          // all is an incorrect integer value.
          double d = 0;
          size_t used = 0;
          SHALE_RETURN_IF_ERROR(ReadNumericString(v.as_string(), column, "integer", &d, &used));
          double r = std::round(d);
          if (!(r >= -9223372036854775808.0 && r < 9223372036854775808.0)) return OutOfRangeFor(column);
          n = static_cast<int64_t>(r);
          break;
        }
      }
    }
    int64_t lo = 0, hi = 0;
    IntegerRange(t, &lo, &hi);
    if (n < lo || n > hi) return OutOfRangeFor(column);
    return Value::Int(n);
  }
  if (t.is_temporal() || t.id == TypeId::kYear) return CoerceToTemporalColumn(v, t, column);
  switch (t.id) {
    case TypeId::kDouble:
    case TypeId::kFloat: {
      double d = 0;
      if (v.is_string()) {
        size_t used = 0;
        SHALE_RETURN_IF_ERROR(ReadNumericString(v.as_string(), column, "double", &d, &used));
      } else {
        d = ToDoubleLenient(v);
      }
      if (t.scale != kNotFixedDecimals) {
        // FLOAT(M,D) / DOUBLE(M,D): rounded to D decimals, at most M digits.
        double p = std::pow(10.0, t.scale);
        d = std::round(d * p) / p;
        if (std::fabs(d) >= std::pow(10.0, static_cast<double>(t.length) - t.scale)) {
          return OutOfRangeFor(column);
        }
      }
      if (!std::isfinite(d) || (t.is_unsigned && d < 0)) return OutOfRangeFor(column);
      if (t.id == TypeId::kFloat) {
        if (std::fabs(d) > std::numeric_limits<float>::max()) return OutOfRangeFor(column);
        return Value::Float(static_cast<float>(d));
      }
      return Value::Double(d);
    }
    case TypeId::kDecimal: {
      std::optional<Decimal> dec;
      if (v.is_string()) {
        double d = 0;
        size_t used = 0;
        SHALE_RETURN_IF_ERROR(ReadNumericString(v.as_string(), column, "decimal", &d, &used));
        dec = Decimal::Parse(std::string_view(v.as_string()).substr(0, used));
        if (!dec) return OutOfRangeFor(column);
      } else if (v.is_double()) {
        dec = Decimal::FromDouble(v.as_double(), t.scale);
        if (!dec) return OutOfRangeFor(column);
      } else {
        dec = ToDecimalLenient(v);
      }
      auto scaled = dec->Rescale(t.scale);
      if (!scaled || !scaled->FitsPrecision(static_cast<int>(t.length)) ||
          (t.is_unsigned && scaled->is_negative())) {
        return OutOfRangeFor(column);
      }
      if (Decimal::Compare(*scaled, *dec) != 0) NoteTruncated(column);
      return Value::Dec(*scaled);
    }
    case TypeId::kVarchar:
    case TypeId::kChar: {
      std::string s = v.ToText();
      // CHAR drops trailing spaces (MySQL pads on disk and strips on read).
      if (t.id == TypeId::kChar) {
        while (!s.empty() && s.back() == ' ') s.pop_back();
      }
      // Count characters (UTF-8 code points), not bytes.
      size_t chars = 0;
      for (unsigned char c : s) chars += (c & 0xC0) != 0x80;
      if (chars > t.length) {
        // Only spaces past the length: cut them with a note (MySQL).
        size_t keep = 0, seen = 0;
        while (keep < s.size() && seen < t.length) {
          ++keep;
          while (keep < s.size() && (static_cast<unsigned char>(s[keep]) & 0xC0) == 0x80) ++keep;
          ++seen;
        }
        if (s.find_first_not_of(' ', keep) != std::string::npos) return TooLong(column);
        s.resize(keep);
        NoteTruncated(column);
      }
      return Value::String(std::move(s));
    }
    case TypeId::kText:
    case TypeId::kBlob:
    case TypeId::kVarbinary:
    case TypeId::kBinary: {
      std::string s = v.ToText();
      if (s.size() > t.length) return TooLong(column);
      if (t.id == TypeId::kBinary) s.resize(t.length, '\0');
      return Value::String(std::move(s));
    }
    case TypeId::kEnum: {
      if (v.is_string()) {
        uint32_t index = EnumIndex(t, v.as_string());
        if (index == 0) return EnumTruncated(column);
        return Value::String(t.elements[index - 1]);
      }
      // A number picks the element by its index (1-based).
      int64_t n = ToInt64Lenient(v);
      if (n < 1 || static_cast<uint64_t>(n) > t.elements.size()) return EnumTruncated(column);
      return Value::String(t.elements[n - 1]);
    }
    case TypeId::kSet: {
      // A string names members; a number is their bitmask.
      if (v.is_string()) {
        std::optional<uint64_t> bits = SetBits(t, v.as_string());
        if (!bits) return EnumTruncated(column);
        return Value::String(SetText(t, *bits));
      }
      const int64_t n = ToInt64Lenient(v);
      const size_t count = t.elements.size();
      if (n < 0 || (count < 64 && static_cast<uint64_t>(n) >= (uint64_t{1} << count))) return EnumTruncated(column);
      return Value::String(SetText(t, static_cast<uint64_t>(n)));
    }
    case TypeId::kJson: {
      std::string s = v.ToText();
      JsonError error;
      if (!ValidateJson(s, &error)) {
        return SqlError(ErrorCode::kInvalidJsonText,
                        "Invalid JSON text: \"{}\" at position {} in value for column '{}'.",
                        error.message, error.position, column);
      }
      return Value::String(std::move(s));
    }
    default:
      break;
  }
  return Status::Internal("column of unknown type");
}

namespace {

// "at row 1" in a conversion message becomes "at row N".
std::string AtRow(std::string msg, uint64_t row) {
  const auto at = msg.rfind("at row 1");
  if (at != std::string::npos) msg = msg.substr(0, at) + fmt::format("at row {}", row);
  return msg;
}

// The largest DECIMAL(p,s) / FLOAT(M,D) value as text: p - s nines, then s.
std::string MaxDigits(uint32_t precision, uint32_t scale, bool negative) {
  std::string out = negative ? "-" : "";
  out += precision > scale ? std::string(precision - scale, '9') : "0";
  if (scale > 0) out += "." + std::string(scale, '9');
  return out;
}

// The first `n` characters (UTF-8 code points) of `s`.
std::string FirstChars(const std::string& s, uint64_t n) {
  size_t i = 0;
  uint64_t chars = 0;
  while (i < s.size() && chars < n) {
    ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
    ++chars;
  }
  return s.substr(0, i);
}

}  // namespace

Result<Value> CoerceToColumnNonStrict(const Value& v, const SqlType& t, std::string_view column, uint64_t row) {
  Result<Value> strict = CoerceToColumn(v, t, column);
  if (strict.ok()) return strict;
  const uint16_t code = strict.status().mysql_code();
  if (code != 1264 && code != 1265 && code != 1366 && code != 1292 && code != 1406) return strict;
  uint16_t warning = code;
  std::string message = AtRow(strict.status().message(), row);
  if (code == 1406 || code == 1292) {
    warning = 1265;
    message = fmt::format("Data truncated for column '{}' at row {}", column, row);
  }
  Result<Value> adjusted = strict.status();
  if (t.is_integer()) {
    int64_t lo = 0, hi = 0;
    IntegerRange(t, &lo, &hi);
    adjusted = Value::Int(std::clamp(ToInt64Lenient(v), lo, hi));
  } else if (t.id == TypeId::kYear) {
    adjusted = Value::Int(0);
  } else if (t.is_decimal() || t.is_floating()) {
    const double x = ToDoubleLenient(v);
    adjusted = CoerceToColumn(Value::Double(x), t, column);
    if (!adjusted.ok()) {
      const bool fixed = t.is_decimal() || t.scale != kNotFixedDecimals;
      if (fixed) {
        adjusted = CoerceToColumn(Value::String(MaxDigits(t.length, t.scale, x < 0)), t, column);
      } else {
        const double max = t.id == TypeId::kFloat ? static_cast<double>(std::numeric_limits<float>::max())
                                                  : std::numeric_limits<double>::max();
        adjusted = Value::Double(x < 0 ? -max : max);
      }
    }
  } else if (t.id == TypeId::kEnum) {
    adjusted = Value::String("");
  } else if (t.id == TypeId::kSet) {
    // The members it names, unknown names dropped.
    const std::string text = v.ToText();
    uint64_t bits = 0;
    size_t start = 0;
    while (start <= text.size()) {
      const size_t comma = text.find(',', start);
      const std::string name = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (auto b = SetBits(t, name)) bits |= *b;
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    adjusted = Value::String(SetText(t, bits));
  } else if (t.is_temporal()) {
    adjusted = Value::Temporal(t.id, 0, t.scale);
  } else if (t.is_string() && t.id != TypeId::kJson) {
    // Too long: cut to the length (characters for CHAR/VARCHAR, else bytes).
    const std::string text = v.ToText();
    const bool chars = t.id == TypeId::kVarchar || t.id == TypeId::kChar;
    adjusted = CoerceToColumn(Value::String(chars ? FirstChars(text, t.length) : text.substr(0, t.length)), t, column);
  }
  if (!adjusted.ok()) return strict;
  PushWarning("Warning", warning, std::move(message));
  return adjusted;
}

// ---- key encoding -----------------------------------------------------------

namespace {
constexpr char kKeyNull = 0x01;
constexpr char kKeyValue = 0x02;
}  // namespace

void AppendKey(const Value& v, std::string* out) {
  if (v.is_null()) {
    out->push_back(kKeyNull);
    return;
  }
  out->push_back(kKeyValue);
  if (v.is_int() || v.is_temporal()) {
    int64_t n = v.is_int() ? v.as_int() : v.as_temporal().packed;
    uint64_t u = static_cast<uint64_t>(n) ^ (uint64_t{1} << 63);
    for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>(u >> shift));
    return;
  }
  if (v.is_double()) {
    double d = v.as_double();
    if (d == 0) d = 0;  // -0 sorts with 0
    uint64_t u = 0;
    std::memcpy(&u, &d, 8);
    u = (u >> 63) ? ~u : (u | (uint64_t{1} << 63));
    for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>(u >> shift));
    return;
  }
  if (v.is_decimal()) {
    v.as_decimal().AppendKeyBytes(out);
    return;
  }
  for (char c : v.as_string()) {
    out->push_back(c);
    if (c == '\0') out->push_back(static_cast<char>(0xFF));
  }
  out->push_back('\0');
  out->push_back(0x01);
}

Status DecodeKey(std::string_view* in, const SqlType& t, Value* out) {
  if (in->empty()) return Status::Corruption("key: truncated");
  char tag = (*in)[0];
  in->remove_prefix(1);
  if (tag == kKeyNull) {
    *out = Value::Null();
    return Status::OK();
  }
  if (tag != kKeyValue) return Status::Corruption("key: bad tag");
  if (t.is_integer() || t.is_temporal() || t.id == TypeId::kYear) {
    if (in->size() < 8) return Status::Corruption("key: truncated integer");
    uint64_t u = 0;
    for (int i = 0; i < 8; ++i) u = (u << 8) | static_cast<uint8_t>((*in)[i]);
    in->remove_prefix(8);
    int64_t n = static_cast<int64_t>(u ^ (uint64_t{1} << 63));
    *out = t.is_temporal() ? Value::Temporal(t.id, n, t.scale) : Value::Int(n);
    return Status::OK();
  }
  if (t.is_floating()) {
    if (in->size() < 8) return Status::Corruption("key: truncated double");
    uint64_t u = 0;
    for (int i = 0; i < 8; ++i) u = (u << 8) | static_cast<uint8_t>((*in)[i]);
    in->remove_prefix(8);
    u = (u >> 63) ? (u & ~(uint64_t{1} << 63)) : ~u;
    double d = 0;
    std::memcpy(&d, &u, 8);
    *out = t.id == TypeId::kFloat ? Value::Float(static_cast<float>(d)) : Value::Double(d);
    return Status::OK();
  }
  if (t.is_decimal()) {
    Decimal d;
    if (!Decimal::DecodeKeyBytes(in, t.scale, &d)) return Status::Corruption("key: bad decimal");
    *out = Value::Dec(d);
    return Status::OK();
  }
  std::string s;
  size_t i = 0;
  while (true) {
    if (i >= in->size()) return Status::Corruption("key: unterminated string");
    char c = (*in)[i];
    if (c != '\0') {
      s.push_back(c);
      ++i;
      continue;
    }
    if (i + 1 >= in->size()) return Status::Corruption("key: unterminated string");
    char next = (*in)[i + 1];
    if (next == static_cast<char>(0xFF)) {
      s.push_back('\0');
      i += 2;
    } else if (next == 0x01) {
      i += 2;
      break;
    } else {
      return Status::Corruption("key: bad string escape");
    }
  }
  in->remove_prefix(i);
  *out = Value::String(std::move(s));
  return Status::OK();
}

// ---- row encoding -----------------------------------------------------------

void PutVarint64(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

bool GetVarint64(std::string_view* in, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift <= 63 && !in->empty(); shift += 7) {
    uint8_t byte = static_cast<uint8_t>((*in)[0]);
    in->remove_prefix(1);
    result |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

namespace {
// DO NOT CHANGE
enum class RowTag : uint8_t {
  kNull = 0, kInt = 1, kString = 2, kDouble = 3, kDecimal = 4, kFloat = 5, kTemporal = 6,
};

void PutFixedLE(std::string* out, unsigned __int128 v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

bool GetFixedLE(std::string_view* in, int bytes, unsigned __int128* v) {
  if (in->size() < static_cast<size_t>(bytes)) return false;
  *v = 0;
  for (int i = bytes - 1; i >= 0; --i) *v = (*v << 8) | static_cast<uint8_t>((*in)[i]);
  in->remove_prefix(bytes);
  return true;
}
}  // namespace

void EncodeRow(const Row& row, std::string* out) {
  PutVarint64(out, row.size());
  for (const Value& v : row) {
    if (v.is_null()) {
      out->push_back(static_cast<char>(RowTag::kNull));
    } else if (v.is_int()) {
      out->push_back(static_cast<char>(RowTag::kInt));
      int64_t n = v.as_int();
      PutVarint64(out, (static_cast<uint64_t>(n) << 1) ^ static_cast<uint64_t>(n >> 63));
    } else if (v.is_float()) {
      out->push_back(static_cast<char>(RowTag::kFloat));
      float f = static_cast<float>(v.as_double());
      uint32_t u = 0;
      std::memcpy(&u, &f, 4);
      PutFixedLE(out, u, 4);
    } else if (v.is_double()) {
      out->push_back(static_cast<char>(RowTag::kDouble));
      double d = v.as_double();
      uint64_t u = 0;
      std::memcpy(&u, &d, 8);
      PutFixedLE(out, u, 8);
    } else if (v.is_decimal()) {
      out->push_back(static_cast<char>(RowTag::kDecimal));
      v.as_decimal().AppendRowBytes(out);
    } else if (v.is_temporal()) {
      const TemporalValue& tv = v.as_temporal();
      out->push_back(static_cast<char>(RowTag::kTemporal));
      out->push_back(static_cast<char>(tv.type));
      out->push_back(static_cast<char>(tv.fsp));
      PutVarint64(out, (static_cast<uint64_t>(tv.packed) << 1) ^ static_cast<uint64_t>(tv.packed >> 63));
    } else {
      out->push_back(static_cast<char>(RowTag::kString));
      PutVarint64(out, v.as_string().size());
      out->append(v.as_string());
    }
  }
}

Status DecodeRow(std::string_view in, Row* out) {
  uint64_t n = 0;
  if (!GetVarint64(&in, &n) || n > in.size()) return Status::Corruption("row: bad column count");
  // In place: a row buffer decoded into again keeps its strings' capacity
  // (one allocation per string column per row saved on a scan).
  out->resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    Value& slot = (*out)[i];
    if (in.empty()) return Status::Corruption("row: truncated");
    auto tag = static_cast<RowTag>(in[0]);
    in.remove_prefix(1);
    switch (tag) {
      case RowTag::kNull:
        slot = Value::Null();
        break;
      case RowTag::kInt: {
        uint64_t z = 0;
        if (!GetVarint64(&in, &z)) return Status::Corruption("row: bad integer");
        slot = Value::Int(static_cast<int64_t>((z >> 1) ^ (~(z & 1) + 1)));
        break;
      }
      case RowTag::kString: {
        uint64_t len = 0;
        if (!GetVarint64(&in, &len) || len > in.size()) {
          return Status::Corruption("row: bad string");
        }
        slot.SetString(in.substr(0, len));
        in.remove_prefix(len);
        break;
      }
      case RowTag::kDouble: {
        unsigned __int128 u = 0;
        if (!GetFixedLE(&in, 8, &u)) return Status::Corruption("row: bad double");
        uint64_t bits = static_cast<uint64_t>(u);
        double d = 0;
        std::memcpy(&d, &bits, 8);
        slot = Value::Double(d);
        break;
      }
      case RowTag::kFloat: {
        unsigned __int128 u = 0;
        if (!GetFixedLE(&in, 4, &u)) return Status::Corruption("row: bad float");
        uint32_t bits = static_cast<uint32_t>(u);
        float f = 0;
        std::memcpy(&f, &bits, 4);
        slot = Value::Float(f);
        break;
      }
      case RowTag::kDecimal: {
        Decimal d;
        if (!Decimal::DecodeRowBytes(&in, &d)) return Status::Corruption("row: bad decimal");
        slot = Value::Dec(d);
        break;
      }
      case RowTag::kTemporal: {
        if (in.size() < 2) return Status::Corruption("row: bad temporal");
        auto type = static_cast<TypeId>(static_cast<uint8_t>(in[0]));
        int fsp = static_cast<uint8_t>(in[1]);
        in.remove_prefix(2);
        uint64_t z = 0;
        if (fsp > 6 || !SqlType{type}.is_temporal() || !GetVarint64(&in, &z)) {
          return Status::Corruption("row: bad temporal");
        }
        slot = Value::Temporal(type, static_cast<int64_t>((z >> 1) ^ (~(z & 1) + 1)), fsp);
        break;
      }
      default:
        return Status::Corruption("row: bad tag");
    }
  }
  if (!in.empty()) return Status::Corruption("row: trailing bytes");
  return Status::OK();
}

}  // namespace shale
