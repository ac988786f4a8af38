#include "src/common/decimal.h"

#include <gtest/gtest.h>

namespace shale {
namespace {

Decimal D(const char* s) {
  auto d = Decimal::Parse(s);
  EXPECT_TRUE(d.has_value()) << s;
  return d.value_or(Decimal());
}

TEST(DecimalTest, ParseAndPrint) {
  EXPECT_EQ(D("1.50").ToString(), "1.50");
  EXPECT_EQ(D("-0.001").ToString(), "-0.001");
  EXPECT_EQ(D(".5").ToString(), "0.5");
  EXPECT_EQ(D("  +12 ").ToString(), "12");
  EXPECT_EQ(D("1.5e3").ToString(), "1500");
  EXPECT_EQ(D("15e-1").ToString(), "1.5");
  EXPECT_EQ(D("0").ToString(), "0");
  EXPECT_EQ(D("99999999999999999999999999999999999999").ToString(),
            "99999999999999999999999999999999999999");
  EXPECT_FALSE(Decimal::Parse("999999999999999999999999999999999999999").has_value());  // 39 digits
  EXPECT_FALSE(Decimal::Parse("abc").has_value());
  EXPECT_FALSE(Decimal::Parse("1.5x").has_value());
  EXPECT_FALSE(Decimal::Parse("").has_value());
  // Beyond 30 fraction digits: rounded.
  EXPECT_EQ(D("0.0000000000000000000000000000015").ToString(), "0.000000000000000000000000000002");
}

TEST(DecimalTest, ArithmeticFollowsMySqlScales) {
  EXPECT_EQ(Decimal::Add(D("1.5"), D("2.25"))->ToString(), "3.75");
  EXPECT_EQ(Decimal::Sub(D("1.5"), D("2.25"))->ToString(), "-0.75");
  EXPECT_EQ(Decimal::Mul(D("1.5"), D("2.25"))->ToString(), "3.375");
  EXPECT_EQ(Decimal::Div(D("1"), D("3"), 4)->ToString(), "0.3333");
  EXPECT_EQ(Decimal::Div(D("2"), D("3"), 4)->ToString(), "0.6667");
  EXPECT_EQ(Decimal::Div(D("-2"), D("3"), 4)->ToString(), "-0.6667");
  EXPECT_EQ(Decimal::Div(D("1.235"), D("3"), 7)->ToString(), "0.4116667");
  EXPECT_EQ(Decimal::Mod(D("-7.5"), D("2"))->ToString(), "-1.5");
  // Overflow is reported, never wrapped.
  auto big = D("99999999999999999999999999999999999999");
  EXPECT_FALSE(Decimal::Add(big, D("1")).has_value());
  EXPECT_FALSE(Decimal::Mul(big, D("10")).has_value());
}

TEST(DecimalTest, RoundingIsHalfAwayFromZero) {
  EXPECT_EQ(D("2.5").Round(0)->ToString(), "3");
  EXPECT_EQ(D("-2.5").Round(0)->ToString(), "-3");
  EXPECT_EQ(D("1.2345").Round(2)->ToString(), "1.23");
  EXPECT_EQ(D("1.235").Round(2)->ToString(), "1.24");
  EXPECT_EQ(D("1250").Round(-2)->ToString(), "1300");
  EXPECT_EQ(D("1.999").Truncate(2)->ToString(), "1.99");
  EXPECT_EQ(D("-1.999").Truncate(0)->ToString(), "-1");
  EXPECT_EQ(D("1299").Truncate(-2)->ToString(), "1200");
  EXPECT_EQ(D("-1.5").Floor()->ToString(), "-2");
  EXPECT_EQ(D("-1.5").Ceil()->ToString(), "-1");
  EXPECT_EQ(D("1.5").Ceil()->ToString(), "2");
  EXPECT_EQ(D("1.555").Rescale(2)->ToString(), "1.56");
  EXPECT_EQ(D("1.5").Rescale(3)->ToString(), "1.500");
}

TEST(DecimalTest, CompareAcrossScales) {
  EXPECT_EQ(Decimal::Compare(D("1.5"), D("1.50")), 0);
  EXPECT_LT(Decimal::Compare(D("1.49"), D("1.5")), 0);
  EXPECT_GT(Decimal::Compare(D("-1.49"), D("-1.5")), 0);
  EXPECT_LT(Decimal::Compare(D("-3"), D("0.001")), 0);
  EXPECT_GT(Decimal::Compare(D("10"), D("9.999999")), 0);
}

TEST(DecimalTest, Conversions) {
  EXPECT_DOUBLE_EQ(D("1.25").ToDouble(), 1.25);
  EXPECT_EQ(Decimal::FromDouble(0.1, 3)->ToString(), "0.100");
  EXPECT_EQ(Decimal::FromDouble(1e20, 0)->ToString(), "100000000000000000000");
  EXPECT_FALSE(Decimal::FromDouble(1e300, 0).has_value());
  EXPECT_EQ(D("2.5").ToInt64Rounded(), 3);
  EXPECT_EQ(D("-2.5").ToInt64Rounded(), -3);
  bool overflow = false;
  D("99999999999999999999").ToInt64Rounded(&overflow);
  EXPECT_TRUE(overflow);
}

}  // namespace
}  // namespace shale
