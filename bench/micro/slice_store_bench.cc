// The slice store (storage/slice.h: B+tree on pages + WAL) against RocksDB
// (Debian's librocksdb) on the same machine: random point reads, random
// inserts and 10-row range scans over a loaded key set.
//
// Sizes: SHALE_BENCH_KEYS keys are loaded (default 100000; set 1000000 or
// 10000000 for the figures). Both engines get the same cache
// (SHALE_BENCH_CACHE_MB, default 256: the buffer pool / RocksDB block cache)
// and no compression.
//
// Durability is made comparable per benchmark:
//  - *_InsertDurable: every insert is durable when acknowledged (slice store
//    --wal-sync=durable, group commit; RocksDB WriteOptions::sync = true).
//  - *_InsertAsync: acknowledged before fsync (slice store async WAL,
//    flushed within 10 ms; RocksDB sync = false, WAL in the OS cache).
// Data files live in fresh directories under $TMPDIR (default /tmp),
// removed at exit.
//
// Each benchmark also runs with 2 threads (":threads:2"; real time, and
// items_per_second summed over the threads): reads and scans share the
// loaded engine, inserts write disjoint fresh keys.
//
// The engines are loaded once per process, on first use, in key order
// through the same public API the benchmarks use (slice Write batches of
// 1000 rows; RocksDB WriteBatch of 1000): the load is set-up, not what is
// measured, and a random-order load of 10M rows into a B+tree four times
// the pool took 25 minutes on the shared VM. The measured inserts are in
// random order.
//
// Every benchmark checks its answers (values read are the ones written for
// their keys; scans are sorted and full) and reports an error otherwise.
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/cache.h>

#include "storage/slice.h"

namespace shale::storage {
namespace {

uint64_t EnvOr(const char* name, uint64_t dflt) {
  const char* v = getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : dflt;
}

uint64_t Keys() {
  static const uint64_t n = EnvOr("SHALE_BENCH_KEYS", 100'000);
  return n;
}
uint64_t CacheBytes() { return EnvOr("SHALE_BENCH_CACHE_MB", 256) << 20; }

// Loaded keys are KeyOf(0 .. Keys()-1), spread over the key space;
// inserts use fresh keys beyond them.
uint64_t KeyNumber(uint64_t i) { return i * 2654435761u % 1'000'000'000'039u; }
std::string KeyOf(uint64_t i) { return fmt::format("key{:012}", KeyNumber(i)); }
std::string ValueOf(std::string_view key) { return std::string(key) + std::string(80, 'v'); }

// The loaded keys in key order (KeyOf is zero-padded, so numeric order is
// key order). Computed once: about 320 MB at 10M keys.
const std::vector<std::string>& LoadOrder() {
  static const std::vector<std::string> keys = [] {
    std::vector<uint64_t> ids(Keys());
    for (uint64_t i = 0; i < Keys(); ++i) ids[i] = i;
    std::sort(ids.begin(), ids.end(), [](uint64_t a, uint64_t b) {
      return KeyNumber(a) < KeyNumber(b);
    });
    std::vector<std::string> out;
    out.reserve(ids.size());
    for (uint64_t i : ids) out.push_back(KeyOf(i));
    return out;
  }();
  return keys;
}

std::string TempDir(const char* what) {
  const char* tmp = getenv("TMPDIR");
  std::string tmpl = std::string(tmp != nullptr ? tmp : "/tmp") + "/shale-" + what + "-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) return "";
  return tmpl;
}

// The engines, each loaded with Keys() keys on first use (so a filtered run
// loads only what it measures: at 10M keys, leave out the *Durable
// benchmarks to skip loading the durable store).
class Engines {
 public:
  static Engines& Get() {
    static Engines e;
    return e;
  }
  Slice* slice(WalSyncMode mode) {
    const int i = mode == WalSyncMode::kDurable ? 0 : 1;
    std::call_once(store_once_[i], [&] { LoadStore(mode, i); });
    return slices_[i];
  }
  rocksdb::DB* db() {
    std::call_once(db_once_, [&] { LoadRocks(); });
    return db_.get();
  }
  std::string error() {
    std::lock_guard<std::mutex> l(mu_);
    return error_;
  }

  // Closes the engines and removes their directories. Runs from atexit,
  // registered again after each engine is opened, so the last registration
  // runs before the static objects RocksDB (and the slice store) created
  // while opening are destroyed -- this object itself was constructed before
  // them and is destroyed after them, too late to close a DB.
  static void CloseAll() { Get().Close(); }
  void Close() {
    for (auto& s : stores_) s.reset();
    db_.reset();
    std::lock_guard<std::mutex> l(mu_);
    std::error_code ec;
    for (const std::string& d : dirs_) std::filesystem::remove_all(d, ec);
    dirs_.clear();
  }

 private:
  Engines() = default;
  static void CloseAtExit() { std::atexit(&Engines::CloseAll); }
  void Fail(const std::string& e) {
    std::lock_guard<std::mutex> l(mu_);
    error_ = e;
  }
  std::string NewDir(const char* what) {
    std::string dir = TempDir(what);
    std::lock_guard<std::mutex> l(mu_);
    dirs_.push_back(dir);
    return dir;
  }

  void LoadStore(WalSyncMode mode, int i) {
    SliceStoreOptions o;
    o.buffer_pool_bytes = CacheBytes();
    o.wal.sync_mode = mode;
    auto store = SliceStore::Open(NewDir("store-bench"), o);
    CloseAtExit();
    if (!store.ok()) return Fail(store.status().ToString());
    auto slice = (*store)->CreateSlice(1);
    if (!slice.ok()) return Fail(slice.status().ToString());
    const std::vector<std::string>& keys = LoadOrder();
    for (size_t k = 0; k < keys.size();) {
      WriteBatch b;
      for (uint64_t j = 0; j < 1000 && k < keys.size(); ++j, ++k) b.Put(keys[k], ValueOf(keys[k]));
      Status s = (*slice)->Write(b);
      if (!s.ok()) return Fail(s.ToString());
    }
    (void)(*store)->Checkpoint();
    stores_[i] = std::move(*store);
    slices_[i] = *slice;
  }

  void LoadRocks() {
    rocksdb::Options o;
    o.create_if_missing = true;
    o.compression = rocksdb::kNoCompression;
    rocksdb::BlockBasedTableOptions t;
    t.block_cache = rocksdb::NewLRUCache(CacheBytes());
    o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(o, NewDir("rocksdb-bench"), &raw);
    CloseAtExit();
    if (!s.ok()) return Fail(s.ToString());
    db_.reset(raw);
    const std::vector<std::string>& keys = LoadOrder();
    for (size_t i = 0; i < keys.size();) {
      rocksdb::WriteBatch b;
      for (uint64_t j = 0; j < 1000 && i < keys.size(); ++j, ++i) b.Put(keys[i], ValueOf(keys[i]));
      s = db_->Write(rocksdb::WriteOptions(), &b);
      if (!s.ok()) return Fail(s.ToString());
    }
    (void)db_->Flush(rocksdb::FlushOptions());
  }

  std::mutex mu_;
  std::vector<std::string> dirs_;  // GUARDED_BY(mu_)
  std::string error_;              // GUARDED_BY(mu_)
  std::once_flag store_once_[2], db_once_;
  std::unique_ptr<SliceStore> stores_[2];
  Slice* slices_[2] = {nullptr, nullptr};
  std::unique_ptr<rocksdb::DB> db_;
};

// Reports items_per_second (summed over threads) when the benchmark ends.
struct CountItems {
  benchmark::State& state;
  ~CountItems() { state.SetItemsProcessed(static_cast<int64_t>(state.iterations())); }
};

// REQUIRES: the engine the benchmark uses was asked for first (loading it).
bool Ready(benchmark::State& state) {
  const std::string error = Engines::Get().error();
  if (!error.empty()) {
    state.SkipWithError(error.c_str());
    return false;
  }
  return true;
}

void BM_SliceStore_PointRead(benchmark::State& state) {
  Slice* slice = Engines::Get().slice(WalSyncMode::kAsync);
  if (!Ready(state) || slice == nullptr) return;
  CountItems count{state};
  std::mt19937_64 rng(1 + state.thread_index());
  std::string v;
  for (auto _ : state) {
    std::string k = KeyOf(rng() % Keys());
    Status s = slice->Get(k, &v);
    if (!s.ok() || v != ValueOf(k)) {
      state.SkipWithError("wrong point read");
      return;
    }
  }
}
BENCHMARK(BM_SliceStore_PointRead)->Threads(1)->Threads(2)->UseRealTime();

void BM_RocksDB_PointRead(benchmark::State& state) {
  rocksdb::DB* db = Engines::Get().db();
  if (!Ready(state) || db == nullptr) return;
  CountItems count{state};
  std::mt19937_64 rng(1 + state.thread_index());
  std::string v;
  for (auto _ : state) {
    std::string k = KeyOf(rng() % Keys());
    rocksdb::Status s = db->Get(rocksdb::ReadOptions(), k, &v);
    if (!s.ok() || v != ValueOf(k)) {
      state.SkipWithError("wrong point read");
      return;
    }
  }
}
BENCHMARK(BM_RocksDB_PointRead)->Threads(1)->Threads(2)->UseRealTime();

void SliceInsert(benchmark::State& state, WalSyncMode mode) {
  Slice* slice = Engines::Get().slice(mode);
  if (!Ready(state) || slice == nullptr) return;
  CountItems count{state};
  static std::atomic<uint64_t> next[2] = {0, 0};
  std::atomic<uint64_t>& n = next[mode == WalSyncMode::kDurable ? 0 : 1];
  for (auto _ : state) {
    std::string k = KeyOf(Keys() + n.fetch_add(1)) + "i";
    WriteBatch b;
    b.Put(k, ValueOf(k));
    if (!slice->Write(b).ok()) {
      state.SkipWithError("insert failed");
      return;
    }
  }
}
void BM_SliceStore_InsertDurable(benchmark::State& state) { SliceInsert(state, WalSyncMode::kDurable); }
void BM_SliceStore_InsertAsync(benchmark::State& state) { SliceInsert(state, WalSyncMode::kAsync); }
BENCHMARK(BM_SliceStore_InsertDurable)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_SliceStore_InsertAsync)->Threads(1)->Threads(2)->UseRealTime();

void RocksInsert(benchmark::State& state, bool sync) {
  rocksdb::DB* db = Engines::Get().db();
  if (!Ready(state) || db == nullptr) return;
  CountItems count{state};
  static std::atomic<uint64_t> next{0};
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  for (auto _ : state) {
    std::string k = KeyOf(Keys() + next.fetch_add(1)) + "i";
    if (!db->Put(wo, k, ValueOf(k)).ok()) {
      state.SkipWithError("insert failed");
      return;
    }
  }
}
void BM_RocksDB_InsertDurable(benchmark::State& state) { RocksInsert(state, true); }
void BM_RocksDB_InsertAsync(benchmark::State& state) { RocksInsert(state, false); }
BENCHMARK(BM_RocksDB_InsertDurable)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_RocksDB_InsertAsync)->Threads(1)->Threads(2)->UseRealTime();

constexpr int kScanRows = 10;

void BM_SliceStore_Scan10(benchmark::State& state) {
  Slice* slice = Engines::Get().slice(WalSyncMode::kAsync);
  if (!Ready(state) || slice == nullptr) return;
  CountItems count{state};
  std::mt19937_64 rng(2 + state.thread_index());
  for (auto _ : state) {
    KeyRange r;
    r.has_start = true;
    r.start = KeyOf(rng() % Keys());
    auto it = slice->NewIterator(r);
    int n = 0;
    std::string prev;
    for (; it->Valid() && n < kScanRows; it->Next(), ++n) {
      if (it->key() < prev || it->value().size() < it->key().size()) {
        state.SkipWithError("scan out of order");
        return;
      }
      prev = std::string(it->key());
    }
    if (!it->status().ok()) {
      state.SkipWithError("scan failed");
      return;
    }
    benchmark::DoNotOptimize(n);
  }
}
BENCHMARK(BM_SliceStore_Scan10)->Threads(1)->Threads(2)->UseRealTime();

void BM_RocksDB_Scan10(benchmark::State& state) {
  rocksdb::DB* db = Engines::Get().db();
  if (!Ready(state) || db == nullptr) return;
  CountItems count{state};
  std::mt19937_64 rng(2 + state.thread_index());
  for (auto _ : state) {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
    int n = 0;
    std::string prev;
    for (it->Seek(KeyOf(rng() % Keys())); it->Valid() && n < kScanRows; it->Next(), ++n) {
      if (it->key().ToString() < prev || it->value().size() < it->key().size()) {
        state.SkipWithError("scan out of order");
        return;
      }
      prev = it->key().ToString();
    }
    if (!it->status().ok()) {
      state.SkipWithError("scan failed");
      return;
    }
    benchmark::DoNotOptimize(n);
  }
}
BENCHMARK(BM_RocksDB_Scan10)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace
}  // namespace shale::storage
