// Tests of the compressed packet framing (compression.h).
#include "src/server/compression.h"

#include <string>

#include <gtest/gtest.h>

#include "src/server/wire_codec.h"

namespace shale::server {
namespace {

std::vector<CompressedFrame> DecodeAll(const std::string& wire, size_t chunk = 7) {
  CompressedFrameDecoder d;
  std::vector<CompressedFrame> frames;
  for (size_t i = 0; i < wire.size(); i += chunk) {
    d.Feed(std::string_view(wire).substr(i, chunk));
    for (;;) {
      auto f = d.Next();
      EXPECT_TRUE(f.ok()) << f.status().ToString();
      if (!f.ok() || !f->has_value()) break;
      frames.push_back(std::move(**f));
    }
  }
  EXPECT_EQ(d.buffered(), 0u);
  return frames;
}

TEST(CompressionTest, ShortPayloadIsStoredWithZeroLength) {
  std::string out;
  uint8_t seq = 3;
  AppendCompressedFrames(std::string_view("\x01\x00\x00\x00\x0e", 5), &seq, &out);
  EXPECT_EQ(seq, 4);
  std::string want;
  PutFixedInt(&want, 5, 3);
  want.push_back('\x03');
  PutFixedInt(&want, 0, 3);
  want.append("\x01\x00\x00\x00\x0e", 5);
  EXPECT_EQ(out, want);
}

TEST(CompressionTest, LongPayloadIsDeflatedAndRoundTrips) {
  std::string data(100000, 'a');
  for (size_t i = 0; i < data.size(); i += 7) data[i] = static_cast<char>('a' + i % 26);
  std::string out;
  uint8_t seq = 0;
  AppendCompressedFrames(data, &seq, &out);
  EXPECT_EQ(seq, 1);
  EXPECT_LT(out.size(), data.size() / 2);
  auto frames = DecodeAll(out, 1000);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].seq, 0);
  EXPECT_EQ(frames[0].data, data);
}

TEST(CompressionTest, IncompressibleDataIsStored) {
  std::string data;
  uint32_t x = 12345;
  for (int i = 0; i < 4096; ++i) {
    x = x * 1103515245 + 12345;
    data.push_back(static_cast<char>(x >> 16));
  }
  std::string out;
  uint8_t seq = 0;
  AppendCompressedFrames(data, &seq, &out);
  EXPECT_EQ(out.size(), data.size() + kCompressedHeaderSize);
  auto frames = DecodeAll(out);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].data, data);
}

TEST(CompressionTest, BadDeflateStreamIsAnError) {
  std::string wire;
  PutFixedInt(&wire, 5, 3);
  wire.push_back('\0');
  PutFixedInt(&wire, 1000, 3);
  wire.append("junk!");
  CompressedFrameDecoder d;
  d.Feed(wire);
  auto f = d.Next();
  EXPECT_FALSE(f.ok());
}

TEST(CompressionTest, WrongInflatedLengthIsAnError) {
  std::string data(1000, 'z');
  std::string out;
  uint8_t seq = 0;
  AppendCompressedFrames(data, &seq, &out);
  // Announce one byte more than the payload inflates to.
  out[4] = static_cast<char>(static_cast<uint8_t>(out[4]) + 1);
  CompressedFrameDecoder d;
  d.Feed(out);
  EXPECT_FALSE(d.Next().ok());
}

TEST(CompressionTest, PartialFrameWaits) {
  std::string out;
  uint8_t seq = 0;
  AppendCompressedFrames(std::string(500, 'q'), &seq, &out);
  CompressedFrameDecoder d;
  d.Feed(out.substr(0, out.size() - 1));
  auto f = d.Next();
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->has_value());
  d.Feed(out.substr(out.size() - 1));
  f = d.Next();
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(f->has_value());
  EXPECT_EQ((*f)->data, std::string(500, 'q'));
}

TEST(CompressionTest, RandomFramesNeverCrash) {
  uint64_t x = 88172645463325252ull;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (int i = 0; i < 5000; ++i) {
    std::string wire;
    const uint32_t len = static_cast<uint32_t>(next() % 64);
    PutFixedInt(&wire, len, 3);
    wire.push_back('\0');
    PutFixedInt(&wire, next() % 4 == 0 ? 0 : next() % 100000, 3);
    for (uint32_t j = 0; j < len; ++j) wire.push_back(static_cast<char>(next()));
    CompressedFrameDecoder d;
    d.Feed(wire);
    auto f = d.Next();
    if (f.ok() && f->has_value()) {
      EXPECT_LE((*f)->data.size(), 100000u);
    }
  }
}

}  // namespace
}  // namespace shale::server
