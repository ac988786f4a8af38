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
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "shale/status.h"

namespace shale {

// Column types. Stored in the catalog: DO NOT CHANGE values.
enum class TypeId : uint8_t {
  kNull = 0,     // the type of a bare NULL literal
  kInt = 1,      // INT: 32-bit signed
  kBigInt = 2,   // BIGINT: 64-bit signed
  kVarchar = 3,  // VARCHAR(n): up to n characters, utf8mb4, binary comparison for now
};

struct SqlType {
  TypeId id = TypeId::kNull;
  uint32_t length = 0;  // VARCHAR: max characters; integers: display width

  static SqlType Int() { return {TypeId::kInt, 11}; }
  static SqlType BigInt() { return {TypeId::kBigInt, 20}; }
  static SqlType Varchar(uint32_t n) { return {TypeId::kVarchar, n}; }
  bool is_integer() const { return id == TypeId::kInt || id == TypeId::kBigInt; }
  bool operator==(const SqlType&) const = default;
  std::string ToString() const;  // "int", "bigint", "varchar(20)"
};

// A SQL value: NULL, an integer, or a string.
class Value {
 public:
  Value() = default;  // NULL
  static Value Null() { return Value(); }
  static Value Int(int64_t v) { Value x; x.v_ = v; return x; }
  static Value String(std::string s) { Value x; x.v_ = std::move(s); return x; }

  bool is_null() const { return v_.index() == 0; }
  bool is_int() const { return v_.index() == 1; }
  bool is_string() const { return v_.index() == 2; }
  int64_t as_int() const { return std::get<1>(v_); }
  const std::string& as_string() const { return std::get<2>(v_); }

  // The text the MySQL text protocol sends (undefined for NULL).
  std::string ToText() const;
  // A literal for messages: 'abc', 12, NULL.
  std::string ToSqlLiteral() const;

  bool operator==(const Value& o) const { return v_ == o.v_; }

 private:
  std::variant<std::monostate, int64_t, std::string> v_;
};

using Row = std::vector<Value>;

// Compares two non-NULL values by MySQL's rules: two integers numerically, two
// strings bytewise, an integer with a string as doubles (the string read by
// its numeric prefix). Returns <0, 0, >0.
int CompareValues(const Value& a, const Value& b);

// The numeric prefix of a string as MySQL reads it in a numeric context:
// leading whitespace, sign, digits, fraction, exponent. Returns the bytes
// consumed (0 if there is no number; *out is then 0).
size_t NumericPrefix(std::string_view s, double* out);

// MySQL's lenient numeric reading of a value: an integer as is, a string as
// its leading integer (0 if none; saturating at the BIGINT limits), NULL as 0.
int64_t ToInt64Lenient(const Value& v);

// Converts `v` to be stored in a column of type `t`: range-checks integers,
// parses numeric strings, checks VARCHAR length. Errors name `column`.
Result<Value> CoerceToColumn(const Value& v, const SqlType& t, std::string_view column);

// ---- memcomparable key encoding --------------------------------------------
// Appends `v` (of column type `t`) so that memcmp order of the output equals
// SQL order of the values, NULL first. Integers: a 0x02 tag then 8 big-endian
// bytes with the sign bit flipped. Strings: 0x02 tag, bytes with 0x00 escaped
// as 0x00 0xFF, terminated by 0x00 0x01. NULL: a 0x01 tag.
void AppendKey(const Value& v, std::string* out);
// Decodes one key component of type `t` from `*in`, advancing it.
Status DecodeKey(std::string_view* in, const SqlType& t, Value* out);

// ---- row encoding -----------------------------------------------------------
// A row is a varint column count then, per column, a tag (0 NULL, 1 integer as
// zigzag varint, 2 string as varint length + bytes).
void EncodeRow(const Row& row, std::string* out);
Status DecodeRow(std::string_view in, Row* out);

// Varints (LEB128), shared by the encodings above and by log formats.
void PutVarint64(std::string* out, uint64_t v);
bool GetVarint64(std::string_view* in, uint64_t* v);

}  // namespace shale
