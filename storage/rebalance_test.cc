// What the rebalancer needs from storage, against models: exact slice
// figures (also after a crash), snapshot streams (also while the source
// takes writes), building a slice from a stream (also resumed after a
// crash), and hash splits (also with concurrent writes, and a crash in the
// middle).
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "src/common/testing/temp_dir.h"
#include "storage/crc32c.h"
#include "storage/mvcc.h"
#include "storage/slice_stream.h"

namespace shale::storage {
namespace {

using Entries = std::map<std::string, std::string>;

Entries ReadAll(const Slice& slice) {
  Entries out;
  auto it = slice.NewIterator(KeyRange::All());
  for (; it->Valid(); it->Next()) out.emplace(std::string(it->key()), std::string(it->value()));
  EXPECT_TRUE(it->status().ok()) << it->status().ToString();
  return out;
}

SliceStats Count(const Slice& slice) {
  SliceStats s;
  for (const auto& [k, v] : ReadAll(slice)) {
    ++s.rows;
    s.bytes += k.size() + v.size();
  }
  return s;
}

// The rows visible at `snapshot` through MvccSlice.
Entries Visible(Slice* slice, uint64_t snapshot) {
  MvccSlice m(slice);
  Entries out;
  auto it = m.NewIterator(ReadOptions{snapshot}, KeyRange::All());
  for (; it->Valid(); it->Next()) out.emplace(std::string(it->key()), std::string(it->value()));
  EXPECT_TRUE(it->status().ok()) << it->status().ToString();
  return out;
}

std::string KeyOf(int i) { return "k" + std::to_string(i * 7919 % 100003); }

// The distribution hash of a stored version key: of its user key, so all
// versions of a row land on the same side.
uint64_t UserKeyHash(std::string_view stored) {
  std::string user;
  uint64_t ts = 0;
  if (!DecodeVersionKey(stored, &user, &ts)) return 0;
  return crc32c::Value(user.data(), user.size());
}

void ExpectStatsExact(const Slice& slice) {
  SliceStats want = Count(slice), got = slice.GetStats();
  EXPECT_EQ(want.rows, got.rows) << "slice " << slice.id();
  EXPECT_EQ(want.bytes, got.bytes) << "slice " << slice.id();
}

TEST(SliceStatsTest, ExactUnderRandomWritesAcrossReopenAndCrash) {
  shale::testing::TempDir dir;
  SliceStoreOptions opts;
  opts.checkpoint_interval_ms = 0;
  opts.checkpoint_wal_bytes = 256 << 10;  // several checkpoints in the middle
  std::mt19937 rng(5);
  auto random_batch = [&](WriteBatch* b) {
    for (int j = 0; j < 8; ++j) {
      std::string key = "r" + std::to_string(rng() % 600);
      if (rng() % 4 == 0) {
        b->Delete(key);
      } else {
        b->Put(key, std::string(rng() % 3 == 0 ? 6000 + rng() % 3000 : rng() % 200, 'x'));  // some overflow
      }
    }
  };
  {
    auto store = SliceStore::Open(dir.path(), opts);
    ASSERT_TRUE(store.ok());
    Slice* s = *(*store)->CreateSlice(1);
    for (int i = 0; i < 300; ++i) {
      WriteBatch b;
      random_batch(&b);
      ASSERT_TRUE(s->Write(b).ok());
    }
    ExpectStatsExact(*s);
  }
  {  // clean reopen: the figures come from the catalog, not a scan
    auto store = SliceStore::Open(dir.path(), opts);
    ASSERT_TRUE(store.ok());
    ExpectStatsExact(**(*store)->GetSlice(1));
  }
  // A process that writes (with checkpoints in between) and dies: the
  // figures after recovery are the checkpoint's plus the replayed changes.
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto store = SliceStore::Open(dir.path(), opts);
    if (!store.ok()) ::_exit(2);
    Slice* s = *(*store)->GetSlice(1);
    for (int i = 0; i < 400; ++i) {
      WriteBatch b;
      random_batch(&b);
      if (!s->Write(b).ok()) ::_exit(3);
    }
    ::_exit(0);
  }
  int wstatus = 0;
  ASSERT_EQ(pid, ::waitpid(pid, &wstatus, 0));
  ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
  auto store = SliceStore::Open(dir.path(), opts);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ExpectStatsExact(**(*store)->GetSlice(1));
  EXPECT_GT((*(*store)->GetSlice(1))->GetStats().rows, 100u);
}

// A random MVCC history: model[key] = list of (ts, value or nullopt).
struct History {
  std::map<std::string, std::map<uint64_t, std::optional<std::string>>> versions;
  uint64_t ts = 0;

  Entries VisibleAt(uint64_t snapshot) const {
    Entries out;
    for (const auto& [k, vs] : versions) {
      auto it = vs.upper_bound(snapshot);
      if (it == vs.begin()) continue;
      --it;
      if (it->second) out.emplace(k, *it->second);
    }
    return out;
  }
};

void WriteRandomVersions(Slice* slice, History* h, std::mt19937* rng, int commits) {
  for (int i = 0; i < commits; ++i) {
    WriteBatch b;
    ++h->ts;
    std::map<std::string, bool> seen;
    for (int j = 0; j < 4; ++j) {
      std::string key = KeyOf(static_cast<int>((*rng)() % 400));
      if (seen[key]) continue;
      seen[key] = true;
      if ((*rng)() % 5 == 0) {
        AppendVersion(WriteOp{WriteOp::Kind::kDelete, key, {}}, h->ts, &b);
        h->versions[key][h->ts] = std::nullopt;
      } else {
        std::string v = "v" + std::to_string(h->ts) + std::string((*rng)() % 120, 'p');
        AppendVersion(WriteOp{WriteOp::Kind::kPut, key, v}, h->ts, &b);
        h->versions[key][h->ts] = v;
      }
    }
    ASSERT_TRUE(slice->Write(b).ok());
  }
}

TEST(SnapshotStreamTest, ChunksAtEverySnapshotMatchTheModel) {
  shale::testing::TempDir dir;
  auto store = SliceStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  Slice* src = *(*store)->CreateSlice(1);
  History h;
  std::mt19937 rng(11);
  WriteRandomVersions(src, &h, &rng, 500);
  for (uint64_t snapshot : {uint64_t{0}, uint64_t{1}, uint64_t{77}, uint64_t{250}, uint64_t{499}, h.ts}) {
    for (size_t chunk_bytes : {size_t{1}, size_t{700}, size_t{1} << 20}) {
      SCOPED_TRACE(::testing::Message() << "snapshot " << snapshot << ", chunks of " << chunk_bytes);
      Entries got;
      std::string resume;
      bool has_resume = false;
      int chunks = 0;
      for (;;) {
        auto chunk = ReadSnapshotChunk(*src, snapshot, has_resume ? &resume : nullptr, chunk_bytes);
        ASSERT_TRUE(chunk.ok()) << chunk.status().ToString();
        auto wire = DecodeSnapshotChunk(EncodeSnapshotChunk(*chunk));  // through the wire form
        ASSERT_TRUE(wire.ok());
        ASSERT_EQ(chunk->rows, wire->rows);
        ++chunks;
        for (const SnapshotRow& r : wire->rows) {
          ASSERT_TRUE(!has_resume || r.key > resume) << "chunks must follow the resume key";
          ASSERT_TRUE(got.emplace(r.key, r.value).second) << "row streamed twice: " << r.key;
          // The row carries the commit ts of the version it came from.
          auto& vs = h.versions[r.key];
          auto it = vs.upper_bound(snapshot);
          ASSERT_NE(it, vs.begin());
          EXPECT_EQ(std::prev(it)->first, r.commit_ts);
        }
        if (wire->done) break;
        ASSERT_TRUE(wire->has_resume_key);
        resume = wire->resume_key;
        has_resume = true;
        ASSERT_LT(chunks, 100000);
      }
      EXPECT_EQ(h.VisibleAt(snapshot), got);
      if (chunk_bytes == 1 && !got.empty()) {
        EXPECT_GE(chunks, static_cast<int>(got.size()));
      }
    }
  }
}

TEST(SnapshotStreamTest, DamagedChunkIsRejected) {
  SnapshotChunk c;
  c.snapshot_ts = 9;
  c.rows.push_back({"a", 3, "row"});
  c.has_resume_key = true;
  c.resume_key = "a";
  std::string wire = EncodeSnapshotChunk(c);
  ASSERT_TRUE(DecodeSnapshotChunk(wire).ok());
  for (size_t i = 0; i < wire.size(); ++i) {
    std::string bad = wire;
    bad[i] ^= 0x10;
    EXPECT_TRUE(DecodeSnapshotChunk(bad).status().IsCorruption()) << "flip at " << i;
  }
  EXPECT_TRUE(DecodeSnapshotChunk(wire.substr(0, wire.size() - 1)).status().IsCorruption());
}

// The rebalancer's copy: a new replica is built from the stream while the
// source keeps committing; each commit after the snapshot is written to the
// source and the building replica together (what replication will do).
// Garbage collection runs on the source at the held snapshot. At the end
// the replica equals the source at every snapshot from the stream's on.
TEST(SnapshotStreamTest, CopyWhileTheSourceTakesWrites) {
  shale::testing::TempDir dir;
  auto store = SliceStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  Slice* src = *(*store)->CreateSlice(1);
  History h;
  std::mt19937 rng(3);
  WriteRandomVersions(src, &h, &rng, 400);
  const uint64_t snapshot = h.ts;
  SnapshotRegistry registry;
  registry.Acquire(snapshot);
  Slice* dst = *(*store)->CreateBuildingSlice(2, snapshot);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> next_ts{snapshot};
  std::thread writer([&] {
    std::mt19937 wrng(17);
    while (!stop.load()) {
      const uint64_t ts = ++next_ts;
      WriteBatch b;
      std::string key = KeyOf(static_cast<int>(wrng() % 500));
      WriteOp op{wrng() % 4 == 0 ? WriteOp::Kind::kDelete : WriteOp::Kind::kPut, key, "w" + std::to_string(ts)};
      AppendVersion(op, ts, &b);
      std::vector<std::pair<SliceId, const WriteBatch*>> both{{1, &b}, {2, &b}};
      ASSERT_TRUE((*store)->Write(both).ok());
    }
  });
  std::thread collector([&] {
    MvccSlice m(src);
    while (!stop.load()) ASSERT_TRUE(m.CollectGarbage(registry.Horizon(next_ts.load())).ok());
  });
  std::string resume;
  bool has_resume = false;
  int chunks = 0;
  for (;;) {
    auto chunk = ReadSnapshotChunk(*src, snapshot, has_resume ? &resume : nullptr, 900);
    ASSERT_TRUE(chunk.ok());
    auto wire = DecodeSnapshotChunk(EncodeSnapshotChunk(*chunk));
    ASSERT_TRUE(wire.ok());
    ASSERT_TRUE(ApplySnapshotChunk(store->get(), 2, *wire).ok());
    ++chunks;
    // Let writes land between chunks: wait for a few commits rather than a
    // fixed 1 ms, which on a loaded machine let the copy finish with fewer
    // than the 20 writes checked below.
    const uint64_t seen = next_ts.load();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (next_ts.load() < seen + 5 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (wire->done) break;
    resume = wire->resume_key;
    has_resume = true;
  }
  stop = true;
  writer.join();
  collector.join();
  registry.Release(snapshot);
  ASSERT_TRUE((*store)->FinishBuild(2).ok());
  EXPECT_EQ(SliceState::kReady, (*store)->GetBuildState(2)->state);
  EXPECT_GT(chunks, 5);
  EXPECT_GT(next_ts.load(), snapshot + 20) << "the writer should have committed during the copy";
  EXPECT_EQ(h.VisibleAt(snapshot), Visible(dst, snapshot));
  for (uint64_t s = snapshot; s <= next_ts.load(); s += std::max<uint64_t>(1, (next_ts.load() - snapshot) / 17)) {
    ASSERT_EQ(Visible(src, s), Visible(dst, s)) << "snapshot " << s;
  }
  EXPECT_EQ(Visible(src, kLatestSnapshot), Visible(dst, kLatestSnapshot));
  ExpectStatsExact(*dst);
  // Finished: no more chunks.
  EXPECT_FALSE((*store)->LoadChunk(2, WriteBatch{}, "x").ok());
}

// A crash in the middle of a build leaves the slice building with the
// resume key of its last chunk; the copy resumes there and completes.
TEST(SnapshotStreamTest, BuildResumesAfterACrash) {
  shale::testing::TempDir dir;
  History h;
  std::mt19937 rng(23);
  {
    auto store = SliceStore::Open(dir.path());
    ASSERT_TRUE(store.ok());
    WriteRandomVersions(*(*store)->CreateSlice(1), &h, &rng, 300);
  }
  const uint64_t snapshot = h.ts - 50;
  std::string child_resume_file = dir.path() + "/resume";
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto store = SliceStore::Open(dir.path());
    if (!store.ok()) ::_exit(2);
    Slice* src = *(*store)->GetSlice(1);
    if (!(*store)->CreateBuildingSlice(2, snapshot).ok()) ::_exit(3);
    std::string resume;
    for (int i = 0; i < 4; ++i) {
      auto chunk = ReadSnapshotChunk(*src, snapshot, i == 0 ? nullptr : &resume, 1500);
      if (!chunk.ok() || chunk->done) ::_exit(4);
      if (!ApplySnapshotChunk(store->get(), 2, *chunk).ok()) ::_exit(5);
      resume = chunk->resume_key;
    }
    FILE* f = fopen(child_resume_file.c_str(), "w");
    fwrite(resume.data(), 1, resume.size(), f);
    fclose(f);
    ::_exit(0);  // crash: no checkpoint at close
  }
  int wstatus = 0;
  ASSERT_EQ(pid, ::waitpid(pid, &wstatus, 0));
  ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << WEXITSTATUS(wstatus);
  SliceStoreOptions verify;
  verify.verify_at_open = true;
  auto store = SliceStore::Open(dir.path(), verify);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto state = (*store)->GetBuildState(2);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(SliceState::kBuilding, state->state);
  EXPECT_EQ(snapshot, state->snapshot_ts);
  ASSERT_TRUE(state->has_resume_key);
  std::string want_resume;
  {
    FILE* f = fopen(child_resume_file.c_str(), "r");
    char buf[256];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    want_resume.assign(buf, n);
  }
  EXPECT_EQ(want_resume, state->resume_key);
  Slice* dst = *(*store)->GetSlice(2);
  // Exactly the rows up to the resume key are there.
  Entries partial = Visible(dst, snapshot), want_partial;
  for (const auto& [k, v] : h.VisibleAt(snapshot)) {
    if (k <= want_resume) want_partial.emplace(k, v);
  }
  EXPECT_EQ(want_partial, partial);
  EXPECT_FALSE(partial.empty());
  ASSERT_TRUE(CopySnapshot(**(*store)->GetSlice(1), snapshot, store->get(), 2, 1500).ok());
  EXPECT_EQ(h.VisibleAt(snapshot), Visible(dst, snapshot));
  EXPECT_EQ(SliceState::kReady, (*store)->GetBuildState(2)->state);
  ExpectStatsExact(*dst);
}

// Every stored entry of the source lands on exactly one side, by hash,
// also those written while the split runs; the source is unchanged.
TEST(SplitSliceTest, HalvesHoldExactlyTheirEntriesWithConcurrentWrites) {
  shale::testing::TempDir dir;
  SliceStoreOptions opts;
  opts.buffer_pool_bytes = 4 << 20;  // data several times the pool
  opts.wal.sync_mode = WalSyncMode::kAsync;  // no crash here: spare the fsyncs
  auto store = SliceStore::Open(dir.path(), opts);
  ASSERT_TRUE(store.ok());
  Slice* src = *(*store)->CreateSlice(1);
  std::atomic<uint64_t> ts{0};
  for (int i = 0; i < 6000; ++i) {
    WriteBatch b;
    AppendVersion(WriteOp{WriteOp::Kind::kPut, KeyOf(i % 3000), std::string(600 + i % 5000, 'a' + i % 26)}, ++ts,
                  &b);
    ASSERT_TRUE(src->Write(b).ok());
  }
  const uint64_t split = uint64_t{1} << 31;  // about half of the 32-bit CRCs
  const Entries before = ReadAll(*src);
  std::atomic<bool> stop{false};
  std::atomic<int> written{0};
  std::vector<WriteOp> log;  // every change the writer made, in order (one writer thread)
  std::thread writer([&] {
    std::mt19937 rng(99);
    MvccSlice m(src);
    while (!stop.load()) {
      WriteBatch b;
      const std::string key = KeyOf(static_cast<int>(rng() % 4000));
      AppendVersion(WriteOp{rng() % 3 == 0 ? WriteOp::Kind::kDelete : WriteOp::Kind::kPut, key, "during"}, ++ts, &b);
      ASSERT_TRUE(src->Write(b).ok());
      log.insert(log.end(), b.ops().begin(), b.ops().end());
      if (rng() % 8 == 0) {  // garbage collection of the key, through the store like the txn layer's
        WriteBatch doomed;
        ASSERT_TRUE(m.CollectKeyGarbage(key, ts.load() - 100, &doomed).ok());
        if (!doomed.empty()) {
          ASSERT_TRUE(src->Write(doomed).ok());
          log.insert(log.end(), doomed.ops().begin(), doomed.ops().end());
        }
      }
      ++written;
    }
  });
  while (written.load() < 50) std::this_thread::yield();
  ASSERT_TRUE((*store)->SplitSlice(1, split, UserKeyHash, 10, 11).ok());
  stop = true;
  writer.join();
  Entries low = ReadAll(**(*store)->GetSlice(10)), high = ReadAll(**(*store)->GetSlice(11));
  for (const auto& [k, v] : low) ASSERT_LT(UserKeyHash(k), split);
  for (const auto& [k, v] : high) ASSERT_GE(UserKeyHash(k), split);
  EXPECT_GT(low.size(), 1000u);
  EXPECT_GT(high.size(), 1000u);
  ExpectStatsExact(**(*store)->GetSlice(10));
  ExpectStatsExact(**(*store)->GetSlice(11));
  EXPECT_EQ(SliceState::kReady, (*store)->GetBuildState(10)->state);
  // The halves together must be exactly the source after some prefix of the
  // writer's changes (those before the split finished): replay the log over
  // the initial source, tracking how many keys disagree with the halves.
  Entries both = low;
  both.insert(high.begin(), high.end());
  Entries model = before;
  auto differs = [&](const std::string& k) {
    auto m = model.find(k), h = both.find(k);
    if (m == model.end() || h == both.end()) return (m == model.end()) != (h == both.end());
    return m->second != h->second;
  };
  size_t mismatched = 0;
  for (const auto& [k, v] : model) mismatched += differs(k);
  for (const auto& [k, v] : both) mismatched += model.count(k) ? 0 : 1;
  std::vector<size_t> exact_prefixes;
  if (mismatched == 0) exact_prefixes.push_back(0);
  for (size_t i = 0; i < log.size(); ++i) {
    const WriteOp& op = log[i];
    mismatched -= differs(op.key);
    if (op.kind == WriteOp::Kind::kPut) {
      model[op.key] = op.value;
    } else {
      model.erase(op.key);
    }
    mismatched += differs(op.key);
    if (mismatched == 0) exact_prefixes.push_back(i + 1);
  }
  ASSERT_FALSE(exact_prefixes.empty()) << "the halves are not the source at any point of the writer's history";
  EXPECT_GE(exact_prefixes.back(), 50u) << "the writes during the split must be in the halves";
  EXPECT_EQ(model, ReadAll(*src)) << "the source is the initial rows plus the writer's changes";
}

TEST(SplitSliceTest, WithoutWritersTheHalvesAreExactlyTheSource) {
  shale::testing::TempDir dir;
  Entries source;
  {
    auto store = SliceStore::Open(dir.path());
    ASSERT_TRUE(store.ok());
    Slice* src = *(*store)->CreateSlice(1);
    History h;
    std::mt19937 rng(8);
    WriteRandomVersions(src, &h, &rng, 600);
    source = ReadAll(*src);
    SliceOptions zlib;
    zlib.compression = PageCompression::kZlib;
    ASSERT_TRUE((*store)->SplitSlice(1, uint64_t{1} << 31, UserKeyHash, 2, 3, zlib).ok());
    EXPECT_FALSE((*store)->SplitSlice(1, 5, UserKeyHash, 2, 4).ok()) << "slice 2 exists";
  }
  auto store = SliceStore::Open(dir.path());  // and after a reopen
  ASSERT_TRUE(store.ok());
  Entries low = ReadAll(**(*store)->GetSlice(2)), high = ReadAll(**(*store)->GetSlice(3));
  EXPECT_EQ(PageCompression::kZlib, (*store)->GetSliceOptions(2)->compression);
  Entries want_low, want_high;
  for (const auto& [k, v] : source) (UserKeyHash(k) < (uint64_t{1} << 31) ? want_low : want_high).emplace(k, v);
  EXPECT_EQ(want_low, low);
  EXPECT_EQ(want_high, high);
  EXPECT_EQ(source, ReadAll(**(*store)->GetSlice(1)));
}

// A crash in the middle of a split (the process dies while copying): at
// open both new slices are gone and the source is intact; a crash right
// after it returned keeps both.
TEST(SplitSliceTest, CrashInTheMiddleDropsBothHalves) {
  for (bool finish : {false, true}) {
    SCOPED_TRACE(finish ? "crash after the split" : "crash during the split");
    shale::testing::TempDir dir;
    Entries source;
    {
      SliceStoreOptions load;
      load.wal.sync_mode = WalSyncMode::kAsync;  // closed cleanly (checkpointed) before the crash
      auto store = SliceStore::Open(dir.path(), load);
      ASSERT_TRUE(store.ok());
      Slice* src = *(*store)->CreateSlice(1);
      for (int i = 0; i < 5000; ++i) {
        WriteBatch b;
        AppendVersion(WriteOp{WriteOp::Kind::kPut, KeyOf(i), std::string(700, 'a' + i % 26)}, i + 1, &b);
        ASSERT_TRUE(src->Write(b).ok());
      }
      source = ReadAll(*src);
    }
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto store = SliceStore::Open(dir.path());
      if (!store.ok()) ::_exit(2);
      int calls = 0;
      KeyHashFn dying = [&](std::string_view k) -> uint64_t {
        if (!finish && ++calls == 3000) ::_exit(0);  // after at least one chunk was logged and applied
        return UserKeyHash(k);
      };
      if (!(*store)->SplitSlice(1, uint64_t{1} << 31, dying, 2, 3).ok()) ::_exit(3);
      ::_exit(finish ? 0 : 4);
    }
    int wstatus = 0;
    ASSERT_EQ(pid, ::waitpid(pid, &wstatus, 0));
    ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << WEXITSTATUS(wstatus);
    SliceStoreOptions verify;
    verify.verify_at_open = true;
    auto store = SliceStore::Open(dir.path(), verify);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    EXPECT_EQ(source, ReadAll(**(*store)->GetSlice(1)));
    if (!finish) {
      EXPECT_TRUE((*store)->GetSlice(2).status().IsNotFound());
      EXPECT_TRUE((*store)->GetSlice(3).status().IsNotFound());
      EXPECT_EQ(std::vector<SliceId>{1}, (*store)->ListSlices());
      // And the split can simply run again.
      ASSERT_TRUE((*store)->SplitSlice(1, uint64_t{1} << 31, UserKeyHash, 2, 3).ok());
    }
    Entries both = ReadAll(**(*store)->GetSlice(2));
    Entries high = ReadAll(**(*store)->GetSlice(3));
    both.insert(high.begin(), high.end());
    EXPECT_EQ(source, both);
  }
}

TEST(SliceBuildTest, BadRequestsChangeNothing) {
  shale::testing::TempDir dir;
  auto store = SliceStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->CreateSlice(1).ok());
  WriteBatch b;
  b.Put("a", "b");
  EXPECT_TRUE((*store)->LoadChunk(1, b, "a").code() == StatusCode::kInvalidArgument) << "slice 1 is not being built";
  EXPECT_TRUE((*store)->FinishBuild(1).code() == StatusCode::kInvalidArgument);
  EXPECT_TRUE((*store)->LoadChunk(7, b, "a").IsNotFound());
  EXPECT_TRUE((*store)->SplitSlice(1, 5, UserKeyHash, 1, 2).code() == StatusCode::kInvalidArgument);
  EXPECT_TRUE((*store)->SplitSlice(9, 5, UserKeyHash, 3, 2).IsNotFound());
  ASSERT_TRUE((*store)->CreateBuildingSlice(2, 100).ok());
  SnapshotChunk other;
  other.snapshot_ts = 99;
  other.rows.push_back({"x", 5, "y"});
  EXPECT_TRUE(ApplySnapshotChunk(store->get(), 2, other).code() == StatusCode::kInvalidArgument);
  EXPECT_EQ(0u, (*(*store)->GetSlice(2))->GetStats().rows);
  EXPECT_EQ((std::vector<SliceId>{1, 2}), (*store)->ListSlices());
}

}  // namespace
}  // namespace shale::storage
