#include "src/common/hex.h"

#include <gtest/gtest.h>

namespace shale {
namespace {

TEST(HexTest, RoundTripsEveryByte) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  std::string hex = ToHex(all);
  ASSERT_EQ(hex.size(), 512u);
  EXPECT_EQ(hex.substr(0, 8), "00010203");
  EXPECT_EQ(hex.substr(504), "FCFDFEFF");
  std::string back;
  ASSERT_TRUE(FromHex(hex, &back));
  EXPECT_EQ(back, all);
}

TEST(HexTest, AcceptsLowerCaseAndRejectsBadInput) {
  std::string out;
  ASSERT_TRUE(FromHex("4a6b", &out));
  EXPECT_EQ(out, "Jk");
  ASSERT_TRUE(FromHex("", &out));
  EXPECT_EQ(out, "");
  EXPECT_FALSE(FromHex("abc", &out));  // odd length
  EXPECT_FALSE(FromHex("zz", &out));
  EXPECT_FALSE(FromHex("0g", &out));
}

}  // namespace
}  // namespace shale
