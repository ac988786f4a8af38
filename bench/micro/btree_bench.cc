// B+tree micro-benchmarks (storage/btree.h) on a tree of 100k keys whose
// pages all fit in the buffer pool: random point reads, random inserts and
// short range scans (10 rows from a random start). The data file lives in a
// fresh directory under $TMPDIR (default /tmp), removed at exit.
//
// Each benchmark checks its answers — every value read must be the one
// written for its key, scans must be sorted and full — and reports an error
// instead of a speed if one is wrong.
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "storage/btree.h"

namespace shale::storage {
namespace {

constexpr uint64_t kKeys = 100'000;

std::string KeyOf(uint64_t i) { return fmt::format("key{:010}", i * 2654435761u % 10'000'000'019u); }
std::string ValueOf(const std::string& key) { return key + std::string(80, 'v'); }

// The shared tree, built on first use.
class BenchTree {
 public:
  static BenchTree& Get() {
    static BenchTree tree;
    return tree;
  }
  BTree* tree() { return tree_.get(); }
  const std::string& error() const { return error_; }

 private:
  BenchTree() {
    const char* tmp = getenv("TMPDIR");
    std::string tmpl = std::string(tmp != nullptr ? tmp : "/tmp") + "/shale-btree-bench-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      error_ = "mkdtemp failed";
      return;
    }
    dir_ = tmpl;
    auto file = PageFile::Open(dir_ + "/bench.pages");
    if (!file.ok()) {
      error_ = file.status().ToString();
      return;
    }
    file_ = std::move(*file);
    pool_ = std::make_unique<BufferPool>(file_.get(), BufferPoolOptions{4096});
    auto tree = BTree::Open(pool_.get());
    if (!tree.ok()) {
      error_ = tree.status().ToString();
      return;
    }
    tree_ = std::move(*tree);
    for (uint64_t i = 0; i < kKeys; ++i) {
      std::string key = KeyOf(i);
      Status s = tree_->Put(key, ValueOf(key));
      if (!s.ok()) {
        error_ = s.ToString();
        return;
      }
    }
  }
  ~BenchTree() {
    tree_.reset();
    pool_.reset();
    file_.reset();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  std::string dir_;
  std::string error_;
  std::unique_ptr<PageFile> file_;
  std::unique_ptr<BufferPool> pool_;
  std::unique_ptr<BTree> tree_;
};

BTree* TreeOrSkip(benchmark::State& state) {
  BenchTree& t = BenchTree::Get();
  if (!t.error().empty() || t.tree() == nullptr) {
    state.SkipWithError(("cannot build the tree: " + t.error()).c_str());
    return nullptr;
  }
  return t.tree();
}

void BM_BTreeRandomGet(benchmark::State& state) {
  BTree* tree = TreeOrSkip(state);
  if (tree == nullptr) return;
  std::mt19937_64 rng(1);
  std::string value;
  for (auto _ : state) {
    std::string key = KeyOf(rng() % kKeys);
    Status s = tree->Get(key, &value);
    if (!s.ok() || value != ValueOf(key)) {
      state.SkipWithError(("wrong answer for " + key + ": " + s.ToString()).c_str());
      return;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void BM_BTreeRandomInsert(benchmark::State& state) {
  BTree* tree = TreeOrSkip(state);
  if (tree == nullptr) return;
  // New keys, disjoint from the loaded ones and from earlier runs.
  static uint64_t next = 0;
  uint64_t first = next;
  for (auto _ : state) {
    std::string key = "ins" + KeyOf(next++);
    Status s = tree->Put(key, ValueOf(key));
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  std::string value;
  for (uint64_t i = first; i < next; i += 97) {
    std::string key = "ins" + KeyOf(i);
    if (!tree->Get(key, &value).ok() || value != ValueOf(key)) {
      state.SkipWithError(("inserted key not readable: " + key).c_str());
      return;
    }
  }
}

void BM_BTreeShortScan(benchmark::State& state) {
  BTree* tree = TreeOrSkip(state);
  if (tree == nullptr) return;
  const int rows = static_cast<int>(state.range(0));
  std::mt19937_64 rng(2);
  for (auto _ : state) {
    KeyRange range;
    range.has_start = true;
    range.start = "key" + fmt::format("{:010}", rng() % 9'000'000'000u);  // leaves room for `rows` keys after it
    range.has_end = true;
    range.end = "key~";  // before the inserted "ins..." keys
    auto it = tree->NewIterator(range);
    std::string prev = range.start;
    int n = 0;
    for (; it->Valid() && n < rows; it->Next(), ++n) {
      if (it->key() < prev || it->value() != ValueOf(std::string(it->key()))) {
        state.SkipWithError("scan out of order or wrong value");
        return;
      }
      prev = std::string(it->key());
    }
    if (!it->status().ok() || n != rows) {
      state.SkipWithError("short scan returned too few rows");
      return;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * rows);
}

BENCHMARK(BM_BTreeRandomGet);
BENCHMARK(BM_BTreeRandomInsert);
BENCHMARK(BM_BTreeShortScan)->Arg(10);

}  // namespace
}  // namespace shale::storage
