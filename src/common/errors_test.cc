#include "src/common/errors.h"

#include <cstring>
#include <string>

#include <gtest/gtest.h>

namespace shale {
namespace {

TEST(SqlStateForTest, KnownCodes) {
  EXPECT_STREQ(SqlStateFor(1062), "23000");
  EXPECT_STREQ(SqlStateFor(1064), "42000");
  EXPECT_STREQ(SqlStateFor(1146), "42S02");
  // A spread of codes over the whole (binary-searched) table.
  EXPECT_STREQ(SqlStateFor(1007), "HY000");
  EXPECT_STREQ(SqlStateFor(1040), "08004");
  EXPECT_STREQ(SqlStateFor(1045), "28000");
  EXPECT_STREQ(SqlStateFor(1046), "3D000");
  EXPECT_STREQ(SqlStateFor(1048), "23000");
  EXPECT_STREQ(SqlStateFor(1050), "42S01");
  EXPECT_STREQ(SqlStateFor(1054), "42S22");
  EXPECT_STREQ(SqlStateFor(1060), "42S21");
  EXPECT_STREQ(SqlStateFor(1136), "21S01");
  EXPECT_STREQ(SqlStateFor(1264), "22003");
  EXPECT_STREQ(SqlStateFor(1292), "22007");
  EXPECT_STREQ(SqlStateFor(1365), "22012");
  EXPECT_STREQ(SqlStateFor(1406), "22001");
  EXPECT_STREQ(SqlStateFor(1690), "22003");
  EXPECT_STREQ(SqlStateFor(1712), "HY000");
}

TEST(SqlStateForTest, UnknownCodesAreHY000) {
  for (uint16_t code : {0, 1, 1000, 1006, 2999, 1713, 9999, 65535}) {
    EXPECT_STREQ(SqlStateFor(code), "HY000") << code;
  }
}

TEST(SqlStateForTest, EveryErrorCodeHasAFiveCharacterState) {
  for (ErrorCode c : {ErrorCode::kConCountError, ErrorCode::kAccessDenied, ErrorCode::kNoDb,
                      ErrorCode::kBadDb, ErrorCode::kDupEntry, ErrorCode::kParse,
                      ErrorCode::kEmptyQuery, ErrorCode::kNotSupportedYet,
                      ErrorCode::kWrongValueCount, ErrorCode::kNoSuchTable,
                      ErrorCode::kDataOutOfRangeExpr, ErrorCode::kCorruptPage}) {
    EXPECT_EQ(std::strlen(SqlStateFor(static_cast<uint16_t>(c))), 5u) << static_cast<int>(c);
  }
}

TEST(StatusTest, OkAndCategories) {
  Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.ToString(), "OK");
  EXPECT_TRUE(Status::NotFound("x").IsNotFound());
  EXPECT_FALSE(Status::NotFound("x").ok());
  EXPECT_TRUE(Status::Corruption("x").IsCorruption());
  EXPECT_EQ(Status::NotFound("missing").ToString(), "NotFound: missing");
  EXPECT_EQ(Status::IOError("disk").ToString(), "IOError: disk");
}

TEST(StatusTest, MysqlCodes) {
  Status dup = Status::Sql(1062, "Duplicate entry '1' for key 't.PRIMARY'");
  EXPECT_EQ(dup.code(), StatusCode::kSqlError);
  EXPECT_EQ(dup.mysql_code(), 1062);
  EXPECT_STREQ(dup.sqlstate(), "23000");
  EXPECT_EQ(dup.ToString(), "ERROR 1062 (23000): Duplicate entry '1' for key 't.PRIMARY'");
  // Internal categories reach clients as ER_UNKNOWN_ERROR, corruption as 1712.
  EXPECT_EQ(Status::Internal("x").mysql_code(), 1105);
  EXPECT_EQ(Status::IOError("x").mysql_code(), 1105);
  EXPECT_STREQ(Status::IOError("x").sqlstate(), "HY000");
  EXPECT_EQ(Status::Corruption("x").mysql_code(), 1712);
}

TEST(SqlErrorTest, FormatsMessage) {
  Status st = SqlError(ErrorCode::kNoSuchTable, "Table '{}.{}' doesn't exist", "db", "t");
  EXPECT_EQ(st.mysql_code(), 1146);
  EXPECT_EQ(st.message(), "Table 'db.t' doesn't exist");
  EXPECT_STREQ(st.sqlstate(), "42S02");
}

TEST(SyntaxErrorTest, MessageFormat) {
  Status st = SyntaxError("x", 2);
  EXPECT_EQ(st.mysql_code(), 1064);
  EXPECT_STREQ(st.sqlstate(), "42000");
  EXPECT_EQ(st.message(),
            "You have an error in your SQL syntax; check the manual that corresponds to your MySQL "
            "server version for the right syntax to use near 'x' at line 2");
  Status end = SyntaxError("", 1);
  EXPECT_NE(end.message().find("near '' at line 1"), std::string::npos) << end.message();
}

TEST(SyntaxErrorTest, QuotesAtMost80Characters) {
  std::string rest(79, 'a');
  rest += "bcdef";
  Status st = SyntaxError(rest, 1);
  std::string want = "near '" + std::string(79, 'a') + "b' at line 1";
  EXPECT_NE(st.message().find(want), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find("bc"), std::string::npos);
}

TEST(ResultTest, ValueOrStatus) {
  Result<std::string> good(std::string("seven"));
  ASSERT_TRUE(good.ok());
  EXPECT_TRUE(good.status().ok());
  EXPECT_EQ(*good, "seven");
  EXPECT_EQ(good->size(), 5u);
  Result<int> bad(Status::Sql(1046, "No database selected"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().mysql_code(), 1046);
  EXPECT_STREQ(bad.status().sqlstate(), "3D000");
}

Result<int> Half(int x) {
  if (x % 2) return Status::InvalidArgument("odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  SHALE_ASSIGN_OR_RETURN(int h, Half(x));
  SHALE_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckEven(int x) {
  SHALE_RETURN_IF_ERROR(Half(x).status());
  return Status::OK();
}

TEST(ResultTest, Macros) {
  auto q = Quarter(12);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(*q, 3);
  auto bad = Quarter(6);  // 6 -> 3 -> odd
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "odd");
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_FALSE(CheckEven(5).ok());
}

}  // namespace
}  // namespace shale
