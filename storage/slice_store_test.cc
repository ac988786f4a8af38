#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "storage/log_slice.h"
#include "storage/slice.h"
#include "src/common/testing/temp_dir.h"

namespace shale::storage {
namespace {

void PutOne(Slice* slice, const std::string& key, const std::string& value) {
  WriteBatch b;
  b.Put(key, value);
  ASSERT_TRUE(slice->Write(b).ok());
}

std::string GetOr(Slice* slice, const std::string& key, const std::string& missing) {
  std::string v;
  Status s = slice->Get(key, &v);
  return s.ok() ? v : missing;
}

TEST(SliceStoreTest, CreateGetDropList) {
  shale::testing::TempDir dir;
  auto opened = SliceStore::Open(dir.path() + "/store");  // created if needed
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  SliceStore& store = **opened;
  EXPECT_TRUE(store.ListSlices().empty());

  auto s1 = store.CreateSlice(1);
  ASSERT_TRUE(s1.ok()) << s1.status().ToString();
  EXPECT_EQ(1u, (*s1)->id());
  auto s42 = store.CreateSlice(42);
  ASSERT_TRUE(s42.ok());
  EXPECT_FALSE(store.CreateSlice(1).ok()) << "creating an existing slice must fail";

  auto got = store.GetSlice(42);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*s42, *got);
  EXPECT_TRUE(store.GetSlice(7).status().IsNotFound());
  EXPECT_EQ((std::vector<SliceId>{1, 42}), store.ListSlices());

  ASSERT_TRUE(store.DropSlice(1).ok());
  EXPECT_TRUE(store.GetSlice(1).status().IsNotFound());
  EXPECT_TRUE(store.DropSlice(1).IsNotFound());
  EXPECT_FALSE(std::filesystem::exists(LogSlice::LogPath(dir.path() + "/store", 1)));
  EXPECT_EQ((std::vector<SliceId>{42}), store.ListSlices());

  // A dropped id can be created again, empty.
  auto again = store.CreateSlice(1);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(0u, (*again)->GetStats().rows);
}

TEST(SliceStoreTest, ReopenRecoversEverySlice) {
  shale::testing::TempDir dir;
  {
    auto store = SliceStore::Open(dir.path());
    ASSERT_TRUE(store.ok());
    for (SliceId id : {3, 5, 8, 1000000007}) {
      auto slice = (*store)->CreateSlice(id);
      ASSERT_TRUE(slice.ok());
      PutOne(*slice, "id", std::to_string(id));
    }
    ASSERT_TRUE((*store)->DropSlice(5).ok());
  }
  // Files that are not slice logs are ignored.
  std::ofstream(dir.path() + "/slice-01.log") << "not ours";
  std::ofstream(dir.path() + "/notes.txt") << "hello";
  auto store = SliceStore::Open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((std::vector<SliceId>{3, 8, 1000000007}), (*store)->ListSlices());
  for (SliceId id : {3, 8, 1000000007}) {
    auto slice = (*store)->GetSlice(id);
    ASSERT_TRUE(slice.ok());
    EXPECT_EQ(std::to_string(id), GetOr(*slice, "id", "<missing>"));
  }
}

TEST(SliceStoreTest, SecondOpenOfSameDirectoryFails) {
  shale::testing::TempDir dir;
  auto first = SliceStore::Open(dir.path());
  ASSERT_TRUE(first.ok());
  auto second = SliceStore::Open(dir.path());
  EXPECT_FALSE(second.ok());
  first->reset();
  auto third = SliceStore::Open(dir.path());
  EXPECT_TRUE(third.ok()) << third.status().ToString();
}

TEST(SliceStoreTest, CorruptSliceFailsOpen) {
  shale::testing::TempDir dir;
  {
    auto store = SliceStore::Open(dir.path());
    ASSERT_TRUE(store.ok());
    auto slice = (*store)->CreateSlice(12);
    ASSERT_TRUE(slice.ok());
    for (int i = 0; i < 5; ++i) PutOne(*slice, "k" + std::to_string(i), "value");
  }
  const std::string path = LogSlice::LogPath(dir.path(), 12);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(12);
    f.put('\xAA');
  }
  auto store = SliceStore::Open(dir.path());
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(store.status().IsCorruption()) << store.status().ToString();
}

TEST(SliceStoreTest, ConcurrentCreateAndGet) {
  shale::testing::TempDir dir;
  auto store = SliceStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        SliceId id = static_cast<SliceId>(t * 100 + i);
        auto slice = (*store)->CreateSlice(id);
        ASSERT_TRUE(slice.ok());
        PutOne(*slice, "k", "v");
        ASSERT_TRUE((*store)->GetSlice(id).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(40u, (*store)->ListSlices().size());
}

}  // namespace
}  // namespace shale::storage
