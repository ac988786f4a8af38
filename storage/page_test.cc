#include "storage/page.h"

#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "storage/page_file.h"
#include "src/common/testing/temp_dir.h"

namespace shale::storage {
namespace {

std::vector<char> NewPageBuffer(PageId id, PageType type) {
  std::vector<char> buf(kPageSize);
  InitPage(buf.data(), id, type);
  return buf;
}

TEST(PageTest, HeaderRoundTrip) {
  auto buf = NewPageBuffer(42, PageType::kInternal);
  SetPageLsn(buf.data(), 0x0102030405060708ull);
  SetPageLink(buf.data(), 7);
  EXPECT_EQ(GetPageId(buf.data()), 42u);
  EXPECT_EQ(GetPageType(buf.data()), PageType::kInternal);
  EXPECT_EQ(GetPageLsn(buf.data()), 0x0102030405060708ull);
  EXPECT_EQ(GetPageLink(buf.data()), 7u);
  SlottedPage p(buf.data());
  EXPECT_EQ(p.slot_count(), 0);
  EXPECT_EQ(p.UsedBytes(), 0u);
  EXPECT_EQ(p.FreeBytes(), SlottedPage::kUsable);
}

TEST(PageTest, PageTypeValuesAreStable) {
  // On-disk values: DO NOT CHANGE.
  EXPECT_EQ(static_cast<int>(PageType::kMeta), 1);
  EXPECT_EQ(static_cast<int>(PageType::kFree), 2);
  EXPECT_EQ(static_cast<int>(PageType::kLeaf), 3);
  EXPECT_EQ(static_cast<int>(PageType::kInternal), 4);
  EXPECT_EQ(kPageSize, 16384u);
}

TEST(PageTest, ChecksumDetectsEveryFlippedByteRegion) {
  auto buf = NewPageBuffer(9, PageType::kLeaf);
  SlottedPage p(buf.data());
  ASSERT_TRUE(p.InsertAt(0, "key", "value"));
  SealPage(buf.data());
  EXPECT_TRUE(VerifyPage(buf.data(), 9, "f").ok());
  for (size_t off : {size_t{0}, size_t{4}, size_t{8}, size_t{100}, kPageSize - 1}) {
    auto copy = buf;
    copy[off] ^= 0x20;
    Status s = VerifyPage(copy.data(), 9, "data.pages");
    EXPECT_TRUE(s.IsCorruption()) << off;
    EXPECT_NE(s.message().find("data.pages"), std::string::npos);
    EXPECT_NE(s.message().find("page 9"), std::string::npos);
  }
}

TEST(PageTest, MisdirectedPageIsCorruption) {
  auto buf = NewPageBuffer(3, PageType::kLeaf);
  SealPage(buf.data());
  Status s = VerifyPage(buf.data(), 4, "f");
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find("page 4"), std::string::npos);
}

TEST(PageTest, AllZeroPageIsCorruption) {
  std::vector<char> buf(kPageSize, 0);
  EXPECT_TRUE(VerifyPage(buf.data(), 5, "f").IsCorruption());
}

TEST(PageTest, SlottedPageMatchesModel) {
  auto buf = NewPageBuffer(1, PageType::kLeaf);
  SlottedPage p(buf.data());
  std::map<std::string, std::string> model;
  std::mt19937 rng(7);
  for (int step = 0; step < 20000; ++step) {
    std::string key = "k" + std::to_string(rng() % 300);
    if (rng() % 7 == 0) key.resize(rng() % 3);  // short prefixes, incl. ""
    std::string value(rng() % 120, static_cast<char>('a' + rng() % 26));
    bool found = false;
    size_t i = p.LowerBound(key, &found);
    ASSERT_EQ(found, model.count(key) == 1);
    int op = static_cast<int>(rng() % 10);
    if (op < 5) {
      bool ok = found ? p.ReplaceValueAt(i, value) : p.InsertAt(i, key, value);
      if (ok) model[key] = value;
      ASSERT_TRUE(ok || p.FreeBytes() < SlottedPage::CellCost(key.size(), value.size()));
    } else if (op < 9) {
      if (found) {
        p.RemoveAt(i);
        model.erase(key);
      }
    } else {
      p.Compact();
    }
    ASSERT_EQ(p.slot_count(), model.size());
  }
  size_t i = 0, used = 0;
  for (const auto& [k, v] : model) {
    ASSERT_EQ(p.KeyAt(i), k);
    ASSERT_EQ(p.ValueAt(i), v);
    used += SlottedPage::CellCost(k.size(), v.size());
    ++i;
  }
  EXPECT_EQ(p.UsedBytes(), used);
  // Sealed and re-verified, the content survives a copy (a disk round trip).
  SealPage(buf.data());
  std::vector<char> copy = buf;
  ASSERT_TRUE(VerifyPage(copy.data(), 1, "f").ok());
  SlottedPage q(copy.data());
  EXPECT_EQ(q.slot_count(), model.size());
}

TEST(PageTest, ShorterPrefixSortsFirst) {
  auto buf = NewPageBuffer(1, PageType::kLeaf);
  SlottedPage p(buf.data());
  for (const std::string& k : std::vector<std::string>{"ab", "a", "", "abc", std::string("a\0", 2), "b"}) {
    bool found = false;
    size_t i = p.LowerBound(k, &found);
    ASSERT_FALSE(found);
    ASSERT_TRUE(p.InsertAt(i, k, "v"));
  }
  std::vector<std::string> keys;
  for (size_t i = 0; i < p.slot_count(); ++i) keys.emplace_back(p.KeyAt(i));
  EXPECT_EQ(keys, (std::vector<std::string>{"", "a", std::string("a\0", 2), "ab", "abc", "b"}));
}

TEST(PageFileTest, CreateReopenAndReadBack) {
  shale::testing::TempDir dir;
  std::string path = dir.path() + "/data.pages";
  {
    auto file = PageFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    PageId id = (*file)->AppendPageId();
    EXPECT_EQ(id, 1u);
    auto buf = NewPageBuffer(id, PageType::kLeaf);
    ASSERT_TRUE(SlottedPage(buf.data()).InsertAt(0, "k", "v"));
    ASSERT_TRUE((*file)->WritePage(id, buf.data()).ok());
    (*file)->set_root(id);
    ASSERT_TRUE((*file)->SyncMeta().ok());
  }
  auto file = PageFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->meta().root, 1u);
  EXPECT_EQ((*file)->meta().page_count, 2u);
  std::vector<char> buf(kPageSize);
  ASSERT_TRUE((*file)->ReadPage(1, buf.data()).ok());
  EXPECT_EQ(SlottedPage(buf.data()).ValueAt(0), "v");
  Status past_end = (*file)->ReadPage(5, buf.data());
  EXPECT_TRUE(past_end.IsCorruption());
}

TEST(PageFileTest, DamagedMetaPageFailsOpen) {
  shale::testing::TempDir dir;
  std::string path = dir.path() + "/data.pages";
  { ASSERT_TRUE(PageFile::Open(path).ok()); }
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(60);
    f.put('\x7f');
  }
  auto file = PageFile::Open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_TRUE(file.status().IsCorruption());
  EXPECT_NE(file.status().message().find(path), std::string::npos);
}

}  // namespace
}  // namespace shale::storage
