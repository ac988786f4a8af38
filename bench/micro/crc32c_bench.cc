// CRC32C micro-benchmarks: the portable slice-by-8 path, the SSE4.2 path
// (three interleaved streams) and zlib's crc32 as the baseline, over a small
// record, 4 KiB, a 16 KiB page, a 32 KiB block (the size) and a
// 1 MiB buffer. Reports bytes/s.
//
// Each benchmark first checks its answer: portable and hardware must agree
// with each other, and with the known CRC32C of the buffer's first 32 zero
// bytes, or the benchmark reports an error instead of a speed.
#include <zlib.h>

#include <cstdint>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include "storage/crc32c.h"

namespace shale::storage::crc32c {
namespace {

std::vector<uint8_t> MakeBuffer(size_t n) {
  std::vector<uint8_t> buf(n);
  std::mt19937_64 rng(n);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  return buf;
}

bool AnswersAgree(benchmark::State& state, const std::vector<uint8_t>& buf) {
  static const std::vector<uint8_t> kZeros(32, 0);
  if (ExtendPortable(0, kZeros.data(), kZeros.size()) != 0x8A9136AAu ||
      ExtendHardware(0, kZeros.data(), kZeros.size()) != 0x8A9136AAu) {
    state.SkipWithError("CRC32C of 32 zero bytes is wrong");
    return false;
  }
  if (ExtendPortable(0, buf.data(), buf.size()) != ExtendHardware(0, buf.data(), buf.size())) {
    state.SkipWithError("portable and hardware CRC32C disagree");
    return false;
  }
  return true;
}

void BM_Crc32cPortable(benchmark::State& state) {
  const auto buf = MakeBuffer(static_cast<size_t>(state.range(0)));
  if (!AnswersAgree(state, buf)) return;
  for (auto _ : state) {
    benchmark::DoNotOptimize(ExtendPortable(0, buf.data(), buf.size()));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

void BM_Crc32cHardware(benchmark::State& state) {
  const auto buf = MakeBuffer(static_cast<size_t>(state.range(0)));
  if (!AnswersAgree(state, buf)) return;
  if (!HardwareAvailable()) state.SetLabel("no SSE4.2: portable fallback");
  for (auto _ : state) {
    benchmark::DoNotOptimize(ExtendHardware(0, buf.data(), buf.size()));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

// zlib's crc32 (a different polynomial), the speed baseline.
void BM_ZlibCrc32(benchmark::State& state) {
  const auto buf = MakeBuffer(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(crc32(0L, buf.data(), static_cast<uInt>(buf.size())));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

#define SHALE_CRC_SIZES Arg(64)->Arg(4 << 10)->Arg(16 << 10)->Arg(32 << 10)->Arg(1 << 20)
BENCHMARK(BM_Crc32cPortable)->SHALE_CRC_SIZES;
BENCHMARK(BM_Crc32cHardware)->SHALE_CRC_SIZES;
BENCHMARK(BM_ZlibCrc32)->SHALE_CRC_SIZES;
#undef SHALE_CRC_SIZES

}  // namespace
}  // namespace shale::storage::crc32c
