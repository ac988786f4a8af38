// MvccSlice: multi-version rows inside one storage::Slice, used by the
// transaction layer (src/txn) for every table slice. Each committed write of a row is a separate
// version stored under the versioned key
//
//   escape(user key) 00 01  ~commit_ts (u64 big-endian, bit-inverted)
//
// where escape() doubles every 00 byte as 00 FF, so versioned keys keep the
// memcmp order of user keys (a proper prefix first) and, within one user
// key, sort newest version first. The stored value is a tag byte (1 = put,
// 2 = delete tombstone) and the row. Format: docs/formats/mvcc-keys.md.
//
// A table slice is only ever read and written through versions
// (src/txn/transaction.h, docs/transactions.md).
//
// Invariants:
//  1. A read at snapshot S sees, for each user key, its newest version with
//     commit_ts <= S, and nothing if that version is a tombstone. Reads take
//     no lock besides the tree's page latches: they never block on writers
//     and writers never block on them.
//  2. Write(batch, start_ts, commit_ts) writes nothing and returns a
//     write-write conflict (IsWriteConflict) if any key of the batch has a
//     version committed after start_ts (first committer wins); otherwise all
//     of the batch becomes versions at commit_ts, atomically (one WAL record).
//     REQUIRES: commit_ts > start_ts, and commit_ts larger than every commit
//     timestamp already written for those keys (the timestamp service's job).
//  3. CollectGarbage(horizon) removes only versions no snapshot >= horizon
//     can see: for each key, every version older than the newest one with
//     commit_ts <= horizon, and that one too if it is a tombstone.
//
// Thread-safety: all methods may be called concurrently. Writes to one
// MvccSlice serialize on a mutex between the conflict check and the write.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "shale/status.h"
#include "storage/slice.h"

namespace shale::storage {

inline constexpr uint64_t kLatestSnapshot = std::numeric_limits<uint64_t>::max();

struct ReadOptions {
  // Read the versions committed at or before this timestamp.
  // Default: kLatestSnapshot (the newest committed version).
  uint64_t snapshot = kLatestSnapshot;
};

// Version key encoding (exposed for tests and the format doc).
std::string EncodeVersionKey(std::string_view user_key, uint64_t commit_ts);
// Splits a versioned key; false if it is not one.
bool DecodeVersionKey(std::string_view versioned, std::string* user_key, uint64_t* commit_ts);

// Appends to *out the version of `op` at commit_ts: key EncodeVersionKey(op.key,
// commit_ts), value tag + row. The transaction layer (src/txn) commits a
// whole write set across slices with one SliceStore::Write of such batches.
void AppendVersion(const WriteOp& op, uint64_t commit_ts, WriteBatch* out);
void AppendVersion(WriteOp::Kind kind, std::string_view key, std::string_view value, uint64_t commit_ts,
                   WriteBatch* out);

// True for the status Write returns on a write-write conflict.
bool IsWriteConflict(const Status& s);

// Snapshots in use, so garbage collection keeps what they can see.
class SnapshotRegistry {
 public:
  void Acquire(uint64_t ts);
  void Release(uint64_t ts);
  // The oldest snapshot in use, or `if_none` when there is none.
  uint64_t Horizon(uint64_t if_none) const;

 private:
  mutable std::mutex mu_;
  std::multiset<uint64_t> active_;  // GUARDED_BY(mu_)
};

class MvccSlice {
 public:
  // `slice` must outlive this object.
  explicit MvccSlice(Slice* slice) : slice_(slice) {}

  // NotFound when the key has no visible version at options.snapshot.
  Status Get(const ReadOptions& options, std::string_view key, std::string* value) const;
  // The visible rows of `range` (user keys) at options.snapshot, in key order.
  std::unique_ptr<SliceIterator> NewIterator(const ReadOptions& options, const KeyRange& range) const;
  // Invariant 2.
  Status Write(const WriteBatch& batch, uint64_t start_ts, uint64_t commit_ts);
  // The write-write conflict primitive: true if `key` has a version
  // committed after start_ts.
  Result<bool> HasNewerVersion(std::string_view key, uint64_t start_ts) const;
  // Invariant 3. Returns the number of versions removed.
  Result<uint64_t> CollectGarbage(uint64_t horizon);
  // Invariant 3 for one user key only: adds the deletes of its collectable
  // versions to *doomed (the caller writes them) and returns how many.
  Result<uint64_t> CollectKeyGarbage(std::string_view key, uint64_t horizon, WriteBatch* doomed) const;

  Slice* slice() const { return slice_; }

 private:
  Slice* const slice_;
  std::mutex write_mu_;
};

// Runs CollectGarbage on registered slices in the background, every
// `interval_ms`, at the horizon `horizon()` returns (e.g. the registry's
// oldest snapshot, or the current timestamp if none).
class GarbageCollector {
 public:
  GarbageCollector(std::function<uint64_t()> horizon, uint32_t interval_ms);
  ~GarbageCollector();
  void Register(MvccSlice* slice);
  void Unregister(MvccSlice* slice);
  uint64_t removed() const { return removed_.load(); }
  uint64_t passes() const { return passes_.load(); }

 private:
  void Loop();

  const std::function<uint64_t()> horizon_;
  const uint32_t interval_ms_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<MvccSlice*> slices_;  // GUARDED_BY(mu_)
  bool stop_ = false;               // GUARDED_BY(mu_)
  std::atomic<uint64_t> removed_{0}, passes_{0};
  std::thread thread_;
};

}  // namespace shale::storage
