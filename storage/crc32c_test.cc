#include "storage/crc32c.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace shale::storage::crc32c {
namespace {

using ExtendFn = uint32_t (*)(uint32_t, const void*, size_t);

struct Impl {
  const char* name;
  ExtendFn fn;
};

const Impl kImpls[] = {
    {"Extend", &Extend},
    {"ExtendPortable", &ExtendPortable},
    {"ExtendHardware", &ExtendHardware},
};

// Test vectors from RFC 3720 (iSCSI), appendix B.4, plus the common check value.
TEST(Crc32cTest, KnownVectors) {
  std::vector<uint8_t> zeros(32, 0x00);
  std::vector<uint8_t> ones(32, 0xFF);
  std::vector<uint8_t> ascending(32);
  std::vector<uint8_t> descending(32);
  for (int i = 0; i < 32; ++i) {
    ascending[i] = static_cast<uint8_t>(i);
    descending[i] = static_cast<uint8_t>(31 - i);
  }
  const char* check = "123456789";
  for (const Impl& impl : kImpls) {
    SCOPED_TRACE(impl.name);
    EXPECT_EQ(0x8A9136AAu, impl.fn(0, zeros.data(), zeros.size()));
    EXPECT_EQ(0x62A8AB43u, impl.fn(0, ones.data(), ones.size()));
    EXPECT_EQ(0x46DD794Eu, impl.fn(0, ascending.data(), ascending.size()));
    EXPECT_EQ(0x113FDB5Cu, impl.fn(0, descending.data(), descending.size()));
    EXPECT_EQ(0xE3069283u, impl.fn(0, check, std::strlen(check)));
    EXPECT_EQ(0u, impl.fn(0, "", 0));
  }
  EXPECT_EQ(0xE3069283u, Value(check, std::strlen(check)));
}

TEST(Crc32cTest, ImplementationChoice) {
  std::string name = ImplementationName();
  EXPECT_EQ(HardwareAvailable() ? "sse4.2" : "slice-by-8", name);
}

// Portable and hardware agree over many lengths (crossing every block size the
// interleaved path uses), alignments and starting values.
TEST(Crc32cTest, PortableMatchesHardware) {
  std::mt19937_64 rng(301);
  std::vector<uint8_t> buf(300000 + 16);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 1100; ++n) lengths.push_back(n);
  for (size_t n : {6143, 6144, 6145, 6151, 12288, 12289, 13056, 40000, 65536, 100003, 300000}) {
    lengths.push_back(n);
  }
  for (size_t n : lengths) {
    for (size_t align = 0; align < 8; ++align) {
      uint32_t seed = static_cast<uint32_t>(rng());
      const uint8_t* p = buf.data() + align;
      ASSERT_EQ(ExtendPortable(seed, p, n), ExtendHardware(seed, p, n))
          << "length " << n << " alignment " << align;
      ASSERT_EQ(ExtendPortable(0, p, n), Value(p, n)) << "length " << n;
    }
  }
}

// Extend(Value(a), b) == Value(a + b), for every split of a buffer.
TEST(Crc32cTest, ExtendComposes) {
  std::mt19937_64 rng(7);
  std::vector<uint8_t> buf(20000);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (const Impl& impl : kImpls) {
    SCOPED_TRACE(impl.name);
    const uint32_t whole = impl.fn(0, buf.data(), buf.size());
    for (int i = 0; i < 200; ++i) {
      size_t cut = rng() % (buf.size() + 1);
      uint32_t head = impl.fn(0, buf.data(), cut);
      ASSERT_EQ(whole, impl.fn(head, buf.data() + cut, buf.size() - cut)) << "cut " << cut;
    }
    // Byte at a time.
    uint32_t crc = 0;
    for (size_t i = 0; i < 1000; ++i) crc = impl.fn(crc, buf.data() + i, 1);
    EXPECT_EQ(impl.fn(0, buf.data(), 1000), crc);
  }
}

TEST(Crc32cTest, DetectsSingleBitFlips) {
  std::vector<uint8_t> buf(4096, 0x5A);
  const uint32_t good = Value(buf.data(), buf.size());
  for (size_t byte = 0; byte < buf.size(); byte += 97) {
    for (int bit = 0; bit < 8; ++bit) {
      buf[byte] ^= static_cast<uint8_t>(1u << bit);
      ASSERT_NE(good, Value(buf.data(), buf.size()));
      buf[byte] ^= static_cast<uint8_t>(1u << bit);
    }
  }
}

}  // namespace
}  // namespace shale::storage::crc32c
