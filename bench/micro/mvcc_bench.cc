// MVCC point reads (storage/mvcc.h) against plain slice reads: what a
// snapshot read of a row costs over reading an unversioned key. Two slices
// of one store hold the same keys (SHALE_BENCH_KEYS, default 100k): one
// plain, one as versions — each key written three times (three versions),
// so a read at the newest snapshot seeks past none and a read at the first
// snapshot steps over two newer versions. Every value read is checked.
// BM_MvccGetByIterator is how MvccSlice::Get read before it had the
// B+tree seek (Slice::Seek): an iterator opened over the key's versions
// and its first entry taken; it stays as the baseline of the seek.
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "storage/mvcc.h"
#include "storage/slice.h"

namespace shale::storage {
namespace {

uint64_t Keys() {
  const char* env = getenv("SHALE_BENCH_KEYS");
  return env != nullptr ? std::stoull(env) : 100'000;
}

std::string KeyOf(uint64_t i) { return fmt::format("row{:010}", i * 2654435761u % 10'000'000'019u); }
std::string ValueOf(const std::string& key, int version) { return fmt::format("{}:{}:", key, version) + std::string(60, 'v'); }

class BenchStore {
 public:
  static BenchStore& Get() {
    static BenchStore store;
    return store;
  }
  Slice* plain = nullptr;
  std::unique_ptr<MvccSlice> mvcc;
  std::string error;

 private:
  BenchStore() {
    const char* tmp = getenv("TMPDIR");
    std::string tmpl = std::string(tmp != nullptr ? tmp : "/tmp") + "/shale-mvcc-bench-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      error = "mkdtemp failed";
      return;
    }
    dir_ = tmpl;
    SliceStoreOptions options;
    options.wal.sync_mode = WalSyncMode::kAsync;
    auto store = SliceStore::Open(dir_, options);
    if (!store.ok()) {
      error = store.status().ToString();
      return;
    }
    store_ = std::move(*store);
    plain = *store_->CreateSlice(1);
    mvcc = std::make_unique<MvccSlice>(*store_->CreateSlice(2));
    const uint64_t n = Keys();
    for (int version = 1; version <= 3; ++version) {
      for (uint64_t start = 0; start < n; start += 1000) {
        WriteBatch batch;
        for (uint64_t i = start; i < std::min(n, start + 1000); ++i) {
          std::string key = KeyOf(i);
          batch.Put(key, ValueOf(key, version));
        }
        Status st = version == 3 ? plain->Write(batch) : Status::OK();
        if (st.ok()) st = mvcc->Write(batch, version * 10 - 1, version * 10);
        if (!st.ok()) {
          error = st.ToString();
          return;
        }
      }
    }
  }
  ~BenchStore() {
    store_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::string dir_;
  std::unique_ptr<SliceStore> store_;
};

void Read(benchmark::State& state, bool versioned, uint64_t snapshot, int expect_version) {
  BenchStore& s = BenchStore::Get();
  if (!s.error.empty()) {
    state.SkipWithError(s.error.c_str());
    return;
  }
  std::mt19937_64 rnd(42);
  const uint64_t n = Keys();
  std::string value;
  for (auto _ : state) {
    std::string key = KeyOf(rnd() % n);
    Status st = versioned ? s.mvcc->Get(ReadOptions{snapshot}, key, &value) : s.plain->Get(key, &value);
    if (!st.ok() || value != ValueOf(key, expect_version)) {
      state.SkipWithError("wrong value read");
      return;
    }
  }
}

// The pre-seek MvccSlice::Get: an iterator over [(key, snapshot), (key, 0)].
void BM_MvccGetByIterator(benchmark::State& state) {
  BenchStore& s = BenchStore::Get();
  if (!s.error.empty()) {
    state.SkipWithError(s.error.c_str());
    return;
  }
  std::mt19937_64 rnd(42);
  const uint64_t n = Keys();
  std::string value;
  for (auto _ : state) {
    std::string key = KeyOf(rnd() % n);
    KeyRange r;
    r.has_start = true;
    r.start = EncodeVersionKey(key, kLatestSnapshot);
    r.has_end = true;
    r.end = EncodeVersionKey(key, 0);
    auto it = s.mvcc->slice()->NewIterator(r);
    if (!it->Valid() || it->value().empty() || it->value()[0] != 1) {
      state.SkipWithError("no version read");
      return;
    }
    value.assign(it->value().substr(1));
    if (value != ValueOf(key, 3)) {
      state.SkipWithError("wrong value read");
      return;
    }
  }
}

void BM_PlainSliceGet(benchmark::State& state) { Read(state, false, 0, 3); }
void BM_MvccGetNewest(benchmark::State& state) { Read(state, true, kLatestSnapshot, 3); }
void BM_MvccGetOldest(benchmark::State& state) { Read(state, true, 15, 1); }
BENCHMARK(BM_PlainSliceGet);
BENCHMARK(BM_MvccGetNewest);
BENCHMARK(BM_MvccGetOldest);
BENCHMARK(BM_MvccGetByIterator);

}  // namespace
}  // namespace shale::storage
