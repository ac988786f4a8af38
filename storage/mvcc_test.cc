#include "storage/mvcc.h"

#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "src/common/testing/temp_dir.h"

namespace shale::storage {
namespace {

class MvccTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = SliceStore::Open(dir_.path());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    auto slice = store_->CreateSlice(1);
    ASSERT_TRUE(slice.ok());
    mvcc_ = std::make_unique<MvccSlice>(*slice);
  }

  Status Put(const std::string& k, const std::string& v, uint64_t start, uint64_t commit) {
    WriteBatch b;
    b.Put(k, v);
    return mvcc_->Write(b, start, commit);
  }
  Status Del(const std::string& k, uint64_t start, uint64_t commit) {
    WriteBatch b;
    b.Delete(k);
    return mvcc_->Write(b, start, commit);
  }
  std::string At(uint64_t snapshot, const std::string& k) {
    std::string v;
    Status s = mvcc_->Get(ReadOptions{snapshot}, k, &v);
    if (s.IsNotFound()) return "<none>";
    EXPECT_TRUE(s.ok()) << s.ToString();
    return v;
  }
  std::vector<std::pair<std::string, std::string>> Scan(uint64_t snapshot, const KeyRange& r = KeyRange::All()) {
    std::vector<std::pair<std::string, std::string>> out;
    auto it = mvcc_->NewIterator(ReadOptions{snapshot}, r);
    for (; it->Valid(); it->Next()) out.emplace_back(std::string(it->key()), std::string(it->value()));
    EXPECT_TRUE(it->status().ok());
    return out;
  }

  shale::testing::TempDir dir_;
  std::unique_ptr<SliceStore> store_;
  std::unique_ptr<MvccSlice> mvcc_;
};

TEST(MvccKeyTest, EncodingKeepsUserKeyOrderAndNewestFirst) {
  std::vector<std::string> users = {"", std::string("\0", 1), std::string("\0\0", 2), std::string("\0\x01", 2),
                                    "a", std::string("a\0", 2), std::string("a\0b", 3), "a\x01", "ab", "b"};
  std::vector<std::string> encoded;
  for (const std::string& u : users) {
    for (uint64_t ts : {900u, 50u, 7u}) encoded.push_back(EncodeVersionKey(u, ts));
  }
  for (size_t i = 1; i < encoded.size(); ++i) EXPECT_LT(encoded[i - 1], encoded[i]) << i;
  for (const std::string& u : users) {
    std::string back;
    uint64_t ts = 0;
    ASSERT_TRUE(DecodeVersionKey(EncodeVersionKey(u, 123456789), &back, &ts));
    EXPECT_EQ(u, back);
    EXPECT_EQ(123456789u, ts);
  }
  std::string junk;
  uint64_t ts;
  EXPECT_FALSE(DecodeVersionKey("plain", &junk, &ts));
}

TEST_F(MvccTest, SnapshotSeesNewestVersionAtOrBeforeIt) {
  ASSERT_TRUE(Put("k", "v10", 5, 10).ok());
  ASSERT_TRUE(Put("k", "v20", 15, 20).ok());
  ASSERT_TRUE(Del("k", 25, 30).ok());
  ASSERT_TRUE(Put("k", "v40", 35, 40).ok());
  EXPECT_EQ("<none>", At(9, "k"));
  EXPECT_EQ("v10", At(10, "k"));
  EXPECT_EQ("v10", At(19, "k"));
  EXPECT_EQ("v20", At(20, "k"));
  EXPECT_EQ("v20", At(29, "k"));
  EXPECT_EQ("<none>", At(30, "k"));  // the tombstone hides older versions
  EXPECT_EQ("<none>", At(39, "k"));
  EXPECT_EQ("v40", At(40, "k"));
  EXPECT_EQ("v40", At(kLatestSnapshot, "k"));
  EXPECT_EQ("<none>", At(kLatestSnapshot, "other"));
}

TEST_F(MvccTest, WriteWriteConflictFirstCommitterWins) {
  ASSERT_TRUE(Put("k", "a", 1, 10).ok());
  // Two transactions started at 12; the first to commit wins.
  ASSERT_TRUE(Put("k", "t1", 12, 14).ok());
  Status s = Put("k", "t2", 12, 15);
  EXPECT_TRUE(IsWriteConflict(s)) << s.ToString();
  EXPECT_EQ("t1", At(kLatestSnapshot, "k"));
  // A conflict on one key writes nothing of the batch.
  WriteBatch b;
  b.Put("fresh", "x");
  b.Put("k", "y");
  EXPECT_TRUE(IsWriteConflict(mvcc_->Write(b, 13, 16)));
  EXPECT_EQ("<none>", At(kLatestSnapshot, "fresh"));
  EXPECT_TRUE(*mvcc_->HasNewerVersion("k", 13));
  EXPECT_FALSE(*mvcc_->HasNewerVersion("k", 14));
  EXPECT_FALSE(*mvcc_->HasNewerVersion("fresh", 0));
  EXPECT_FALSE(IsWriteConflict(Status::Unavailable("pool full")));
  EXPECT_EQ(StatusCode::kInvalidArgument, Put("k", "z", 20, 20).code());
}

TEST_F(MvccTest, ScansAreSnapshotsAgainstAModel) {
  // Random versioned history; every snapshot's scan must equal the model's
  // state as of that timestamp.
  std::mt19937 rng(11);
  std::vector<std::map<std::string, std::string>> states(1);  // states[ts]
  uint64_t ts = 0;
  for (int step = 0; step < 300; ++step) {
    std::map<std::string, std::string> next = states.back();
    WriteBatch b;
    for (int n = 0; n < 1 + static_cast<int>(rng() % 3); ++n) {
      // Half the keys extend another by NULs: "k7" and "k7\0\0z" sort next
      // to each other, and a scan must not take one's versions for the other's.
      const int which = static_cast<int>(rng() % 30);
      std::string k = "k" + std::to_string(which / 2);
      if (which % 2 != 0) k += std::string("\0\0z", 3);
      if (b.ops().end() != std::find_if(b.ops().begin(), b.ops().end(), [&](const WriteOp& o) { return o.key == k; })) {
        continue;
      }
      if (rng() % 4 == 0) {
        b.Delete(k);
        next.erase(k);
      } else {
        std::string v = "v" + std::to_string(step);
        b.Put(k, v);
        next[k] = v;
      }
    }
    ++ts;
    ASSERT_TRUE(mvcc_->Write(b, ts - 1, ts).ok());
    states.push_back(std::move(next));
  }
  for (uint64_t s = 0; s <= ts; s += 7) {
    auto got = Scan(s);
    std::vector<std::pair<std::string, std::string>> want(states[s].begin(), states[s].end());
    ASSERT_EQ(want, got) << "snapshot " << s;
  }
  KeyRange r;
  r.has_start = true;
  r.start = "k12";
  r.start_inclusive = false;
  r.has_end = true;
  r.end = "k20";
  auto got = Scan(ts / 2, r);
  std::vector<std::pair<std::string, std::string>> want;
  for (const auto& [k, v] : states[ts / 2]) {
    if (r.Contains(k)) want.emplace_back(k, v);
  }
  EXPECT_EQ(want, got);
}

TEST_F(MvccTest, GarbageCollectionKeepsWhatSnapshotsCanSee) {
  ASSERT_TRUE(Put("a", "a10", 5, 10).ok());
  ASSERT_TRUE(Put("a", "a20", 15, 20).ok());
  ASSERT_TRUE(Put("a", "a30", 25, 30).ok());
  ASSERT_TRUE(Put("b", "b10", 5, 10).ok());
  ASSERT_TRUE(Del("b", 15, 20).ok());
  ASSERT_TRUE(Put("c", "c40", 35, 40).ok());
  auto rows = [&] { return (*store_->GetSlice(1))->GetStats().rows; };
  EXPECT_EQ(6u, rows());
  // Horizon 25: a10 is shadowed by a20 (needed by snapshot 25); b's
  // tombstone at 20 and b10 are invisible to every snapshot >= 25.
  auto removed = mvcc_->CollectGarbage(25);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(3u, *removed);
  EXPECT_EQ(3u, rows());
  EXPECT_EQ("a20", At(25, "a"));
  EXPECT_EQ("a30", At(30, "a"));
  EXPECT_EQ("<none>", At(25, "b"));
  EXPECT_EQ("c40", At(kLatestSnapshot, "c"));
  // Nothing more to remove at the same horizon.
  EXPECT_EQ(0u, *mvcc_->CollectGarbage(25));
}

TEST_F(MvccTest, BackgroundCollectorHonoursTheOldestSnapshotAndReadersNeverBlock) {
  SnapshotRegistry snapshots;
  std::atomic<uint64_t> now{0};
  GarbageCollector gc([&] { return snapshots.Horizon(now.load()); }, 5);
  gc.Register(mvcc_.get());
  ASSERT_TRUE(Put("k", "v1", 0, 1).ok());
  now = 1;
  snapshots.Acquire(1);  // a reader holds snapshot 1 throughout
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0};
  std::thread reader([&] {
    while (!stop) {
      ASSERT_EQ("v1", At(1, "k"));
      ++reads;
    }
  });
  for (uint64_t t = 2; t < 60; ++t) {
    ASSERT_TRUE(Put("k", "v" + std::to_string(t), t - 1, t).ok());
    now = t;
  }
  while (gc.passes() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  stop = true;
  reader.join();
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ("v1", At(1, "k"));  // kept for the snapshot
  snapshots.Release(1);
  uint64_t before = gc.passes();
  while (gc.passes() < before + 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  gc.Unregister(mvcc_.get());
  EXPECT_EQ("<none>", At(1, "k"));  // collected once no snapshot needed it
  EXPECT_EQ("v59", At(kLatestSnapshot, "k"));
  EXPECT_EQ(1u, (*store_->GetSlice(1))->GetStats().rows);
  EXPECT_GT(gc.removed(), 0u);
}

}  // namespace
}  // namespace shale::storage
