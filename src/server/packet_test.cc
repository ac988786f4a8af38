// Tests of packet framing (packet.h): splitting at 0xFFFFFF, joining, the
// max_allowed_packet limit and sequence ids.
#include "src/server/packet.h"

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "src/server/protocol_constants.h"

namespace shale::server {
namespace {

constexpr size_t kMax = kMaxFramePayload;  // 0xFFFFFF

std::string Header(uint32_t length, uint8_t seq) {
  std::string h;
  h.push_back(static_cast<char>(length & 0xFF));
  h.push_back(static_cast<char>((length >> 8) & 0xFF));
  h.push_back(static_cast<char>((length >> 16) & 0xFF));
  h.push_back(static_cast<char>(seq));
  return h;
}

// A payload whose bytes depend on their position, so a misplaced byte shows.
std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + 7) & 0xFF);
  return s;
}

std::string Framed(std::string_view payload, uint8_t* seq) {
  std::string out;
  AppendFramed(payload, seq, &out);
  return out;
}

TEST(AppendFramedTest, SmallPayloadIsOneFrame) {
  uint8_t seq = 0;
  EXPECT_EQ(Framed("abc", &seq), Header(3, 0) + "abc");
  EXPECT_EQ(seq, 1);
}

TEST(AppendFramedTest, EmptyPayloadIsOneEmptyFrame) {
  uint8_t seq = 7;
  EXPECT_EQ(Framed("", &seq), Header(0, 7));
  EXPECT_EQ(seq, 8);
}

TEST(AppendFramedTest, OneByteShortOfLimitIsOneFrame) {
  uint8_t seq = 0;
  std::string p = Pattern(kMax - 1);
  std::string out = Framed(p, &seq);
  EXPECT_EQ(out, Header(kMax - 1, 0) + p);
  EXPECT_EQ(seq, 1);
}

TEST(AppendFramedTest, ExactlyLimitEndsWithEmptyFrame) {
  uint8_t seq = 0;
  std::string p = Pattern(kMax);
  std::string out = Framed(p, &seq);
  ASSERT_EQ(out.size(), 4 + kMax + 4);
  EXPECT_EQ(out.substr(0, 4), Header(kMax, 0));
  EXPECT_EQ(out.compare(4, kMax, p), 0);
  EXPECT_EQ(out.substr(4 + kMax), Header(0, 1));
  EXPECT_EQ(seq, 2);
}

TEST(AppendFramedTest, LargerPayloadSplitsIntoFullFramesAndRemainder) {
  uint8_t seq = 0;
  std::string p = Pattern(2 * kMax + 10);
  std::string out = Framed(p, &seq);
  ASSERT_EQ(out.size(), 3 * 4 + p.size());
  EXPECT_EQ(out.substr(0, 4), Header(kMax, 0));
  EXPECT_EQ(out.substr(4 + kMax, 4), Header(kMax, 1));
  EXPECT_EQ(out.substr(8 + 2 * kMax, 4), Header(10, 2));
  EXPECT_EQ(out.compare(4, kMax, p, 0, kMax), 0);
  EXPECT_EQ(out.compare(8 + kMax, kMax, p, kMax, kMax), 0);
  EXPECT_EQ(out.compare(12 + 2 * kMax, 10, p, 2 * kMax, 10), 0);
  EXPECT_EQ(seq, 3);
}

TEST(AppendFramedTest, SequenceIdWrapsAt256) {
  uint8_t seq = 255;
  std::string out = Framed(Pattern(kMax + 1), &seq);
  EXPECT_EQ(static_cast<uint8_t>(out[3]), 255);
  EXPECT_EQ(static_cast<uint8_t>(out[4 + kMax + 3]), 0);
  EXPECT_EQ(seq, 1);
}

TEST(PacketDecoderTest, NeedsWholeHeaderAndBody) {
  PacketDecoder d(1 << 20);
  d.Feed(std::string_view("\x03\x00", 2));
  auto r = d.Next();
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
  d.Feed(std::string_view("\x00\x00" "ab", 4));
  r = d.Next();
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
  d.Feed("c");
  r = d.Next();
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->payload, "abc");
  EXPECT_EQ((*r)->seq, 0);
  EXPECT_EQ((*r)->next_seq, 1);
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(PacketDecoderTest, SeveralPacketsInOneFeed) {
  PacketDecoder d(1 << 20);
  uint8_t seq = 0;
  std::string bytes = Framed("one", &seq);
  seq = 0;
  bytes += Framed("", &seq);
  seq = 0;
  bytes += Framed("three", &seq);
  d.Feed(bytes);
  for (std::string_view want : {"one", "", "three"}) {
    auto r = d.Next();
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r->has_value());
    EXPECT_EQ((*r)->payload, want);
  }
  auto r = d.Next();
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

// Splits with AppendFramed, feeds in uneven chunks, and checks the joined
// payload and sequence ids.
void RoundTrip(size_t size, uint8_t first_seq) {
  SCOPED_TRACE(size);
  std::string p = Pattern(size);
  uint8_t seq = first_seq;
  std::string wire = Framed(p, &seq);
  PacketDecoder d(static_cast<uint32_t>(size + 1));
  size_t pos = 0;
  size_t chunk = 1;
  std::optional<Packet> got;
  while (pos < wire.size()) {
    size_t n = std::min(chunk, wire.size() - pos);
    d.Feed(std::string_view(wire).substr(pos, n));
    pos += n;
    chunk = chunk * 3 + 1;  // 1, 4, 13, ... bytes: headers get cut too
    auto r = d.Next();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    if (r->has_value()) {
      EXPECT_EQ(pos, wire.size()) << "payload returned before its last frame";
      got = std::move(**r);
    }
  }
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->payload.size(), p.size());
  EXPECT_TRUE(got->payload == p);
  EXPECT_EQ(got->seq, first_seq);
  EXPECT_EQ(got->next_seq, seq);
}

TEST(PacketDecoderTest, JoinsAtAndAroundTheFrameLimit) {
  RoundTrip(0, 0);
  RoundTrip(kMax - 1, 0);
  RoundTrip(kMax, 0);
  RoundTrip(kMax + 1, 0);
  RoundTrip(2 * kMax, 3);
  RoundTrip(2 * kMax + 100, 254);  // sequence ids wrap mid-payload
}

TEST(PacketDecoderTest, FullFrameWaitsForEmptyTerminator) {
  PacketDecoder d(kMax + 10);
  std::string p = Pattern(kMax);
  d.Feed(Header(kMax, 0) + p);
  auto r = d.Next();
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
  d.Feed(Header(0, 1));
  r = d.Next();
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->has_value());
  EXPECT_TRUE((*r)->payload == p);
  EXPECT_EQ((*r)->next_seq, 2);
}

TEST(PacketDecoderTest, PayloadOfExactlyMaxIsAccepted) {
  PacketDecoder d(100);
  d.Feed(Header(100, 0) + Pattern(100));
  auto r = d.Next();
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->payload.size(), 100u);
}

TEST(PacketDecoderTest, OversizedHeaderFailsBeforeBodyArrives) {
  PacketDecoder d(100);
  d.Feed(Header(101, 0));  // no body at all
  auto r = d.Next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().mysql_code(), 1153);
  EXPECT_EQ(d.last_header_seq(), 0);
}

TEST(PacketDecoderTest, OversizedJoinedPayloadFailsOnContinuation) {
  PacketDecoder d(kMax + 5);
  d.Feed(Header(kMax, 0) + Pattern(kMax));
  auto r = d.Next();
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
  d.Feed(Header(6, 1));
  r = d.Next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().mysql_code(), 1153);
  EXPECT_EQ(d.last_header_seq(), 1);
}

TEST(PacketDecoderTest, ContinuationOutOfOrderFails) {
  PacketDecoder d(kMax + 100);
  d.Feed(Header(kMax, 0) + Pattern(kMax) + Header(3, 5) + "abc");
  auto r = d.Next();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().mysql_code(), 1153);
}

}  // namespace
}  // namespace shale::server
