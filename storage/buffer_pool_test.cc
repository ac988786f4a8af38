#include "storage/buffer_pool.h"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "src/common/testing/temp_dir.h"

namespace shale::storage {
namespace {

// Stamps page content derived from its id and a version.
void Stamp(char* page, PageId id, uint32_t version) {
  SlottedPage p(page);
  std::string key = "page-" + std::to_string(id);
  std::string value = std::to_string(version);
  ASSERT_TRUE(p.InsertAt(0, key, value));
}

std::string ReadStamp(const char* page) { return std::string(SlottedPage(const_cast<char*>(page)).ValueAt(0)); }

class BufferPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.path() + "/data.pages";
    auto file = PageFile::Open(path_);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    file_ = std::move(*file);
  }
  void Reopen(size_t frames) {
    pool_.reset();
    file_.reset();
    auto file = PageFile::Open(path_);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    file_ = std::move(*file);
    pool_ = std::make_unique<BufferPool>(file_.get(), BufferPoolOptions{frames});
  }
  // `n` new leaf pages, each stamped with `version`; their ids.
  std::vector<PageId> NewStampedPages(int n, uint32_t version) {
    std::vector<PageId> ids;
    for (int i = 0; i < n; ++i) {
      auto g = pool_->NewPage(PageType::kLeaf);
      EXPECT_TRUE(g.ok()) << g.status().ToString();
      if (!g.ok()) break;
      Stamp(g->mutable_data(), g->page_id(), version);
      ids.push_back(g->page_id());
    }
    return ids;
  }

  shale::testing::TempDir dir_;
  std::string path_;
  std::unique_ptr<PageFile> file_;
  std::unique_ptr<BufferPool> pool_;
};

TEST_F(BufferPoolTest, EvictsAndReadsBackTenTimesThePool) {
  pool_ = std::make_unique<BufferPool>(file_.get(), BufferPoolOptions{8});
  std::vector<PageId> ids = NewStampedPages(80, 1);
  ASSERT_EQ(ids.size(), 80u);
  for (int round = 2; round < 4; ++round) {
    for (PageId id : ids) {
      auto g = pool_->Fetch(id, LatchMode::kExclusive);
      ASSERT_TRUE(g.ok()) << g.status().ToString();
      ASSERT_EQ(ReadStamp(g->data()), std::to_string(round - 1));
      SlottedPage(g->mutable_data()).ReplaceValueAt(0, std::to_string(round));
      g->MarkDirty();
    }
  }
  EXPECT_GT(pool_->stats().evictions, 100u);
  EXPECT_GT(pool_->stats().writebacks, 100u);
  ASSERT_TRUE(pool_->FlushAll().ok());
  Reopen(8);
  for (PageId id : ids) {
    auto g = pool_->Fetch(id, LatchMode::kShared);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_EQ(ReadStamp(g->data()), "3");
  }
}

TEST_F(BufferPoolTest, AllFramesPinnedIsUnavailable) {
  pool_ = std::make_unique<BufferPool>(file_.get(), BufferPoolOptions{8});
  std::vector<PageGuard> held;
  for (size_t i = 0; i < pool_->frame_count(); ++i) {
    auto g = pool_->NewPage(PageType::kLeaf);
    ASSERT_TRUE(g.ok());
    held.push_back(std::move(*g));
  }
  auto g = pool_->NewPage(PageType::kLeaf);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kUnavailable);
  held.pop_back();
  EXPECT_TRUE(pool_->NewPage(PageType::kLeaf).ok());
}

TEST_F(BufferPoolTest, FreedPagesAreReused) {
  pool_ = std::make_unique<BufferPool>(file_.get(), BufferPoolOptions{8});
  std::vector<PageId> ids;
  for (int i = 0; i < 5; ++i) {
    auto g = pool_->NewPage(PageType::kLeaf);
    ASSERT_TRUE(g.ok());
    ids.push_back(g->page_id());
  }
  for (PageId id : {ids[1], ids[3]}) {
    auto g = pool_->Fetch(id, LatchMode::kExclusive);
    ASSERT_TRUE(g.ok());
    ASSERT_TRUE(pool_->FreePage(std::move(*g)).ok());
  }
  ASSERT_TRUE(pool_->FlushAll().ok());
  Reopen(8);  // the free list survives a reopen
  auto a = pool_->NewPage(PageType::kLeaf);
  ASSERT_TRUE(a.ok());
  auto b = pool_->NewPage(PageType::kInternal, 1);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->page_id(), ids[3]);
  EXPECT_EQ(b->page_id(), ids[1]);
  EXPECT_EQ(GetPageType(b->data()), PageType::kInternal);
  auto c = pool_->NewPage(PageType::kLeaf);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->page_id(), ids.back() + 1);
}

TEST_F(BufferPoolTest, ReleaseFreeFramesGivesBackOnlyCleanFreePages) {
  pool_ = std::make_unique<BufferPool>(file_.get(), BufferPoolOptions{16});
  std::vector<PageId> ids = NewStampedPages(6, 7);
  ASSERT_EQ(ids.size(), 6u);
  for (PageId id : {ids[0], ids[2], ids[4]}) {
    auto g = pool_->Fetch(id, LatchMode::kExclusive);
    ASSERT_TRUE(g.ok());
    ASSERT_TRUE(pool_->FreePage(std::move(*g)).ok());
  }
  // Dirty free pages stay: their free-list links are not on disk yet.
  EXPECT_EQ(pool_->ReleaseFreeFrames(), 0u);
  ASSERT_TRUE(pool_->FlushAll().ok());
  // A pinned free page stays too.
  auto pinned = pool_->Fetch(ids[4], LatchMode::kShared);
  ASSERT_TRUE(pinned.ok());
  EXPECT_EQ(pool_->ReleaseFreeFrames(), 2u);
  EXPECT_EQ(pool_->stats().released, 2u);
  pinned->Release();
  EXPECT_EQ(pool_->ReleaseFreeFrames(), 1u);
  EXPECT_EQ(pool_->ReleaseFreeFrames(), 0u);  // nothing resident is left to give
  // The live pages are still cached and intact; the freed ones are reused
  // from the free list, read back from the file into released frames.
  const uint64_t misses = pool_->stats().misses;
  for (PageId id : {ids[1], ids[3], ids[5]}) {
    auto g = pool_->Fetch(id, LatchMode::kShared);
    ASSERT_TRUE(g.ok());
    EXPECT_EQ(ReadStamp(g->data()), "7");
  }
  EXPECT_EQ(pool_->stats().misses, misses);
  std::vector<PageId> reused;
  for (int i = 0; i < 3; ++i) {
    auto g = pool_->NewPage(PageType::kLeaf);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_EQ(GetPageType(g->data()), PageType::kLeaf);
    Stamp(g->mutable_data(), g->page_id(), 8);
    reused.push_back(g->page_id());
  }
  std::sort(reused.begin(), reused.end());
  EXPECT_EQ(reused, (std::vector<PageId>{ids[0], ids[2], ids[4]}));
  for (PageId id : reused) {
    auto g = pool_->Fetch(id, LatchMode::kShared);
    ASSERT_TRUE(g.ok());
    EXPECT_EQ(ReadStamp(g->data()), "8");
  }
}

TEST_F(BufferPoolTest, CorruptPageIsNeverReturned) {
  pool_ = std::make_unique<BufferPool>(file_.get(), BufferPoolOptions{8});
  PageId id;
  {
    auto g = pool_->NewPage(PageType::kLeaf);
    ASSERT_TRUE(g.ok());
    Stamp(g->mutable_data(), g->page_id(), 1);
    id = g->page_id();
  }
  ASSERT_TRUE(pool_->FlushAll().ok());
  pool_.reset();
  {
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(id * kPageSize + kPageSize - 3));
    f.put('\x55');
  }
  Reopen(8);
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto g = pool_->Fetch(id, LatchMode::kShared);
    ASSERT_FALSE(g.ok());
    EXPECT_TRUE(g.status().IsCorruption());
    EXPECT_NE(g.status().message().find(path_), std::string::npos) << g.status().message();
    EXPECT_NE(g.status().message().find("page " + std::to_string(id)), std::string::npos);
  }
  // Many threads at once: each waits on the failing load or retries it, and
  // every one gets the error; no frame stays pinned.
  std::vector<std::thread> threads;
  std::atomic<int> corrupt{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto g = pool_->Fetch(id, t % 2 ? LatchMode::kShared : LatchMode::kExclusive);
        if (!g.ok() && g.status().IsCorruption()) ++corrupt;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(corrupt.load(), 200);
  std::vector<PageGuard> all;
  for (size_t i = 0; i < pool_->frame_count(); ++i) {
    auto g = pool_->NewPage(PageType::kLeaf);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    all.push_back(std::move(*g));
  }
}

TEST_F(BufferPoolTest, ConcurrentFetchersShareAndEvict) {
  pool_ = std::make_unique<BufferPool>(file_.get(), BufferPoolOptions{16});
  std::vector<PageId> ids = NewStampedPages(64, 0);
  ASSERT_EQ(ids.size(), 64u);
  // Each thread increments a counter stored on every page; the total must
  // come out exact, through eviction and write-back.
  constexpr int kThreads = 4, kRounds = 20;
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        for (size_t k = 0; k < ids.size(); ++k) {
          PageId id = ids[(k * 7 + static_cast<size_t>(t) * 13) % ids.size()];
          auto g = pool_->Fetch(id, LatchMode::kExclusive);
          if (!g.ok()) {
            ++errors;
            continue;
          }
          SlottedPage p(g->mutable_data());
          int v = std::stoi(std::string(p.ValueAt(0)));
          p.ReplaceValueAt(0, std::to_string(v + 1));
          g->MarkDirty();
          g->Release();  // one latch at a time: no order among these pages
          auto s = pool_->Fetch(ids[(k + 1) % ids.size()], LatchMode::kShared);
          if (!s.ok()) ++errors;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  for (PageId id : ids) {
    auto g = pool_->Fetch(id, LatchMode::kShared);
    ASSERT_TRUE(g.ok());
    EXPECT_EQ(ReadStamp(g->data()), std::to_string(kThreads * kRounds));
  }
}

}  // namespace
}  // namespace shale::storage
