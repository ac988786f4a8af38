// Tests of the primitive protocol encodings (wire_codec.h).
#include "src/server/wire_codec.h"

#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace shale::server {
namespace {

std::string Bytes(std::initializer_list<uint8_t> b) {
  std::string s;
  for (uint8_t c : b) s.push_back(static_cast<char>(c));
  return s;
}

std::string Lenenc(uint64_t v) {
  std::string s;
  PutLenencInt(&s, v);
  return s;
}

TEST(LenencIntTest, EncodesEveryBoundary) {
  EXPECT_EQ(Lenenc(0), Bytes({0x00}));
  EXPECT_EQ(Lenenc(1), Bytes({0x01}));
  EXPECT_EQ(Lenenc(250), Bytes({0xFA}));
  EXPECT_EQ(Lenenc(251), Bytes({0xFC, 0xFB, 0x00}));
  EXPECT_EQ(Lenenc(252), Bytes({0xFC, 0xFC, 0x00}));
  EXPECT_EQ(Lenenc(0xFFFF), Bytes({0xFC, 0xFF, 0xFF}));
  EXPECT_EQ(Lenenc(0x10000), Bytes({0xFD, 0x00, 0x00, 0x01}));
  EXPECT_EQ(Lenenc(0xFFFFFF), Bytes({0xFD, 0xFF, 0xFF, 0xFF}));
  EXPECT_EQ(Lenenc(0x1000000), Bytes({0xFE, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00}));
  EXPECT_EQ(Lenenc(std::numeric_limits<uint64_t>::max()),
            Bytes({0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}));
}

TEST(LenencIntTest, SizeMatchesEncoding) {
  for (uint64_t v : {0ull, 250ull, 251ull, 0xFFFFull, 0x10000ull, 0xFFFFFFull, 0x1000000ull,
                     ~0ull}) {
    EXPECT_EQ(LenencIntSize(v), Lenenc(v).size()) << v;
  }
}

TEST(LenencIntTest, RoundTripsAroundEveryBoundary) {
  for (uint64_t base : {0ull, 251ull, 0x10000ull, 0x1000000ull}) {
    for (int64_t d = -2; d <= 2; ++d) {
      if (base == 0 && d < 0) continue;
      uint64_t v = base + d;
      std::string enc = Lenenc(v);
      PayloadReader in(enc);
      Result<uint64_t> got = in.ReadLenencInt("v");
      ASSERT_TRUE(got.ok()) << v << ": " << got.status().ToString();
      EXPECT_EQ(*got, v);
      EXPECT_TRUE(in.AtEnd());
    }
  }
  std::string max = Lenenc(~0ull);
  PayloadReader in(max);
  EXPECT_EQ(*in.ReadLenencInt("v"), ~0ull);
}

TEST(LenencIntTest, RejectsTruncatedAndInvalidPrefixes) {
  for (const std::string& bad :
       {std::string(), Bytes({0xFC}), Bytes({0xFC, 0x01}), Bytes({0xFD, 0x01, 0x02}),
        Bytes({0xFE, 1, 2, 3, 4, 5, 6, 7}), Bytes({0xFB}), Bytes({0xFF, 0x00, 0x00})}) {
    PayloadReader in(bad);
    EXPECT_FALSE(in.ReadLenencInt("v").ok()) << bad.size();
  }
}

TEST(LenencStringTest, RoundTripsShortAndLong) {
  for (size_t n : {size_t{0}, size_t{250}, size_t{251}, size_t{0xFFFF}, size_t{0x10000}}) {
    std::string s(n, 'x');
    std::string enc;
    PutLenencString(&enc, s);
    EXPECT_EQ(enc.size(), LenencIntSize(n) + n);
    PayloadReader in(enc);
    Result<std::string_view> got = in.ReadLenencString("s");
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(*got, s);
    EXPECT_TRUE(in.AtEnd());
  }
}

TEST(LenencStringTest, LengthPastEndFails) {
  std::string enc = Bytes({0x05, 'a', 'b'});
  PayloadReader in(enc);
  EXPECT_FALSE(in.ReadLenencString("s").ok());
  // The failed read leaves the cursor where it was.
  EXPECT_EQ(in.remaining(), 3u);
}

TEST(FixedIntTest, LittleEndian) {
  std::string s;
  PutFixedInt(&s, 0x0A0B0C0D, 4);
  PutFixedInt(&s, 0x0102, 2);
  PutFixedInt(&s, 0x030201, 3);
  EXPECT_EQ(s, Bytes({0x0D, 0x0C, 0x0B, 0x0A, 0x02, 0x01, 0x01, 0x02, 0x03}));
  PayloadReader in(s);
  EXPECT_EQ(*in.ReadFixedInt(4, "a"), 0x0A0B0C0Du);
  EXPECT_EQ(*in.ReadFixedInt(2, "b"), 0x0102u);
  EXPECT_EQ(*in.ReadFixedInt(3, "c"), 0x030201u);
  EXPECT_FALSE(in.ReadFixedInt(1, "d").ok());
}

TEST(NulStringTest, ReadsUpToTerminator) {
  std::string s;
  PutNulString(&s, "root");
  PutNulString(&s, "");
  s += "tail";
  PayloadReader in(s);
  EXPECT_EQ(*in.ReadNulString("a"), "root");
  EXPECT_EQ(*in.ReadNulString("b"), "");
  EXPECT_FALSE(in.ReadNulString("c").ok());  // "tail" has no terminator
  EXPECT_EQ(in.ReadRest(), "tail");
  EXPECT_TRUE(in.AtEnd());
}

TEST(PayloadReaderTest, SkipAndBytesAreBounded) {
  std::string s = "abcdef";
  PayloadReader in(s);
  EXPECT_TRUE(in.Skip(2, "x").ok());
  EXPECT_EQ(*in.ReadBytes(3, "y"), "cde");
  EXPECT_FALSE(in.ReadBytes(2, "z").ok());
  EXPECT_FALSE(in.Skip(2, "z").ok());
  EXPECT_EQ(in.remaining(), 1u);
}

}  // namespace
}  // namespace shale::server
