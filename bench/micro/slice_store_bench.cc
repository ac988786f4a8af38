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
// Every benchmark checks its answers (values read are the ones written for
// their keys; scans are sorted and full) and reports an error otherwise.
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>

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
std::string KeyOf(uint64_t i) { return fmt::format("key{:012}", i * 2654435761u % 1'000'000'000'039u); }
std::string ValueOf(std::string_view key) { return std::string(key) + std::string(80, 'v'); }

std::string TempDir(const char* what) {
  const char* tmp = getenv("TMPDIR");
  std::string tmpl = std::string(tmp != nullptr ? tmp : "/tmp") + "/shale-" + what + "-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) return "";
  return tmpl;
}

// One engine loaded with Keys() keys, built on first use.
class Engines {
 public:
  static Engines& Get() {
    static Engines e;
    return e;
  }
  SliceStore* store(WalSyncMode mode) { return mode == WalSyncMode::kDurable ? durable_.get() : async_.get(); }
  Slice* slice(WalSyncMode mode) { return mode == WalSyncMode::kDurable ? durable_slice_ : async_slice_; }
  rocksdb::DB* db() { return db_.get(); }
  const std::string& error() const { return error_; }

  ~Engines() {
    durable_.reset();
    async_.reset();
    db_.reset();
    std::error_code ec;
    for (const std::string& d : dirs_) std::filesystem::remove_all(d, ec);
  }

 private:
  Engines() {
    for (WalSyncMode mode : {WalSyncMode::kDurable, WalSyncMode::kAsync}) {
      std::string dir = TempDir("store-bench");
      dirs_.push_back(dir);
      SliceStoreOptions o;
      o.buffer_pool_bytes = CacheBytes();
      o.wal.sync_mode = mode;
      auto store = SliceStore::Open(dir, o);
      if (!store.ok()) {
        error_ = store.status().ToString();
        return;
      }
      auto slice = (*store)->CreateSlice(1);
      if (!slice.ok()) {
        error_ = slice.status().ToString();
        return;
      }
      for (uint64_t i = 0; i < Keys();) {
        WriteBatch b;
        for (uint64_t j = 0; j < 1000 && i < Keys(); ++j, ++i) b.Put(KeyOf(i), ValueOf(KeyOf(i)));
        Status s = (*slice)->Write(b);
        if (!s.ok()) {
          error_ = s.ToString();
          return;
        }
      }
      (void)(*store)->Checkpoint();
      if (mode == WalSyncMode::kDurable) {
        durable_ = std::move(*store);
        durable_slice_ = *slice;
      } else {
        async_ = std::move(*store);
        async_slice_ = *slice;
      }
    }
    std::string dir = TempDir("rocksdb-bench");
    dirs_.push_back(dir);
    rocksdb::Options o;
    o.create_if_missing = true;
    o.compression = rocksdb::kNoCompression;
    rocksdb::BlockBasedTableOptions t;
    t.block_cache = rocksdb::NewLRUCache(CacheBytes());
    o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(o, dir, &raw);
    if (!s.ok()) {
      error_ = s.ToString();
      return;
    }
    db_.reset(raw);
    for (uint64_t i = 0; i < Keys();) {
      rocksdb::WriteBatch b;
      for (uint64_t j = 0; j < 1000 && i < Keys(); ++j, ++i) b.Put(KeyOf(i), ValueOf(KeyOf(i)));
      s = db_->Write(rocksdb::WriteOptions(), &b);
      if (!s.ok()) {
        error_ = s.ToString();
        return;
      }
    }
    (void)db_->Flush(rocksdb::FlushOptions());
  }

  std::vector<std::string> dirs_;
  std::unique_ptr<SliceStore> durable_, async_;
  Slice* durable_slice_ = nullptr;
  Slice* async_slice_ = nullptr;
  std::unique_ptr<rocksdb::DB> db_;
  std::string error_;
};

bool Ready(benchmark::State& state) {
  if (!Engines::Get().error().empty()) {
    state.SkipWithError(Engines::Get().error().c_str());
    return false;
  }
  return true;
}

void BM_SliceStore_PointRead(benchmark::State& state) {
  if (!Ready(state)) return;
  Slice* slice = Engines::Get().slice(WalSyncMode::kAsync);
  std::mt19937_64 rng(1);
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
BENCHMARK(BM_SliceStore_PointRead);

void BM_RocksDB_PointRead(benchmark::State& state) {
  if (!Ready(state)) return;
  rocksdb::DB* db = Engines::Get().db();
  std::mt19937_64 rng(1);
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
BENCHMARK(BM_RocksDB_PointRead);

void SliceInsert(benchmark::State& state, WalSyncMode mode) {
  if (!Ready(state)) return;
  Slice* slice = Engines::Get().slice(mode);
  static uint64_t next[2] = {0, 0};
  uint64_t& n = next[mode == WalSyncMode::kDurable ? 0 : 1];
  for (auto _ : state) {
    std::string k = KeyOf(Keys() + n++) + "i";
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
BENCHMARK(BM_SliceStore_InsertDurable);
BENCHMARK(BM_SliceStore_InsertAsync);

void RocksInsert(benchmark::State& state, bool sync) {
  if (!Ready(state)) return;
  rocksdb::DB* db = Engines::Get().db();
  static uint64_t next = 0;
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  for (auto _ : state) {
    std::string k = KeyOf(Keys() + next++) + "i";
    if (!db->Put(wo, k, ValueOf(k)).ok()) {
      state.SkipWithError("insert failed");
      return;
    }
  }
}
void BM_RocksDB_InsertDurable(benchmark::State& state) { RocksInsert(state, true); }
void BM_RocksDB_InsertAsync(benchmark::State& state) { RocksInsert(state, false); }
BENCHMARK(BM_RocksDB_InsertDurable);
BENCHMARK(BM_RocksDB_InsertAsync);

constexpr int kScanRows = 10;

void BM_SliceStore_Scan10(benchmark::State& state) {
  if (!Ready(state)) return;
  Slice* slice = Engines::Get().slice(WalSyncMode::kAsync);
  std::mt19937_64 rng(2);
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
BENCHMARK(BM_SliceStore_Scan10);

void BM_RocksDB_Scan10(benchmark::State& state) {
  if (!Ready(state)) return;
  rocksdb::DB* db = Engines::Get().db();
  std::mt19937_64 rng(2);
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
BENCHMARK(BM_RocksDB_Scan10);

}  // namespace
}  // namespace shale::storage
