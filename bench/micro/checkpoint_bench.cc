// How long a checkpoint pauses writers, against the number of dirty pages
// in the buffer pool (docs/storage.md, "Checkpoints").
//
// BM_CheckpointPause/<MiB>: a slice store with a 256 MiB pool (no eviction;
// SHALE_BENCH_CACHE_MB sets it, and <MiB> is capped at half of it)
// holds one slice of 96-byte rows; each iteration overwrites rows until
// about <MiB> of distinct pages are dirty, then takes a checkpoint. The
// counters are per checkpoint: `pause_us` (writers held at the gate: what
// SliceStoreStats::checkpoint_pause_last_us reports), `dirty_pages` (pages
// in the data file, all dirty: every leaf gets a rewritten row) and `checkpoint_ms` (the whole checkpoint, writes
// and fsyncs included). The benchmark's own time is the checkpoint's.
//
// Only the public SliceStore API is used, so the same file measures older
// builds of storage/ too (the figures before copy-on-write capture in
// docs/storage.md came from it).
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "storage/slice.h"

namespace shale::storage {
namespace {

void BM_CheckpointPause(benchmark::State& state) {
  // The pool is SHALE_BENCH_CACHE_MB (default 256; the smoke test's 16
  // caps every case at 8 MiB dirty, to stay short).
  const char* cache_env = getenv("SHALE_BENCH_CACHE_MB");
  const uint64_t pool_mb = cache_env != nullptr && *cache_env != '\0' ? std::strtoull(cache_env, nullptr, 10) : 256;
  const uint64_t dirty_bytes = std::min<uint64_t>(static_cast<uint64_t>(state.range(0)), pool_mb / 2) << 20;
  const char* tmp = getenv("TMPDIR");
  std::string dir = std::string(tmp != nullptr ? tmp : "/tmp") + "/shale-ckpt-bench-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    state.SkipWithError("mkdtemp failed");
    return;
  }
  SliceStoreOptions o;
  o.buffer_pool_bytes = pool_mb << 20;
  o.checkpoint_interval_ms = 0;
  o.checkpoint_wal_bytes = 0;
  o.checkpoint_spill_bytes = 0;
  o.wal.sync_mode = WalSyncMode::kAsync;
  o.wal.segment_bytes = 64ull << 20;
  {
    auto store = SliceStore::Open(dir, o);
    if (!store.ok()) {
      state.SkipWithError(store.status().ToString().c_str());
      return;
    }
    auto slice = (*store)->CreateSlice(1);
    if (!slice.ok()) {
      state.SkipWithError(slice.status().ToString().c_str());
      return;
    }
    // Rows of 16 + 80 bytes: about 140 per 16 KiB leaf. Loaded once in key
    // order; each iteration then rewrites one row per leaf of the first
    // dirty_bytes of leaves, so that many pages are dirty.
    const uint64_t pages = dirty_bytes / 16384;
    const uint64_t rows = pages * 140 + 140;
    auto key_of = [](uint64_t i) { return fmt::format("row{:013}", i); };
    for (uint64_t i = 0; i < rows;) {
      WriteBatch b;
      for (int j = 0; j < 1000 && i < rows; ++j, ++i) b.Put(key_of(i), std::string(80, 'a'));
      if (!(*slice)->Write(b).ok()) {
        state.SkipWithError("load failed");
        return;
      }
    }
    if (!(*store)->Checkpoint().ok()) {
      state.SkipWithError("checkpoint failed");
      return;
    }
    uint64_t pause_sum = 0, dirty_sum = 0, checkpoints = 0;
    double ckpt_ms_sum = 0;
    char fill = 'b';
    for (auto _ : state) {
      state.PauseTiming();
      fill = fill == 'z' ? 'b' : static_cast<char>(fill + 1);
      for (uint64_t i = 0; i < rows;) {
        WriteBatch b;
        for (int j = 0; j < 100 && i < rows; ++j, i += 120) b.Put(key_of(i), std::string(80, fill));
        if (!(*slice)->Write(b).ok()) {
          state.SkipWithError("overwrite failed");
          return;
        }
      }
      state.ResumeTiming();
      const auto start = std::chrono::steady_clock::now();
      if (!(*store)->Checkpoint().ok()) {
        state.SkipWithError("checkpoint failed");
        return;
      }
      ckpt_ms_sum += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      SliceStoreStats st = (*store)->GetStoreStats();
      pause_sum += st.checkpoint_pause_last_us;
      ++checkpoints;
      // A leaf holds fewer than 160 of these rows, so rewriting every 120th
      // row dirties every page of the file: data_pages of them.
      dirty_sum += st.data_pages;
    }
    if (checkpoints > 0) {
      state.counters["pause_us"] = static_cast<double>(pause_sum) / static_cast<double>(checkpoints);
      state.counters["dirty_pages"] = static_cast<double>(dirty_sum) / static_cast<double>(checkpoints);
      state.counters["checkpoint_ms"] = ckpt_ms_sum / static_cast<double>(checkpoints);
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}
BENCHMARK(BM_CheckpointPause)->Arg(4)->Arg(32)->Arg(128)->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace
}  // namespace shale::storage
