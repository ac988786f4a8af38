#include "storage/log_slice.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "src/common/testing/temp_dir.h"

namespace shale::storage {
namespace {

using Model = std::map<std::string, std::string>;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Overwrites bytes at `offset` in place (no truncation, which on ext4 forces
// a flush on close and slows the test down).
void PatchFile(const std::string& path, uint64_t offset, const std::string& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(static_cast<ssize_t>(bytes.size()),
            ::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)));
  ::close(fd);
}

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

Model Scan(const Slice& slice, const KeyRange& range = KeyRange::All()) {
  Model out;
  auto it = slice.NewIterator(range);
  std::string prev;
  bool first = true;
  for (; it->Valid(); it->Next()) {
    std::string key(it->key());
    EXPECT_TRUE(first || prev < key) << "iterator out of order";
    first = false;
    prev = key;
    out.emplace(std::move(key), std::string(it->value()));
  }
  EXPECT_TRUE(it->status().ok());
  return out;
}

Model ModelRange(const Model& model, const KeyRange& range) {
  Model out;
  for (const auto& [k, v] : model) {
    if (range.Contains(k)) out.emplace(k, v);
  }
  return out;
}

void ApplyToModel(const WriteBatch& batch, Model* model) {
  for (const WriteOp& op : batch.ops()) {
    if (op.kind == WriteOp::Kind::kPut) {
      (*model)[op.key] = op.value;
    } else {
      model->erase(op.key);
    }
  }
}

uint64_t ModelBytes(const Model& model) {
  uint64_t n = 0;
  for (const auto& [k, v] : model) n += k.size() + v.size();
  return n;
}

void ExpectMatches(const Slice& slice, const Model& model) {
  EXPECT_EQ(model, Scan(slice));
  SliceStats stats = slice.GetStats();
  EXPECT_EQ(model.size(), stats.rows);
  EXPECT_EQ(ModelBytes(model), stats.bytes);
  for (const auto& [k, v] : model) {
    std::string got;
    ASSERT_TRUE(slice.Get(k, &got).ok()) << "missing key of size " << k.size();
    ASSERT_EQ(v, got);
  }
}

// Random keys over a small alphabet that includes 0x00 and 0xFF, so keys
// collide often and bytewise order (invariant 3) matters.
class RandomRows {
 public:
  explicit RandomRows(uint64_t seed) : rng_(seed) {}
  std::string Key() {
    static const char kAlphabet[] = {'\x00', '\x01', 'a', 'b', '\x7f', '\x80', '\xff'};
    std::string k(rng_() % 5, '\0');
    for (char& c : k) c = kAlphabet[rng_() % sizeof(kAlphabet)];
    return k;
  }
  std::string Value() {
    std::string v(rng_() % 64, '\0');
    for (char& c : v) c = static_cast<char>(rng_());
    return v;
  }
  WriteBatch Batch(size_t max_ops) {
    WriteBatch b;
    size_t n = 1 + rng_() % max_ops;
    for (size_t i = 0; i < n; ++i) {
      if (rng_() % 4 == 0) {
        b.Delete(Key());
      } else {
        b.Put(Key(), Value());
      }
    }
    return b;
  }
  KeyRange Range() {
    KeyRange r;
    r.has_start = rng_() % 3 != 0;
    r.start = Key();
    r.start_inclusive = rng_() % 2 == 0;
    r.has_end = rng_() % 3 != 0;
    r.end = Key();
    r.end_inclusive = rng_() % 2 == 0;
    return r;
  }
  uint64_t Next() { return rng_(); }

 private:
  std::mt19937_64 rng_;
};

TEST(KeyRangeTest, Contains) {
  EXPECT_TRUE(KeyRange::All().Contains(""));
  EXPECT_TRUE(KeyRange::All().Contains("\xff\xff"));
  KeyRange r{true, "b", true, true, "d", false};
  EXPECT_FALSE(r.Contains("a"));
  EXPECT_TRUE(r.Contains("b"));
  EXPECT_TRUE(r.Contains("c"));
  EXPECT_TRUE(r.Contains("cz"));
  EXPECT_FALSE(r.Contains("d"));
  EXPECT_FALSE(r.Contains("da"));
  r.start_inclusive = false;
  r.end_inclusive = true;
  EXPECT_FALSE(r.Contains("b"));
  EXPECT_TRUE(r.Contains(std::string_view("b\0", 2)));
  EXPECT_TRUE(r.Contains("d"));
  // Bytewise: 0x80 sorts after 'z'.
  KeyRange high{true, "z", true, false, "", true};
  EXPECT_TRUE(high.Contains("\x80"));
  EXPECT_FALSE(high.Contains("y"));
}

TEST(LogSliceTest, CreateFailsIfLogExists) {
  shale::testing::TempDir dir;
  auto a = LogSlice::Create(dir.path(), 1);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto b = LogSlice::Create(dir.path(), 1);
  EXPECT_FALSE(b.ok());
}

TEST(LogSliceTest, GetMissingIsNotFound) {
  shale::testing::TempDir dir;
  auto slice = LogSlice::Create(dir.path(), 3);
  ASSERT_TRUE(slice.ok());
  std::string v;
  EXPECT_TRUE((*slice)->Get("nope", &v).IsNotFound());
  WriteBatch b;
  b.Put("k", "v");
  b.Delete("k");
  ASSERT_TRUE((*slice)->Write(b).ok());
  EXPECT_TRUE((*slice)->Get("k", &v).IsNotFound());
  EXPECT_TRUE((*slice)->Write(WriteBatch()).ok());
}

// A long random sequence of batches against a std::map model, closing and
// recovering the slice at random points.
TEST(LogSliceTest, RandomizedAgainstModelWithReopen) {
  shale::testing::TempDir dir;
  RandomRows rows(42);
  Model model;
  auto opened = LogSlice::Create(dir.path(), 7);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<LogSlice> slice = std::move(opened).value();
  int reopens = 0;
  for (int step = 0; step < 600; ++step) {
    WriteBatch batch = rows.Batch(8);
    ASSERT_TRUE(slice->Write(batch).ok());
    ApplyToModel(batch, &model);
    if (rows.Next() % 25 == 0) {
      slice.reset();
      auto recovered = LogSlice::Recover(dir.path(), 7);
      ASSERT_TRUE(recovered.ok()) << recovered.status().ToString();
      slice = std::move(recovered).value();
      ++reopens;
      ASSERT_NO_FATAL_FAILURE(ExpectMatches(*slice, model));
    }
    if (step % 50 == 0) {
      ASSERT_NO_FATAL_FAILURE(ExpectMatches(*slice, model));
    }
    KeyRange range = rows.Range();
    ASSERT_EQ(ModelRange(model, range), Scan(*slice, range)) << "step " << step;
    std::string key = rows.Key();
    std::string got;
    Status s = slice->Get(key, &got);
    auto it = model.find(key);
    if (it == model.end()) {
      ASSERT_TRUE(s.IsNotFound());
    } else {
      ASSERT_TRUE(s.ok());
      ASSERT_EQ(it->second, got);
    }
  }
  EXPECT_GT(reopens, 10);
  slice.reset();
  auto recovered = LogSlice::Recover(dir.path(), 7);
  ASSERT_TRUE(recovered.ok());
  ExpectMatches(**recovered, model);
}

TEST(LogSliceTest, IteratorIsASnapshot) {
  shale::testing::TempDir dir;
  auto slice = LogSlice::Create(dir.path(), 1);
  ASSERT_TRUE(slice.ok());
  WriteBatch b;
  b.Put("a", "1");
  b.Put("b", "2");
  b.Put("c", "3");
  ASSERT_TRUE((*slice)->Write(b).ok());
  auto it = (*slice)->NewIterator(KeyRange::All());
  WriteBatch later;
  later.Delete("a");
  later.Put("b", "changed");
  later.Put("bb", "new");
  later.Put("d", "new");
  ASSERT_TRUE((*slice)->Write(later).ok());
  Model seen;
  for (; it->Valid(); it->Next()) seen.emplace(it->key(), it->value());
  EXPECT_EQ((Model{{"a", "1"}, {"b", "2"}, {"c", "3"}}), seen);
  EXPECT_EQ((Model{{"b", "changed"}, {"bb", "new"}, {"c", "3"}, {"d", "new"}}), Scan(**slice));
}

// Readers iterating while a writer runs only ever see whole batches: every
// batch sets all keys to the same new value.
TEST(LogSliceTest, ConcurrentReadersSeeWholeBatches) {
  shale::testing::TempDir dir;
  auto created = LogSlice::Create(dir.path(), 1);
  ASSERT_TRUE(created.ok());
  LogSlice* slice = created->get();
  auto batch_for = [](int version) {
    WriteBatch b;
    for (int k = 0; k < 20; ++k) b.Put("key" + std::to_string(k), std::to_string(version));
    return b;
  };
  ASSERT_TRUE(slice->Write(batch_for(0)).ok());
  std::atomic<bool> done{false};
  std::atomic<int> torn{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      while (!done.load()) {
        Model m = Scan(*slice);
        if (m.size() != 20) ++torn;
        for (const auto& [k, v] : m) {
          if (v != m.begin()->second) ++torn;
        }
      }
    });
  }
  for (int v = 1; v <= 100; ++v) ASSERT_TRUE(slice->Write(batch_for(v)).ok());
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(0, torn.load());
}

// Writes `n` batches of a few rows each; returns the model after each batch and
// the log size after each batch.
struct History {
  std::vector<Model> models;      // models[i]: after i batches
  std::vector<uint64_t> sizes;    // sizes[i]: log bytes after i batches
};

History WriteBatches(const std::string& dir, SliceId id, int n, uint64_t seed) {
  History h;
  RandomRows rows(seed);
  auto slice = LogSlice::Create(dir, id);
  EXPECT_TRUE(slice.ok());
  Model model;
  h.models.push_back(model);
  h.sizes.push_back((*slice)->TEST_LogBytes());
  for (int i = 0; i < n; ++i) {
    WriteBatch b = rows.Batch(6);
    b.Put("batch-" + std::to_string(i), rows.Value());  // every batch changes something
    EXPECT_TRUE((*slice)->Write(b).ok());
    ApplyToModel(b, &model);
    h.models.push_back(model);
    h.sizes.push_back((*slice)->TEST_LogBytes());
  }
  return h;
}

// Cutting the log anywhere inside its last record is a torn write: recovery
// keeps exactly the first N-1 batches, shortens the file, and appends work.
TEST(LogSliceTest, TornTailAtEveryOffsetOfLastRecord) {
  shale::testing::TempDir dir;
  constexpr int kBatches = 6;
  History h = WriteBatches(dir.path(), 5, kBatches, 11);
  const std::string path = LogSlice::LogPath(dir.path(), 5);
  const std::string full = ReadFile(path);
  ASSERT_EQ(h.sizes[kBatches], full.size());
  const uint64_t last_start = h.sizes[kBatches - 1];
  ASSERT_GT(full.size() - last_start, 20u);
  for (uint64_t cut = last_start; cut < full.size(); ++cut) {
    // Recovery of the previous cut left the file at last_start; regrow it.
    PatchFile(path, last_start, full.substr(last_start, cut - last_start));
    ASSERT_EQ(0, ::truncate(path.c_str(), static_cast<off_t>(cut)));
    auto slice = LogSlice::Recover(dir.path(), 5);
    ASSERT_TRUE(slice.ok()) << "cut " << cut << ": " << slice.status().ToString();
    ASSERT_EQ(h.models[kBatches - 1], Scan(**slice)) << "cut " << cut;
    ASSERT_EQ(last_start, (*slice)->TEST_LogBytes());
    ASSERT_EQ(last_start, std::filesystem::file_size(path)) << "cut " << cut;
  }
  // After recovering from a torn tail, new appends land after the good data.
  {
    auto slice = LogSlice::Recover(dir.path(), 5);
    ASSERT_TRUE(slice.ok());
    WriteBatch b;
    b.Put("after", "torn");
    ASSERT_TRUE((*slice)->Write(b).ok());
  }
  auto slice = LogSlice::Recover(dir.path(), 5);
  ASSERT_TRUE(slice.ok()) << slice.status().ToString();
  Model expected = h.models[kBatches - 1];
  expected["after"] = "torn";
  EXPECT_EQ(expected, Scan(**slice));
}

// A complete last record whose checksum fails is a torn write too.
TEST(LogSliceTest, ChecksumMismatchInLastRecordIsTornTail) {
  shale::testing::TempDir dir;
  History h = WriteBatches(dir.path(), 2, 4, 12);
  const std::string path = LogSlice::LogPath(dir.path(), 2);
  std::string data = ReadFile(path);
  data[(h.sizes[3] + data.size()) / 2] ^= 0x10;
  WriteFile(path, data);
  auto slice = LogSlice::Recover(dir.path(), 2);
  ASSERT_TRUE(slice.ok()) << slice.status().ToString();
  EXPECT_EQ(h.models[3], Scan(**slice));
}

// Filesystems can persist a file's new size before its data, leaving zeros.
TEST(LogSliceTest, ZeroFilledTailIsTornTail) {
  shale::testing::TempDir dir;
  History h = WriteBatches(dir.path(), 2, 4, 13);
  const std::string path = LogSlice::LogPath(dir.path(), 2);
  std::string data = ReadFile(path);
  WriteFile(path, data + std::string(4096, '\0'));
  auto slice = LogSlice::Recover(dir.path(), 2);
  ASSERT_TRUE(slice.ok()) << slice.status().ToString();
  EXPECT_EQ(h.models[4], Scan(**slice));
  EXPECT_EQ(data.size(), std::filesystem::file_size(path));
}

// Damage followed by further records is corruption, never silently dropped.
TEST(LogSliceTest, FlippedByteInEarlierRecordIsCorruption) {
  shale::testing::TempDir dir;
  constexpr int kBatches = 5;
  History h = WriteBatches(dir.path(), 9, kBatches, 14);
  const std::string path = LogSlice::LogPath(dir.path(), 9);
  const std::string good = ReadFile(path);
  for (int record = 0; record < kBatches - 1; ++record) {
    // Every byte of the record: header (crc, length, type) and payload.
    for (uint64_t off = h.sizes[record]; off < h.sizes[record + 1]; ++off) {
      PatchFile(path, off, std::string(1, static_cast<char>(good[off] ^ 0x01)));
      auto slice = LogSlice::Recover(dir.path(), 9);
      PatchFile(path, off, std::string(1, good[off]));
      ASSERT_FALSE(slice.ok()) << "record " << record << " offset " << off;
      ASSERT_TRUE(slice.status().IsCorruption()) << slice.status().ToString();
      const std::string& msg = slice.status().message();
      EXPECT_NE(std::string::npos, msg.find(path)) << msg;
      EXPECT_NE(std::string::npos, msg.find("slice 9")) << msg;
      EXPECT_NE(std::string::npos, msg.find("offset " + std::to_string(h.sizes[record]))) << msg;
    }
  }
  // Recovery did not modify the damaged file.
  std::string bad = good;
  bad[h.sizes[1] + 2] ^= 0x01;
  WriteFile(path, bad);
  EXPECT_FALSE(LogSlice::Recover(dir.path(), 9).ok());
  EXPECT_EQ(bad, ReadFile(path));
}

// A record's length field damaged to run past the end of the file looks like a
// torn tail, but the good records after it give it away.
TEST(LogSliceTest, LengthPastEndWithRecordsAfterIsCorruption) {
  shale::testing::TempDir dir;
  History h = WriteBatches(dir.path(), 4, 5, 15);
  const std::string path = LogSlice::LogPath(dir.path(), 4);
  std::string data = ReadFile(path);
  data[h.sizes[1] + 7] = '\x7f';  // high byte of record 1's length
  WriteFile(path, data);
  auto slice = LogSlice::Recover(dir.path(), 4);
  ASSERT_FALSE(slice.ok());
  EXPECT_TRUE(slice.status().IsCorruption()) << slice.status().ToString();
}

TEST(LogSliceTest, CompactionPreservesContents) {
  shale::testing::TempDir dir;
  LogSliceOptions options;
  options.compact_min_log_bytes = 16 << 10;
  auto created = LogSlice::Create(dir.path(), 8, options);
  ASSERT_TRUE(created.ok());
  std::unique_ptr<LogSlice> slice = std::move(created).value();
  RandomRows rows(99);
  Model model;
  uint64_t max_log = 0;
  for (int i = 0; i < 250; ++i) {
    WriteBatch b;
    // Overwrite a few of 20 keys with 1 KiB values; delete now and then.
    for (int j = 0; j < 3; ++j) {
      std::string key = "row" + std::to_string(rows.Next() % 20);
      if (rows.Next() % 10 == 0) {
        b.Delete(key);
      } else {
        b.Put(key, std::string(1024, static_cast<char>('a' + rows.Next() % 26)));
      }
    }
    ASSERT_TRUE(slice->Write(b).ok());
    ApplyToModel(b, &model);
    max_log = std::max(max_log, slice->TEST_LogBytes());
  }
  // 250 * 3 KiB were written; compaction kept the log near the live size
  // (at most 20 KiB), so below twice that plus one batch.
  EXPECT_LT(max_log, 48u << 10);
  ExpectMatches(*slice, model);
  slice.reset();
  auto recovered = LogSlice::Recover(dir.path(), 8, options);
  ASSERT_TRUE(recovered.ok()) << recovered.status().ToString();
  ExpectMatches(**recovered, model);
  EXPECT_FALSE(std::filesystem::exists(LogSlice::LogPath(dir.path(), 8) + ".tmp"));
}

TEST(LogSliceTest, ExplicitCompactThenReopen) {
  shale::testing::TempDir dir;
  RandomRows rows(5);
  Model model;
  {
    auto slice = LogSlice::Create(dir.path(), 2);
    ASSERT_TRUE(slice.ok());
    for (int i = 0; i < 100; ++i) {
      WriteBatch b = rows.Batch(5);
      ASSERT_TRUE((*slice)->Write(b).ok());
      ApplyToModel(b, &model);
    }
    uint64_t before = (*slice)->TEST_LogBytes();
    ASSERT_TRUE((*slice)->Compact().ok());
    EXPECT_LT((*slice)->TEST_LogBytes(), before);
    ExpectMatches(**slice, model);
    // Appends after compaction go to the new log.
    WriteBatch b;
    b.Put("post-compaction", "yes");
    ASSERT_TRUE((*slice)->Write(b).ok());
    ApplyToModel(b, &model);
  }
  auto slice = LogSlice::Recover(dir.path(), 2);
  ASSERT_TRUE(slice.ok()) << slice.status().ToString();
  ExpectMatches(**slice, model);

  // Compacting an empty slice leaves an empty log.
  WriteBatch clear;
  for (const auto& [k, v] : model) clear.Delete(k);
  ASSERT_TRUE((*slice)->Write(clear).ok());
  ASSERT_TRUE((*slice)->Compact().ok());
  EXPECT_EQ(0u, (*slice)->TEST_LogBytes());
  slice = LogSlice::Recover(dir.path(), 2);
  ASSERT_TRUE(slice.ok());
  EXPECT_TRUE(Scan(**slice).empty());
}

TEST(LogSliceTest, LeftoverCompactionTempFileIsRemoved) {
  shale::testing::TempDir dir;
  History h = WriteBatches(dir.path(), 6, 3, 16);
  const std::string tmp = LogSlice::LogPath(dir.path(), 6) + ".tmp";
  WriteFile(tmp, "half a compaction");
  auto slice = LogSlice::Recover(dir.path(), 6);
  ASSERT_TRUE(slice.ok());
  EXPECT_EQ(h.models[3], Scan(**slice));
  EXPECT_FALSE(std::filesystem::exists(tmp));
}

}  // namespace
}  // namespace shale::storage
