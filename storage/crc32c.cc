#include "storage/crc32c.h"

#include <atomic>
#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#define SHALE_CRC32C_HAVE_SSE42_PATH 1
#else
#define SHALE_CRC32C_HAVE_SSE42_PATH 0
#endif

namespace shale::storage::crc32c {
namespace {

// Reflected Castagnoli polynomial.
constexpr uint32_t kPoly = 0x82F63B78u;

inline uint64_t LoadLE64(const uint8_t* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof(w));
  if constexpr (std::endian::native == std::endian::big) {
    w = __builtin_bswap64(w);
  }
  return w;
}

// ---- portable: slice-by-8 ---------------------------------------------------
// t[k][b] is the register contribution of byte b followed by k zero bytes, so
// eight bytes fold into the register with eight independent lookups.
struct SliceBy8Tables {
  uint32_t t[8][256];
};

constexpr SliceBy8Tables MakeSliceBy8Tables() {
  SliceBy8Tables r{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c >> 1) ^ ((c & 1u) ? kPoly : 0u);
    r.t[0][i] = c;
  }
  for (int k = 1; k < 8; ++k) {
    for (int i = 0; i < 256; ++i) {
      uint32_t prev = r.t[k - 1][i];
      r.t[k][i] = (prev >> 8) ^ r.t[0][prev & 0xFFu];
    }
  }
  return r;
}

constexpr SliceBy8Tables kSliceBy8 = MakeSliceBy8Tables();

// Runs the raw register `l` (no pre/post inversion) over `p[0, n)`.
uint32_t PortableRegister(uint32_t l, const uint8_t* p, size_t n) {
  const auto& t = kSliceBy8.t;
  while (n >= 8) {
    uint64_t w = LoadLE64(p) ^ l;
    l = t[7][w & 0xFF] ^ t[6][(w >> 8) & 0xFF] ^ t[5][(w >> 16) & 0xFF] ^
        t[4][(w >> 24) & 0xFF] ^ t[3][(w >> 32) & 0xFF] ^ t[2][(w >> 40) & 0xFF] ^
        t[1][(w >> 48) & 0xFF] ^ t[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    l = (l >> 8) ^ t[0][(l ^ *p) & 0xFFu];
    ++p;
    --n;
  }
  return l;
}

#if SHALE_CRC32C_HAVE_SSE42_PATH
// ---- hardware: SSE4.2 crc32, three interleaved streams ----------------------
// The crc32 instruction has a latency of about three cycles and a throughput
// of one per cycle, so one dependent chain runs at a third of the possible
// speed. Over long buffers we run three chains over three adjacent blocks of
// equal length B, each from its own register (the first from the running
// register, the others from 0), then join them. The raw register update is
// linear over GF(2), so
//     reg(r, X || Y) = ShiftZeros(reg(r, X), |Y|) ^ reg(0, Y),
// where ShiftZeros(v, m) is the register after running v over m zero bytes.
// ShiftZeros(., B) is a fixed linear map of 32 bits, applied with four
// 256-entry tables built at compile time.

// A linear map on 32-bit vectors over GF(2), stored by columns.
struct Gf2Map {
  uint32_t col[32];
};

constexpr uint32_t Apply(const Gf2Map& m, uint32_t v) {
  uint32_t r = 0;
  for (int i = 0; i < 32; ++i) {
    if ((v >> i) & 1u) r ^= m.col[i];
  }
  return r;
}

// (a after b)
constexpr Gf2Map Compose(const Gf2Map& a, const Gf2Map& b) {
  Gf2Map r{};
  for (int i = 0; i < 32; ++i) r.col[i] = Apply(a, b.col[i]);
  return r;
}

// The map "run the register over `bytes` zero bytes", by square-and-multiply
// of the one-zero-bit map.
constexpr Gf2Map ZeroBytesMap(uint64_t bytes) {
  Gf2Map one_bit{};
  one_bit.col[0] = kPoly;
  for (int i = 1; i < 32; ++i) one_bit.col[i] = 1u << (i - 1);
  Gf2Map result{};
  for (int i = 0; i < 32; ++i) result.col[i] = 1u << i;
  Gf2Map base = one_bit;
  for (uint64_t e = bytes * 8; e != 0; e >>= 1) {
    if (e & 1u) result = Compose(base, result);
    base = Compose(base, base);
  }
  return result;
}

struct ShiftTable {
  uint32_t t[4][256];
};

constexpr ShiftTable MakeShiftTable(uint64_t bytes) {
  Gf2Map m = ZeroBytesMap(bytes);
  ShiftTable s{};
  for (int k = 0; k < 4; ++k) {
    for (uint32_t i = 0; i < 256; ++i) s.t[k][i] = Apply(m, i << (8 * k));
  }
  return s;
}

inline uint32_t ShiftZeros(const ShiftTable& s, uint32_t v) {
  return s.t[0][v & 0xFFu] ^ s.t[1][(v >> 8) & 0xFFu] ^ s.t[2][(v >> 16) & 0xFFu] ^
         s.t[3][v >> 24];
}

// Two block lengths: long blocks for big buffers (the join costs two table
// shifts per 3 * kLongBlock bytes), short ones so 4 KiB pages interleave too.
// Both multiples of 8.
constexpr size_t kLongBlock = 2048;
constexpr size_t kShortBlock = 128;
constexpr ShiftTable kLongShift = MakeShiftTable(kLongBlock);
constexpr ShiftTable kShortShift = MakeShiftTable(kShortBlock);

// Consumes as many 3 * block byte groups as `*n` holds.
__attribute__((target("sse4.2"))) inline void ThreeStreams(uint64_t* l, const uint8_t** p,
                                                           size_t* n, size_t block,
                                                           const ShiftTable& shift) {
  while (*n >= 3 * block) {
    const uint8_t* a = *p;
    const uint8_t* b = a + block;
    const uint8_t* c = b + block;
    uint64_t c0 = *l;
    uint64_t c1 = 0;
    uint64_t c2 = 0;
    for (size_t i = 0; i < block; i += 8) {
      c0 = _mm_crc32_u64(c0, LoadLE64(a + i));
      c1 = _mm_crc32_u64(c1, LoadLE64(b + i));
      c2 = _mm_crc32_u64(c2, LoadLE64(c + i));
    }
    uint32_t joined = ShiftZeros(shift, static_cast<uint32_t>(c0)) ^ static_cast<uint32_t>(c1);
    joined = ShiftZeros(shift, joined) ^ static_cast<uint32_t>(c2);
    *l = joined;
    *p += 3 * block;
    *n -= 3 * block;
  }
}

__attribute__((target("sse4.2"))) uint32_t Sse42Register(uint32_t reg, const uint8_t* p,
                                                         size_t n) {
  uint64_t l = reg;
  ThreeStreams(&l, &p, &n, kLongBlock, kLongShift);
  ThreeStreams(&l, &p, &n, kShortBlock, kShortShift);
  while (n >= 8) {
    l = _mm_crc32_u64(l, LoadLE64(p));
    p += 8;
    n -= 8;
  }
  uint32_t l32 = static_cast<uint32_t>(l);
  while (n > 0) {
    l32 = _mm_crc32_u8(l32, *p);
    ++p;
    --n;
  }
  return l32;
}

bool DetectSse42() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
}
#else
bool DetectSse42() { return false; }
#endif  // SHALE_CRC32C_HAVE_SSE42_PATH

bool Sse42Present() {
  static const bool present = DetectSse42();
  return present;
}

// Dispatch: starts at a trampoline that picks the implementation, stores it,
// and forwards. Constant-initialized, so Extend() works from any static
// initializer; racing first calls store the same pointer.
using ExtendFn = uint32_t (*)(uint32_t, const void*, size_t);
uint32_t ChooseAndExtend(uint32_t crc, const void* data, size_t n);
std::atomic<ExtendFn> g_extend{&ChooseAndExtend};

uint32_t ChooseAndExtend(uint32_t crc, const void* data, size_t n) {
  ExtendFn fn = Sse42Present() ? &ExtendHardware : &ExtendPortable;
  g_extend.store(fn, std::memory_order_relaxed);
  return fn(crc, data, n);
}

}  // namespace

uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n) {
  return ~PortableRegister(~crc, static_cast<const uint8_t*>(data), n);
}

uint32_t ExtendHardware(uint32_t crc, const void* data, size_t n) {
#if SHALE_CRC32C_HAVE_SSE42_PATH
  if (Sse42Present()) return ~Sse42Register(~crc, static_cast<const uint8_t*>(data), n);
#endif
  return ExtendPortable(crc, data, n);
}

bool HardwareAvailable() { return Sse42Present(); }

const char* ImplementationName() { return Sse42Present() ? "sse4.2" : "slice-by-8"; }

uint32_t Extend(uint32_t crc, const void* data, size_t n) {
  return g_extend.load(std::memory_order_relaxed)(crc, data, n);
}

}  // namespace shale::storage::crc32c
