#include "src/common/decimal.h"

#include <string>
#include <vector>

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
  const std::string nines65(65, '9');
  EXPECT_EQ(D(nines65.c_str()).ToString(), nines65);
  // A value (not a column) may have up to 81 digits, as in MySQL's buffers.
  EXPECT_EQ(D((nines65 + "9").c_str()).ToString(), nines65 + "9");
  EXPECT_FALSE(Decimal::Parse(std::string(82, '9')).has_value());
  EXPECT_FALSE(D((nines65 + "9").c_str()).FitsPrecision(65));
  EXPECT_EQ(D("-12345678901234567890123456789012345.123456789012345678901234567890").ToString(),
            "-12345678901234567890123456789012345.123456789012345678901234567890");
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
  auto big = D(std::string(81, '9').c_str());
  EXPECT_FALSE(Decimal::Add(big, D("1")).has_value());
  EXPECT_FALSE(Decimal::Mul(big, D("10")).has_value());
  EXPECT_FALSE(Decimal::Mul(big, big).has_value());
  EXPECT_EQ(Decimal::Sub(big, D("1"))->ToString(), std::string(80, '9') + "8");
  auto big65 = D(std::string(65, '9').c_str());
  EXPECT_EQ(Decimal::Add(big65, D("1"))->ToString(), "1" + std::string(65, '0'));
}

TEST(DecimalTest, SixtyFiveDigitArithmeticIsExact) {
  // Beyond 128 bits: 35 integer digits and 30 fraction digits.
  auto a = D("12345678901234567890123456789012345.123456789012345678901234567890");
  auto b = D("98765432109876543210987654321098765.987654321098765432109876543210");
  EXPECT_EQ(Decimal::Add(a, b)->ToString(), "111111111011111111101111111110111111.111111110111111111011111111100");
  EXPECT_EQ(Decimal::Add(a, a)->ToString(), "24691357802469135780246913578024690.246913578024691357802469135780");
  EXPECT_EQ(Decimal::Sub(a, b)->ToString(), "-86419753208641975320864197532086420.864197532086419753208641975320");
  EXPECT_EQ(Decimal::Mul(D("12345678901234567890123456789"), D("98765432109876543210987654321"))->ToString(),
            "1219326311370217952261850327336229233322374638011112635269");
  // Scales add, then round to 30.
  EXPECT_EQ(Decimal::Mul(D("0.000000000000000000000000000001"), D("0.5"))->ToString(),
            "0.000000000000000000000000000001");
  EXPECT_EQ(Decimal::Div(a, D("3"), 30)->ToString(),
            "4115226300411522630041152263004115.041152263004115226300411522630");
  EXPECT_EQ(Decimal::Div(D("1"), b, 30)->ToString(), "0.000000000000000000000000000000");
  EXPECT_EQ(Decimal::Div(b, a, 4)->ToString(), "8.0000");
  EXPECT_EQ(Decimal::Mod(b, a)->ToString(), "900000000090000000009000005.000000009000000000900000000090");
  EXPECT_EQ(Decimal::IntDiv(b, D("-7"))->ToString(), "-14109347444268077601569664903014109");
  EXPECT_LT(Decimal::Compare(a, b), 0);
  EXPECT_GT(Decimal::Compare(a.Negate(), b.Negate()), 0);
  EXPECT_EQ(a.IntegerDigits(), 35);
  EXPECT_TRUE(a.FitsPrecision(65));
  EXPECT_FALSE(a.FitsPrecision(64));
  EXPECT_FALSE(a.FitsInt128());
  EXPECT_EQ(Decimal::Max(65, 30).ToString(), std::string(35, '9') + "." + std::string(30, '9'));
  EXPECT_EQ(a.Round(-10)->ToString(), "12345678901234567890123460000000000");
  EXPECT_EQ(a.Negate().Floor()->ToString(), "-12345678901234567890123456789012346");
}

TEST(DecimalTest, KeyBytesSortAsNumbers) {
  const char* sorted[] = {"-999999999999999999999999999999999999999999999999999999999999999999999999999999.5",
                          "-99999999999999999999999999999999999999999.5", "-340282366920938463463374607431768211456.0",
                          "-256.0", "-255.0", "-1.5", "-0.1", "0.0", "0.1", "255.0", "256.0",
                          "340282366920938463463374607431768211456.0", "99999999999999999999999999999999999999999.5",
                          "999999999999999999999999999999999999999999999999999999999999999999999999999999.5"};
  std::vector<std::string> keys;
  for (const char* s : sorted) {
    Decimal d = *D(s).Rescale(1);
    std::string k;
    d.AppendKeyBytes(&k);
    std::string_view in = k;
    Decimal back;
    ASSERT_TRUE(Decimal::DecodeKeyBytes(&in, 1, &back)) << s;
    EXPECT_TRUE(in.empty());
    EXPECT_EQ(back, d) << s;
    std::string row;
    d.AppendRowBytes(&row);
    std::string_view rin = row;
    ASSERT_TRUE(Decimal::DecodeRowBytes(&rin, &back)) << s;
    EXPECT_EQ(back, d) << s;
    keys.push_back(k);
  }
  for (size_t i = 1; i < keys.size(); ++i) EXPECT_LT(keys[i - 1], keys[i]) << sorted[i];
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
