#include "storage/meta_store.h"

#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "src/common/testing/temp_dir.h"

namespace shale::storage {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

Pairs ScanAll(const MetaStore& store, std::string_view prefix) {
  Pairs out;
  Status s = store.Scan(prefix, [&](std::string_view k, std::string_view v) {
    out.emplace_back(k, v);
    return true;
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

TEST(MetaStoreTest, PutGetDelete) {
  shale::testing::TempDir dir;
  auto store = MetaStore::Open(dir.path() + "/meta");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  std::string v;
  EXPECT_TRUE((*store)->Get("node/id", &v).IsNotFound());
  ASSERT_TRUE((*store)->Put("node/id", "17").ok());
  ASSERT_TRUE((*store)->Get("node/id", &v).ok());
  EXPECT_EQ("17", v);
  ASSERT_TRUE((*store)->Put("node/id", std::string("a\0b", 3)).ok());
  ASSERT_TRUE((*store)->Get("node/id", &v).ok());
  EXPECT_EQ(std::string("a\0b", 3), v);
  ASSERT_TRUE((*store)->Delete("node/id").ok());
  EXPECT_TRUE((*store)->Get("node/id", &v).IsNotFound());
  EXPECT_TRUE((*store)->Delete("never/existed").ok());
}

TEST(MetaStoreTest, BatchAndPrefixScan) {
  shale::testing::TempDir dir;
  auto store = MetaStore::Open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->Put("catalog/t2", "old").ok());
  ASSERT_TRUE((*store)->Put("catalog/gone", "x").ok());
  std::vector<MetaStore::Change> batch = {
      {"catalog/t1", "one"},
      {"catalog/t2", "two"},
      {"catalog/gone", std::nullopt},
      {"catalog0", "not in prefix"},
      {"catalof", "before prefix"},
      {"node/id", "3"},
  };
  ASSERT_TRUE((*store)->Write(batch).ok());
  EXPECT_EQ((Pairs{{"catalog/t1", "one"}, {"catalog/t2", "two"}}), ScanAll(**store, "catalog/"));
  EXPECT_EQ((Pairs{{"node/id", "3"}}), ScanAll(**store, "node/"));
  EXPECT_TRUE(ScanAll(**store, "zzz").empty());
  EXPECT_EQ(5u, ScanAll(**store, "").size());

  // fn returning false stops the scan.
  int calls = 0;
  ASSERT_TRUE((*store)
                  ->Scan("catalog",
                         [&](std::string_view, std::string_view) {
                           ++calls;
                           return false;
                         })
                  .ok());
  EXPECT_EQ(1, calls);
}

TEST(MetaStoreTest, ReopenKeepsData) {
  shale::testing::TempDir dir;
  {
    auto store = MetaStore::Open(dir.path());
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->Put("a", "1").ok());
    ASSERT_TRUE((*store)->Write({{"b", "2"}, {"c", "3"}, {"a", std::nullopt}}).ok());
  }
  auto store = MetaStore::Open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  std::string v;
  EXPECT_TRUE((*store)->Get("a", &v).IsNotFound());
  EXPECT_EQ((Pairs{{"b", "2"}, {"c", "3"}}), ScanAll(**store, ""));
}

// DeleteUnsynced's delete is in RocksDB's WAL file when it returns: a
// process killed right after it (no close, no flush, no sync) leaves it
// done. (A power loss may undo it until SyncUnsynced; that a test cannot
// show.)
// A store at `path` holding `records`, closed.
void Seed(const std::string& path, const Pairs& records) {
  auto store = MetaStore::Open(path);
  ASSERT_TRUE(store.ok());
  for (const auto& [k, v] : records) ASSERT_TRUE((*store)->Put(k, v).ok());
}

// Runs `write` on the store at `path` in a child process that then exits
// without closing it (as kill -9 would leave it); `write` returns the exit
// code (0: done). Returns the child's exit code.
int WriteAndDie(const std::string& path, const std::function<int(MetaStore*)>& write) {
  const pid_t child = fork();
  if (child == 0) {
    auto store = MetaStore::Open(path);
    _exit(store.ok() ? write(store->get()) : 100);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST(MetaStoreTest, UnsyncedDeleteSurvivesTheProcessDying) {
  shale::testing::TempDir dir;
  Seed(dir.path(), {{"txn/prepared/a", "1"}, {"txn/prepared/b", "2"}});
  ASSERT_EQ(WriteAndDie(dir.path(),
                        [](MetaStore* store) {
                          if (!store->DeleteUnsynced("txn/prepared/a").ok()) return 1;
                          std::string v;
                          return store->Get("txn/prepared/a", &v).IsNotFound() ? 0 : 2;
                        }),
            0);
  auto store = MetaStore::Open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((Pairs{{"txn/prepared/b", "2"}}), ScanAll(**store, "txn/"));
  // Nothing unsynced: no sync; after an unsynced delete, one.
  EXPECT_TRUE((*store)->SyncUnsynced().ok());
  ASSERT_TRUE((*store)->DeleteUnsynced("txn/prepared/b").ok());
  EXPECT_TRUE((*store)->SyncUnsynced().ok());
  EXPECT_TRUE(ScanAll(**store, "txn/").empty());
}

TEST(MetaStoreTest, UnsyncedBatchSurvivesTheProcessDying) {
  shale::testing::TempDir dir;
  Seed(dir.path(), {{"txn/decision/a", "1"}, {"txn/decision/b", "2"}});
  ASSERT_EQ(WriteAndDie(dir.path(),
                        [](MetaStore* store) {
                          const std::vector<MetaStore::Change> batch = {{"txn/decision/a", std::nullopt},
                                                                        {"txn/decision/c", "3"}};
                          if (!store->WriteUnsynced(batch).ok()) return 2;
                          std::string v;
                          return store->Get("txn/decision/a", &v).IsNotFound() ? 0 : 3;
                        }),
            0);
  auto store = MetaStore::Open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((Pairs{{"txn/decision/b", "2"}, {"txn/decision/c", "3"}}), ScanAll(**store, "txn/"));
}

}  // namespace
}  // namespace shale::storage
