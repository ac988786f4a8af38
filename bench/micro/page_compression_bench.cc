// Page compression candidates on full 16 KiB leaf pages (storage/page.h):
// zlib (what the slice store uses, level 1) against zstd (Debian's libzstd),
// compressing and inflating, on two kinds of rows:
//  - sysbench: sbtest rows (id, k, c = 10 groups of 11 random digits, pad =
//    5 groups), the benchmark tables' shape;
//  - text: repetitive words, as the compression tests use.
// Counters: ratio = compressed / 16384 bytes; blocks = 4 KiB file-system
// blocks a page then takes on disk under the slice store's rule (40-byte
// image header, stored compressed only if it saves a block; 4 without).
// Each benchmark checks that inflating gives the page back.
#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <random>
#include <string>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "storage/page.h"

namespace shale::storage {
namespace {

enum Algo { kZlib1, kZlib6, kZstd1, kZstd3 };
enum Rows { kSysbench, kText };

std::string Digits(std::mt19937* rng, int groups) {
  std::string s;
  for (int g = 0; g < groups; ++g) {
    if (g) s.push_back('-');
    for (int i = 0; i < 11; ++i) s.push_back(static_cast<char>('0' + (*rng)() % 10));
  }
  return s;
}

// A leaf page filled with rows until the next does not fit.
std::string FullLeaf(Rows rows) {
  std::string page(kPageSize, '\0');
  InitPage(page.data(), 7, PageType::kLeaf);
  SlottedPage sp(page.data());
  std::mt19937 rng(42);
  for (uint32_t id = 1;; ++id) {
    std::string key = fmt::format("{:08}", id);
    std::string value;
    if (rows == kSysbench) {
      value = fmt::format("{:08}", rng() % 100000) + Digits(&rng, 10) + Digits(&rng, 5);
    } else {
      for (int k = 0; k < 4; ++k) value += fmt::format("customer-{} order status shipped; ", id % 97);
    }
    if (!sp.InsertAt(sp.slot_count(), key, value)) break;
  }
  SealPage(page.data());
  return page;
}

size_t Compress(Algo a, const std::string& page, std::string* out) {
  out->resize(kPageSize * 2);
  if (a == kZlib1 || a == kZlib6) {
    uLongf len = out->size();
    if (::compress2(reinterpret_cast<Bytef*>(out->data()), &len, reinterpret_cast<const Bytef*>(page.data()),
                    page.size(), a == kZlib1 ? 1 : 6) != Z_OK) {
      return 0;
    }
    return len;
  }
  size_t n = ZSTD_compress(out->data(), out->size(), page.data(), page.size(), a == kZstd1 ? 1 : 3);
  return ZSTD_isError(n) ? 0 : n;
}

bool Inflate(Algo a, const std::string& in, size_t n, std::string* page) {
  page->resize(kPageSize);
  if (a == kZlib1 || a == kZlib6) {
    uLongf len = kPageSize;
    return ::uncompress(reinterpret_cast<Bytef*>(page->data()), &len, reinterpret_cast<const Bytef*>(in.data()), n) ==
               Z_OK &&
           len == kPageSize;
  }
  return ZSTD_decompress(page->data(), kPageSize, in.data(), n) == kPageSize;
}

void SetCounters(benchmark::State& state, size_t n) {
  const size_t used = kPageHeaderSize + n;
  const size_t blocks = used <= kPageSize - 4096 ? (used + 4095) / 4096 : 4;
  state.counters["ratio"] = static_cast<double>(n) / kPageSize;
  state.counters["blocks"] = static_cast<double>(blocks);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kPageSize));
}

void BM_PageCompress(benchmark::State& state) {
  const auto algo = static_cast<Algo>(state.range(0));
  const std::string page = FullLeaf(static_cast<Rows>(state.range(1)));
  std::string out, back;
  size_t n = 0;
  for (auto _ : state) {
    n = Compress(algo, page, &out);
    benchmark::DoNotOptimize(out.data());
  }
  if (n == 0 || !Inflate(algo, out, n, &back) || back != page) {
    state.SkipWithError("page does not round-trip");
    return;
  }
  SetCounters(state, n);
}

void BM_PageInflate(benchmark::State& state) {
  const auto algo = static_cast<Algo>(state.range(0));
  const std::string page = FullLeaf(static_cast<Rows>(state.range(1)));
  std::string out, back;
  const size_t n = Compress(algo, page, &out);
  bool ok = n != 0;
  for (auto _ : state) {
    ok = ok && Inflate(algo, out, n, &back);
    benchmark::DoNotOptimize(back.data());
  }
  if (!ok || back != page) {
    state.SkipWithError("page does not round-trip");
    return;
  }
  SetCounters(state, n);
}

// Args: {algorithm: 0 zlib-1, 1 zlib-6, 2 zstd-1, 3 zstd-3}, {rows: 0 sysbench, 1 text}.
BENCHMARK(BM_PageCompress)->ArgsProduct({{kZlib1, kZlib6, kZstd1, kZstd3}, {kSysbench, kText}});
BENCHMARK(BM_PageInflate)->ArgsProduct({{kZlib1, kZlib6, kZstd1, kZstd3}, {kSysbench, kText}});

}  // namespace
}  // namespace shale::storage
