// Tests of the prepared-statement binary protocol (prepared_statement.h).
#include "src/server/prepared_statement.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "src/server/protocol_constants.h"
#include "src/server/wire_codec.h"

namespace shale::server {
namespace {

std::string Le(uint64_t v, int n) {
  std::string s;
  PutFixedInt(&s, v, n);
  return s;
}

std::string Lenenc(std::string_view v) {
  std::string s;
  PutLenencString(&s, v);
  return s;
}

// The header of a COM_STMT_EXECUTE payload (after the command byte).
std::string ExecHeader(uint32_t id, uint8_t flags = 0) {
  return Le(id, 4) + static_cast<char>(flags) + Le(1, 4);
}

// ---- placeholders -----------------------------------------------------------

TEST(FindPlaceholdersTest, CountsOnlyBarePlaceholders) {
  auto r = FindPlaceholders(
      "SELECT ?, '?', \"?\", `?`, 'it''s ?', 'a\\'?' -- ?\n, # ?\n /* ? */ ? FROM t WHERE a=?");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::string sql =
      "SELECT ?, '?', \"?\", `?`, 'it''s ?', 'a\\'?' -- ?\n, # ?\n /* ? */ ? FROM t WHERE a=?";
  ASSERT_EQ(r->size(), 3u);
  for (size_t off : *r) EXPECT_EQ(sql[off], '?');
  EXPECT_EQ((*r)[0], 7u);
  EXPECT_EQ((*r)[2], sql.size() - 1);
}

TEST(FindPlaceholdersTest, NoneAndTrailingSemicolon) {
  auto r = FindPlaceholders("SELECT 1;  -- done\n");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
}

TEST(FindPlaceholdersTest, MultipleStatementsAreAParseError) {
  auto r = FindPlaceholders("SELECT ?; DROP TABLE t");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().mysql_code(), 1064);
}

TEST(FindPlaceholdersTest, DashDashWithoutSpaceIsNotAComment) {
  auto r = FindPlaceholders("SELECT 1--?");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 1u);
}

TEST(FindPlaceholdersTest, UnterminatedQuoteDoesNotOverrun) {
  auto r = FindPlaceholders("SELECT 'abc\\");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
}

// ---- literals -------------------------------------------------------------

TEST(QuoteSqlStringTest, EscapesQuotesBackslashesAndNul) {
  EXPECT_EQ(QuoteSqlString("plain"), "'plain'");
  EXPECT_EQ(QuoteSqlString("it's"), "'it''s'");
  EXPECT_EQ(QuoteSqlString("a\\b"), "'a\\\\b'");
  EXPECT_EQ(QuoteSqlString(std::string("x\0y", 3)), "'x\\0y'");
  EXPECT_EQ(QuoteSqlString("'; DROP TABLE t; --"), "'''; DROP TABLE t; --'");
}

TEST(SubstituteParamsTest, ReplacesEachPlaceholder) {
  std::string sql = "SELECT ? + -?, '?'";
  auto at = FindPlaceholders(sql);
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(SubstituteParams(sql, *at, {"1", "-5"}), "SELECT  1  + - -5 , '?'");
}

Result<std::string> Decode(ColumnType type, const std::string& bytes, bool is_unsigned = false) {
  PayloadReader r(bytes);
  auto lit = DecodeParamLiteral(static_cast<uint8_t>(type), is_unsigned, &r);
  if (lit.ok() && !r.AtEnd()) return Status::InvalidArgument("bytes left over");
  return lit;
}

TEST(DecodeParamLiteralTest, IntegersOfEveryWidthSignedAndUnsigned) {
  EXPECT_EQ(*Decode(ColumnType::kTiny, "\xFF"), "-1");
  EXPECT_EQ(*Decode(ColumnType::kTiny, "\xFF", true), "255");
  EXPECT_EQ(*Decode(ColumnType::kShort, Le(0x8000, 2)), "-32768");
  EXPECT_EQ(*Decode(ColumnType::kShort, Le(0x8000, 2), true), "32768");
  EXPECT_EQ(*Decode(ColumnType::kYear, Le(2024, 2)), "2024");
  EXPECT_EQ(*Decode(ColumnType::kLong, Le(0xFFFFFFFE, 4)), "-2");
  EXPECT_EQ(*Decode(ColumnType::kLong, Le(0xFFFFFFFE, 4), true), "4294967294");
  EXPECT_EQ(*Decode(ColumnType::kInt24, Le(7, 4)), "7");
  EXPECT_EQ(*Decode(ColumnType::kLongLong, Le(0x8000000000000000ull, 8)),
            "(-9223372036854775807-1)");
  EXPECT_EQ(*Decode(ColumnType::kLongLong, Le(0x8000000000000001ull, 8)),
            "-9223372036854775807");
  EXPECT_EQ(*Decode(ColumnType::kLongLong, Le(~0ull, 8), true), "18446744073709551615");
}

TEST(DecodeParamLiteralTest, FloatsAndDoubles) {
  float f = 1.5f;
  uint32_t fb;
  std::memcpy(&fb, &f, 4);
  // Scientific notation, so the substituted literal is a DOUBLE, not a DECIMAL.
  EXPECT_EQ(*Decode(ColumnType::kFloat, Le(fb, 4)), "1.5e+00");
  double d = -3.0;
  uint64_t db;
  std::memcpy(&db, &d, 8);
  EXPECT_EQ(*Decode(ColumnType::kDouble, Le(db, 8)), "-3e+00");
  d = 0.1;
  std::memcpy(&db, &d, 8);
  EXPECT_EQ(*Decode(ColumnType::kDouble, Le(db, 8)), "1e-01");
  d = std::numeric_limits<double>::infinity();
  std::memcpy(&db, &d, 8);
  EXPECT_FALSE(Decode(ColumnType::kDouble, Le(db, 8)).ok());
}

TEST(DecodeParamLiteralTest, DecimalsAndStrings) {
  EXPECT_EQ(*Decode(ColumnType::kNewDecimal, Lenenc("-12.50")), "-12.50");
  EXPECT_EQ(*Decode(ColumnType::kDecimal, Lenenc("1e3")), "1e3");
  EXPECT_EQ(*Decode(ColumnType::kNewDecimal, Lenenc("1; x")), "'1; x'");
  EXPECT_EQ(*Decode(ColumnType::kVarString, Lenenc("o'k")), "'o''k'");
  EXPECT_EQ(*Decode(ColumnType::kString, Lenenc("")), "''");
  EXPECT_EQ(*Decode(ColumnType::kBlob, Lenenc(std::string("\0\xFF", 2))),
            std::string("'\\0\xFF'"));
  EXPECT_EQ(*Decode(ColumnType::kNull, ""), "NULL");
}

TEST(DecodeParamLiteralTest, DatesAndTimesAsTextLiterals) {
  std::string date = std::string("\x04") + Le(2024, 2) + '\x01' + '\x1F';
  EXPECT_EQ(*Decode(ColumnType::kDate, date), "'2024-01-31'");
  std::string dt = std::string("\x07") + Le(2024, 2) + '\x02' + '\x03' + '\x04' + '\x05' + '\x06';
  EXPECT_EQ(*Decode(ColumnType::kDateTime, dt), "'2024-02-03 04:05:06'");
  std::string dtu = std::string("\x0B") + Le(2024, 2) + '\x02' + '\x03' + '\x04' + '\x05' +
                    '\x06' + Le(7, 4);
  EXPECT_EQ(*Decode(ColumnType::kTimestamp, dtu), "'2024-02-03 04:05:06.000007'");
  EXPECT_EQ(*Decode(ColumnType::kDateTime, std::string(1, '\0')), "'0000-00-00 00:00:00'");
  std::string t = std::string("\x08") + '\x01' + Le(1, 4) + '\x01' + '\x02' + '\x03';
  EXPECT_EQ(*Decode(ColumnType::kTime, t), "'-25:02:03'");
  std::string tu = std::string("\x0C") + '\x00' + Le(0, 4) + '\x01' + '\x02' + '\x03' + Le(500000, 4);
  EXPECT_EQ(*Decode(ColumnType::kTime, tu), "'01:02:03.500000'");
  EXPECT_EQ(*Decode(ColumnType::kTime, std::string(1, '\0')), "'00:00:00'");
}

TEST(DecodeParamLiteralTest, MalformedValuesFail) {
  EXPECT_FALSE(Decode(ColumnType::kLong, "\x01\x02").ok());
  EXPECT_FALSE(Decode(ColumnType::kDate, "\x05\x01\x02\x03\x04\x05").ok());
  EXPECT_FALSE(Decode(ColumnType::kDateTime, "\x07\x01").ok());
  EXPECT_FALSE(Decode(ColumnType::kTime, "\x09").ok());
  EXPECT_FALSE(Decode(ColumnType::kVarString, "\x05" "ab").ok());
  EXPECT_FALSE(Decode(static_cast<ColumnType>(0x11), "\x00").ok());
}

// ---- COM_STMT_EXECUTE -------------------------------------------------------

TEST(ParseStmtExecuteTest, NoParams) {
  ParamState st(0);
  auto r = ParseStmtExecute(ExecHeader(9, cursor_flag::kReadOnly), 0, &st);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->statement_id, 9u);
  EXPECT_EQ(r->flags, cursor_flag::kReadOnly);
  EXPECT_TRUE(r->literals.empty());
}

TEST(ParseStmtExecuteTest, NullBitmapTypesAndValues) {
  ParamState st(3);
  std::string p = ExecHeader(1);
  p += '\x02';  // NULL bitmap: param 1 is NULL
  p += '\x01';  // new params bound
  p += Le(static_cast<uint8_t>(ColumnType::kLongLong), 2);
  p += Le(static_cast<uint8_t>(ColumnType::kLong), 2);
  p += Le(static_cast<uint8_t>(ColumnType::kVarString), 2);
  p += Le(42, 8);
  p += Lenenc("x");
  auto r = ParseStmtExecute(p, 3, &st);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->literals, (std::vector<std::string>{"42", "NULL", "'x'"}));
  EXPECT_EQ(st.types.size(), 3u);

  // Next execute without types reuses them.
  std::string q = ExecHeader(1);
  q += '\x00';
  q += '\x00';
  q += Le(7, 8) + Le(8, 4) + Lenenc("y");
  r = ParseStmtExecute(q, 3, &st);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->literals, (std::vector<std::string>{"7", "8", "'y'"}));
}

TEST(ParseStmtExecuteTest, UnsignedFlag) {
  ParamState st(1);
  std::string p = ExecHeader(1) + '\x00' + '\x01' + Le(0x8008, 2) + Le(~0ull, 8);
  auto r = ParseStmtExecute(p, 1, &st);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->literals[0], "18446744073709551615");
}

TEST(ParseStmtExecuteTest, NeverBoundTypesIsAnError) {
  ParamState st(1);
  std::string p = ExecHeader(1) + '\x00' + '\x00' + Le(1, 8);
  auto r = ParseStmtExecute(p, 1, &st);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().mysql_code(), 1210);
}

TEST(ParseStmtExecuteTest, LongDataTakesThePlaceOfTheValue) {
  ParamState st(2);
  st.long_data[0] = std::string("big'text");
  std::string p = ExecHeader(1) + '\x00' + '\x01' + Le(252, 2) + Le(3, 2) + Le(5, 4);
  auto r = ParseStmtExecute(p, 2, &st);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->literals, (std::vector<std::string>{"'big''text'", "5"}));
}

TEST(ParseStmtExecuteTest, DeferredLongDataErrorIsReported) {
  ParamState st(1);
  st.long_data_error = Status::Sql(1210, "bad long data");
  auto r = ParseStmtExecute(ExecHeader(1) + '\x00' + '\x01' + Le(3, 2) + Le(1, 4), 1, &st);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().mysql_code(), 1210);
  st.Reset();
  EXPECT_TRUE(st.long_data_error.ok());
}

TEST(ParseStmtExecuteTest, EveryTruncationFailsCleanly) {
  std::string full = ExecHeader(1) + '\x00' + '\x01' + Le(8, 2) + Le(253, 2) + Le(1, 8) +
                     Lenenc("hello");
  for (size_t n = 0; n < full.size(); ++n) {
    ParamState st(2);
    auto r = ParseStmtExecute(full.substr(0, n), 2, &st);
    EXPECT_FALSE(r.ok()) << "prefix of " << n << " bytes";
    if (!r.ok()) {
      EXPECT_EQ(r.status().mysql_code(), 1210);
    }
  }
  ParamState st(2);
  EXPECT_TRUE(ParseStmtExecute(full, 2, &st).ok());
}

TEST(ParseStmtExecuteTest, BadNewParamsBoundByte) {
  ParamState st(1);
  auto r = ParseStmtExecute(ExecHeader(1) + '\x00' + '\x07', 1, &st);
  EXPECT_FALSE(r.ok());
}

TEST(ParseStmtExecuteTest, RandomBytesNeverCrash) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (int i = 0; i < 20000; ++i) {
    std::string p = ExecHeader(1);
    const size_t n = next() % 48;
    for (size_t j = 0; j < n; ++j) p.push_back(static_cast<char>(next()));
    const auto params = static_cast<uint16_t>(next() % 6);
    ParamState st(params);
    auto r = ParseStmtExecute(p, params, &st);
    if (r.ok()) {
      EXPECT_EQ(r->literals.size(), params);
      for (const std::string& lit : r->literals) {
        EXPECT_FALSE(lit.empty());
      }
    }
  }
}

TEST(ReadStatementIdTest, ShortPayloadIsMalformed) {
  EXPECT_EQ(*ReadStatementId(Le(77, 4)), 77u);
  auto r = ReadStatementId("\x01\x02");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().mysql_code(), 1835);
}

// ---- replies ----------------------------------------------------------------

TEST(StmtPrepareOkTest, Layout) {
  std::string want = std::string(1, '\0') + Le(5, 4) + Le(0, 2) + Le(2, 2) + '\0' + Le(0, 2);
  EXPECT_EQ(BuildStmtPrepareOk(5, 0, 2, 0), want);
}

TEST(BinaryRowTest, NullBitmapAtOffsetTwoAndValues) {
  std::vector<ColumnDefinition> defs(4);
  defs[0].type = ColumnType::kLong;
  defs[1].type = ColumnType::kLongLong;
  defs[2].type = ColumnType::kVarString;
  defs[3].type = ColumnType::kNull;
  Row row = {Value::Int(-1), Value::Int(1ll << 40), Value::String("hi"), Value::Null()};
  std::string out;
  AppendBinaryRow(row, defs, &out);
  // Column 3 is NULL: bit 3 + 2 = 5 of the first bitmap byte.
  std::string want = std::string(1, '\0') + '\x20' + Le(0xFFFFFFFF, 4) + Le(1ull << 40, 8) +
                     Lenenc("hi");
  EXPECT_EQ(out, want);
}

TEST(BinaryRowTest, BitmapSpillsIntoSecondByte) {
  std::vector<ColumnDefinition> defs(7);
  for (auto& d : defs) d.type = ColumnType::kLong;
  Row row(7);
  row[6] = Value::Null();
  for (int i = 0; i < 6; ++i) row[i] = Value::Int(i);
  std::string out;
  AppendBinaryRow(row, defs, &out);
  ASSERT_EQ(out.size(), 1u + 2u + 6u * 4u);
  EXPECT_EQ(out[1], '\0');
  EXPECT_EQ(out[2], '\x01');  // bit 8: column 6
}

TEST(ChooseBinaryColumnTypesTest, WidensAndFallsBackToText) {
  std::vector<ColumnDefinition> defs(4);
  defs[0].type = ColumnType::kLong;      // holds a 64-bit value
  defs[1].type = ColumnType::kLong;      // holds a string
  defs[2].type = ColumnType::kNull;      // holds a value
  defs[3].type = ColumnType::kLongLong;  // fine
  defs[1].flags = column_flag::kNum | column_flag::kBinary;
  std::vector<Row> rows = {{Value::Int(5000000000ll), Value::String("x"), Value::Int(1),
                            Value::Int(2)}};
  ChooseBinaryColumnTypes(rows, &defs);
  EXPECT_EQ(defs[0].type, ColumnType::kLongLong);
  EXPECT_EQ(defs[1].type, ColumnType::kVarString);
  EXPECT_EQ(defs[1].flags & column_flag::kNum, 0);
  EXPECT_EQ(defs[2].type, ColumnType::kVarString);
  EXPECT_EQ(defs[3].type, ColumnType::kLongLong);
  std::string out;
  AppendBinaryRow(rows[0], defs, &out);
  std::string want = std::string(1, '\0') + '\0' + Le(5000000000ull, 8) + Lenenc("x") +
                     Lenenc("1") + Le(2, 8);
  EXPECT_EQ(out, want);
}

}  // namespace
}  // namespace shale::server
