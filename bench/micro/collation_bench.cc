// Micro-benchmarks of string comparison under collations
// (src/common/collation.h): CompareStrings and SortKey (the weight string
// index keys store) for utf8mb4_general_ci (the default), utf8mb4_bin and
// binary, on mixed-case ASCII words with some accented letters.
//
// Each benchmark checks its answer after timing: the order CompareStrings
// gives must be the memcmp order of the SortKeys, or the benchmark reports
// SkipWithError.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "src/common/collation.h"

namespace shale {
namespace {

constexpr int kWords = 1024;

std::vector<std::string> Words() {
  static const char* kPieces[] = {"a", "B", "c", "D", "e", "\xC3\xA9", "\xC3\x84", "s", "\xC3\x9F", "Z", " "};
  std::mt19937_64 rng(11);
  std::vector<std::string> words(kWords);
  for (std::string& w : words) {
    int n = 4 + static_cast<int>(rng() % 28);
    for (int i = 0; i < n; ++i) w += kPieces[rng() % (sizeof(kPieces) / sizeof(kPieces[0]))];
  }
  return words;
}

int Sign(int c) { return c < 0 ? -1 : (c > 0 ? 1 : 0); }

bool OrdersAgree(const std::vector<std::string>& words, uint16_t collation) {
  for (size_t i = 1; i < words.size(); ++i) {
    int c = CompareStrings(words[i - 1], words[i], collation);
    int k = Sign(SortKey(words[i - 1], collation).compare(SortKey(words[i], collation)));
    if (c != k) return false;
  }
  return true;
}

void BM_CompareStrings(benchmark::State& state, uint16_t collation) {
  const std::vector<std::string> words = Words();
  int64_t sum = 0;
  for (auto _ : state) {
    for (size_t i = 1; i < words.size(); ++i) sum += CompareStrings(words[i - 1], words[i], collation);
    benchmark::DoNotOptimize(sum);
  }
  if (!OrdersAgree(words, collation)) state.SkipWithError("CompareStrings and SortKey disagree");
  state.SetItemsProcessed(state.iterations() * (kWords - 1));
}

void BM_SortKey(benchmark::State& state, uint16_t collation) {
  const std::vector<std::string> words = Words();
  size_t bytes = 0;
  for (auto _ : state) {
    for (const std::string& w : words) {
      std::string k = SortKey(w, collation);
      bytes += k.size();
      benchmark::DoNotOptimize(k.data());
    }
  }
  benchmark::DoNotOptimize(bytes);
  if (!OrdersAgree(words, collation)) state.SkipWithError("CompareStrings and SortKey disagree");
  state.SetItemsProcessed(state.iterations() * kWords);
}

BENCHMARK_CAPTURE(BM_CompareStrings, general_ci, kCollationUtf8mb4GeneralCi);
BENCHMARK_CAPTURE(BM_CompareStrings, utf8mb4_bin, kCollationUtf8mb4Bin);
BENCHMARK_CAPTURE(BM_CompareStrings, binary, kCollationBinary);
BENCHMARK_CAPTURE(BM_SortKey, general_ci, kCollationUtf8mb4GeneralCi);
BENCHMARK_CAPTURE(BM_SortKey, utf8mb4_bin, kCollationUtf8mb4Bin);

}  // namespace
}  // namespace shale
