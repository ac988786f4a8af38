#include "storage/btree.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "src/common/testing/temp_dir.h"

namespace shale::storage {
namespace {

using Model = std::map<std::string, std::string>;

// A data file, its pool and the tree on it; Reopen() closes all three
// cleanly (FlushAll) and opens them again.
class TreeHarness {
 public:
  TreeHarness(const std::string& dir, size_t frames) : path_(dir + "/tree.pages"), frames_(frames) { Open(); }
  ~TreeHarness() { Close(); }

  void Open() {
    auto file = PageFile::Open(path_);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    file_ = std::move(*file);
    pool_ = std::make_unique<BufferPool>(file_.get(), BufferPoolOptions{frames_});
    auto tree = BTree::Open(pool_.get());
    ASSERT_TRUE(tree.ok()) << tree.status().ToString();
    tree_ = std::move(*tree);
  }
  void Close() {
    if (pool_ != nullptr) {
      EXPECT_TRUE(pool_->FlushAll().ok());
    }
    tree_.reset();
    pool_.reset();
    file_.reset();
  }
  void Reopen() {
    Close();
    Open();
  }

  BTree* tree() { return tree_.get(); }
  BufferPool* pool() { return pool_.get(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  size_t frames_;
  std::unique_ptr<PageFile> file_;
  std::unique_ptr<BufferPool> pool_;
  std::unique_ptr<BTree> tree_;
};

// Every row of `range`, in order; fails the test on an iterator error.
Model Scan(BTree* tree, const KeyRange& range, size_t limit = SIZE_MAX) {
  Model out;
  std::string prev;
  bool first = true;
  auto it = tree->NewIterator(range);
  for (; it->Valid() && out.size() < limit; it->Next()) {
    std::string k(it->key());
    EXPECT_TRUE(first || prev < k) << "iteration out of order";
    first = false;
    prev = k;
    out.emplace(k, std::string(it->value()));
  }
  EXPECT_TRUE(it->status().ok()) << it->status().ToString();
  return out;
}

Model ModelRange(const Model& m, const KeyRange& range, size_t limit = SIZE_MAX) {
  Model out;
  for (const auto& [k, v] : m) {
    if (out.size() >= limit) break;
    if (range.Contains(k)) out.emplace(k, v);
  }
  return out;
}

void ExpectTreeEquals(BTree* tree, const Model& model) {
  Model all = Scan(tree, KeyRange::All());
  ASSERT_EQ(all.size(), model.size());
  EXPECT_TRUE(all == model);
  auto check = tree->TEST_Check();
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_EQ(check->entries, model.size());
}

struct Workload {
  size_t key_space;
  size_t min_key_len, max_key_len;
  size_t max_value_len;
};

std::string MakeKey(std::mt19937_64& rng, const Workload& w) {
  size_t n = rng() % w.key_space;
  std::string key = fmt::format("{:08}", n * 7919 % w.key_space);
  // A key's length is fixed by n; some keys are 3 bytes, prefixes of others.
  size_t len = n % 11 == 0 ? 3 : w.min_key_len + (n * 31) % (w.max_key_len - w.min_key_len + 1);
  if (key.size() > len) {
    key.resize(len);
  } else {
    key.resize(len, static_cast<char>('a' + n % 26));
  }
  return key;
}

KeyRange RandomRange(std::mt19937_64& rng, const Workload& w) {
  KeyRange r;
  r.has_start = rng() % 4 != 0;
  r.start = MakeKey(rng, w);
  r.start_inclusive = rng() % 2 == 0;
  r.has_end = rng() % 4 != 0;
  r.end = MakeKey(rng, w);
  r.end_inclusive = rng() % 2 == 0;
  if (r.has_start && r.has_end && r.end < r.start) std::swap(r.start, r.end);
  return r;
}

struct RunStats {
  uint32_t max_height = 0;
  uint64_t max_pages = 0;  // data file size in pages at the peak
};

// Runs `ops` random operations against tree and model, in three phases:
// mostly inserts (growing), mixed, mostly deletes (shrinking, merging).
void RunRandomized(TreeHarness* h, Model* model, const Workload& w, int ops, uint64_t seed, RunStats* stats) {
  std::mt19937_64 rng(seed);
  for (int step = 0; step < ops; ++step) {
    int phase = step * 3 / ops;  // 0: grow, 1: churn, 2: shrink
    int put_pct = phase == 0 ? 75 : phase == 1 ? 45 : 15;
    int roll = static_cast<int>(rng() % 100);
    std::string key = MakeKey(rng, w);
    if (roll < put_pct) {
      size_t vlen = rng() % 4 == 0 ? rng() % (w.max_value_len + 1) : rng() % 64;
      vlen = std::min(vlen, kMaxEntryBytes - key.size());
      std::string value(vlen, static_cast<char>('A' + step % 26));
      if (!value.empty()) value[0] = static_cast<char>(step);
      ASSERT_TRUE(h->tree()->Put(key, value).ok()) << step;
      (*model)[key] = value;
    } else if (roll < 92) {
      Status s = h->tree()->Delete(key);
      bool present = model->erase(key) == 1;
      ASSERT_EQ(s.ok(), present) << step << " " << s.ToString();
      if (!present) {
        ASSERT_TRUE(s.IsNotFound());
      }
    } else if (roll < 97) {
      std::string v;
      Status s = h->tree()->Get(key, &v);
      auto it = model->find(key);
      ASSERT_EQ(s.ok(), it != model->end()) << step;
      if (s.ok()) {
        ASSERT_EQ(v, it->second);
      }
    } else {
      KeyRange r = RandomRange(rng, w);
      ASSERT_TRUE(Scan(h->tree(), r, 40) == ModelRange(*model, r, 40)) << step;
    }
    if (step % 5000 == 4999) {
      auto check = h->tree()->TEST_Check();
      ASSERT_TRUE(check.ok()) << check.status().ToString();
      ASSERT_EQ(check->entries, model->size());
      stats->max_height = std::max(stats->max_height, check->height);
      stats->max_pages = std::max(stats->max_pages, check->leaf_pages + check->internal_pages);
    }
  }
}

TEST(BTreeTest, EmptyTree) {
  shale::testing::TempDir dir;
  TreeHarness h(dir.path(), 8);
  std::string v;
  EXPECT_TRUE(h.tree()->Get("a", &v).IsNotFound());
  EXPECT_TRUE(h.tree()->Delete("a").IsNotFound());
  EXPECT_FALSE(h.tree()->NewIterator(KeyRange::All())->Valid());
  ASSERT_TRUE(h.tree()->Put("", "empty key").ok());
  ASSERT_TRUE(h.tree()->Get("", &v).ok());
  EXPECT_EQ(v, "empty key");
}

TEST(BTreeTest, EntryLimits) {
  shale::testing::TempDir dir;
  TreeHarness h(dir.path(), 8);
  EXPECT_EQ(h.tree()->Put(std::string(kMaxKeyBytes + 1, 'k'), "v").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(h.tree()->Put("k", std::string(kMaxEntryBytes, 'v')).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(h.tree()->Put(std::string(kMaxKeyBytes, 'k'), std::string(kMaxEntryBytes - kMaxKeyBytes, 'v')).ok());
  EXPECT_TRUE(h.tree()->Put("k", std::string(kMaxEntryBytes - 1, 'v')).ok());
  // Many maximal entries: every split must still fit (invariant 5).
  Model model;
  for (int i = 0; i < 200; ++i) {
    std::string key = fmt::format("{:04}", (i * 37) % 200) + std::string(kMaxKeyBytes - 4, 'p');
    std::string value(kMaxEntryBytes - key.size(), static_cast<char>('a' + i % 26));
    ASSERT_TRUE(h.tree()->Put(key, value).ok()) << i;
    model[key] = value;
  }
  model[std::string(kMaxKeyBytes, 'k')] = std::string(kMaxEntryBytes - kMaxKeyBytes, 'v');
  model["k"] = std::string(kMaxEntryBytes - 1, 'v');
  ExpectTreeEquals(h.tree(), model);
}

// Seek (the first key in [start, last]) against the model's lower_bound,
// after deleting runs of keys so that many probes fall between a leaf's last
// key and its upper fence (the seek then continues at the next leaf).
TEST(BTreeTest, SeekMatchesModelAcrossLeafGaps) {
  shale::testing::TempDir dir;
  TreeHarness h(dir.path(), 32);
  Model model;
  for (int i = 0; i < 6000; ++i) {
    std::string key = fmt::format("k{:06}", i) + std::string(100, 'p');
    std::string value = fmt::format("v{}", i);
    ASSERT_TRUE(h.tree()->Put(key, value).ok());
    model[key] = value;
  }
  // Delete runs of 40 keys out of every 100 (not enough to empty whole
  // leaves everywhere, enough to leave gaps before many fences).
  for (int i = 0; i < 6000; ++i) {
    if (i % 100 < 60) continue;
    std::string key = fmt::format("k{:06}", i) + std::string(100, 'p');
    ASSERT_TRUE(h.tree()->Delete(key).ok());
    model.erase(key);
  }
  auto check = h.tree()->TEST_Check();
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  ASSERT_GE(check->height, 2u);
  std::mt19937 rnd(7);
  for (int probe = 0; probe < 20000; ++probe) {
    const int i = static_cast<int>(rnd() % 6100);
    std::string start = fmt::format("k{:06}", i);  // a prefix: below the key of i
    std::string last = fmt::format("k{:06}", i + static_cast<int>(rnd() % 60));
    auto want = model.lower_bound(start);
    const bool want_found = want != model.end() && want->first <= last;
    std::string key, value;
    Status st = h.tree()->Seek(start, last, &key, &value);
    if (!want_found) {
      ASSERT_TRUE(st.IsNotFound()) << start << " " << last << ": " << st.ToString() << " " << key;
      continue;
    }
    ASSERT_TRUE(st.ok()) << start << ": " << st.ToString();
    ASSERT_EQ(key, want->first);
    ASSERT_EQ(value, want->second);
    // Key and value outputs are optional.
    ASSERT_TRUE(h.tree()->Seek(start, last, nullptr, nullptr).ok());
  }
  std::string key;
  EXPECT_TRUE(h.tree()->Seek("l", "z", &key, nullptr).IsNotFound());  // past every key
  EXPECT_TRUE(h.tree()->Seek("a", "b", &key, nullptr).IsNotFound());  // before every key
  ASSERT_TRUE(h.tree()->Seek("", "\xff", &key, nullptr).ok());
  EXPECT_EQ(key, model.begin()->first);
}

// Small keys: wide pages, many leaves; the pool holds under a tenth of the
// data at its peak.
TEST(BTreeTest, RandomizedAgainstModelSmallKeys) {
  shale::testing::TempDir dir;
  TreeHarness h(dir.path(), 10);
  Model model;
  Workload w{20000, 4, 24, 1200};
  RunStats stats;
  RunRandomized(&h, &model, w, 45000, 1, &stats);
  ExpectTreeEquals(h.tree(), model);
  EXPECT_GE(stats.max_pages, 10 * h.pool()->frame_count());
  EXPECT_GE(stats.max_height, 2u);
  EXPECT_GT(h.pool()->stats().evictions, 1000u);
  h.Reopen();
  ExpectTreeEquals(h.tree(), model);
}

// Large keys: fan-out ~8, so the tree is 4-5 levels deep and internal pages
// split and merge often.
TEST(BTreeTest, RandomizedAgainstModelLargeKeys) {
  shale::testing::TempDir dir;
  TreeHarness h(dir.path(), 16);
  Model model;
  Workload w{3000, 200, kMaxKeyBytes, 1500};
  RunStats stats;
  RunRandomized(&h, &model, w, 15000, 2, &stats);
  EXPECT_GE(stats.max_pages, 10 * h.pool()->frame_count());
  EXPECT_GE(stats.max_height, 4u);
  ExpectTreeEquals(h.tree(), model);
  h.Reopen();
  ExpectTreeEquals(h.tree(), model);
}

TEST(BTreeTest, GrowsDeepThenShrinksToOnePageAndReusesPages) {
  shale::testing::TempDir dir;
  TreeHarness h(dir.path(), 16);
  std::vector<std::string> keys;
  for (int i = 0; i < 3000; ++i) keys.push_back(fmt::format("{:06}", i) + std::string(1000, 'k'));
  for (const auto& k : keys) ASSERT_TRUE(h.tree()->Put(k, "v").ok());
  auto grown = h.tree()->TEST_Check();
  ASSERT_TRUE(grown.ok());
  EXPECT_GE(grown->height, 3u);
  uint64_t pages_after_grow = h.pool()->file()->meta().page_count;
  std::mt19937_64 rng(3);
  std::shuffle(keys.begin(), keys.end(), rng);
  for (const auto& k : keys) ASSERT_TRUE(h.tree()->Delete(k).ok());
  auto shrunk = h.tree()->TEST_Check();
  ASSERT_TRUE(shrunk.ok()) << shrunk.status().ToString();
  EXPECT_EQ(shrunk->entries, 0u);
  EXPECT_EQ(shrunk->height, 1u);
  EXPECT_EQ(shrunk->leaf_pages, 1u);
  // Growing again (in the same key order: a load in key order fills its
  // leaves, a random one does not) takes pages from the free list, not the
  // end of the file.
  std::sort(keys.begin(), keys.end());
  for (const auto& k : keys) ASSERT_TRUE(h.tree()->Put(k, "v").ok());
  EXPECT_LE(h.pool()->file()->meta().page_count, pages_after_grow + 2);
  h.Reopen();
  auto reopened = h.tree()->TEST_Check();
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(reopened->entries, keys.size());
}

// A load in key order appends past each leaf's last key: the split then
// leaves the old leaf full and starts the new one with the new key alone,
// so the leaves end up full, not half empty (what a middle split would
// leave behind an ordered load).
TEST(BTreeTest, KeyOrderLoadFillsLeaves) {
  shale::testing::TempDir dir;
  TreeHarness h(dir.path(), 64);
  size_t cost = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string key = fmt::format("key{:08}", i);
    std::string value(100, static_cast<char>('a' + i % 26));
    ASSERT_TRUE(h.tree()->Put(key, value).ok());
    cost += SlottedPage::CellCost(key.size(), value.size());
  }
  auto check = h.tree()->TEST_Check();
  ASSERT_TRUE(check.ok());
  const size_t full_leaves = (cost + kPageSize - 1) / kPageSize;
  EXPECT_LE(check->leaf_pages, full_leaves * 105 / 100 + 1) << "cell bytes " << cost;
}

// Inserts `entries` (in order) as ApplyOps does: InsertRun a leaf at a
// time, Put for an entry it stops before. Returns how many went through
// InsertRun.
size_t InsertAllByRuns(BTree* tree, const std::vector<std::pair<std::string, std::string>>& entries) {
  std::vector<std::pair<std::string_view, std::string_view>> run(entries.begin(), entries.end());
  size_t done = 0, by_runs = 0;
  while (done < run.size()) {
    size_t n = 0;
    EXPECT_TRUE(tree->InsertRun(std::span(run).subspan(done), &n).ok());
    done += n;
    by_runs += n;
    if (n == 0) {
      EXPECT_TRUE(tree->Put(run[done].first, run[done].second).ok());
      ++done;
    }
  }
  return by_runs;
}

// A sorted load through InsertRun: nearly every entry goes in without a
// descent of its own, every key reads back (also after a reopen), the tree
// checks, and the leaves are as full as Put's ordered load leaves them.
TEST(BTreeTest, SortedRunsBuildTheTreeAnOrderedPutLoadBuilds) {
  shale::testing::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/runs");
  std::filesystem::create_directories(dir.path() + "/puts");
  TreeHarness by_runs(dir.path() + "/runs", 64);
  TreeHarness by_puts(dir.path() + "/puts", 64);
  std::vector<std::pair<std::string, std::string>> entries;
  Model model;
  for (int i = 0; i < 30000; ++i) {
    std::string key = fmt::format("key{:08}", i * 3);
    std::string value(i % 50, static_cast<char>('a' + i % 26));
    entries.emplace_back(key, value);
    model[key] = value;
    ASSERT_TRUE(by_puts.tree()->Put(key, value).ok());
  }
  const size_t inserted_by_runs = InsertAllByRuns(by_runs.tree(), entries);
  auto runs_check = by_runs.tree()->TEST_Check();
  auto puts_check = by_puts.tree()->TEST_Check();
  ASSERT_TRUE(runs_check.ok() && puts_check.ok());
  EXPECT_EQ(runs_check->leaf_pages, puts_check->leaf_pages);
  EXPECT_EQ(runs_check->height, puts_check->height);
  EXPECT_GT(runs_check->leaf_pages, 20u);
  // Only the first entry of each new leaf needs a Put (the split).
  EXPECT_GE(inserted_by_runs, entries.size() - runs_check->leaf_pages - 1);
  ExpectTreeEquals(by_runs.tree(), model);
  by_runs.Reopen();
  ExpectTreeEquals(by_runs.tree(), model);
  for (const auto& [key, value] : model) {
    std::string got;
    ASSERT_TRUE(by_runs.tree()->Get(key, &got).ok()) << key;
    ASSERT_EQ(got, value);
  }
}

// InsertRun stops before a key already present, a key out of order, and a
// key at or past the leaf's upper fence; what it inserted is exactly a
// prefix of the run.
TEST(BTreeTest, InsertRunStopsAtPresentUnorderedAndFencedKeys) {
  shale::testing::TempDir dir;
  TreeHarness h(dir.path(), 64);
  Model model;
  // A tree of several leaves with room in them (inserted in random order,
  // so leaves split in the middle): keys k00000.. k29997, step 3, 200-byte
  // values.
  std::vector<int> order;
  for (int i = 0; i < 30000; i += 3) order.push_back(i);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(5));
  for (int i : order) {
    std::string key = fmt::format("k{:05}", i);
    std::string value(200, 'v');
    ASSERT_TRUE(h.tree()->Put(key, value).ok());
    model[key] = value;
  }
  auto insert = [&](std::vector<std::pair<std::string_view, std::string_view>> run) {
    size_t n = 0;
    EXPECT_TRUE(h.tree()->InsertRun(run, &n).ok());
    for (size_t i = 0; i < n; ++i) model[std::string(run[i].first)] = std::string(run[i].second);
    return n;
  };
  // Present: stops before k00003 (the leaf has room for the two before it).
  EXPECT_EQ(insert({{"k00001", "a"}, {"k00002", "b"}, {"k00003", "c"}, {"k00004", "d"}}), 2u);
  EXPECT_EQ(insert({{"k00003", "c"}}), 0u);
  // Out of order (and a repeat) within the run.
  EXPECT_EQ(insert({{"k00005", "e"}, {"k00004", "d"}}), 1u);
  EXPECT_EQ(insert({{"k00007", "e"}, {"k00007", "f"}}), 1u);
  // A run crossing into the next leaf stops at that leaf's fence: from the
  // first key, the run of every missing key up to the end inserts far fewer
  // than all of them — only until the first leaf's fence or until it is full.
  std::vector<std::string> keys;
  for (int i = 8; i < 30000; i += 3) keys.push_back(fmt::format("k{:05}", i));
  std::vector<std::pair<std::string_view, std::string_view>> run;
  for (const std::string& k : keys) run.emplace_back(k, "x");
  const size_t n = insert(run);
  EXPECT_GT(n, 0u);
  EXPECT_LT(n, keys.size() / 4);
  ExpectTreeEquals(h.tree(), model);
  // The rest, by runs and Puts: the tree ends up holding every key.
  std::vector<std::pair<std::string, std::string>> rest;
  for (size_t i = n; i < keys.size(); ++i) {
    rest.emplace_back(keys[i], "x");
    model[keys[i]] = "x";
  }
  InsertAllByRuns(h.tree(), rest);
  ExpectTreeEquals(h.tree(), model);
}

// A run into a tree that is a lone root leaf (no fence) fills it and stops
// when it is full; an entry over the limits is refused to the caller's Put.
TEST(BTreeTest, InsertRunIntoARootLeaf) {
  shale::testing::TempDir dir;
  TreeHarness h(dir.path(), 16);
  std::vector<std::string> keys;
  for (int i = 0; i < 1000; ++i) keys.push_back(fmt::format("r{:05}", i));
  std::vector<std::pair<std::string_view, std::string_view>> run;
  const std::string value(100, 'v');
  for (const std::string& k : keys) run.emplace_back(k, value);
  size_t n = 0;
  ASSERT_TRUE(h.tree()->InsertRun(run, &n).ok());
  EXPECT_GT(n, 50u);
  EXPECT_LT(n, 1000u);  // one page holds about 16 KiB / 112 bytes
  auto check = h.tree()->TEST_Check();
  ASSERT_TRUE(check.ok());
  EXPECT_EQ(check->height, 1u);
  EXPECT_EQ(check->entries, n);
  const std::string huge(kMaxEntryBytes, 'h');
  std::vector<std::pair<std::string_view, std::string_view>> too_big{{"a", huge}};
  ASSERT_TRUE(h.tree()->InsertRun(too_big, &n).ok());
  EXPECT_EQ(n, 0u);
}

// A split allocates its pages before changing any page, so a pool with no
// free frame fails the Put and leaves the tree as it was.
TEST(BTreeTest, SplitThatCannotAllocateLeavesTreeIntact) {
  shale::testing::TempDir dir;
  TreeHarness h(dir.path(), 8);
  Model model;
  for (int i = 0;; ++i) {  // fill the root leaf to just below a split
    std::string key = fmt::format("key{:04}", i);
    std::string value(300, 'v');
    if (SlottedPage::CellCost(key.size(), value.size()) > [&] {
          auto g = h.pool()->Fetch(h.tree()->root(), LatchMode::kShared);
          return SlottedPage(const_cast<char*>(g->data())).FreeBytes();
        }()) {
      break;
    }
    ASSERT_TRUE(h.tree()->Put(key, value).ok());
    model[key] = value;
  }
  std::vector<PageGuard> hogs;  // pins all but two frames: root + one spare
  for (size_t i = 0; i + 2 < h.pool()->frame_count(); ++i) {
    auto g = h.pool()->NewPage(PageType::kLeaf);
    ASSERT_TRUE(g.ok());
    hogs.push_back(std::move(*g));
  }
  Status s = h.tree()->Put("key9999", std::string(300, 'w'));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  s = h.tree()->Put("key0000", std::string(600, 'w'));  // an overwrite that must split
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  hogs.clear();
  ExpectTreeEquals(h.tree(), model);
  ASSERT_TRUE(h.tree()->Put("key9999", std::string(300, 'w')).ok());
  model["key9999"] = std::string(300, 'w');
  ExpectTreeEquals(h.tree(), model);
}

TEST(BTreeTest, FlippedByteInDataFileIsCorruptionNamingFileAndPage) {
  shale::testing::TempDir dir;
  std::string path;
  {
    TreeHarness h(dir.path(), 16);
    path = h.path();
    for (int i = 0; i < 2000; ++i) ASSERT_TRUE(h.tree()->Put(fmt::format("key{:05}", i), std::string(100, 'v')).ok());
    ASSERT_GT(h.pool()->file()->meta().page_count, 5u);
  }
  const PageId victim = 4;
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(victim * kPageSize + 5000));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(victim * kPageSize + 5000));
    f.put(static_cast<char>(c ^ 1));
  }
  TreeHarness h(dir.path(), 16);
  auto it = h.tree()->NewIterator(KeyRange::All());
  size_t rows = 0;
  for (; it->Valid(); it->Next()) ++rows;
  ASSERT_TRUE(it->status().IsCorruption()) << it->status().ToString();
  EXPECT_LT(rows, 2000u);
  EXPECT_NE(it->status().message().find(path), std::string::npos) << it->status().message();
  EXPECT_NE(it->status().message().find("page 4 "), std::string::npos) << it->status().message();
  // Point reads that reach the page fail too; none returns its data.
  size_t corrupt = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string v;
    Status s = h.tree()->Get(fmt::format("key{:05}", i), &v);
    if (s.IsCorruption()) {
      ++corrupt;
    } else {
      ASSERT_TRUE(s.ok()) << s.ToString();
      ASSERT_EQ(v, std::string(100, 'v'));
    }
  }
  EXPECT_GT(corrupt, 0u);
}

// A page with a good checksum that is not the tree page its parent names (a
// lost write left an old free page there, say) is corruption, not data.
TEST(BTreeTest, WellFormedPageOfTheWrongKindIsCorruption) {
  shale::testing::TempDir dir;
  std::string path;
  {
    TreeHarness h(dir.path(), 16);
    path = h.path();
    for (int i = 0; i < 500; ++i) ASSERT_TRUE(h.tree()->Put(fmt::format("key{:05}", i), std::string(100, 'v')).ok());
    auto check = h.tree()->TEST_Check();
    ASSERT_TRUE(check.ok());
    ASSERT_EQ(check->height, 2u);
  }
  {
    auto file = PageFile::Open(path);
    ASSERT_TRUE(file.ok());
    std::vector<char> page(kPageSize);
    InitPage(page.data(), 2, PageType::kFree);  // page 2: a leaf since the first root split
    ASSERT_TRUE((*file)->WritePage(2, page.data()).ok());
  }
  TreeHarness h(dir.path(), 16);
  auto it = h.tree()->NewIterator(KeyRange::All());
  while (it->Valid()) it->Next();
  ASSERT_TRUE(it->status().IsCorruption()) << it->status().ToString();
  EXPECT_NE(it->status().message().find("page 2 "), std::string::npos) << it->status().message();
  EXPECT_NE(it->status().message().find(path), std::string::npos);
}

// Writers on disjoint keys check each acknowledged value at once and at the
// end; writers on shared keys check values belong to their key; readers scan
// and check order throughout. The pool holds less than the data.
TEST(BTreeTest, ConcurrentReadersAndWriters) {
  shale::testing::TempDir dir;
  TreeHarness h(dir.path(), 96);
  BTree* tree = h.tree();
  constexpr int kWriters = 3, kSharedWriters = 2, kReaders = 2, kOps = 6000;
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<Model> models(kWriters);
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      Model& m = models[t];
      for (int i = 0; i < kOps; ++i) {
        std::string key = fmt::format("w{}-{:05}", t, rng() % 3000);
        if (rng() % 4 == 0) {
          Status s = tree->Delete(key);
          if (s.ok() != (m.erase(key) == 1)) ++failures;
        } else {
          std::string value = key + "=" + std::to_string(i) + std::string(rng() % 400, 'x');
          if (!tree->Put(key, value).ok()) ++failures;
          m[key] = value;
          std::string got;
          if (!tree->Get(key, &got).ok() || got != value) ++failures;
        }
      }
    });
  }
  for (int t = 0; t < kSharedWriters; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(200 + t);
      for (int i = 0; i < kOps; ++i) {
        std::string key = fmt::format("s-{:04}", rng() % 500);
        if (rng() % 5 == 0) {
          Status s = tree->Delete(key);
          if (!s.ok() && !s.IsNotFound()) ++failures;
        } else if (!tree->Put(key, key + "#" + std::to_string(t) + std::string(rng() % 300, 'y')).ok()) {
          ++failures;
        }
      }
    });
  }
  for (int t = 0; t < kReaders; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(300 + t);
      while (!stop.load()) {
        KeyRange r;
        r.has_start = true;
        r.start = rng() % 2 ? fmt::format("w{}-{:05}", rng() % kWriters, rng() % 3000)
                            : fmt::format("s-{:04}", rng() % 500);
        auto it = tree->NewIterator(r);
        std::string prev;
        for (int n = 0; it->Valid() && n < 200; it->Next(), ++n) {
          std::string k(it->key());
          if (n > 0 && !(prev < k)) ++failures;
          if (k < r.start) ++failures;
          if (it->value().substr(0, k.size()) != k) ++failures;  // values start with their key
          prev = k;
        }
        if (!it->status().ok()) ++failures;
      }
    });
  }
  for (int t = 0; t < kWriters + kSharedWriters; ++t) threads[t].join();
  stop = true;
  for (size_t t = kWriters + kSharedWriters; t < threads.size(); ++t) threads[t].join();
  EXPECT_EQ(failures.load(), 0);
  auto check = tree->TEST_Check();
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  Model all = Scan(tree, KeyRange::All());
  for (int t = 0; t < kWriters; ++t) {
    KeyRange r;
    r.has_start = true;
    r.start = fmt::format("w{}-", t);
    r.has_end = true;
    r.end = fmt::format("w{}.", t);
    EXPECT_TRUE(ModelRange(all, r) == models[t]) << "writer " << t;
  }
  for (const auto& [k, v] : all) {
    if (k[0] == 's') {
      EXPECT_EQ(v.substr(0, k.size() + 1), k + "#");
    }
  }
  EXPECT_GT(h.pool()->stats().evictions, 0u);
}

}  // namespace
}  // namespace shale::storage
