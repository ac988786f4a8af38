#include "src/common/value.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "src/common/errors.h"

namespace shale {

std::string SqlType::ToString() const {
  switch (id) {
    case TypeId::kNull: return "null";
    case TypeId::kInt: return "int";
    case TypeId::kBigInt: return "bigint";
    case TypeId::kVarchar: return fmt::format("varchar({})", length);
  }
  return "unknown";
}

std::string Value::ToText() const {
  if (is_int()) return std::to_string(as_int());
  if (is_string()) return as_string();
  return "NULL";
}

std::string Value::ToSqlLiteral() const {
  if (is_null()) return "NULL";
  if (is_int()) return std::to_string(as_int());
  return "'" + as_string() + "'";
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

int CompareValues(const Value& a, const Value& b) {
  if (a.is_int() && b.is_int()) {
    return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  // A number with a string: both as doubles, the string read by its numeric
  // prefix (MySQL's comparison of mixed types).
  auto as_double = [](const Value& v) {
    if (v.is_int()) return static_cast<double>(v.as_int());
    double d = 0;
    if (v.is_string()) NumericPrefix(v.as_string(), &d);
    return d;
  };
  double x = as_double(a), y = as_double(b);
  return x < y ? -1 : (x > y ? 1 : 0);
}

Result<Value> CoerceToColumn(const Value& v, const SqlType& t, std::string_view column) {
  if (v.is_null()) return v;
  switch (t.id) {
    case TypeId::kInt:
    case TypeId::kBigInt: {
      int64_t n = 0;
      if (v.is_int()) {
        n = v.as_int();
      } else {
        switch (ParseWholeInt(v.as_string(), &n)) {
          case IntParse::kOk:
            break;
          case IntParse::kOutOfRange:
            return SqlError(ErrorCode::kDataOutOfRange,
                            "Out of range value for column '{}' at row 1", column);
          case IntParse::kNotANumber: {
            // MySQL reads a decimal or exponent string and rounds it; a
            // number followed by other text is truncated data; no number at
            // all is an incorrect integer value.
            double d = 0;
            size_t used = NumericPrefix(v.as_string(), &d);
            if (used == 0) {
              return SqlError(ErrorCode::kTruncatedWrongValueForField,
                              "Incorrect integer value: '{}' for column '{}' at row 1",
                              v.as_string(), column);
            }
            std::string_view rest = std::string_view(v.as_string()).substr(used);
            for (char c : rest) {
              if (!IsSpace(c)) {
                return SqlError(ErrorCode::kWarnDataTruncated,
                                "Data truncated for column '{}' at row 1", column);
              }
            }
            double r = std::round(d);
            if (!(r >= -9223372036854775808.0 && r < 9223372036854775808.0)) {
              return SqlError(ErrorCode::kDataOutOfRange,
                              "Out of range value for column '{}' at row 1", column);
            }
            n = static_cast<int64_t>(r);
            break;
          }
        }
      }
      if (t.id == TypeId::kInt &&
          (n < std::numeric_limits<int32_t>::min() || n > std::numeric_limits<int32_t>::max())) {
        return SqlError(ErrorCode::kDataOutOfRange, "Out of range value for column '{}' at row 1",
                        column);
      }
      return Value::Int(n);
    }
    case TypeId::kVarchar: {
      std::string s = v.is_int() ? std::to_string(v.as_int()) : v.as_string();
      // Count characters (UTF-8 code points), not bytes.
      size_t chars = 0;
      for (unsigned char c : s) chars += (c & 0xC0) != 0x80;
      if (chars > t.length) {
        return SqlError(ErrorCode::kDataTooLong, "Data too long for column '{}' at row 1", column);
      }
      return Value::String(std::move(s));
    }
    case TypeId::kNull:
      break;
  }
  return Status::Internal("column of unknown type");
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
  if (v.is_int()) {
    uint64_t u = static_cast<uint64_t>(v.as_int()) ^ (uint64_t{1} << 63);
    for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>(u >> shift));
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
  if (t.is_integer()) {
    if (in->size() < 8) return Status::Corruption("key: truncated integer");
    uint64_t u = 0;
    for (int i = 0; i < 8; ++i) u = (u << 8) | static_cast<uint8_t>((*in)[i]);
    in->remove_prefix(8);
    *out = Value::Int(static_cast<int64_t>(u ^ (uint64_t{1} << 63)));
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
enum class RowTag : uint8_t { kNull = 0, kInt = 1, kString = 2 };  // DO NOT CHANGE
}

void EncodeRow(const Row& row, std::string* out) {
  PutVarint64(out, row.size());
  for (const Value& v : row) {
    if (v.is_null()) {
      out->push_back(static_cast<char>(RowTag::kNull));
    } else if (v.is_int()) {
      out->push_back(static_cast<char>(RowTag::kInt));
      int64_t n = v.as_int();
      PutVarint64(out, (static_cast<uint64_t>(n) << 1) ^ static_cast<uint64_t>(n >> 63));
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
  out->clear();
  out->reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    if (in.empty()) return Status::Corruption("row: truncated");
    auto tag = static_cast<RowTag>(in[0]);
    in.remove_prefix(1);
    switch (tag) {
      case RowTag::kNull:
        out->push_back(Value::Null());
        break;
      case RowTag::kInt: {
        uint64_t z = 0;
        if (!GetVarint64(&in, &z)) return Status::Corruption("row: bad integer");
        out->push_back(Value::Int(static_cast<int64_t>((z >> 1) ^ (~(z & 1) + 1))));
        break;
      }
      case RowTag::kString: {
        uint64_t len = 0;
        if (!GetVarint64(&in, &len) || len > in.size()) {
          return Status::Corruption("row: bad string");
        }
        out->push_back(Value::String(std::string(in.substr(0, len))));
        in.remove_prefix(len);
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
