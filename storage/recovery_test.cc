// Recovery after a power loss or a kill at any instant: the store must open,
// with every acknowledged write, every multi-slice write whole, every page
// verifying (docs/storage.md "Testing recovery").
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "src/common/testing/temp_dir.h"
#include "storage/file_io.h"
#include "storage/kill_point.h"
#include "storage/slice.h"
#include "storage/testing/power_loss.h"
#include "storage/wal.h"

namespace shale::storage {
namespace {

using Model = std::map<std::string, std::string>;

// The deterministic single-threaded workload the power-loss test crashes:
// two slices, write i puts one row into both (sometimes large, so overflow
// pages and splits) and deletes an older one, a checkpoint every
// kCheckpointEvery writes. Small WAL segments make it roll and recycle.
constexpr int kWrites = 150;
constexpr int kCheckpointEvery = 25;

SliceStoreOptions PowerLossOptions() {
  SliceStoreOptions o;
  o.buffer_pool_bytes = 4 << 20;
  o.wal.segment_bytes = 48 << 10;
  o.checkpoint_interval_ms = 0;  // checkpoints only where the workload asks
  o.checkpoint_wal_bytes = 0;
  o.checkpoint_spill_bytes = 0;
  return o;
}

std::string KeyOf(int i) { return fmt::format("row{:05d}", i); }
std::string ValueOf(int i) {
  const size_t n = i % 7 == 0 ? 6000 : 40 + (i * 37) % 900;
  return std::string(n, static_cast<char>('a' + i % 26));
}

// The rows after writes [0, n).
Model ModelAfter(int n) {
  Model m;
  for (int i = 0; i < n; ++i) {
    m[KeyOf(i)] = ValueOf(i);
    if (i % 3 == 2) m.erase(KeyOf(i - 2));
  }
  return m;
}

// Runs the workload in this (child) process, appending each acknowledged
// write's number to `acks`. Returns only by _exit.
[[noreturn]] void RunWorkload(const std::string& root, const std::string& acks) {
  auto store = SliceStore::Open(root, PowerLossOptions());
  if (!store.ok()) ::_exit(2);
  for (SliceId id : {1, 2}) {
    if (!(*store)->CreateSlice(id).ok()) ::_exit(3);
  }
  std::ofstream ack(acks, std::ios::app);
  for (int i = 0; i < kWrites; ++i) {
    WriteBatch b;
    b.Put(KeyOf(i), ValueOf(i));
    if (i % 3 == 2) b.Delete(KeyOf(i - 2));
    if (!(*store)->Write({{1, &b}, {2, &b}}).ok()) ::_exit(4);
    ack << i << "\n" << std::flush;
    if ((i + 1) % kCheckpointEvery == 0 && !(*store)->Checkpoint().ok()) ::_exit(5);
  }
  ::_exit(0);  // no close, no checkpoint at close
}

Model Scan(Slice* slice) {
  Model m;
  auto it = slice->NewIterator(KeyRange::All());
  for (; it->Valid(); it->Next()) m[std::string(it->key())] = std::string(it->value());
  EXPECT_TRUE(it->status().ok()) << it->status().ToString();
  return m;
}

// Power loss at every sync of the workload that is not a plain WAL append
// (checkpoints, the double-write file, the meta page, segment rolls and
// recycling, directory syncs, the store's creation) and at every 6th WAL
// append: the directory a power loss leaves there (storage/testing/
// power_loss.h) must open and verify, with every acknowledged write and
// the write in flight whole or absent.
TEST(RecoveryTest, PowerLossAtAnySyncLeavesAStoreThatOpens) {
  shale::testing::TempDir dir;
  // A census run: which file each sync was of.
  std::vector<std::string> census;
  {
    const std::string root = dir.path() + "/census", image = dir.path() + "/census-image";
    const std::string log = dir.path() + "/census.log";
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::ofstream out(log);
      static testing::PowerLossImage* image_observer = nullptr;
      image_observer = new testing::PowerLossImage(root, image, [&out](uint64_t, const std::string& path) {
        out << path << "\n" << std::flush;
      });
      TEST_SetSyncObserver(image_observer);
      RunWorkload(root, dir.path() + "/census.acks");
    }
    int wstatus = 0;
    ASSERT_EQ(pid, ::waitpid(pid, &wstatus, 0));
    ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << wstatus;
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);) census.push_back(line);
  }
  ASSERT_GT(census.size(), static_cast<size_t>(kWrites));
  std::vector<uint64_t> points;
  int wal_appends = 0;
  for (size_t n = 1; n <= census.size(); ++n) {
    const std::string& path = census[n - 1];
    const bool wal_append = path.find("/wal/wal-") != std::string::npos;
    if (!wal_append || ++wal_appends % 6 == 0) points.push_back(n);
  }
  int checked = 0;
  for (uint64_t crash_at : points) {
    SCOPED_TRACE(fmt::format("power loss after sync {} of {} ({})", crash_at, census.size(), census[crash_at - 1]));
    const std::string trial = fmt::format("{}/t{}", dir.path(), crash_at);
    const std::string root = trial + "/store", image = trial + "/image", acks = trial + "/acks";
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      static testing::PowerLossImage* image_observer = nullptr;
      image_observer = new testing::PowerLossImage(root, image, [crash_at](uint64_t n, const std::string&) {
        if (n == crash_at) ::_exit(0);  // the power goes here
      });
      TEST_SetSyncObserver(image_observer);
      RunWorkload(root, acks);
    }
    int wstatus = 0;
    ASSERT_EQ(pid, ::waitpid(pid, &wstatus, 0));
    ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << wstatus;
    int acked = 0;  // writes [0, acked) were acknowledged
    {
      std::ifstream in(acks);
      for (std::string line; std::getline(in, line);) acked = std::stoi(line) + 1;
    }
    const std::string after = trial + "/after";
    ASSERT_TRUE(testing::PowerLossImage::Materialize(image, after).ok());
    SliceStoreOptions verify = PowerLossOptions();
    verify.verify_at_open = true;
    auto store = SliceStore::Open(after, verify);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    const bool created = (*store)->GetSlice(1).ok() && (*store)->GetSlice(2).ok();
    if (acked > 0) {
      ASSERT_TRUE(created);
    }
    if (created) {
      Model one = Scan(*(*store)->GetSlice(1)), two = Scan(*(*store)->GetSlice(2));
      EXPECT_EQ(one, two) << "a write is in one slice only";
      const bool prefix = one == ModelAfter(acked) || (acked < kWrites && one == ModelAfter(acked + 1));
      EXPECT_TRUE(prefix) << "acknowledged " << acked << " writes; the slice holds " << one.size() << " rows";
    }
    store->reset();
    std::filesystem::remove_all(trial);
    ++checked;
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_GT(checked, 40);
}


SliceStoreOptions Verifying() {
  SliceStoreOptions o;
  o.verify_at_open = true;
  return o;
}

int WaitExit(pid_t pid) {
  int wstatus = 0;
  EXPECT_EQ(pid, ::waitpid(pid, &wstatus, 0));
  return wstatus;
}

// Issue 16: a node refused to start with "WAL .../slices/wal: ends at LSN
// 356540 but the checkpoint is at LSN 1220058". Recovery takes its LSN from
// the data file's meta page, or from a complete double-write file newer
// than it; only the latter can name a checkpoint the WAL never reached,
// when the double-write file was not written for this store: here a
// process of an earlier store, whose directory was removed and made again
// under it, checkpoints (the double-write file is opened by its path) into
// the new store's directory and dies before its meta page. The new store
// must open, with every write it acknowledged.
TEST(RecoveryTest, DoubleWriteFileOfAnotherStoreInTheSameDirectoryIsNotApplied) {
  shale::testing::TempDir dir;
  const std::string root = dir.path() + "/store";
  SliceStoreOptions options;
  options.checkpoint_interval_ms = 0;
  options.checkpoint_wal_bytes = 0;
  int go[2], ready[2];
  ASSERT_EQ(0, ::pipe(go));
  ASSERT_EQ(0, ::pipe(ready));
  pid_t old_store = ::fork();
  ASSERT_GE(old_store, 0);
  if (old_store == 0) {
    // The old store: far ahead in its WAL, then a checkpoint when told,
    // killed once its double-write file is complete.
    auto store = SliceStore::Open(root, options);
    if (!store.ok() || !(*store)->CreateSlice(1).ok()) ::_exit(2);
    for (int i = 0; i < 400; ++i) {
      WriteBatch b;
      b.Put(KeyOf(i), std::string(2000, 'o'));
      if (!(*store)->Write({{1, &b}}).ok()) ::_exit(3);
    }
    char c = 0;
    if (::write(ready[1], &c, 1) != 1 || ::read(go[0], &c, 1) != 1) ::_exit(4);
    for (int i = 0; i < 10; ++i) {
      WriteBatch b;
      b.Put(KeyOf(i), "again");
      if (!(*store)->Write({{1, &b}}).ok()) ::_exit(5);
    }
    TEST_ArmKillPoint("checkpoint-meta", 1);
    (void)(*store)->Checkpoint();
    ::_exit(6);  // not reached: killed at the kill point
  }
  char c = 0;
  ASSERT_EQ(1, ::read(ready[0], &c, 1));
  std::filesystem::remove_all(root);  // the old store's files are gone; it runs on
  // The new store: a few writes, no checkpoint, then killed.
  pid_t new_store = ::fork();
  ASSERT_GE(new_store, 0);
  if (new_store == 0) {
    auto store = SliceStore::Open(root, options);
    if (!store.ok() || !(*store)->CreateSlice(7).ok()) ::_exit(2);
    for (int i = 0; i < 20; ++i) {
      WriteBatch b;
      b.Put(KeyOf(i), ValueOf(i));
      if (!(*store)->Write({{7, &b}}).ok()) ::_exit(3);
    }
    ::_exit(0);
  }
  int wstatus = WaitExit(new_store);
  ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << wstatus;
  ASSERT_EQ(1, ::write(go[1], &c, 1));
  wstatus = WaitExit(old_store);
  ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL) << wstatus;
  ASSERT_TRUE(std::filesystem::file_size(root + "/data.dw") > 0) << "the old store left no double-write file";
  for (int fd : {go[0], go[1], ready[0], ready[1]}) ::close(fd);

  SliceStoreOptions verify = options;
  verify.verify_at_open = true;
  auto store = SliceStore::Open(root, verify);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(std::vector<SliceId>{7}, (*store)->ListSlices());
  auto slice = (*store)->GetSlice(7);
  ASSERT_TRUE(slice.ok());
  Model want;
  for (int i = 0; i < 20; ++i) want[KeyOf(i)] = ValueOf(i);
  EXPECT_EQ(want, Scan(*slice));
  // Recovery's own checkpoint wrote (and then emptied) a double-write file.
  EXPECT_TRUE(!std::filesystem::exists(root + "/data.dw") || std::filesystem::file_size(root + "/data.dw") == 0);
}

// A double-write file with no data file beside it (the data file is made
// before the first checkpoint and never removed) belongs to no store here:
// removed, never used to make a data file of a few checkpointed pages.
TEST(RecoveryTest, DoubleWriteFileWithoutItsDataFileIsRemoved) {
  shale::testing::TempDir dir;
  const std::string root = dir.path() + "/store";
  {
    auto store = SliceStore::Open(root);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->CreateSlice(1).ok());
    WriteBatch b;
    b.Put("k", "v");
    ASSERT_TRUE((*(*store)->GetSlice(1))->Write(b).ok());
    ASSERT_TRUE((*store)->Checkpoint().ok());
  }
  // A double-write file as a checkpoint killed before its meta page leaves.
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto store = SliceStore::Open(root);
    if (!store.ok()) ::_exit(2);
    WriteBatch b;
    b.Put("k2", "v2");
    if (!(*(*store)->GetSlice(1))->Write(b).ok()) ::_exit(3);
    TEST_ArmKillPoint("checkpoint-meta", 1);
    (void)(*store)->Checkpoint();
    ::_exit(4);
  }
  int wstatus = WaitExit(pid);
  ASSERT_TRUE(WIFSIGNALED(wstatus)) << wstatus;
  ASSERT_GT(std::filesystem::file_size(root + "/data.dw"), 0u);
  std::filesystem::remove(root + "/data.shp");
  std::filesystem::remove_all(root + "/wal");
  auto store = SliceStore::Open(root, Verifying());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_TRUE((*store)->ListSlices().empty());
  EXPECT_FALSE(std::filesystem::exists(root + "/data.dw"));
}

// Killed at any instant of a store's creation (here: half of the new data
// file's meta page written): the restart opens.
TEST(RecoveryTest, KillWhileMakingTheDataFileLeavesAStoreThatOpens) {
  shale::testing::TempDir dir;
  const std::string root = dir.path() + "/store";
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    TEST_ArmKillPoint("data-file-create", 1);
    (void)SliceStore::Open(root);
    ::_exit(2);
  }
  int wstatus = WaitExit(pid);
  ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL) << wstatus;
  auto store = SliceStore::Open(root, Verifying());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_TRUE((*store)->CreateSlice(1).ok());
}

// A SIGKILL in the middle of write(2) leaves part of a WAL write (kill
// point wal-write: half of the 5th flush): recovery cuts the torn record,
// appends after it, and the log reads back whole after another restart.
TEST(RecoveryTest, TornWalWriteIsCutAndAppendingContinues) {
  shale::testing::TempDir dir;
  const std::string wal_dir = dir.path() + "/wal";
  const std::string big(3000, 'x');
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto wal = Wal::Open(wal_dir, WalOptions{}, 0, [](uint64_t, WalRecordType, std::string_view) {
      return Status::OK();
    });
    if (!wal.ok()) ::_exit(2);
    TEST_ArmKillPoint("wal-write", 5);
    for (int i = 0; i < 10; ++i) {
      if (!(*wal)->Append(WalRecordType::kBatch, big + std::to_string(i)).ok()) ::_exit(3);
    }
    ::_exit(4);
  }
  int wstatus = WaitExit(pid);
  ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL) << wstatus;
  auto read_back = [&](std::vector<std::string>* out) {
    return Wal::Open(wal_dir, WalOptions{}, 0, [out](uint64_t, WalRecordType, std::string_view p) {
      out->emplace_back(p);
      return Status::OK();
    });
  };
  std::vector<std::string> got;
  {
    auto wal = read_back(&got);
    ASSERT_TRUE(wal.ok()) << wal.status().ToString();
    ASSERT_EQ(4u, got.size()) << "the 5th write was torn";
    ASSERT_TRUE((*wal)->Append(WalRecordType::kBatch, "after").ok());
  }
  got.clear();
  auto wal = read_back(&got);
  ASSERT_TRUE(wal.ok()) << wal.status().ToString();
  ASSERT_EQ(5u, got.size());
  EXPECT_EQ(big + "3", got[3]);
  EXPECT_EQ("after", got[4]);
}

}  // namespace
}  // namespace shale::storage
