#include "src/common/value.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/common/like.h"

namespace shale {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// Sign of memcmp order of two byte strings (shorter prefix first).
int ByteOrder(const std::string& a, const std::string& b) {
  size_t n = std::min(a.size(), b.size());
  int c = n == 0 ? 0 : std::memcmp(a.data(), b.data(), n);
  if (c != 0) return c < 0 ? -1 : 1;
  if (a.size() == b.size()) return 0;
  return a.size() < b.size() ? -1 : 1;
}

int Sign(int c) { return c < 0 ? -1 : (c > 0 ? 1 : 0); }

// SQL order with NULL first, the order keys must sort in.
int SqlOrder(const Value& a, const Value& b) {
  if (a.is_null() || b.is_null()) return a.is_null() == b.is_null() ? 0 : (a.is_null() ? -1 : 1);
  return Sign(CompareValues(a, b));
}

std::string Key(const std::vector<Value>& values) {
  std::string out;
  for (const Value& v : values) AppendKey(v, &out);
  return out;
}

// Random byte strings over an alphabet rich in the bytes the escaping
// treats specially (0x00, 0x01, 0xFF).
std::string RandomBytes(std::mt19937_64& rng) {
  static constexpr char kAlphabet[] = {'\x00', '\x01', '\x02', 'a', 'b', '\x7f', '\x80', '\xfe', '\xff'};
  std::uniform_int_distribution<int> len(0, 6);
  std::uniform_int_distribution<size_t> pick(0, sizeof(kAlphabet) - 1);
  std::string s;
  for (int i = len(rng); i > 0; --i) s.push_back(kAlphabet[pick(rng)]);
  return s;
}

// ---- SqlType and Value --------------------------------------------------------

TEST(SqlTypeTest, ToString) {
  EXPECT_EQ(SqlType::Int().ToString(), "int");
  EXPECT_EQ(SqlType::BigInt().ToString(), "bigint");
  EXPECT_EQ(SqlType::Varchar(20).ToString(), "varchar(20)");
  EXPECT_TRUE(SqlType::Int().is_integer());
  EXPECT_TRUE(SqlType::BigInt().is_integer());
  EXPECT_FALSE(SqlType::Varchar(3).is_integer());
  EXPECT_NE(SqlType::Varchar(3), SqlType::Varchar(4));
}

TEST(ValueTest, KindsAndText) {
  EXPECT_TRUE(Value().is_null());
  EXPECT_TRUE(Value::Null().is_null());
  EXPECT_TRUE(Value::Int(0).is_int());
  EXPECT_TRUE(Value::String("").is_string());
  EXPECT_FALSE(Value::Int(0) == Value::String("0"));
  EXPECT_FALSE(Value::Null() == Value::Int(0));
  EXPECT_EQ(Value::Int(-5).ToText(), "-5");
  EXPECT_EQ(Value::String("abc").ToText(), "abc");
  EXPECT_EQ(Value::Int(12).ToSqlLiteral(), "12");
  EXPECT_EQ(Value::String("abc").ToSqlLiteral(), "'abc'");
  EXPECT_EQ(Value::Null().ToSqlLiteral(), "NULL");
}

// ---- CompareValues and ToInt64Lenient -----------------------------------------

TEST(CompareValuesTest, IntegersNumerically) {
  EXPECT_LT(CompareValues(Value::Int(-1), Value::Int(0)), 0);
  EXPECT_GT(CompareValues(Value::Int(kMax), Value::Int(kMin)), 0);
  EXPECT_EQ(CompareValues(Value::Int(7), Value::Int(7)), 0);
}

TEST(CompareValuesTest, StringsBytewise) {
  EXPECT_LT(CompareValues(Value::String("10"), Value::String("9")), 0);
  EXPECT_LT(CompareValues(Value::String("a"), Value::String("ab")), 0);
  EXPECT_LT(CompareValues(Value::String("A"), Value::String("a")), 0);  // binary comparison for now
  EXPECT_LT(CompareValues(Value::String("\x7f"), Value::String("\x80")), 0);  // bytes are unsigned
  EXPECT_EQ(CompareValues(Value::String("x"), Value::String("x")), 0);
}

TEST(CompareValuesTest, IntegerWithStringComparesNumerically) {
  // As strings "10" < "9"; against an integer the string is read as a number.
  EXPECT_GT(CompareValues(Value::Int(10), Value::String("9")), 0);
  EXPECT_LT(CompareValues(Value::String("9"), Value::Int(10)), 0);
  EXPECT_EQ(CompareValues(Value::Int(5), Value::String("5")), 0);
  EXPECT_EQ(CompareValues(Value::Int(5), Value::String("5abc")), 0);
  EXPECT_EQ(CompareValues(Value::Int(-1), Value::String(" -1")), 0);
  EXPECT_EQ(CompareValues(Value::Int(0), Value::String("abc")), 0);
  EXPECT_GT(CompareValues(Value::Int(1), Value::String("abc")), 0);
}

TEST(ToInt64LenientTest, LeadingIntegerOfStrings) {
  EXPECT_EQ(ToInt64Lenient(Value::Int(kMin)), kMin);
  EXPECT_EQ(ToInt64Lenient(Value::Null()), 0);
  EXPECT_EQ(ToInt64Lenient(Value::String("")), 0);
  EXPECT_EQ(ToInt64Lenient(Value::String("abc")), 0);
  EXPECT_EQ(ToInt64Lenient(Value::String("  -12x")), -12);
  EXPECT_EQ(ToInt64Lenient(Value::String("+34")), 34);
  EXPECT_EQ(ToInt64Lenient(Value::String("\t7 8")), 7);
  EXPECT_EQ(ToInt64Lenient(Value::String("9223372036854775807")), kMax);
  EXPECT_EQ(ToInt64Lenient(Value::String("-9223372036854775808")), kMin);
  // Saturates at the BIGINT limits.
  EXPECT_EQ(ToInt64Lenient(Value::String("99999999999999999999")), kMax);
  EXPECT_EQ(ToInt64Lenient(Value::String("-99999999999999999999")), kMin);
  EXPECT_EQ(ToInt64Lenient(Value::String("9223372036854775808")), kMax);
}

// ---- CoerceToColumn -----------------------------------------------------------

TEST(CoerceToColumnTest, IntRange) {
  auto ok = CoerceToColumn(Value::Int(2147483647), SqlType::Int(), "c");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, Value::Int(2147483647));
  auto low = CoerceToColumn(Value::Int(-2147483648LL), SqlType::Int(), "c");
  ASSERT_TRUE(low.ok());
  EXPECT_EQ(*low, Value::Int(-2147483648LL));

  auto high = CoerceToColumn(Value::Int(2147483648LL), SqlType::Int(), "c");
  ASSERT_FALSE(high.ok());
  EXPECT_EQ(high.status().mysql_code(), 1264);
  EXPECT_NE(high.status().message().find("'c'"), std::string::npos) << high.status().message();
  auto below = CoerceToColumn(Value::Int(-2147483649LL), SqlType::Int(), "c");
  ASSERT_FALSE(below.ok());
  EXPECT_EQ(below.status().mysql_code(), 1264);

  // BIGINT takes the whole int64 range.
  auto big = CoerceToColumn(Value::Int(kMax), SqlType::BigInt(), "c");
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(*big, Value::Int(kMax));
  auto big_min = CoerceToColumn(Value::Int(kMin), SqlType::BigInt(), "c");
  ASSERT_TRUE(big_min.ok());
  EXPECT_EQ(*big_min, Value::Int(kMin));
}

TEST(CoerceToColumnTest, NumericStringsBecomeIntegers) {
  for (auto [text, want] : std::vector<std::pair<std::string, int64_t>>{
           {"42", 42}, {"-7", -7}, {"+7", 7}, {" 42", 42}, {"0", 0}, {"2147483647", 2147483647}}) {
    auto r = CoerceToColumn(Value::String(text), SqlType::Int(), "c");
    ASSERT_TRUE(r.ok()) << text << ": " << r.status().ToString();
    EXPECT_EQ(*r, Value::Int(want)) << text;
  }
  auto out = CoerceToColumn(Value::String("2147483648"), SqlType::Int(), "c");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().mysql_code(), 1264);
  auto big = CoerceToColumn(Value::String("-9223372036854775808"), SqlType::BigInt(), "c");
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(*big, Value::Int(kMin));
}

TEST(CoerceToColumnTest, NonNumericStringsAreRejected) {
  // No number at all: 1366; a number followed by other text: 1265 (MySQL 8).
  for (auto [text, code] : {std::pair{"abc", 1366}, {"", 1366}, {"--1", 1366}, {".", 1366},
                            {"12abc", 1265}, {"1.5x", 1265}, {"1e", 1265}}) {
    auto r = CoerceToColumn(Value::String(text), SqlType::Int(), "col");
    ASSERT_FALSE(r.ok()) << "'" << text << "' was accepted";
    EXPECT_EQ(r.status().mysql_code(), code) << text;
    EXPECT_NE(r.status().message().find("'col'"), std::string::npos) << r.status().message();
  }
  auto r = CoerceToColumn(Value::String("12abc"), SqlType::BigInt(), "col");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().mysql_code(), 1265);
}

TEST(CoerceToColumnTest, DecimalAndExponentStringsRound) {
  for (auto [text, want] : {std::pair{"1.5", 2}, {"1.4", 1}, {"-2.5", -3}, {"1e3", 1000},
                            {" 2.5e1 ", 25}, {".5", 1}}) {
    auto r = CoerceToColumn(Value::String(text), SqlType::Int(), "c");
    ASSERT_TRUE(r.ok()) << text << ": " << r.status().ToString();
    EXPECT_EQ(*r, Value::Int(want)) << text;
  }
  auto big = CoerceToColumn(Value::String("1e30"), SqlType::BigInt(), "c");
  EXPECT_EQ(big.status().mysql_code(), 1264);
  auto intbig = CoerceToColumn(Value::String("3e9"), SqlType::Int(), "c");
  EXPECT_EQ(intbig.status().mysql_code(), 1264);
}

TEST(CompareValuesTest, NumbersAndStringsCompareAsDoubles) {
  EXPECT_EQ(CompareValues(Value::String("1e1"), Value::Int(10)), 0);
  EXPECT_EQ(CompareValues(Value::String(".5e1"), Value::Int(5)), 0);
  EXPECT_GT(CompareValues(Value::String("1.5"), Value::Int(1)), 0);
  EXPECT_LT(CompareValues(Value::Int(1), Value::String("1.5")), 0);
  EXPECT_EQ(CompareValues(Value::String("abc"), Value::Int(0)), 0);
  EXPECT_EQ(CompareValues(Value::String(" 7x"), Value::Int(7)), 0);
}

// Regression (fixed): a numeric string beyond BIGINT (e.g. '99999999999999999999') is
// rejected with ER_TRUNCATED_WRONG_VALUE (1292); MySQL reports it as
// ER_WARN_DATA_OUT_OF_RANGE (1264), as it does for the same integer literal
// range error on INT. ParseLeadingInt treats from_chars' out-of-range as
// "no number".
TEST(CoerceToColumnTest, NumericStringBeyondBigIntIsOutOfRange) {
  auto r = CoerceToColumn(Value::String("99999999999999999999"), SqlType::BigInt(), "c");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().mysql_code(), 1264);
}

// Regression (fixed): MySQL ignores trailing spaces when storing a numeric string in an
// integer column (' 12 ' stores 12 without error, test_if_important_data
// skips spaces); CoerceToColumn rejects '12 ' with 1292.
TEST(CoerceToColumnTest, TrailingSpacesInNumericStringAreAccepted) {
  auto r = CoerceToColumn(Value::String("12 "), SqlType::Int(), "c");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, Value::Int(12));
}

TEST(CoerceToColumnTest, VarcharCountsCharactersNotBytes) {
  auto three = CoerceToColumn(Value::String("日本語"), SqlType::Varchar(3), "c");  // 9 bytes
  ASSERT_TRUE(three.ok()) << three.status().ToString();
  EXPECT_EQ(*three, Value::String("日本語"));
  auto four_cjk = CoerceToColumn(Value::String("日本語x"), SqlType::Varchar(3), "c");
  ASSERT_FALSE(four_cjk.ok());
  EXPECT_EQ(four_cjk.status().mysql_code(), 1406);
  auto four = CoerceToColumn(Value::String("abcd"), SqlType::Varchar(3), "name");
  ASSERT_FALSE(four.ok());
  EXPECT_EQ(four.status().mysql_code(), 1406);
  EXPECT_NE(four.status().message().find("'name'"), std::string::npos) << four.status().message();
  auto exact = CoerceToColumn(Value::String("abc"), SqlType::Varchar(3), "c");
  ASSERT_TRUE(exact.ok());
  auto empty = CoerceToColumn(Value::String(""), SqlType::Varchar(0), "c");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, Value::String(""));
  // A 4-byte code point is one character.
  auto emoji = CoerceToColumn(Value::String("\xF0\x9F\x98\x80"), SqlType::Varchar(1), "c");
  EXPECT_TRUE(emoji.ok());
}

TEST(CoerceToColumnTest, IntegerIntoVarcharBecomesText) {
  auto r = CoerceToColumn(Value::Int(-12), SqlType::Varchar(3), "c");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, Value::String("-12"));
  auto too_long = CoerceToColumn(Value::Int(1234), SqlType::Varchar(3), "c");
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.status().mysql_code(), 1406);
}

TEST(CoerceToColumnTest, NullPassesThrough) {
  for (const SqlType& t : {SqlType::Int(), SqlType::BigInt(), SqlType::Varchar(1)}) {
    auto r = CoerceToColumn(Value::Null(), t, "c");
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->is_null());
  }
}

// ---- key encoding ----------------------------------------------------------------

TEST(KeyEncodingTest, DocumentedLayout) {
  EXPECT_EQ(Key({Value::Null()}), std::string("\x01", 1));
  EXPECT_EQ(Key({Value::Int(0)}), std::string("\x02\x80\x00\x00\x00\x00\x00\x00\x00", 9));
  EXPECT_EQ(Key({Value::Int(-1)}), std::string("\x02\x7f\xff\xff\xff\xff\xff\xff\xff", 9));
  EXPECT_EQ(Key({Value::String("a")}), std::string("\x02" "a\x00\x01", 4));
  EXPECT_EQ(Key({Value::String(std::string("\x00", 1))}), std::string("\x02\x00\xff\x00\x01", 5));
}

TEST(KeyEncodingTest, RandomIntegersSortInSqlOrder) {
  std::mt19937_64 rng(20240601);
  std::vector<int64_t> special = {kMin, kMin + 1, -256, -1, 0, 1, 255, 256, kMax - 1, kMax};
  std::uniform_int_distribution<int64_t> any(kMin, kMax);
  std::uniform_int_distribution<int64_t> small(-300, 300);
  for (int i = 0; i < 3000; ++i) {
    int64_t a, b;
    if (i < static_cast<int>(special.size() * special.size())) {
      a = special[i % special.size()];
      b = special[i / special.size()];
    } else if (i % 2) {
      a = any(rng);
      b = any(rng);
    } else {
      a = small(rng);
      b = small(rng);
    }
    Value va = Value::Int(a), vb = Value::Int(b);
    ASSERT_EQ(ByteOrder(Key({va}), Key({vb})), SqlOrder(va, vb)) << a << " vs " << b;
  }
}

TEST(KeyEncodingTest, RandomByteStringsSortInSqlOrder) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 5000; ++i) {
    std::string a = RandomBytes(rng);
    std::string b = RandomBytes(rng);
    if (i % 3 == 0) b = a + b;  // a is a prefix of b
    Value va = Value::String(a), vb = Value::String(b);
    std::string ka = Key({va}), kb = Key({vb});
    ASSERT_EQ(ByteOrder(ka, kb), SqlOrder(va, vb))
        << testing::PrintToString(a) << " vs " << testing::PrintToString(b);
    ASSERT_EQ(ByteOrder(kb, ka), SqlOrder(vb, va));
  }
}

TEST(KeyEncodingTest, TrickyStringPairs) {
  const std::vector<std::string> ordered = {
      "",
      std::string("\x00", 1),
      std::string("\x00\x00", 2),
      std::string("\x00\x01", 2),
      std::string("\x00\xff", 2),
      "\x01",
      "a",
      std::string("a\x00", 2),
      std::string("a\x00\xff", 3),
      "a\x01",
      "ab",
      "a\xff",
      "\xff",
      "\xff\xff",
  };
  for (size_t i = 0; i < ordered.size(); ++i) {
    for (size_t j = 0; j < ordered.size(); ++j) {
      Value a = Value::String(ordered[i]), b = Value::String(ordered[j]);
      int want = i < j ? -1 : (i > j ? 1 : 0);
      ASSERT_EQ(SqlOrder(a, b), want) << i << " " << j;  // the list itself is in SQL order
      EXPECT_EQ(ByteOrder(Key({a}), Key({b})), want) << i << " vs " << j;
    }
  }
}

TEST(KeyEncodingTest, NullSortsFirst) {
  std::string null_key = Key({Value::Null()});
  for (const Value& v : {Value::Int(kMin), Value::Int(0), Value::String(""),
                         Value::String(std::string("\x00", 1))}) {
    EXPECT_LT(ByteOrder(null_key, Key({v})), 0) << v.ToSqlLiteral();
  }
  EXPECT_EQ(ByteOrder(null_key, Key({Value::Null()})), 0);
  // Also as the first component of a composite key.
  EXPECT_LT(ByteOrder(Key({Value::Null(), Value::String("\xff\xff")}),
                      Key({Value::Int(kMin), Value::String("")})),
            0);
}

TEST(KeyEncodingTest, CompositeKeysOrderLexicographically) {
  std::mt19937_64 rng(99);
  std::uniform_int_distribution<int64_t> small(-3, 3);
  std::uniform_int_distribution<int> coin(0, 9);
  auto random_int = [&] { return coin(rng) == 0 ? Value::Null() : Value::Int(small(rng)); };
  auto random_str = [&] { return coin(rng) == 0 ? Value::Null() : Value::String(RandomBytes(rng)); };
  auto lex = [](const std::vector<Value>& a, const std::vector<Value>& b) {
    for (size_t i = 0; i < a.size(); ++i) {
      int c = SqlOrder(a[i], b[i]);
      if (c != 0) return c;
    }
    return 0;
  };
  for (int i = 0; i < 4000; ++i) {
    // (int, string)
    std::vector<Value> a = {random_int(), random_str()};
    std::vector<Value> b = {random_int(), random_str()};
    if (i % 2) b[0] = a[0];  // often tie on the first component
    ASSERT_EQ(ByteOrder(Key(a), Key(b)), lex(a, b))
        << a[0].ToSqlLiteral() << "," << testing::PrintToString(a[1].ToText()) << " vs "
        << b[0].ToSqlLiteral() << "," << testing::PrintToString(b[1].ToText());
    // (string, int): a string component must end before the next begins.
    std::vector<Value> c = {random_str(), random_int()};
    std::vector<Value> d = {random_str(), random_int()};
    if (i % 3 == 0 && c[0].is_string()) d[0] = Value::String(c[0].as_string() + RandomBytes(rng));
    ASSERT_EQ(ByteOrder(Key(c), Key(d)), lex(c, d))
        << testing::PrintToString(c[0].ToText()) << "," << c[1].ToSqlLiteral() << " vs "
        << testing::PrintToString(d[0].ToText()) << "," << d[1].ToSqlLiteral();
  }
}

TEST(KeyEncodingTest, DecodeRoundTripsCompositeKeys) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int64_t> any(kMin, kMax);
  for (int i = 0; i < 500; ++i) {
    std::vector<Value> values = {Value::Int(i < 2 ? (i ? kMax : kMin) : any(rng)),
                                 Value::String(RandomBytes(rng)), Value::Null(),
                                 Value::String(RandomBytes(rng))};
    std::vector<SqlType> types = {SqlType::BigInt(), SqlType::Varchar(10), SqlType::Int(),
                                  SqlType::Varchar(10)};
    std::string key = Key(values);
    std::string_view in = key;
    for (size_t c = 0; c < values.size(); ++c) {
      Value out;
      Status st = DecodeKey(&in, types[c], &out);
      ASSERT_TRUE(st.ok()) << st.ToString();
      ASSERT_EQ(out, values[c]) << "component " << c;
    }
    EXPECT_TRUE(in.empty());
  }
}

TEST(KeyEncodingTest, DecodeRejectsTruncatedKeys) {
  for (const auto& [value, type] : std::vector<std::pair<Value, SqlType>>{
           {Value::Int(42), SqlType::BigInt()},
           {Value::Int(-1), SqlType::Int()},
           {Value::String("abc"), SqlType::Varchar(5)},
           {Value::String(std::string("a\x00" "b", 3)), SqlType::Varchar(5)},
           {Value::String(""), SqlType::Varchar(5)}}) {
    std::string key = Key({value});
    for (size_t len = 0; len < key.size(); ++len) {
      std::string_view in(key.data(), len);
      Value out;
      Status st = DecodeKey(&in, type, &out);
      EXPECT_TRUE(st.IsCorruption()) << value.ToSqlLiteral() << " cut to " << len << ": "
                                     << st.ToString();
    }
    std::string_view whole = key;
    Value out;
    ASSERT_TRUE(DecodeKey(&whole, type, &out).ok());
    EXPECT_EQ(out, value);
  }
}

TEST(KeyEncodingTest, DecodeRejectsGarbage) {
  Value out;
  std::string_view bad_tag("\x03\x00", 2);
  EXPECT_TRUE(DecodeKey(&bad_tag, SqlType::BigInt(), &out).IsCorruption());
  std::string_view bad_escape("\x02" "a\x00\x05", 4);
  EXPECT_TRUE(DecodeKey(&bad_escape, SqlType::Varchar(5), &out).IsCorruption());
  std::string_view null_key("\x01" "rest", 5);
  ASSERT_TRUE(DecodeKey(&null_key, SqlType::BigInt(), &out).ok());
  EXPECT_TRUE(out.is_null());
  EXPECT_EQ(null_key, "rest");
}

// ---- row encoding ------------------------------------------------------------------

TEST(RowEncodingTest, RoundTrips) {
  std::string binary;
  for (int b = 0; b < 256; ++b) binary.push_back(static_cast<char>(b));
  std::vector<Row> rows = {
      {},
      {Value::Null()},
      {Value::Int(0), Value::Int(-1), Value::Int(1), Value::Int(kMin), Value::Int(kMax)},
      {Value::String(""), Value::String(binary), Value::Null(), Value::String(std::string(300, 'x'))},
      {Value::Int(63), Value::Int(64), Value::Int(-64), Value::Int(-65), Value::String("日本語")},
  };
  Row many;
  for (int i = 0; i < 200; ++i) many.push_back(i % 3 ? Value::Int(i) : Value::Null());
  rows.push_back(many);
  for (const Row& row : rows) {
    std::string enc;
    EncodeRow(row, &enc);
    Row out = {Value::String("stale")};
    Status st = DecodeRow(enc, &out);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(out, row);
  }
  // One buffer decoded into again and again (as a scan does): whatever it
  // held before (longer or shorter rows, other types in each column, long
  // strings whose capacity is reused), it holds exactly the new row after.
  Row buffer;
  for (size_t round = 0; round < 3; ++round) {
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& row = rows[(i * 7 + round) % rows.size()];
      std::string enc;
      EncodeRow(row, &enc);
      ASSERT_TRUE(DecodeRow(enc, &buffer).ok());
      EXPECT_EQ(buffer, row);
    }
  }
}

TEST(RowEncodingTest, EveryTruncationIsRejected) {
  Row row = {Value::Int(kMin), Value::Null(), Value::String("hello"), Value::Int(kMax),
             Value::String("")};
  std::string enc;
  EncodeRow(row, &enc);
  for (size_t len = 0; len < enc.size(); ++len) {
    Row out;
    Status st = DecodeRow(std::string_view(enc.data(), len), &out);
    EXPECT_TRUE(st.IsCorruption()) << "prefix of " << len << " bytes: " << st.ToString();
  }
}

TEST(RowEncodingTest, GarbageIsRejected) {
  Row out;
  std::string enc;
  EncodeRow({Value::Int(1)}, &enc);
  EXPECT_TRUE(DecodeRow(enc + "x", &out).IsCorruption());  // trailing bytes
  EXPECT_TRUE(DecodeRow(std::string("\x01\x03", 2), &out).IsCorruption());  // bad tag
  EXPECT_TRUE(DecodeRow(std::string("\x05\x00", 2), &out).IsCorruption());  // count > bytes
  EXPECT_TRUE(DecodeRow(std::string("\x01\x02\x7f" "ab", 5), &out).IsCorruption());  // long string
  EXPECT_TRUE(DecodeRow(std::string(11, '\xff'), &out).IsCorruption());  // endless varint
  EXPECT_TRUE(DecodeRow(std::string("\x01\x01\xff\xff", 4), &out).IsCorruption());  // cut varint
  // A huge string length must not be trusted.
  std::string huge("\x01\x02", 2);
  PutVarint64(&huge, std::numeric_limits<uint64_t>::max());
  EXPECT_TRUE(DecodeRow(huge, &out).IsCorruption());
}

TEST(VarintTest, RoundTripsAndSizes) {
  struct Case {
    uint64_t v;
    size_t size;
  };
  for (const Case& c : std::vector<Case>{{0, 1},
                                         {127, 1},
                                         {128, 2},
                                         {16383, 2},
                                         {16384, 3},
                                         {uint64_t{1} << 63, 10},
                                         {std::numeric_limits<uint64_t>::max(), 10}}) {
    std::string enc;
    PutVarint64(&enc, c.v);
    EXPECT_EQ(enc.size(), c.size) << c.v;
    enc += "tail";
    std::string_view in = enc;
    uint64_t out = 0;
    ASSERT_TRUE(GetVarint64(&in, &out)) << c.v;
    EXPECT_EQ(out, c.v);
    EXPECT_EQ(in, "tail");
  }
  std::string enc;
  PutVarint64(&enc, 300);
  std::string_view cut(enc.data(), 1);
  uint64_t out = 0;
  EXPECT_FALSE(GetVarint64(&cut, &out));
  std::string_view empty;
  EXPECT_FALSE(GetVarint64(&empty, &out));
}

// ---- LIKE ---------------------------------------------------------------------------

TEST(MatchLikeTest, Wildcards) {
  EXPECT_TRUE(MatchLike("abc", "abc"));
  EXPECT_FALSE(MatchLike("abc", "ab"));
  EXPECT_FALSE(MatchLike("ab", "abc"));
  EXPECT_TRUE(MatchLike("abc", "a%"));
  EXPECT_TRUE(MatchLike("abc", "%c"));
  EXPECT_TRUE(MatchLike("abc", "%b%"));
  EXPECT_TRUE(MatchLike("abc", "%"));
  EXPECT_TRUE(MatchLike("", "%"));
  EXPECT_TRUE(MatchLike("", "%%"));
  EXPECT_TRUE(MatchLike("", ""));
  EXPECT_FALSE(MatchLike("a", ""));
  EXPECT_FALSE(MatchLike("", "_"));
  EXPECT_TRUE(MatchLike("abc", "a_c"));
  EXPECT_TRUE(MatchLike("abc", "___"));
  EXPECT_FALSE(MatchLike("abc", "__"));
  EXPECT_FALSE(MatchLike("abc", "a_"));
  EXPECT_TRUE(MatchLike("abc", "_%_"));
  EXPECT_FALSE(MatchLike("abc", "%d%"));
}

TEST(MatchLikeTest, BacktracksOverPercent) {
  EXPECT_TRUE(MatchLike("mississippi", "%iss%ipp%"));
  EXPECT_TRUE(MatchLike("mississippi", "m%issip%i"));
  EXPECT_FALSE(MatchLike("mississippi", "m%issip%x"));
  EXPECT_TRUE(MatchLike("abcabd", "%abd"));
  EXPECT_TRUE(MatchLike("aXbXc", "%X%c"));
  EXPECT_FALSE(MatchLike("aXbXc", "%X%d"));
  EXPECT_TRUE(MatchLike("ab", "%%%b"));
  EXPECT_TRUE(MatchLike("character_set_client", "character\\_set\\_%"));
}

TEST(MatchLikeTest, Escapes) {
  EXPECT_TRUE(MatchLike("a%c", "a\\%c"));
  EXPECT_FALSE(MatchLike("abc", "a\\%c"));
  EXPECT_TRUE(MatchLike("a_c", "a\\_c"));
  EXPECT_FALSE(MatchLike("abc", "a\\_c"));
  EXPECT_TRUE(MatchLike("a\\b", "a\\\\b"));
  EXPECT_FALSE(MatchLike("a\\\\b", "a\\\\b"));
  EXPECT_TRUE(MatchLike("100%", "%\\%"));
  EXPECT_FALSE(MatchLike("100", "%\\%"));
  EXPECT_TRUE(MatchLike("a\\", "a\\"));  // a trailing escape matches itself
}

TEST(MatchLikeTest, CaseInsensitiveForAscii) {
  EXPECT_TRUE(MatchLike("ABC", "abc"));
  EXPECT_TRUE(MatchLike("abc", "A%C"));
  EXPECT_TRUE(MatchLike("Tables_in_Test", "tables\\_IN\\_%"));
  EXPECT_FALSE(MatchLike("abd", "ABC"));
}

// Regression (fixed): '_' should match one character, but MatchLike matches one byte, so a
// multi-byte UTF-8 character needs as many '_' as it has bytes
// (like.h documents "'_' any one character").
TEST(MatchLikeTest, UnderscoreMatchesOneUtf8Character) {
  EXPECT_TRUE(MatchLike("日", "_"));
  EXPECT_TRUE(MatchLike("日本", "__"));
  EXPECT_FALSE(MatchLike("日", "___"));
}

}  // namespace
}  // namespace shale

namespace shale {
namespace {

// Memcmp order of encoded keys follows numeric order for DOUBLE and for
// DECIMAL at a column's scale, and both decode back.
TEST(KeyEncodingTest, DoubleAndDecimalKeysSortNumerically) {
  const std::vector<double> doubles = {-1e300, -2.5, -1e-300, 0.0, 1e-300, 0.5, 1.5, 1e20, 1e300};
  SqlType dt = SqlType::Double();
  for (size_t i = 0; i < doubles.size(); ++i) {
    std::string a;
    AppendKey(Value::Double(doubles[i]), &a);
    std::string_view in = a;
    Value back;
    ASSERT_TRUE(DecodeKey(&in, dt, &back).ok());
    EXPECT_EQ(back.as_double(), doubles[i]);
    for (size_t j = 0; j < doubles.size(); ++j) {
      std::string b;
      AppendKey(Value::Double(doubles[j]), &b);
      EXPECT_EQ(Sign(a.compare(b)), i < j ? -1 : (i > j ? 1 : 0)) << doubles[i] << " vs " << doubles[j];
    }
  }
  // -0 and 0 are one key.
  std::string neg_zero, zero;
  AppendKey(Value::Double(-0.0), &neg_zero);
  AppendKey(Value::Double(0.0), &zero);
  EXPECT_EQ(neg_zero, zero);

  SqlType dec = SqlType::Decimal(10, 2);
  const std::vector<const char*> decimals = {"-99999999.99", "-2.25", "-0.01", "0.00", "0.01", "1.50", "10.00"};
  for (size_t i = 0; i < decimals.size(); ++i) {
    Value vi = Value::Dec(*Decimal::Parse(decimals[i]));
    std::string a;
    AppendKey(vi, &a);
    std::string_view in = a;
    Value back;
    ASSERT_TRUE(DecodeKey(&in, dec, &back).ok());
    EXPECT_EQ(back.ToText(), decimals[i]);
    for (size_t j = 0; j < decimals.size(); ++j) {
      std::string b;
      AppendKey(Value::Dec(*Decimal::Parse(decimals[j])), &b);
      EXPECT_EQ(Sign(a.compare(b)), i < j ? -1 : (i > j ? 1 : 0)) << decimals[i] << " vs " << decimals[j];
    }
  }
}

TEST(RowEncodingTest, NumericValuesRoundTrip) {
  Row row = {Value::Double(-1.25e-7), Value::Float(1.1f), Value::Dec(*Decimal::Parse("-123.4500")),
             Value::Int(7), Value::Null()};
  std::string bytes;
  EncodeRow(row, &bytes);
  Row back;
  ASSERT_TRUE(DecodeRow(bytes, &back).ok());
  EXPECT_EQ(back, row);
  EXPECT_TRUE(back[1].is_float());
  EXPECT_EQ(back[2].ToText(), "-123.4500");
}

TEST(ValueTextTest, DoublesPrintAsMySql) {
  EXPECT_EQ(FormatDouble(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(FormatDouble(1e15), "1e15");
  EXPECT_EQ(FormatDouble(1e14), "100000000000000");
  EXPECT_EQ(FormatDouble(123456789012345678.0), "1.2345678901234568e17");
  EXPECT_EQ(FormatDouble(1e-7), "0.0000001");
  EXPECT_EQ(FormatDouble(1e-15), "0.000000000000001");
  EXPECT_EQ(FormatDouble(1e-16), "1e-16");
  EXPECT_EQ(FormatDouble(-1.5e100), "-1.5e100");
  EXPECT_EQ(FormatDouble(2.5), "2.5");
  EXPECT_EQ(FormatFloat(1.1f), "1.1");
  EXPECT_EQ(FormatFloat(1.23456789f), "1.23457");
  EXPECT_EQ(FormatFloat(123456789.0f), "123457000");
}

TEST(CoerceTest, NumericColumnsRoundAndRangeCheck) {
  auto dec = CoerceToColumn(Value::String("1.555"), SqlType::Decimal(5, 2), "c");
  ASSERT_TRUE(dec.ok());
  EXPECT_EQ(dec->ToText(), "1.56");
  EXPECT_EQ(CoerceToColumn(Value::Int(1000), SqlType::Decimal(5, 2), "c").status().mysql_code(), 1264);
  EXPECT_EQ(CoerceToColumn(Value::String("x"), SqlType::Decimal(5, 2), "c").status().mysql_code(), 1366);
  EXPECT_EQ(CoerceToColumn(Value::Int(128), SqlType::Integer(TypeId::kTinyInt, false), "c").status().mysql_code(), 1264);
  EXPECT_TRUE(CoerceToColumn(Value::Int(255), SqlType::Integer(TypeId::kTinyInt, true), "c").ok());
  EXPECT_EQ(CoerceToColumn(Value::Int(-1), SqlType::Integer(TypeId::kSmallInt, true), "c").status().mysql_code(), 1264);
  auto rounded = CoerceToColumn(Value::Dec(*Decimal::Parse("2.5")), SqlType::Int(), "c");
  ASSERT_TRUE(rounded.ok());
  EXPECT_EQ(rounded->as_int(), 3);
  EXPECT_EQ(CoerceToColumn(Value::Double(1e39), SqlType::Float(), "c").status().mysql_code(), 1264);
}

}  // namespace
}  // namespace shale
