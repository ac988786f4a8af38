// Slice: one replica of one slice of a representation, as stored on a node.
// It maps memcomparable keys (src/common/value.h) to row payloads. Every
// layer above reaches stored rows through this interface: the executor, and
// later the cluster (replication) and the rebalancer (copy, split, drop).
//
// The engine behind it (storage/slice_store.cc) keeps every slice of the node
// as a B+tree (storage/btree.h) in one data file of checksummed pages cached
// by one buffer pool, with one node-wide write-ahead log (storage/wal.h),
// checkpoints and recovery; docs/storage.md explains how.
//
// Invariants:
//  1. Write() is atomic for its batch, also across slices with
//     SliceStore::Write: after a crash either all of it is there or none.
//     In the default (durable) WAL mode it is durable when it returns OK; in
//     async mode it becomes durable within the WAL flush interval.
//  2. An iterator returns the rows of its range in key order; it holds no
//     latch between calls and never blocks writers. Until MVCC arrives it is
//     not a snapshot: a row written or deleted during the scan may or may not
//     show, but a row present for the whole scan always does.
//  3. Keys are compared bytewise (memcmp order). A key is at most 2048 bytes
//     (InvalidArgument otherwise); values may be of any size (large ones go
//     to overflow pages).
//  4. Concurrent writes must not touch the same key: the order of their
//     effects would be unspecified and could differ after recovery. The
//     executor's table write lock (and later row locks) guarantee it.
//
// Thread-safety: all methods of Slice and SliceStore may be called
// concurrently; an iterator is used by one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shale/status.h"
#include "storage/wal.h"

namespace shale::storage {

using SliceId = uint64_t;

// One change of a write batch. Kind values are written to disk: DO NOT CHANGE.
struct WriteOp {
  enum class Kind : uint8_t { kPut = 1, kDelete = 2 };
  Kind kind = Kind::kPut;
  std::string key;
  std::string value;  // empty for kDelete
};

class WriteBatch {
 public:
  void Put(std::string key, std::string value) {
    ops_.push_back({WriteOp::Kind::kPut, std::move(key), std::move(value)});
  }
  void Delete(std::string key) { ops_.push_back({WriteOp::Kind::kDelete, std::move(key), {}}); }
  // Room for `ops` ops without regrowth (a bulk batch of known size).
  void Reserve(size_t ops) { ops_.reserve(ops); }
  const std::vector<WriteOp>& ops() const { return ops_; }
  bool empty() const { return ops_.empty(); }
  size_t size() const { return ops_.size(); }

 private:
  std::vector<WriteOp> ops_;
};

// A key interval; an absent bound is unbounded.
struct KeyRange {
  bool has_start = false;
  std::string start;
  bool start_inclusive = true;
  bool has_end = false;
  std::string end;
  bool end_inclusive = true;

  static KeyRange All() { return {}; }
  bool Contains(std::string_view key) const;
};

class SliceIterator {
 public:
  virtual ~SliceIterator() = default;
  virtual bool Valid() const = 0;
  virtual void Next() = 0;
  virtual std::string_view key() const = 0;    // REQUIRES: Valid()
  virtual std::string_view value() const = 0;  // REQUIRES: Valid()
  virtual Status status() const = 0;           // an error ends iteration
};

// Exact figures, maintained by every write and recovered exactly after a
// crash (the slice catalog stores them at each checkpoint; replay adjusts
// them record by record).
struct SliceStats {
  uint64_t rows = 0;   // stored entries (for an MvccSlice: row versions)
  uint64_t bytes = 0;  // their keys + values (uncompressed)
};

// How a slice's pages are stored on disk (the table option COMPRESSION).
// Values are written to disk: DO NOT CHANGE.
enum class PageCompression : uint8_t { kNone = 0, kZlib = 1, kZstd = 2 };

struct SliceOptions {
  // Compression of the slice's pages in the data file. Default: kNone.
  PageCompression compression = PageCompression::kNone;
};

// A slice's lifecycle state. Values are written to disk: DO NOT CHANGE.
enum class SliceState : uint8_t {
  kReady = 0,      // complete
  kBuilding = 1,   // being filled from a snapshot stream (LoadChunk); survives a crash, resumable
  kSplitting = 2,  // a target of a running SplitSlice; dropped at open after a crash
};

struct SliceBuildState {
  SliceState state = SliceState::kReady;
  uint64_t snapshot_ts = 0;  // kBuilding: the snapshot the stream reads
  bool has_resume_key = false;
  std::string resume_key;    // kBuilding: the last key the applied chunks covered
};

// The distribution hash of a stored key, for SplitSlice. Storage does not
// know how keys are hashed; the cluster passes its function (for MvccSlice
// data it decodes the user key with DecodeVersionKey first, so all versions
// of a row go to the same side).
using KeyHashFn = std::function<uint64_t(std::string_view stored_key)>;

class Slice {
 public:
  virtual ~Slice() = default;
  virtual SliceId id() const = 0;
  // Status::NotFound when `key` is absent.
  virtual Status Get(std::string_view key, std::string* value) const = 0;
  // Applies the batch atomically and durably (invariant 1).
  virtual Status Write(const WriteBatch& batch) = 0;
  // Rows of `range` in key order, from a snapshot taken now (invariant 2).
  virtual std::unique_ptr<SliceIterator> NewIterator(const KeyRange& range) const = 0;
  virtual SliceStats GetStats() const = 0;
  // The first row whose key is in [start, last] (memcmp order, both
  // inclusive): its key into *key and row into *value (either may be
  // null); NotFound when there is none. The point-read primitive of
  // MvccSlice::Get. The default opens an iterator; the B+tree slice store
  // overrides it with one descent of the tree (BTree::Seek).
  virtual Status Seek(std::string_view start, std::string_view last, std::string* key, std::string* value) const;
};

struct SliceStoreOptions {
  // Size of the buffer pool caching data pages. Values below 4 MiB are
  // treated as 4 MiB. Default: 128 MiB.
  uint64_t buffer_pool_bytes = 128ull << 20;
  // The write-ahead log: durable or async acknowledgement, flush interval,
  // buffer and segment sizes (storage/wal.h).
  WalOptions wal;
  // A background checkpoint runs this often, and also as soon as the WAL has
  // grown by checkpoint_wal_bytes since the last one. 0 disables the timer.
  // Default: 30000 ms and 64 MiB.
  uint32_t checkpoint_interval_ms = 30000;
  uint64_t checkpoint_wal_bytes = 64ull << 20;
  // A checkpoint also runs as soon as this many bytes of pages changed since
  // the last one have been evicted to the spill file, which bounds the spill
  // file (it holds those pages until a checkpoint writes them). 0 disables.
  // Default: 1 GiB.
  uint64_t checkpoint_spill_bytes = 1ull << 30;
  // Verify every page of the data file and the structure of every slice's
  // tree at open, failing the open on damage. Default: false.
  bool verify_at_open = false;
};

struct SliceStoreStats {
  WalStats wal;
  uint64_t pool_hits = 0, pool_misses = 0, pool_evictions = 0, pool_writebacks = 0;
  // Frames holding pages (resident) and frames given back to the OS after
  // dropped slices (BufferPool::ReleaseFreeFrames).
  uint64_t pool_resident_frames = 0, pool_frames_released = 0;
  uint64_t checkpoints = 0;
  uint64_t checkpoint_lsn = 0;
  uint64_t overlay_pages = 0;  // pages changed since the last checkpoint and evicted
  uint64_t spilled_pages = 0;  // of those, in the spill file
  // Longest time writers were paused for a checkpoint's epoch flip, and the
  // last (waiting for running writes to finish, the slices' figures, the
  // flip: no page is copied in the pause).
  uint64_t checkpoint_pause_max_us = 0, checkpoint_pause_last_us = 0;
  // Pages a writer copied for the running checkpoint before changing them
  // (copy-on-write), and pages the checkpoint copied itself.
  uint64_t checkpoint_cow_pages = 0, checkpoint_captured_pages = 0;
  uint64_t data_pages = 0;     // pages allocated in the data file
};

// The slices stored on one node, in one directory.
class SliceStore {
 public:
  virtual ~SliceStore() = default;
  // Opens (creating if needed) the store in `dir`, recovering every slice:
  // the data file as of the last complete checkpoint, then the WAL after it.
  static Result<std::unique_ptr<SliceStore>> Open(const std::string& dir, const SliceStoreOptions& options = {});

  // Applies the batches, each to its slice, as one atomic write (invariant
  // 1): one WAL record carries all of them. NotFound if a slice does not
  // exist; InvalidArgument for a key over the limit (nothing is written).
  virtual Status Write(const std::vector<std::pair<SliceId, const WriteBatch*>>& batches) = 0;
  // Write, except that it returns before the WAL record is durable
  // (Wal::AppendDeferred): the changes are applied and readable, and
  // `*lsn` is the LSN that SyncWal must reach to make them durable. A crash
  // before then may lose them: for a writer that keeps what it needs to
  // write them again until SyncWal(*lsn) returned.
  virtual Status WriteDeferred(const std::vector<std::pair<SliceId, const WriteBatch*>>& batches,
                               uint64_t* lsn) = 0;
  // Returns once every write before WAL position `lsn` is durable (one
  // group commit at most; at once when it is already).
  virtual Status SyncWal(uint64_t lsn) = 0;
  // Runs a checkpoint now (also done in the background).
  virtual Status Checkpoint() = 0;
  // Reads every page of the data file from disk, checking its checksum, and
  // checks every slice's tree. Corruption naming file, page and slice.
  virtual Status Verify(uint64_t* pages_checked) = 0;
  virtual SliceStoreStats GetStoreStats() const = 0;
  // Total time writers waited for WAL buffer space (async mode), in µs:
  // SHOW STATUS `Shale_wal_buffer_wait_us`.
  virtual uint64_t WalBufferWaitMicros() const = 0;

  // Fails if the slice exists. The options are stored with the slice.
  virtual Result<Slice*> CreateSlice(SliceId id, const SliceOptions& options = {}) = 0;
  // NotFound if the slice does not exist. The pointer lives until DropSlice.
  virtual Result<Slice*> GetSlice(SliceId id) = 0;
  // Removes the slice and its data. REQUIRES: no concurrent use of it.
  virtual Status DropSlice(SliceId id) = 0;
  virtual std::vector<SliceId> ListSlices() const = 0;
  // NotFound if the slice does not exist.
  virtual Result<SliceOptions> GetSliceOptions(SliceId id) const = 0;

  // --- What the rebalancer needs (docs/storage.md "Copying and splitting") ---
  //
  // Building a replica from a snapshot stream (storage/slice_stream.h):
  // CreateBuildingSlice makes an empty slice in state kBuilding for a copy
  // of the rows visible at `snapshot_ts`; LoadChunk applies one chunk of
  // stored entries and records `resume_key` with it, atomically (one WAL
  // record); FinishBuild makes it kReady. Ordinary writes (SliceStore::Write)
  // to a building slice are allowed at any time: they are the writes the
  // source takes during the copy, at commit timestamps above snapshot_ts, so
  // their versions never collide with the streamed ones and are kept as they
  // are. After a crash a building slice is still there in kBuilding with the
  // resume key of its last applied chunk (GetBuildState): the copy resumes
  // after it (chunks are idempotent), or the caller drops the slice.
  // REQUIRES: no garbage collection on a building slice before FinishBuild.
  virtual Result<Slice*> CreateBuildingSlice(SliceId id, uint64_t snapshot_ts, const SliceOptions& options = {}) = 0;
  // InvalidArgument unless the slice is kBuilding.
  virtual Status LoadChunk(SliceId id, const WriteBatch& entries, std::string_view resume_key) = 0;
  virtual Status FinishBuild(SliceId id) = 0;
  virtual Result<SliceBuildState> GetBuildState(SliceId id) const = 0;

  // Splits `source` by hash: creates `low` holding exactly the entries with
  // hash(key) < split_hash and `high` holding the others (every stored entry,
  // so every MVCC version), with `options`. The source stays as it is (the
  // caller drops it once it routes to the new slices) and may take writes
  // and garbage collection during the split: those that land while the
  // split runs are applied to the new slices too. Atomic with respect to
  // crashes: after a crash during the split both new slices are dropped at
  // open (state kSplitting); after it returned both are complete. Writes to
  // the source after it returned are not copied.
  virtual Status SplitSlice(SliceId source, uint64_t split_hash, const KeyHashFn& hash, SliceId low, SliceId high,
                            const SliceOptions& options = {}) = 0;
};

}  // namespace shale::storage
