// SQL types and values, and their two byte encodings:
//
//  - key encoding: memcomparable — comparing encoded keys with memcmp gives
//    SQL order, so B+trees and slice iterators compare plain bytes;
//  - row encoding: compact and self-describing, for stored row payloads.
//
// Both encodings are on-disk formats (docs/formats/values.md). DO NOT CHANGE
// the tag values; add new ones.
//
// Thread-safety: values; no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "shale/status.h"
#include "src/common/decimal.h"

namespace shale {

// Column types. Stored in the catalog: DO NOT CHANGE values.
enum class TypeId : uint8_t {
  kNull = 0,     // the type of a bare NULL literal
  kInt = 1,      // INT: 32-bit signed
  kBigInt = 2,   // BIGINT: 64-bit signed
  kVarchar = 3,  // VARCHAR(n): up to n characters, utf8mb4, binary comparison for now
  kTinyInt = 4,  // TINYINT: 8-bit (is_unsigned: 0..255)
  kSmallInt = 5, // SMALLINT: 16-bit
  kMediumInt = 6,  // MEDIUMINT: 24-bit
  kDouble = 7,   // DOUBLE: IEEE 754 binary64
  kFloat = 8,    // FLOAT: IEEE 754 binary32 (values held as float)
  kDecimal = 9,  // DECIMAL(length = precision, scale): exact, src/common/decimal.h
  // Temporal types (src/common/datetime.h); scale = fsp (0..6).
  kDate = 20,       // DATE
  kDatetime = 21,   // DATETIME(fsp)
  kTimestamp = 22,  // TIMESTAMP(fsp): stored in UTC, shown in the session time zone
  kTime = 23,       // TIME(fsp): ±838:59:59
  kYear = 24,       // YEAR: 1901..2155 or 0, held as an integer
  // String and binary kinds (length: see SqlType::length). Values are
  // Value::String; `collation` says how they compare.
  kChar = 10,       // CHAR(n): n characters, trailing spaces stripped when stored
  kText = 11,       // TINYTEXT/TEXT/MEDIUMTEXT/LONGTEXT: length = max bytes (255, 65535, 16777215, 4294967295)
  kBinary = 12,     // BINARY(n): n bytes, zero-padded when stored
  kVarbinary = 13,  // VARBINARY(n): up to n bytes
  kBlob = 14,       // TINYBLOB/BLOB/MEDIUMBLOB/LONGBLOB: length = max bytes, as TEXT
  kEnum = 15,       // ENUM('a', ...): `elements`; held as the element's text, ordered by its index
  kJson = 16,       // JSON: valid JSON text (checked when stored), compared as binary text
  kSet = 17,        // SET('a', ...): `elements` (at most 64); held as its canonical text (the
                    // members in definition order, comma-separated), ordered by its bitmask
};

// The max byte lengths that name the TEXT and BLOB kinds.
inline constexpr uint32_t kTinyLobBytes = 255;
inline constexpr uint32_t kLobBytes = 65535;
inline constexpr uint32_t kMediumLobBytes = 16777215;
inline constexpr uint32_t kLongLobBytes = 4294967295u;

// The scale MySQL reports for a floating-point value without a fixed number
// of decimals (NOT_FIXED_DEC).
inline constexpr uint8_t kNotFixedDecimals = 31;

struct SqlType {
  TypeId id = TypeId::kNull;
  // VARCHAR: max characters; integers and floating point: display width;
  // DECIMAL: precision (total digits).
  uint32_t length = 0;
  // DECIMAL: digits after the point. DOUBLE/FLOAT: kNotFixedDecimals unless
  // declared FLOAT(M,D)/DOUBLE(M,D).
  uint8_t scale = 0;
  bool is_unsigned = false;  // integers (and DECIMAL/DOUBLE ... UNSIGNED)
  // String kinds: the MySQL collation id (src/common/collation.h); 0 means
  // the default (utf8mb4_general_ci). Binary kinds are always binary (63).
  uint16_t collation = 0;
  // ENUM: the permitted values in order (index 1, 2, ...).
  std::vector<std::string> elements = {};

  static SqlType Int() { return {TypeId::kInt, 11}; }
  static SqlType BigInt() { return {TypeId::kBigInt, 20}; }
  static SqlType Varchar(uint32_t n) { return {TypeId::kVarchar, n}; }
  static SqlType Double() { return {TypeId::kDouble, 23, kNotFixedDecimals}; }
  static SqlType Float() { return {TypeId::kFloat, 12, kNotFixedDecimals}; }
  static SqlType Decimal(uint32_t precision, uint8_t scale) {
    return {TypeId::kDecimal, precision, scale};
  }
  static SqlType Integer(TypeId id, bool is_unsigned);  // the column type, its display width
  static SqlType Char(uint32_t n) { return {TypeId::kChar, n}; }
  static SqlType Text(uint32_t max_bytes) { return {TypeId::kText, max_bytes}; }
  static SqlType Binary(uint32_t n) { return {TypeId::kBinary, n}; }
  static SqlType Varbinary(uint32_t n) { return {TypeId::kVarbinary, n}; }
  static SqlType Blob(uint32_t max_bytes) { return {TypeId::kBlob, max_bytes}; }
  static SqlType Json() { return {TypeId::kJson, kLongLobBytes}; }
  bool is_integer() const {
    return id == TypeId::kInt || id == TypeId::kBigInt || id == TypeId::kTinyInt ||
           id == TypeId::kSmallInt || id == TypeId::kMediumInt;
  }
  bool is_floating() const { return id == TypeId::kDouble || id == TypeId::kFloat; }
  bool is_decimal() const { return id == TypeId::kDecimal; }
  bool is_numeric() const { return is_integer() || is_floating() || is_decimal(); }
  // DATE, DATETIME, TIMESTAMP, TIME (not YEAR, which is an integer).
  bool is_temporal() const {
    return id == TypeId::kDate || id == TypeId::kDatetime || id == TypeId::kTimestamp ||
           id == TypeId::kTime;
  }
  static SqlType Temporal(TypeId id, int fsp);  // with MySQL's display length
  // Every string and binary kind (the values are Value::String).
  bool is_string() const {
    return id == TypeId::kVarchar || (id >= TypeId::kChar && id <= TypeId::kJson) || id == TypeId::kSet;
  }
  // BINARY, VARBINARY, BLOB kinds: bytes, binary collation.
  bool is_binary_string() const {
    return id == TypeId::kBinary || id == TypeId::kVarbinary || id == TypeId::kBlob;
  }
  // TEXT, BLOB and JSON kinds: no literal DEFAULT, keys need a prefix length.
  bool is_lob() const { return id == TypeId::kText || id == TypeId::kBlob || id == TypeId::kJson; }
  // The collation strings of this type compare with (binary for binary kinds
  // and JSON; the default when unset).
  uint16_t Collation() const;
  // The most bytes a value can take on the wire: characters x 4 for
  // utf8mb4 kinds, bytes for binary kinds and TEXT/BLOB.
  uint32_t MaxBytes() const;
  // Digits of an integer type as a DECIMAL precision (INT: 10, BIGINT: 19
  // or 20 unsigned); of a DECIMAL its precision.
  uint32_t DecimalPrecision() const;
  bool operator==(const SqlType&) const = default;
  std::string ToString() const;  // "int", "bigint unsigned", "varchar(20)", "decimal(10,2)", "enum('a','b')"
};

// The payload of a temporal value: `packed` as src/common/datetime.h
// describes for `type`, shown with `fsp` fraction digits.
struct TemporalValue {
  int64_t packed = 0;
  TypeId type = TypeId::kDatetime;
  uint8_t fsp = 0;
  bool operator==(const TemporalValue&) const = default;
};

// A SQL value: NULL, an integer, a string, a DOUBLE, a FLOAT, a DECIMAL or a
// temporal value.
class Value {
 public:
  Value() = default;  // NULL
  static Value Null() { return Value(); }
  static Value Int(int64_t v) { Value x; x.v_ = v; return x; }
  static Value String(std::string s) { Value x; x.v_ = std::move(s); return x; }
  static Value Double(double d) { Value x; x.v_ = d == 0 ? 0.0 : d; return x; }  // no -0
  static Value Float(float f) { Value x; x.v_ = f == 0 ? 0.0f : f; return x; }
  static Value Dec(Decimal d) { Value x; x.v_ = d; return x; }
  static Value Temporal(TypeId type, int64_t packed, int fsp) {
    Value x;
    x.v_ = TemporalValue{packed, type, static_cast<uint8_t>(fsp)};
    return x;
  }
  // Makes this value the string `s`, reusing the string it holds (and its
  // capacity) if it holds one.
  void SetString(std::string_view s) {
    if (auto* held = std::get_if<2>(&v_)) {
      held->assign(s.data(), s.size());
    } else {
      v_.emplace<2>(s);
    }
  }

  bool is_null() const { return v_.index() == 0; }
  bool is_int() const { return v_.index() == 1; }
  bool is_string() const { return v_.index() == 2; }
  // DOUBLE or FLOAT.
  bool is_double() const { return v_.index() == 3 || v_.index() == 5; }
  bool is_float() const { return v_.index() == 5; }
  bool is_decimal() const { return v_.index() == 4; }
  bool is_number() const { return is_int() || is_double() || is_decimal(); }
  bool is_temporal() const { return v_.index() == 6; }
  int64_t as_int() const { return std::get<1>(v_); }
  const std::string& as_string() const { return std::get<2>(v_); }
  double as_double() const { return v_.index() == 5 ? std::get<5>(v_) : std::get<3>(v_); }
  const Decimal& as_decimal() const { return std::get<4>(v_); }
  const TemporalValue& as_temporal() const { return std::get<6>(v_); }

  // The text the MySQL text protocol sends (undefined for NULL).
  std::string ToText() const;
  // A literal for messages: 'abc', 12, NULL.
  std::string ToSqlLiteral() const;

  bool operator==(const Value& o) const { return v_ == o.v_; }

 private:
  std::variant<std::monostate, int64_t, std::string, double, Decimal, float, TemporalValue> v_;
};

using Row = std::vector<Value>;

// Compares two non-NULL values by MySQL's rules: two integers numerically, two
// strings bytewise, an integer with a string as doubles (the string read by
// its numeric prefix). Returns <0, 0, >0.
int CompareValues(const Value& a, const Value& b);
// As CompareValues, but two strings compare under `collation`
// (src/common/collation.h).
int CompareValuesCollated(const Value& a, const Value& b, uint16_t collation);
// As CompareValuesCollated for two values of type `t`: ENUM values compare by
// their element index, strings by t's collation.
int CompareOfType(const Value& a, const Value& b, const SqlType& t);

// The form of value `v` of type `t` that keys, hashes and groups use: equal
// (under t's collation) values have equal key forms, and the key forms of
// strings sort (bytewise) in collation order: a string's weight string
// (SortKey); an ENUM's element index as an integer; other values as they
// are. Index keys (src/catalog) store key forms, rows the values.
Value KeyForm(const Value& v, const SqlType& t);

// The 1-based index of `text` among ENUM type t's elements (compared under
// t's collation, trailing spaces ignored), or 0.
uint32_t EnumIndex(const SqlType& t, std::string_view text);

// The bitmask of SET type t's members named by `text` (comma-separated,
// each compared under t's collation, trailing spaces ignored; '' is 0), or
// nullopt if a name is not a member.
std::optional<uint64_t> SetBits(const SqlType& t, std::string_view text);
// The canonical text of SET members `bits`: the names in definition order,
// comma-separated. REQUIRES: bits < 2^elements.size().
std::string SetText(const SqlType& t, uint64_t bits);

// The numeric prefix of a string as MySQL reads it in a numeric context:
// leading whitespace, sign, digits, fraction, exponent. Returns the bytes
// consumed (0 if there is no number; *out is then 0).
size_t NumericPrefix(std::string_view s, double* out);

// MySQL's lenient numeric reading of a value: an integer as is, a string as
// its leading integer (0 if none; saturating at the BIGINT limits), a DOUBLE
// or DECIMAL rounded half away from zero (saturating), NULL as 0.
int64_t ToInt64Lenient(const Value& v);
// A value as a double: strings by their numeric prefix, NULL as 0.
double ToDoubleLenient(const Value& v);
// A value as a DECIMAL: integers exactly, DOUBLEs by their shortest digits,
// strings by their numeric prefix (0 if none). nullopt if it does not fit.
std::optional<Decimal> ToDecimalLenient(const Value& v);

// MySQL's text of a DOUBLE: the shortest digits that read back to the same
// double, positional for exponents -15..14, else like "1.5e20" / "1e-16".
std::string FormatDouble(double d);
// MySQL's text of a FLOAT: six significant digits, the same layout.
std::string FormatFloat(float f);

// The range [*lo, *hi] of integer column type `t` (TINYINT..BIGINT, signed
// or UNSIGNED; BIGINT UNSIGNED holds 0..2^63-1 for now, values being signed
// 64-bit).
void IntegerRange(const SqlType& t, int64_t* lo, int64_t* hi);

// Converts `v` to be stored in a column of type `t`: range-checks integers,
// parses numeric strings, rounds DECIMAL to its scale, checks string lengths
// (1406; characters for VARCHAR/CHAR, bytes for the binary kinds and
// TEXT/BLOB), pads BINARY with zero bytes, strips CHAR's trailing spaces,
// maps ENUM values to their element (1265 if none) and checks JSON text
// (3140).
// Errors name `column`. A rounding MySQL reports as a Note (1265 "Data
// truncated", e.g. 1.555 into DECIMAL(5,2)) goes to the thread's
// WarningSink (src/common/warnings.h).
Result<Value> CoerceToColumn(const Value& v, const SqlType& t, std::string_view column);

// CoerceToColumn outside strict sql_mode (neither STRICT_TRANS_TABLES nor
// STRICT_ALL_TABLES): a value that does not fit is stored adjusted, as
// MySQL does, with a warning on the thread's WarningSink naming row `row`:
// numbers out of range are clipped to the type's limits (1264), strings
// that are no number read as 0 (1366), numbers with trailing text by their
// numeric prefix (1265), too-long strings are cut (1265), unknown ENUM
// values become '' and unknown SET members are dropped (1265), invalid
// dates and times become the zero value (1265). Other errors (JSON text)
// stay errors.
Result<Value> CoerceToColumnNonStrict(const Value& v, const SqlType& t, std::string_view column, uint64_t row);

// ---- memcomparable key encoding --------------------------------------------
// Appends `v` (of column type `t`) so that memcmp order of the output equals
// SQL order of the values, NULL first. Integers: a 0x02 tag then 8 big-endian
// bytes with the sign bit flipped. Strings: 0x02 tag, bytes with 0x00 escaped
// as 0x00 0xFF, terminated by 0x00 0x01. NULL: a 0x01 tag. DOUBLE/FLOAT: 0x02
// then the 8 big-endian bytes of the double with the sign bit flipped for
// positives and every bit flipped for negatives. DECIMAL: 0x02 then the
// units (at the column's scale: REQUIRES the value rescaled to the column's
// scale) as Decimal::AppendKeyBytes writes them (a length byte ordered by
// sign and size, then the big-endian magnitude, complemented if negative). Temporal: 0x02
// then the packed int64 (src/common/datetime.h) like an integer.
void AppendKey(const Value& v, std::string* out);
// Decodes one key component of type `t` from `*in`, advancing it.
Status DecodeKey(std::string_view* in, const SqlType& t, Value* out);

// ---- row encoding -----------------------------------------------------------
// A row is a varint column count then, per column, a tag (0 NULL, 1 integer as
// zigzag varint, 2 string as varint length + bytes, 3 DOUBLE as 8 little-endian
// bytes, 4 DECIMAL as Decimal::AppendRowBytes: a scale byte, a byte
// (bytes << 1 | negative) and the magnitude's little-endian bytes, 5 FLOAT
// as 4 little-endian bytes, 6 temporal as a TypeId byte, an fsp byte and the
// packed value as a zigzag varint).
void EncodeRow(const Row& row, std::string* out);
// DecodeRow replaces *out with the decoded row, reusing the strings *out
// already holds (their capacity) for string columns; on an error *out is
// unspecified.
Status DecodeRow(std::string_view in, Row* out);

// Varints (LEB128), shared by the encodings above and by log formats.
void PutVarint64(std::string* out, uint64_t v);
bool GetVarint64(std::string_view* in, uint64_t* v);

}  // namespace shale
