// The node's SliceStore: every slice is a B+tree (btree.h) in one data file
// of checksummed pages (page_file.h) cached by one buffer pool
// (buffer_pool.h); one node-wide write-ahead log (wal.h) makes writes
// durable and atomic across slices; checkpoints (page_file.h invariants 5
// and 6) bound recovery. docs/storage.md explains the design; the formats
// are in docs/formats/wal.md and docs/formats/page-format.md.
//
// Store directory:
//   LOCK         flock(2)-held so two processes never open the same store
//   data.shp     the data file: meta page, catalog tree, slice trees
//   data.dw      the double-write file of the last checkpoint
//   data.spill   pages evicted since the last checkpoint (discarded at open)
//   wal/         WAL segments
//
// The catalog tree (root in the meta page) maps each slice id (8 bytes,
// big-endian) to the root page id of its tree (u64, little-endian). Leaf
// values of slice trees are tagged (see EncodeInline/EncodeOverflowRef):
// 0x00 + the row, or 0x01 + a reference to a chain of overflow pages.
//
// Invariants:
//  1. Every change (batch, create, drop) is appended to the WAL before it is
//     applied to pages; in durable mode it is applied only once durable.
//  2. Changes run between EnterWrite()/ExitWrite(). A checkpoint pauses new
//     ones and waits for running ones (PauseWriters), so at its epoch flip
//     the pages hold exactly the effect of every WAL record before the
//     captured LSN: recovery replays from that LSN exactly once. The flip is
//     O(1); the pages are copied afterwards, while writers run, each before
//     its first change after the flip (copy-on-write, buffer_pool.h
//     invariant 6).
//  3. A change whose WAL record was written but which then failed to apply
//     leaves pages and log disagreeing: the store refuses further changes
//     (sticky failed_) until restarted, when recovery applies the log.
//  4. An overflow chain is owned by exactly one leaf value; each of its
//     pages carries the chain's nonce, so a reader that raced with a delete
//     sees a nonce mismatch instead of another value's bytes.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <span>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "src/common/log.h"
#include "storage/btree.h"
#include "storage/buffer_pool.h"
#include "storage/file_io.h"
#include "storage/page_file.h"
#include "storage/slice.h"
#include "storage/wal.h"

namespace shale::storage {
namespace {

// --- encodings ---------------------------------------------------------------

constexpr char kInlineTag = 0x00;
constexpr char kOverflowTag = 0x01;
constexpr size_t kOverflowRefSize = 1 + 8 + 8 + 8;  // tag, first page, length, nonce
// Overflow page body: u64 nonce, u32 bytes used, then the bytes.
constexpr size_t kOvNonce = kPageHeaderSize;
constexpr size_t kOvLength = kPageHeaderSize + 8;
constexpr size_t kOvData = kPageHeaderSize + 12;
constexpr size_t kOvCapacity = kPageSize - kOvData;

std::string CatalogKey(SliceId id) {
  std::string k(8, '\0');
  for (int i = 0; i < 8; ++i) k[i] = static_cast<char>((id >> (56 - 8 * i)) & 0xff);
  return k;
}

SliceId CatalogId(std::string_view k) {
  SliceId id = 0;
  for (char c : k) id = (id << 8) | static_cast<uint8_t>(c);
  return id;
}

// A slice's catalog value. Version 1 (8 bytes) is only the root page id;
// version 2 (docs/formats/page-format.md "Slice catalog"):
//   u64 root, u64 rows, u64 bytes, u8 compression, u8 state,
//   u64 snapshot_ts, u8 has_resume_key, u32 resume key length, resume key.
struct CatalogEntry {
  PageId root = kInvalidPageId;
  bool stats_known = true;  // false for a version-1 entry
  uint64_t rows = 0, bytes = 0;
  SliceOptions options;
  SliceBuildState build;
};

void PutU32(std::string* out, uint32_t v) {
  char b[4];
  StoreU32(b, v);
  out->append(b, 4);
}
void PutU64(std::string* out, uint64_t v) {
  char b[8];
  StoreU64(b, v);
  out->append(b, 8);
}

// WAL batch payload: u32 slice count, then per slice: u64 id, u32 op count,
// then per op: u8 kind, u32 key length, key, u32 value length, value.
std::string EncodeBatchPayload(const std::vector<std::pair<SliceId, const WriteBatch*>>& batches) {
  size_t size = 4;
  for (const auto& [id, batch] : batches) {
    size += 8 + 4;
    for (const WriteOp& op : batch->ops()) size += 1 + 4 + op.key.size() + 4 + op.value.size();
  }
  std::string out;
  out.reserve(size);  // an index build's record is tens of MB: no regrowth
  PutU32(&out, static_cast<uint32_t>(batches.size()));
  for (const auto& [id, batch] : batches) {
    PutU64(&out, id);
    PutU32(&out, static_cast<uint32_t>(batch->size()));
    for (const WriteOp& op : batch->ops()) {
      out.push_back(static_cast<char>(op.kind));
      PutU32(&out, static_cast<uint32_t>(op.key.size()));
      out.append(op.key);
      PutU32(&out, static_cast<uint32_t>(op.value.size()));
      out.append(op.value);
    }
  }
  return out;
}

using PayloadReader = ByteReader;

bool DecodeBatchPayload(std::string_view payload, std::vector<std::pair<SliceId, WriteBatch>>* out) {
  PayloadReader r(payload);
  uint32_t slices = 0;
  if (!r.U32(&slices)) return false;
  for (uint32_t s = 0; s < slices; ++s) {
    uint64_t id = 0;
    uint32_t ops = 0;
    if (!r.U64(&id) || !r.U32(&ops)) return false;
    WriteBatch batch;
    for (uint32_t i = 0; i < ops; ++i) {
      uint8_t kind = 0;
      uint32_t n = 0;
      std::string key, value;
      if (!r.U8(&kind) || !r.U32(&n) || !r.Bytes(n, &key) || !r.U32(&n) || !r.Bytes(n, &value)) return false;
      if (kind == static_cast<uint8_t>(WriteOp::Kind::kPut)) {
        batch.Put(std::move(key), std::move(value));
      } else if (kind == static_cast<uint8_t>(WriteOp::Kind::kDelete)) {
        batch.Delete(std::move(key));
      } else {
        return false;
      }
    }
    out->emplace_back(id, std::move(batch));
  }
  return r.done();
}

std::string U64Payload(uint64_t v) {
  std::string s;
  PutU64(&s, v);
  return s;
}

std::string EncodeCatalogEntry(const CatalogEntry& e) {
  std::string out;
  PutU64(&out, e.root);
  PutU64(&out, e.rows);
  PutU64(&out, e.bytes);
  out.push_back(static_cast<char>(e.options.compression));
  out.push_back(static_cast<char>(e.build.state));
  PutU64(&out, e.build.snapshot_ts);
  out.push_back(e.build.has_resume_key ? 1 : 0);
  PutU32(&out, static_cast<uint32_t>(e.build.resume_key.size()));
  out.append(e.build.resume_key);
  return out;
}

bool DecodeCatalogEntry(std::string_view v, CatalogEntry* e) {
  PayloadReader r(v);
  if (v.size() == 8) {
    e->root = LoadU64(v.data());
    e->stats_known = false;
    return true;
  }
  uint8_t compression = 0, state = 0, has_resume = 0;
  uint32_t n = 0;
  if (!r.U64(&e->root) || !r.U64(&e->rows) || !r.U64(&e->bytes) || !r.U8(&compression) || !r.U8(&state) ||
      !r.U64(&e->build.snapshot_ts) || !r.U8(&has_resume) || !r.U32(&n) || !r.Bytes(n, &e->build.resume_key) ||
      !r.done()) {
    return false;
  }
  if (compression > static_cast<uint8_t>(PageCompression::kZstd) || state > static_cast<uint8_t>(SliceState::kSplitting)) {
    return false;
  }
  e->options.compression = static_cast<PageCompression>(compression);
  e->build.state = static_cast<SliceState>(state);
  e->build.has_resume_key = has_resume != 0;
  return true;
}

// kCreateSlice payload: u64 id (version 1), optionally followed by u8
// compression, u8 state, u64 snapshot_ts (version 2).
std::string EncodeCreatePayload(SliceId id, const SliceOptions& options, SliceState state, uint64_t snapshot_ts) {
  std::string out;
  PutU64(&out, id);
  out.push_back(static_cast<char>(options.compression));
  out.push_back(static_cast<char>(state));
  PutU64(&out, snapshot_ts);
  return out;
}

class BTreeSliceStore;

// --- BTreeSlice ----------------------------------------------------------------

// Writes to a slice being split are also applied to the two new slices
// (SliceStore::SplitSlice): set and cleared only while writers are paused,
// read only by writers inside the write gate.
struct SplitMirror {
  SliceId low = 0, high = 0;
  uint64_t split_hash = 0;
  const KeyHashFn* hash = nullptr;
};

class BTreeSlice final : public Slice {
 public:
  BTreeSlice(BTreeSliceStore* store, SliceId id, std::unique_ptr<BTree> tree, const CatalogEntry& entry)
      : store_(store), id_(id), tree_(std::move(tree)), options_(entry.options), build_(entry.build),
        rows_(static_cast<int64_t>(entry.rows)), bytes_(static_cast<int64_t>(entry.bytes)) {
    tree_->set_disk_compression(static_cast<uint8_t>(options_.compression));
  }

  SliceId id() const override { return id_; }
  Status Get(std::string_view key, std::string* value) const override;
  Status Write(const WriteBatch& batch) override;
  std::unique_ptr<SliceIterator> NewIterator(const KeyRange& range) const override;
  SliceStats GetStats() const override;
  Status Seek(std::string_view start, std::string_view last, std::string* key, std::string* value) const override;

  // Applying logged changes. REQUIRES: inside EnterWrite/ExitWrite.
  Status ApplyPut(std::string_view key, std::string_view value);
  Status ApplyDelete(std::string_view key);
  // Applies `batch`'s ops in order, as ApplyPut and ApplyDelete would one by
  // one; runs of puts of new keys in increasing order with inline values go
  // into the tree a leaf at a time (BTree::InsertRun).
  Status ApplyOps(const WriteBatch& batch);
  // Frees every page: overflow chains, then the tree. REQUIRES: no other use.
  Status FreeAll();
  BTree* tree() const { return tree_.get(); }
  const SliceOptions& options() const { return options_; }

  // The row behind a stored (tagged) leaf value. *stale: an overflow chain
  // changed under us (invariant 4); the caller re-reads the key.
  Status Resolve(std::string_view stored, std::string* value, bool* stale) const;
  // Names the slice in a Corruption and logs it (the page layers already
  // named file and page).
  Status Annotate(Status s) const;

  // Recounts rows and bytes by a scan (a version-1 catalog entry at open).
  // REQUIRES: no concurrent writers.
  Status Recount();
  // The slice's catalog value now; *dirty tells whether the figures or the
  // state changed since the last call with clear_dirty.
  CatalogEntry Entry(bool clear_dirty, bool* dirty) const;
  SliceBuildState build_state() const {
    std::lock_guard<std::mutex> l(stats_mu_);
    return build_;
  }
  void set_build_state(SliceBuildState b) {
    std::lock_guard<std::mutex> l(stats_mu_);
    build_ = std::move(b);
    dirty_ = true;
  }

  SplitMirror mirror;  // see SplitMirror; mirror.hash == nullptr: none

 private:
  Status WriteOverflow(std::string_view value, std::string* ref);
  Status FreeOverflow(std::string_view stored);

  BTreeSliceStore* const store_;
  const SliceId id_;
  std::unique_ptr<BTree> tree_;
  const SliceOptions options_;
  // Exact figures maintained by Apply*, stored in the catalog at each
  // checkpoint (so recovery = the checkpoint's figures + the replayed changes).
  mutable std::mutex stats_mu_;
  SliceBuildState build_;  // GUARDED_BY(stats_mu_)
  int64_t rows_ = 0;       // GUARDED_BY(stats_mu_)
  int64_t bytes_ = 0;      // GUARDED_BY(stats_mu_)
  mutable bool dirty_ = true;  // GUARDED_BY(stats_mu_): not yet in the catalog
};

class BTreeSliceIterator final : public SliceIterator {
 public:
  BTreeSliceIterator(const BTreeSlice* slice, std::unique_ptr<SliceIterator> inner)
      : slice_(slice), inner_(std::move(inner)) {
    Settle();
  }
  bool Valid() const override { return status_.ok() && inner_->Valid(); }
  void Next() override {
    inner_->Next();
    Settle();
  }
  std::string_view key() const override { return inner_->key(); }
  std::string_view value() const override { return value_; }
  Status status() const override {
    if (!status_.ok()) return status_;
    Status s = inner_->status();
    return s.ok() ? s : slice_->Annotate(s);
  }

 private:
  // Resolves the current row; skips rows deleted while we resolved them.
  void Settle() {
    while (status_.ok() && inner_->Valid()) {
      bool stale = false;
      Status s = slice_->Resolve(inner_->value(), &value_, &stale);
      if (s.ok() && stale) {
        s = slice_->Get(inner_->key(), &value_);
        if (s.IsNotFound()) {
          inner_->Next();
          continue;
        }
      }
      if (!s.ok()) status_ = slice_->Annotate(s);
      return;
    }
  }

  const BTreeSlice* const slice_;
  std::unique_ptr<SliceIterator> inner_;
  std::string value_;
  Status status_;
};

// --- BTreeSliceStore -------------------------------------------------------------

class BTreeSliceStore final : public SliceStore {
 public:
  BTreeSliceStore(std::string dir, int lock_fd, const SliceStoreOptions& options)
      : dir_(std::move(dir)), lock_fd_(lock_fd), options_(options) {
    std::random_device rd;
    nonce_.store((static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                 static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  }
  ~BTreeSliceStore() override;

  Status OpenAndRecover();

  Result<Slice*> CreateSlice(SliceId id, const SliceOptions& options) override;
  Result<Slice*> GetSlice(SliceId id) override;
  Status DropSlice(SliceId id) override;
  std::vector<SliceId> ListSlices() const override;
  Result<SliceOptions> GetSliceOptions(SliceId id) const override;
  Result<Slice*> CreateBuildingSlice(SliceId id, uint64_t snapshot_ts, const SliceOptions& options) override;
  Status LoadChunk(SliceId id, const WriteBatch& entries, std::string_view resume_key) override;
  Status FinishBuild(SliceId id) override;
  Result<SliceBuildState> GetBuildState(SliceId id) const override;
  Status SplitSlice(SliceId source, uint64_t split_hash, const KeyHashFn& hash, SliceId low, SliceId high,
                    const SliceOptions& options) override;
  Status Write(const std::vector<std::pair<SliceId, const WriteBatch*>>& batches) override {
    return WriteBatches(batches, nullptr);
  }
  Status WriteDeferred(const std::vector<std::pair<SliceId, const WriteBatch*>>& batches,
                       uint64_t* lsn) override {
    return WriteBatches(batches, lsn);
  }
  Status SyncWal(uint64_t lsn) override { return wal_->SyncTo(lsn); }
  // Write and WriteDeferred (`deferred_lsn` set): the WAL record's end there.
  Status WriteBatches(const std::vector<std::pair<SliceId, const WriteBatch*>>& batches, uint64_t* deferred_lsn);
  Status Checkpoint() override;
  Status Verify(uint64_t* pages_checked) override;
  SliceStoreStats GetStoreStats() const override;
  uint64_t WalBufferWaitMicros() const override { return wal_ ? wal_->buffer_wait_micros() : 0; }

  BufferPool* pool() const { return pool_.get(); }
  const std::string& data_path() const { return data_path_; }
  uint64_t NextNonce() { return nonce_.fetch_add(0x9e3779b97f4a7c15ull); }

 private:
  void EnterWrite();
  void ExitWrite();
  void PauseWriters();
  void ResumeWriters();
  BTreeSlice* FindSlice(SliceId id) const;
  // The effects of WAL records, live and in replay (invariant 1).
  Status ApplyBatches(const std::vector<std::pair<SliceId, const WriteBatch*>>& batches);
  Result<BTreeSlice*> ApplyCreate(SliceId id, const SliceOptions& options, SliceState state, uint64_t snapshot_ts);
  Status ApplyDrop(SliceId id);
  Status ApplyLoadChunk(SliceId id, std::string_view resume_key, const WriteBatch& entries);
  Status ApplySliceStates(const std::vector<std::pair<SliceId, SliceState>>& states);
  // Stores a slice's catalog value (stats, state, resume key).
  Status PutCatalogEntry(const BTreeSlice* slice);
  // OK if slice `id` exists and is being built (kBuilding).
  Status CheckBuilding(SliceId id) const;
  // Appends one WAL record and applies it with `apply`, inside the write
  // gate; a failure after logging makes the store refuse writes (invariant 3).
  // With `paused` the caller already holds the writers paused. `check`, when
  // given, runs inside the gate before anything is logged: a record is
  // logged only if the slices it names are as it needs them then (a drop
  // holds the writers paused, so none can vanish between check and apply).
  Status LogAndApply(WalRecordType type, std::string_view payload, const std::function<Status()>& apply,
                     bool paused = false, const std::function<Status()>& check = nullptr);
  // Runs `f` with the writers paused: no write is in its gate meanwhile.
  Status WithWritersPaused(const std::function<Status()>& f);
  Result<Slice*> Create(SliceId id, const SliceOptions& options, SliceState state, uint64_t snapshot_ts);
  // Adds to *extra the ops of `batches` mirrored into the targets of running
  // splits. REQUIRES: inside the write gate (mirrors only change while paused).
  void MirrorSplits(const std::vector<std::pair<SliceId, const WriteBatch*>>& batches,
                    std::vector<std::pair<SliceId, WriteBatch>>* extra) const;
  Status Replay(uint64_t lsn, WalRecordType type, std::string_view payload);
  void CheckpointLoop();
  void MaybeWakeCheckpointer();
  void WakeCheckpointer();

  const std::string dir_;
  const int lock_fd_;
  const SliceStoreOptions options_;
  std::string data_path_;
  std::unique_ptr<PageFile> file_;
  std::unique_ptr<BufferPool> pool_;
  std::unique_ptr<BTree> catalog_;
  std::unique_ptr<Wal> wal_;

  mutable std::shared_mutex slices_mu_;
  std::map<SliceId, std::unique_ptr<BTreeSlice>> slices_;  // GUARDED_BY(slices_mu_)

  // The write gate (invariant 2).
  std::mutex gate_mu_;
  std::condition_variable gate_cv_;
  int active_writers_ = 0;    // GUARDED_BY(gate_mu_)
  bool pause_wanted_ = false;  // GUARDED_BY(gate_mu_)
  Status failed_;              // GUARDED_BY(gate_mu_): sticky (invariant 3)
  int splits_running_ = 0;     // changed only while writers are paused; read inside the gate

  std::mutex checkpoint_mu_;  // one checkpoint at a time
  std::atomic<uint64_t> checkpoint_lsn_{0};
  std::atomic<uint64_t> checkpoints_{0};
  std::atomic<uint64_t> pause_last_us_{0}, pause_max_us_{0};  // checkpoint capture pauses
  std::atomic<uint64_t> idle_lsn_{UINT64_MAX};  // WAL end after the last checkpoint's own record
  std::mutex ckpt_thread_mu_;
  std::condition_variable ckpt_cv_;
  bool stop_ = false;  // GUARDED_BY(ckpt_thread_mu_)
  bool wake_ = false;  // GUARDED_BY(ckpt_thread_mu_): checkpoint now
  // A slice was dropped: after the next checkpoint (which writes its freed
  // pages), the pool gives their frames' memory back (ReleaseFreeFrames).
  std::atomic<bool> release_wanted_{false};
  std::thread checkpointer_;

  std::atomic<uint64_t> nonce_{0};
  bool opened_ = false;  // recovery finished: checkpoint at close
};

// --- BTreeSlice implementation ----------------------------------------------------

Status BTreeSlice::Annotate(Status s) const {
  if (!s.IsCorruption()) return s;
  std::string msg = fmt::format("slice {}: {}", id_, s.message());
  log::Error("{}", msg);
  return Status::Corruption(std::move(msg));
}

Status BTreeSlice::Resolve(std::string_view stored, std::string* value, bool* stale) const {
  *stale = false;
  if (stored.empty()) return Status::Corruption(fmt::format("slice {}: empty stored value", id_));
  if (stored[0] == kInlineTag) {
    value->assign(stored.data() + 1, stored.size() - 1);
    return Status::OK();
  }
  if (stored[0] != kOverflowTag || stored.size() != kOverflowRefSize) {
    return Status::Corruption(fmt::format("slice {}: stored value has unknown tag {}", id_,
                                          static_cast<int>(static_cast<uint8_t>(stored[0]))));
  }
  PageId page = LoadU64(stored.data() + 1);
  const uint64_t length = LoadU64(stored.data() + 9);
  const uint64_t nonce = LoadU64(stored.data() + 17);
  value->clear();
  value->reserve(length);
  BufferPool* pool = store_->pool();
  while (value->size() < length) {
    if (page == kInvalidPageId) {
      *stale = true;
      return Status::OK();
    }
    SHALE_ASSIGN_OR_RETURN(PageGuard g, pool->Fetch(page, LatchMode::kShared));
    const char* p = g.data();
    if (GetPageType(p) != PageType::kOverflow || LoadU64(p + kOvNonce) != nonce) {
      *stale = true;
      return Status::OK();
    }
    uint32_t n = LoadU32(p + kOvLength);
    if (n > kOvCapacity || value->size() + n > length) {
      return Status::Corruption(fmt::format("data file {}: overflow page {} has a bad length {}",
                                            store_->data_path(), page, n));
    }
    value->append(p + kOvData, n);
    page = GetPageLink(p);
  }
  return Status::OK();
}

Status BTreeSlice::Get(std::string_view key, std::string* value) const {
  for (int attempt = 0;; ++attempt) {
    std::string stored;
    Status s = tree_->Get(key, &stored);
    if (!s.ok()) return Annotate(s);
    bool stale = false;
    s = Resolve(stored, value, &stale);
    if (!s.ok()) return Annotate(s);
    if (!stale) return Status::OK();
    if (attempt > 100) {
      return Status::Unavailable(fmt::format("slice {}: value keeps changing under the reader", id_));
    }
  }
}

Status BTreeSlice::Write(const WriteBatch& batch) {
  std::vector<std::pair<SliceId, const WriteBatch*>> one{{id_, &batch}};
  return store_->Write(one);
}

Status BTreeSlice::Seek(std::string_view start, std::string_view last, std::string* key,
                        std::string* value) const {
  std::string found_key;
  std::string stored;
  for (int attempt = 0;; ++attempt) {
    Status s = tree_->Seek(start, last, &found_key, value != nullptr ? &stored : nullptr);
    if (!s.ok()) return s.IsNotFound() ? s : Annotate(s);
    bool stale = false;
    if (value != nullptr) {
      s = Resolve(stored, value, &stale);
      if (!s.ok()) return Annotate(s);
    }
    if (!stale) break;
    // An overflow chain changed under us (the row was rewritten or deleted
    // meanwhile): seek again from the same key.
    if (attempt > 100) {
      return Status::Unavailable(fmt::format("slice {}: value keeps changing under the reader", id_));
    }
  }
  if (key != nullptr) *key = std::move(found_key);
  return Status::OK();
}

std::unique_ptr<SliceIterator> BTreeSlice::NewIterator(const KeyRange& range) const {
  return std::make_unique<BTreeSliceIterator>(this, tree_->NewIterator(range));
}

SliceStats BTreeSlice::GetStats() const {
  std::lock_guard<std::mutex> l(stats_mu_);
  return SliceStats{static_cast<uint64_t>(std::max<int64_t>(rows_, 0)),
                    static_cast<uint64_t>(std::max<int64_t>(bytes_, 0))};
}

Status BTreeSlice::Recount() {
  int64_t rows = 0, bytes = 0;
  auto it = NewIterator(KeyRange::All());
  for (; it->Valid(); it->Next()) {
    ++rows;
    bytes += static_cast<int64_t>(it->key().size() + it->value().size());
  }
  SHALE_RETURN_IF_ERROR(it->status());
  std::lock_guard<std::mutex> l(stats_mu_);
  rows_ = rows;
  bytes_ = bytes;
  dirty_ = true;
  return Status::OK();
}

CatalogEntry BTreeSlice::Entry(bool clear_dirty, bool* dirty) const {
  std::lock_guard<std::mutex> l(stats_mu_);
  CatalogEntry e;
  e.root = tree_->root();
  e.rows = static_cast<uint64_t>(std::max<int64_t>(rows_, 0));
  e.bytes = static_cast<uint64_t>(std::max<int64_t>(bytes_, 0));
  e.options = options_;
  e.build = build_;
  if (dirty != nullptr) *dirty = dirty_;
  if (clear_dirty) dirty_ = false;
  return e;
}

Status BTreeSlice::WriteOverflow(std::string_view value, std::string* ref) {
  const uint64_t nonce = store_->NextNonce();
  BufferPool* pool = store_->pool();
  // Written back to front so each page can name its successor.
  size_t parts = (value.size() + kOvCapacity - 1) / kOvCapacity;
  PageId next = kInvalidPageId;
  for (size_t i = parts; i-- > 0;) {
    size_t from = i * kOvCapacity;
    size_t n = std::min(kOvCapacity, value.size() - from);
    SHALE_ASSIGN_OR_RETURN(PageGuard g, pool->NewPage(PageType::kOverflow));
    char* p = g.mutable_data();
    SetPageDiskCompression(p, static_cast<uint8_t>(options_.compression));
    StoreU64(p + kOvNonce, nonce);
    StoreU32(p + kOvLength, static_cast<uint32_t>(n));
    std::memcpy(p + kOvData, value.data() + from, n);
    SetPageLink(p, next);
    g.MarkDirty();
    next = g.page_id();
  }
  ref->assign(1, kOverflowTag);
  PutU64(ref, next);
  PutU64(ref, value.size());
  PutU64(ref, nonce);
  return Status::OK();
}

Status BTreeSlice::FreeOverflow(std::string_view stored) {
  if (stored.empty() || stored[0] != kOverflowTag || stored.size() != kOverflowRefSize) return Status::OK();
  PageId page = LoadU64(stored.data() + 1);
  const uint64_t nonce = LoadU64(stored.data() + 17);
  BufferPool* pool = store_->pool();
  while (page != kInvalidPageId) {
    SHALE_ASSIGN_OR_RETURN(PageGuard g, pool->Fetch(page, LatchMode::kExclusive));
    if (GetPageType(g.data()) != PageType::kOverflow || LoadU64(g.data() + kOvNonce) != nonce) {
      return Status::Corruption(fmt::format("data file {}: page {} is not part of the overflow chain naming it",
                                            store_->data_path(), page));
    }
    PageId next = GetPageLink(g.data());
    SHALE_RETURN_IF_ERROR(pool->FreePage(std::move(g)));
    page = next;
  }
  return Status::OK();
}

Status BTreeSlice::ApplyPut(std::string_view key, std::string_view value) {
  std::string old;
  Status s = tree_->Get(key, &old);
  if (!s.ok() && !s.IsNotFound()) return Annotate(s);
  const bool existed = s.ok();
  std::string stored;
  if (key.size() + 1 + value.size() <= kMaxEntryBytes) {
    stored.reserve(1 + value.size());
    stored.push_back(kInlineTag);
    stored.append(value);
  } else {
    SHALE_RETURN_IF_ERROR(Annotate(WriteOverflow(value, &stored)));
  }
  SHALE_RETURN_IF_ERROR(Annotate(tree_->Put(key, stored)));
  int64_t old_bytes = 0;
  if (existed) {
    SHALE_RETURN_IF_ERROR(Annotate(FreeOverflow(old)));
    old_bytes = static_cast<int64_t>(key.size()) +
                (old[0] == kOverflowTag ? static_cast<int64_t>(LoadU64(old.data() + 9))
                                        : static_cast<int64_t>(old.size()) - 1);
  }
  std::lock_guard<std::mutex> l(stats_mu_);
  if (!existed) ++rows_;
  bytes_ += static_cast<int64_t>(key.size() + value.size()) - old_bytes;
  dirty_ = true;
  return Status::OK();
}

Status BTreeSlice::ApplyOps(const WriteBatch& batch) {
  // Ops per run: bounds the stored values built ahead of the inserts.
  constexpr size_t kRunOps = 4096;
  const std::vector<WriteOp>& ops = batch.ops();
  std::vector<std::string> stored;
  std::vector<std::pair<std::string_view, std::string_view>> run;
  size_t i = 0;
  while (i < ops.size()) {
    // The run from op i: puts with increasing keys whose values stay inline.
    stored.clear();
    size_t j = i;
    for (; j < ops.size() && j - i < kRunOps; ++j) {
      const WriteOp& op = ops[j];
      if (op.kind != WriteOp::Kind::kPut || op.key.size() + 1 + op.value.size() > kMaxEntryBytes) break;
      if (j > i && !(ops[j - 1].key < op.key)) break;
      std::string& v = stored.emplace_back();
      v.reserve(1 + op.value.size());
      v.push_back(kInlineTag);
      v.append(op.value);
    }
    if (j == i) {
      const WriteOp& op = ops[i++];
      SHALE_RETURN_IF_ERROR(op.kind == WriteOp::Kind::kPut ? ApplyPut(op.key, op.value) : ApplyDelete(op.key));
      continue;
    }
    run.clear();
    for (size_t k = i; k < j; ++k) run.emplace_back(ops[k].key, stored[k - i]);
    int64_t rows = 0, bytes = 0;
    size_t done = 0;
    Status s;
    while (done < run.size()) {
      size_t n = 0;
      s = Annotate(tree_->InsertRun(std::span(run).subspan(done), &n));
      if (!s.ok()) break;
      for (size_t k = done; k < done + n; ++k) {
        bytes += static_cast<int64_t>(run[k].first.size() + ops[i + k].value.size());
      }
      rows += static_cast<int64_t>(n);
      done += n;
      if (n == 0) {  // a present key, or a full leaf: one by one (it splits)
        s = ApplyPut(ops[i + done].key, ops[i + done].value);
        if (!s.ok()) break;
        ++done;
      }
    }
    if (rows > 0) {
      std::lock_guard<std::mutex> l(stats_mu_);
      rows_ += rows;
      bytes_ += bytes;
      dirty_ = true;
    }
    SHALE_RETURN_IF_ERROR(s);
    i = j;
  }
  return Status::OK();
}

Status BTreeSlice::ApplyDelete(std::string_view key) {
  std::string old;
  Status s = tree_->Get(key, &old);
  if (s.IsNotFound()) return Status::OK();
  if (!s.ok()) return Annotate(s);
  SHALE_RETURN_IF_ERROR(Annotate(tree_->Delete(key)));
  SHALE_RETURN_IF_ERROR(Annotate(FreeOverflow(old)));
  int64_t old_bytes = static_cast<int64_t>(key.size()) +
                      (old[0] == kOverflowTag ? static_cast<int64_t>(LoadU64(old.data() + 9))
                                              : static_cast<int64_t>(old.size()) - 1);
  std::lock_guard<std::mutex> l(stats_mu_);
  --rows_;
  bytes_ -= old_bytes;
  dirty_ = true;
  return Status::OK();
}

Status BTreeSlice::FreeAll() {
  std::vector<std::string> refs;
  auto it = tree_->NewIterator(KeyRange::All());
  for (; it->Valid(); it->Next()) {
    if (!it->value().empty() && it->value()[0] == kOverflowTag) refs.emplace_back(it->value());
  }
  SHALE_RETURN_IF_ERROR(Annotate(it->status()));
  for (const std::string& ref : refs) SHALE_RETURN_IF_ERROR(Annotate(FreeOverflow(ref)));
  return Annotate(tree_->FreeAllPages());
}

// --- BTreeSliceStore implementation -------------------------------------------------

BTreeSliceStore::~BTreeSliceStore() {
  {
    std::lock_guard<std::mutex> l(ckpt_thread_mu_);
    stop_ = true;
  }
  ckpt_cv_.notify_all();
  if (checkpointer_.joinable()) checkpointer_.join();
  if (opened_) {
    Status s = Checkpoint();
    if (!s.ok()) log::Error("slice store {}: checkpoint at close failed: {}", dir_, s.ToString());
  }
  slices_.clear();
  catalog_.reset();
  wal_.reset();
  pool_.reset();  // its FlushAll only spills (the data file is checkpointed)
  file_.reset();
  ::close(lock_fd_);  // releases the flock
}

void BTreeSliceStore::EnterWrite() {
  std::unique_lock<std::mutex> l(gate_mu_);
  gate_cv_.wait(l, [&] { return !pause_wanted_; });
  ++active_writers_;
}

void BTreeSliceStore::ExitWrite() {
  std::lock_guard<std::mutex> l(gate_mu_);
  if (--active_writers_ == 0) gate_cv_.notify_all();
}

void BTreeSliceStore::PauseWriters() {
  std::unique_lock<std::mutex> l(gate_mu_);
  gate_cv_.wait(l, [&] { return !pause_wanted_; });
  pause_wanted_ = true;
  gate_cv_.wait(l, [&] { return active_writers_ == 0; });
}

void BTreeSliceStore::ResumeWriters() {
  std::lock_guard<std::mutex> l(gate_mu_);
  pause_wanted_ = false;
  gate_cv_.notify_all();
}

BTreeSlice* BTreeSliceStore::FindSlice(SliceId id) const {
  std::shared_lock<std::shared_mutex> l(slices_mu_);
  auto it = slices_.find(id);
  return it == slices_.end() ? nullptr : it->second.get();
}

Status BTreeSliceStore::OpenAndRecover() {
  data_path_ = dir_ + "/data.shp";
  const std::string dw_path = dir_ + "/data.dw";
  SHALE_RETURN_IF_ERROR(PageFile::RecoverDoubleWrite(data_path_, dw_path));
  SHALE_ASSIGN_OR_RETURN(file_, PageFile::Open(data_path_));
  SHALE_RETURN_IF_ERROR(file_->EnableSpill(dir_ + "/data.spill", dw_path));
  BufferPoolOptions pool_options;
  pool_options.frames = std::max<uint64_t>(options_.buffer_pool_bytes, 4ull << 20) / kPageSize;
  pool_ = std::make_unique<BufferPool>(file_.get(), pool_options);
  SHALE_ASSIGN_OR_RETURN(catalog_, BTree::Open(pool_.get()));
  std::vector<BTreeSlice*> unknown_stats;
  {
    auto it = catalog_->NewIterator(KeyRange::All());
    for (; it->Valid(); it->Next()) {
      CatalogEntry entry;
      if (it->key().size() != 8 || !DecodeCatalogEntry(it->value(), &entry)) {
        return Status::Corruption(fmt::format("data file {}: bad slice catalog entry", data_path_));
      }
      SliceId id = CatalogId(it->key());
      // Not read now: a damaged slice fails its statements, not the node.
      auto slice = std::make_unique<BTreeSlice>(this, id, BTree::Attach(pool_.get(), entry.root), entry);
      if (!entry.stats_known) unknown_stats.push_back(slice.get());
      slices_.emplace(id, std::move(slice));
    }
    SHALE_RETURN_IF_ERROR(it->status());
  }
  // A version-1 catalog entry has no figures: count them once, before any
  // change (they reach the catalog at the next checkpoint).
  for (BTreeSlice* slice : unknown_stats) {
    Status s = slice->Recount();
    if (!s.ok()) log::Error("slice store {}: cannot count slice {}: {}", dir_, slice->id(), s.ToString());
  }
  const uint64_t from = file_->meta().checkpoint_lsn;
  checkpoint_lsn_.store(from);
  uint64_t replayed = 0;
  auto replay = [&](uint64_t lsn, WalRecordType type, std::string_view payload) {
    if (type != WalRecordType::kCheckpoint) ++replayed;
    return Replay(lsn, type, payload);
  };
  SHALE_ASSIGN_OR_RETURN(wal_, Wal::Open(dir_ + "/wal", options_.wal, from, replay));
  log::Info("slice store {}: {} slices, checkpoint LSN {}, replayed {} WAL records up to LSN {}", dir_,
            slices_.size(), from, replayed, wal_->next_lsn());
  // The targets of a split the crash interrupted are incomplete: drop them
  // (SliceState::kSplitting). Building slices stay, resumable.
  std::vector<SliceId> unfinished;
  for (const auto& [id, slice] : slices_) {
    if (slice->build_state().state == SliceState::kSplitting) unfinished.push_back(id);
  }
  for (SliceId id : unfinished) {
    log::Warn("slice store {}: dropping slice {}, the target of an interrupted split", dir_, id);
    SHALE_RETURN_IF_ERROR(DropSlice(id));
    ++replayed;
  }
  if (replayed > 0 || !unknown_stats.empty()) SHALE_RETURN_IF_ERROR(Checkpoint());
  if (options_.verify_at_open) {
    uint64_t pages = 0;
    SHALE_RETURN_IF_ERROR(Verify(&pages));
    log::Info("slice store {}: verified {} pages and {} slice trees", dir_, pages, slices_.size());
  }
  checkpointer_ = std::thread([this] { CheckpointLoop(); });
  opened_ = true;
  return Status::OK();
}

Status BTreeSliceStore::Replay(uint64_t lsn, WalRecordType type, std::string_view payload) {
  auto bad = [&](std::string_view what) {
    return Status::Corruption(fmt::format("WAL {}: record at LSN {}: {}", dir_ + "/wal", lsn, what));
  };
  switch (type) {
    case WalRecordType::kBatch: {
      std::vector<std::pair<SliceId, WriteBatch>> decoded;
      if (!DecodeBatchPayload(payload, &decoded)) return bad("undecodable batch");
      std::vector<std::pair<SliceId, const WriteBatch*>> batches;
      for (const auto& [id, b] : decoded) {
        if (FindSlice(id) == nullptr) return bad(fmt::format("batch for missing slice {}", id));
        batches.emplace_back(id, &b);
      }
      return ApplyBatches(batches);
    }
    case WalRecordType::kCreateSlice:
    case WalRecordType::kDropSlice: {
      if (payload.size() != 8 && (type == WalRecordType::kDropSlice || payload.size() != 18)) {
        return bad("bad slice record");
      }
      SliceId id = LoadU64(payload.data());
      if (type == WalRecordType::kDropSlice) return ApplyDrop(id);
      if (FindSlice(id) != nullptr) return bad(fmt::format("create of existing slice {}", id));
      SliceOptions options;
      SliceState state = SliceState::kReady;
      uint64_t snapshot_ts = 0;
      if (payload.size() == 18) {
        uint8_t c = static_cast<uint8_t>(payload[8]), st = static_cast<uint8_t>(payload[9]);
        if (c > static_cast<uint8_t>(PageCompression::kZstd) || st > static_cast<uint8_t>(SliceState::kSplitting)) {
          return bad("bad slice options");
        }
        options.compression = static_cast<PageCompression>(c);
        state = static_cast<SliceState>(st);
        snapshot_ts = LoadU64(payload.data() + 10);
      }
      return ApplyCreate(id, options, state, snapshot_ts).status();
    }
    case WalRecordType::kLoadChunk: {
      PayloadReader r(payload);
      uint64_t id = 0;
      uint32_t n = 0;
      std::string resume;
      if (!r.U64(&id) || !r.U32(&n) || !r.Bytes(n, &resume)) return bad("bad load chunk");
      std::vector<std::pair<SliceId, WriteBatch>> decoded;
      if (!DecodeBatchPayload(payload.substr(12 + n), &decoded) || decoded.size() != 1 || decoded[0].first != id) {
        return bad("bad load chunk");
      }
      if (FindSlice(id) == nullptr) return bad(fmt::format("load chunk for missing slice {}", id));
      return ApplyLoadChunk(id, resume, decoded[0].second);
    }
    case WalRecordType::kSliceState: {
      PayloadReader r(payload);
      uint32_t count = 0;
      if (!r.U32(&count)) return bad("bad slice state record");
      std::vector<std::pair<SliceId, SliceState>> states;
      for (uint32_t i = 0; i < count; ++i) {
        uint64_t id = 0;
        uint8_t st = 0;
        if (!r.U64(&id) || !r.U8(&st) || st > static_cast<uint8_t>(SliceState::kSplitting)) {
          return bad("bad slice state record");
        }
        if (FindSlice(id) == nullptr) return bad(fmt::format("state of missing slice {}", id));
        states.emplace_back(id, static_cast<SliceState>(st));
      }
      if (!r.done()) return bad("bad slice state record");
      return ApplySliceStates(states);
    }
    case WalRecordType::kCheckpoint:
      return Status::OK();
  }
  return bad("unknown type");
}

Status BTreeSliceStore::ApplyBatches(const std::vector<std::pair<SliceId, const WriteBatch*>>& batches) {
  for (const auto& [id, batch] : batches) {
    BTreeSlice* slice = FindSlice(id);
    if (slice == nullptr) return Status::NotFound(fmt::format("slice {} does not exist in {}", id, dir_));
    SHALE_RETURN_IF_ERROR(slice->ApplyOps(*batch));
  }
  return Status::OK();
}

Result<BTreeSlice*> BTreeSliceStore::ApplyCreate(SliceId id, const SliceOptions& options, SliceState state,
                                                 uint64_t snapshot_ts) {
  SHALE_ASSIGN_OR_RETURN(PageId root, BTree::CreateRoot(pool_.get(), static_cast<uint8_t>(options.compression)));
  CatalogEntry entry;
  entry.root = root;
  entry.options = options;
  entry.build.state = state;
  entry.build.snapshot_ts = snapshot_ts;
  SHALE_RETURN_IF_ERROR(catalog_->Put(CatalogKey(id), EncodeCatalogEntry(entry)));
  SHALE_ASSIGN_OR_RETURN(auto tree, BTree::OpenAt(pool_.get(), root));
  auto slice = std::make_unique<BTreeSlice>(this, id, std::move(tree), entry);
  BTreeSlice* raw = slice.get();
  std::unique_lock<std::shared_mutex> l(slices_mu_);
  slices_[id] = std::move(slice);
  return raw;
}

Status BTreeSliceStore::ApplyDrop(SliceId id) {
  std::unique_ptr<BTreeSlice> slice;
  {
    std::unique_lock<std::shared_mutex> l(slices_mu_);
    auto it = slices_.find(id);
    if (it == slices_.end()) return Status::NotFound(fmt::format("slice {} does not exist in {}", id, dir_));
    slice = std::move(it->second);
    slices_.erase(it);
  }
  SHALE_RETURN_IF_ERROR(catalog_->Delete(CatalogKey(id)));
  return slice->FreeAll();
}

Status BTreeSliceStore::LogAndApply(WalRecordType type, std::string_view payload,
                                    const std::function<Status()>& apply, bool paused,
                                    const std::function<Status()>& check) {
  if (!paused) EnterWrite();
  Status s;
  {
    std::lock_guard<std::mutex> l(gate_mu_);
    s = failed_;
  }
  if (s.ok() && check) s = check();
  if (s.ok()) {
    auto lsn = wal_->Append(type, payload);
    if (!lsn.ok()) {
      s = lsn.status();
    } else {
      s = apply();
      if (!s.ok()) {
        std::lock_guard<std::mutex> l(gate_mu_);
        failed_ = s;
        log::Error("slice store {}: a logged change (record type {}) failed to apply: {}; refusing writes until "
                   "restart", dir_, static_cast<int>(type), s.ToString());
      }
    }
  }
  if (!paused) ExitWrite();
  MaybeWakeCheckpointer();
  return s;
}

Status BTreeSliceStore::WithWritersPaused(const std::function<Status()>& f) {
  PauseWriters();
  Status s = f();
  ResumeWriters();
  return s;
}

Result<Slice*> BTreeSliceStore::Create(SliceId id, const SliceOptions& options, SliceState state,
                                       uint64_t snapshot_ts) {
  if (options.compression > PageCompression::kZstd) {
    return Status::InvalidArgument(fmt::format("slice {}: unknown page compression {}", id,
                                               static_cast<int>(options.compression)));
  }
  BTreeSlice* raw = nullptr;
  const std::string payload = options.compression == PageCompression::kNone && state == SliceState::kReady
                                  ? U64Payload(id)  // version 1: readable by older builds
                                  : EncodeCreatePayload(id, options, state, snapshot_ts);
  // Not with the writers paused (as a drop is): no write can name a slice
  // before it exists, and a create that waited for the writers to drain
  // made cluster_bank see wrong totals after a reprotection (4 runs in 49;
  // 0 in 25 without the pause) — a timing the building replica's catch-up
  // does not survive, not understood yet (docs/cluster.md "Not done").
  SHALE_RETURN_IF_ERROR(LogAndApply(
      WalRecordType::kCreateSlice, payload,
      [&]() -> Status {
        SHALE_ASSIGN_OR_RETURN(raw, ApplyCreate(id, options, state, snapshot_ts));
        return Status::OK();
      },
      /*paused=*/false,
      [&]() -> Status {
        if (FindSlice(id) != nullptr) {
          return Status::InvalidArgument(fmt::format("slice {} already exists in {}", id, dir_));
        }
        return Status::OK();
      }));
  return static_cast<Slice*>(raw);
}

Result<Slice*> BTreeSliceStore::CreateSlice(SliceId id, const SliceOptions& options) {
  return Create(id, options, SliceState::kReady, 0);
}

Result<Slice*> BTreeSliceStore::GetSlice(SliceId id) {
  BTreeSlice* slice = FindSlice(id);
  if (slice == nullptr) return Status::NotFound(fmt::format("slice {} does not exist in {}", id, dir_));
  return static_cast<Slice*>(slice);
}

Status BTreeSliceStore::DropSlice(SliceId id) {
  // With the writers paused: a write that found the slice inside its gate
  // is logged and applied before the drop's record, and none after it (a
  // write logged after the drop would fail to apply, stopping the store, and
  // make the WAL unreplayable).
  Status s = WithWritersPaused([&] {
    return LogAndApply(
        WalRecordType::kDropSlice, U64Payload(id), [&] { return ApplyDrop(id); }, /*paused=*/true,
        [&]() -> Status {
          if (FindSlice(id) == nullptr) {
            return Status::NotFound(fmt::format("slice {} does not exist in {}", id, dir_));
          }
          return Status::OK();
        });
  });
  if (s.ok()) {
    release_wanted_.store(true);
    // Background checkpoints on: one now, so the memory goes back soon.
    if (options_.checkpoint_interval_ms != 0) WakeCheckpointer();
  }
  return s;
}

Result<SliceOptions> BTreeSliceStore::GetSliceOptions(SliceId id) const {
  BTreeSlice* slice = FindSlice(id);
  if (slice == nullptr) return Status::NotFound(fmt::format("slice {} does not exist in {}", id, dir_));
  return slice->options();
}

Result<SliceBuildState> BTreeSliceStore::GetBuildState(SliceId id) const {
  BTreeSlice* slice = FindSlice(id);
  if (slice == nullptr) return Status::NotFound(fmt::format("slice {} does not exist in {}", id, dir_));
  return slice->build_state();
}

Status BTreeSliceStore::PutCatalogEntry(const BTreeSlice* slice) {
  return catalog_->Put(CatalogKey(slice->id()), EncodeCatalogEntry(slice->Entry(false, nullptr)));
}

Result<Slice*> BTreeSliceStore::CreateBuildingSlice(SliceId id, uint64_t snapshot_ts, const SliceOptions& options) {
  return Create(id, options, SliceState::kBuilding, snapshot_ts);
}

Status BTreeSliceStore::ApplyLoadChunk(SliceId id, std::string_view resume_key, const WriteBatch& entries) {
  std::vector<std::pair<SliceId, const WriteBatch*>> one{{id, &entries}};
  SHALE_RETURN_IF_ERROR(ApplyBatches(one));
  BTreeSlice* slice = FindSlice(id);
  SliceBuildState b = slice->build_state();
  b.has_resume_key = true;
  b.resume_key.assign(resume_key);
  slice->set_build_state(std::move(b));
  return PutCatalogEntry(slice);
}

Status BTreeSliceStore::CheckBuilding(SliceId id) const {
  BTreeSlice* slice = FindSlice(id);
  if (slice == nullptr) return Status::NotFound(fmt::format("slice {} does not exist in {}", id, dir_));
  if (slice->build_state().state != SliceState::kBuilding) {
    return Status::InvalidArgument(fmt::format("slice {} is not being built", id));
  }
  return Status::OK();
}

Status BTreeSliceStore::LoadChunk(SliceId id, const WriteBatch& entries, std::string_view resume_key) {
  if (resume_key.size() > kMaxKeyBytes) {
    return Status::InvalidArgument(fmt::format("slice {}: resume key of {} bytes exceeds the limit", id,
                                               resume_key.size()));
  }
  for (const WriteOp& op : entries.ops()) {
    if (op.key.size() > kMaxKeyBytes) {
      return Status::InvalidArgument(
          fmt::format("slice {}: key of {} bytes exceeds the limit of {}", id, op.key.size(), kMaxKeyBytes));
    }
  }
  std::string payload;
  PutU64(&payload, id);
  PutU32(&payload, static_cast<uint32_t>(resume_key.size()));
  payload.append(resume_key);
  std::vector<std::pair<SliceId, const WriteBatch*>> one{{id, &entries}};
  payload.append(EncodeBatchPayload(one));
  return LogAndApply(
      WalRecordType::kLoadChunk, payload, [&] { return ApplyLoadChunk(id, resume_key, entries); },
      /*paused=*/false, [&] { return CheckBuilding(id); });
}

Status BTreeSliceStore::ApplySliceStates(const std::vector<std::pair<SliceId, SliceState>>& states) {
  for (const auto& [id, state] : states) {
    BTreeSlice* slice = FindSlice(id);
    if (slice == nullptr) return Status::NotFound(fmt::format("slice {} does not exist in {}", id, dir_));
    SliceBuildState b = slice->build_state();
    b.state = state;
    if (state == SliceState::kReady) {
      b.has_resume_key = false;
      b.resume_key.clear();
    }
    slice->set_build_state(std::move(b));
    SHALE_RETURN_IF_ERROR(PutCatalogEntry(slice));
  }
  return Status::OK();
}

namespace {
std::string EncodeStatesPayload(const std::vector<std::pair<SliceId, SliceState>>& states) {
  std::string out;
  PutU32(&out, static_cast<uint32_t>(states.size()));
  for (const auto& [id, state] : states) {
    PutU64(&out, id);
    out.push_back(static_cast<char>(state));
  }
  return out;
}
}  // namespace

Status BTreeSliceStore::FinishBuild(SliceId id) {
  std::vector<std::pair<SliceId, SliceState>> states{{id, SliceState::kReady}};
  return LogAndApply(
      WalRecordType::kSliceState, EncodeStatesPayload(states), [&] { return ApplySliceStates(states); },
      /*paused=*/false, [&] { return CheckBuilding(id); });
}

void BTreeSliceStore::MirrorSplits(const std::vector<std::pair<SliceId, const WriteBatch*>>& batches,
                                   std::vector<std::pair<SliceId, WriteBatch>>* extra) const {
  for (const auto& [id, batch] : batches) {
    BTreeSlice* slice = FindSlice(id);
    if (slice == nullptr || slice->mirror.hash == nullptr) continue;
    const SplitMirror& m = slice->mirror;
    WriteBatch low, high;
    for (const WriteOp& op : batch->ops()) {
      WriteBatch& to = (*m.hash)(op.key) < m.split_hash ? low : high;
      if (op.kind == WriteOp::Kind::kPut) {
        to.Put(op.key, op.value);
      } else {
        to.Delete(op.key);
      }
    }
    if (!low.empty()) extra->emplace_back(m.low, std::move(low));
    if (!high.empty()) extra->emplace_back(m.high, std::move(high));
  }
}

Status BTreeSliceStore::SplitSlice(SliceId source, uint64_t split_hash, const KeyHashFn& hash, SliceId low,
                                   SliceId high, const SliceOptions& options) {
  BTreeSlice* src = FindSlice(source);
  if (src == nullptr) return Status::NotFound(fmt::format("slice {} does not exist in {}", source, dir_));
  if (low == high || low == source || high == source) {
    return Status::InvalidArgument(fmt::format("split of slice {}: the new slices need two other ids", source));
  }
  if (src->build_state().state != SliceState::kReady) {
    return Status::InvalidArgument(fmt::format("split of slice {}: the slice is not complete", source));
  }
  SHALE_RETURN_IF_ERROR(Create(low, options, SliceState::kSplitting, 0).status());
  auto made_high = Create(high, options, SliceState::kSplitting, 0);
  if (!made_high.ok()) {
    Status dropped = DropSlice(low);
    if (!dropped.ok()) log::Error("slice store {}: cannot drop slice {}: {}", dir_, low, dropped.ToString());
    return made_high.status();
  }
  // From now on every write to the source also goes to the new slices.
  PauseWriters();
  src->mirror = SplitMirror{low, high, split_hash, &hash};
  ++splits_running_;
  ResumeWriters();
  auto stop_mirroring = [&] {
    PauseWriters();
    src->mirror = SplitMirror{};
    --splits_running_;
    ResumeWriters();
  };
  // Copy in chunks, each read and written with writers paused, so no write
  // to the source falls between reading an entry and copying it.
  constexpr size_t kChunkBytes = 1 << 20;
  std::string cursor;
  bool has_cursor = false;
  Status s;
  for (bool done = false; s.ok() && !done;) {
    PauseWriters();
    WriteBatch lo, hi;
    size_t bytes = 0;
    KeyRange range;
    if (has_cursor) {
      range.has_start = true;
      range.start = cursor;
      range.start_inclusive = false;
    }
    auto it = src->NewIterator(range);
    for (; it->Valid() && bytes < kChunkBytes; it->Next()) {
      (hash(it->key()) < split_hash ? lo : hi).Put(std::string(it->key()), std::string(it->value()));
      bytes += it->key().size() + it->value().size();
      cursor.assign(it->key());
      has_cursor = true;
    }
    done = !it->Valid();
    s = it->status();
    if (s.ok() && (!lo.empty() || !hi.empty())) {
      std::vector<std::pair<SliceId, const WriteBatch*>> batches;
      if (!lo.empty()) batches.emplace_back(low, &lo);
      if (!hi.empty()) batches.emplace_back(high, &hi);
      const std::string payload = EncodeBatchPayload(batches);
      s = LogAndApply(WalRecordType::kBatch, payload, [&] { return ApplyBatches(batches); }, /*paused=*/true);
    }
    if (s.ok() && done) {
      // Both complete, in one record; the mirror goes with the same pause.
      std::vector<std::pair<SliceId, SliceState>> states{{low, SliceState::kReady}, {high, SliceState::kReady}};
      s = LogAndApply(WalRecordType::kSliceState, EncodeStatesPayload(states),
                      [&] { return ApplySliceStates(states); }, /*paused=*/true);
      src->mirror = SplitMirror{};
      --splits_running_;
    }
    ResumeWriters();
  }
  if (!s.ok()) {
    if (src->mirror.hash != nullptr) stop_mirroring();
    for (SliceId id : {low, high}) {
      Status dropped = DropSlice(id);
      if (!dropped.ok()) log::Error("slice store {}: cannot drop slice {}: {}", dir_, id, dropped.ToString());
    }
  }
  return s;
}

std::vector<SliceId> BTreeSliceStore::ListSlices() const {
  std::shared_lock<std::shared_mutex> l(slices_mu_);
  std::vector<SliceId> ids;
  ids.reserve(slices_.size());
  for (const auto& [id, slice] : slices_) ids.push_back(id);
  return ids;
}

Status BTreeSliceStore::WriteBatches(const std::vector<std::pair<SliceId, const WriteBatch*>>& batches,
                                     uint64_t* deferred_lsn) {
  if (deferred_lsn != nullptr) *deferred_lsn = 0;
  bool any = false;
  for (const auto& [id, batch] : batches) {
    for (const WriteOp& op : batch->ops()) {
      if (op.key.size() > kMaxKeyBytes) {
        return Status::InvalidArgument(
            fmt::format("slice {}: key of {} bytes exceeds the limit of {}", id, op.key.size(), kMaxKeyBytes));
      }
      any = true;
    }
  }
  // Inside the gate: a slice found here stays until the write is applied
  // (DropSlice waits for the writers in the gate).
  EnterWrite();
  Status s;
  {
    std::lock_guard<std::mutex> l(gate_mu_);
    s = failed_;
  }
  for (const auto& [id, batch] : batches) {
    if (s.ok() && FindSlice(id) == nullptr) {
      s = Status::NotFound(fmt::format("slice {} does not exist in {}", id, dir_));
    }
  }
  if (!any || !s.ok()) {
    ExitWrite();
    return s;
  }
  std::string payload = EncodeBatchPayload(batches);
  // A slice being split: its writes go to the new slices too, in the same
  // record (so replay needs no hash function).
  std::vector<std::pair<SliceId, WriteBatch>> mirrored;
  std::vector<std::pair<SliceId, const WriteBatch*>> with_mirrors;
  const std::vector<std::pair<SliceId, const WriteBatch*>>* apply = &batches;
  if (splits_running_ > 0) {
    MirrorSplits(batches, &mirrored);
    if (!mirrored.empty()) {
      with_mirrors = batches;
      for (const auto& [id, b] : mirrored) with_mirrors.emplace_back(id, &b);
      payload = EncodeBatchPayload(with_mirrors);
      apply = &with_mirrors;
    }
  }
  if (s.ok()) {
    auto lsn = deferred_lsn != nullptr ? wal_->AppendDeferred(WalRecordType::kBatch, payload)
                                       : wal_->Append(WalRecordType::kBatch, payload);
    if (!lsn.ok()) {
      s = lsn.status();
    } else {
      if (deferred_lsn != nullptr) *deferred_lsn = *lsn;
      s = ApplyBatches(*apply);
      if (!s.ok()) {
        std::lock_guard<std::mutex> l(gate_mu_);
        failed_ = s;
        log::Error("slice store {}: a logged write failed to apply: {}; refusing writes until restart", dir_,
                   s.ToString());
      }
    }
  }
  ExitWrite();
  MaybeWakeCheckpointer();
  return s;
}

void BTreeSliceStore::MaybeWakeCheckpointer() {
  if (options_.checkpoint_wal_bytes != 0 &&
      wal_->next_lsn() - checkpoint_lsn_.load(std::memory_order_relaxed) >= options_.checkpoint_wal_bytes) {
    WakeCheckpointer();
  } else if (options_.checkpoint_spill_bytes != 0 &&
             file_->spilled_pages() * kPageSize >= options_.checkpoint_spill_bytes) {
    WakeCheckpointer();
  }
}

void BTreeSliceStore::WakeCheckpointer() {
  {
    std::lock_guard<std::mutex> l(ckpt_thread_mu_);
    wake_ = true;
  }
  ckpt_cv_.notify_one();
}

Status BTreeSliceStore::Checkpoint() {
  std::lock_guard<std::mutex> one(checkpoint_mu_);
  {
    // Pages that disagree with the log must never reach the data file
    // (invariant 3): recovery will replay the log instead.
    std::lock_guard<std::mutex> l(gate_mu_);
    if (!failed_.ok()) return failed_;
  }
  PauseWriters();
  const auto paused_at = std::chrono::steady_clock::now();
  // The slices' figures (and states) as of this LSN go into the catalog, so
  // recovery starts from them and replay adjusts them exactly.
  Status stats;
  {
    std::shared_lock<std::shared_mutex> l(slices_mu_);
    for (const auto& [id, slice] : slices_) {
      bool dirty = false;
      CatalogEntry e = slice->Entry(true, &dirty);
      if (dirty) stats = catalog_->Put(CatalogKey(id), EncodeCatalogEntry(e));
      if (!stats.ok()) break;
    }
  }
  if (!stats.ok()) {
    ResumeWriters();
    return stats;
  }
  // The flip: O(1), whatever the number of dirty pages (page_file.h
  // invariant 7). Every page version made before it belongs to this
  // checkpoint; writers copy a page owed to it before changing it
  // (buffer_pool.h invariant 6).
  const uint64_t lsn = wal_->next_lsn();
  CheckpointSet set = file_->BeginCheckpoint(lsn);
  ResumeWriters();
  const uint64_t pause_us = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - paused_at).count());
  pause_last_us_.store(pause_us);
  if (pause_us > pause_max_us_.load()) pause_max_us_.store(pause_us);
  const size_t captured = pool_->CaptureOwed();
  file_->CollectCheckpoint(&set);
  if (set.pages.empty() && lsn == idle_lsn_.load()) {
    file_->EndCheckpoint(set, true);  // nothing changed since the last one
    return Status::OK();
  }
  Status s = wal_->Sync();  // the log first: pages may hold effects up to lsn
  if (s.ok()) s = file_->WriteCheckpoint(set);
  file_->EndCheckpoint(set, s.ok());
  if (!s.ok()) {
    std::lock_guard<std::mutex> l(gate_mu_);
    if (failed_.ok()) failed_ = s;
    log::Error("slice store {}: checkpoint at LSN {} failed: {}; refusing writes until restart", dir_, lsn,
               s.ToString());
    return s;
  }
  checkpoint_lsn_.store(lsn);
  checkpoints_.fetch_add(1);
  auto end = wal_->Append(WalRecordType::kCheckpoint, U64Payload(lsn));
  SHALE_RETURN_IF_ERROR(end.status());
  idle_lsn_.store(*end);
  SHALE_RETURN_IF_ERROR(wal_->RecycleBefore(lsn));
  log::Debug("slice store {}: checkpoint at LSN {}: {} pages ({} captured from the pool)", dir_, lsn,
             set.pages.size(), captured);
  return Status::OK();
}

void BTreeSliceStore::CheckpointLoop() {
  std::unique_lock<std::mutex> l(ckpt_thread_mu_);
  const auto interval = std::chrono::milliseconds(options_.checkpoint_interval_ms == 0
                                                      ? 3600000u
                                                      : options_.checkpoint_interval_ms);
  while (!stop_) {
    ckpt_cv_.wait_for(l, interval, [&] { return stop_ || wake_; });
    if (stop_) break;
    wake_ = false;
    l.unlock();
    const bool release = release_wanted_.exchange(false);
    Status s = Checkpoint();
    if (!s.ok()) log::Error("slice store {}: background checkpoint failed: {}", dir_, s.ToString());
    if (s.ok() && release) {
      const size_t frames = pool_->ReleaseFreeFrames();
      log::Debug("slice store {}: {} buffer pool frames given back after dropped slices", dir_, frames);
    }
    l.lock();
  }
}

Status BTreeSliceStore::Verify(uint64_t* pages_checked) {
  SHALE_RETURN_IF_ERROR(file_->VerifyOnDisk(pages_checked));
  SHALE_RETURN_IF_ERROR(catalog_->TEST_Check().status());
  std::shared_lock<std::shared_mutex> l(slices_mu_);
  for (const auto& [id, slice] : slices_) {
    auto check = slice->tree()->TEST_Check();
    if (!check.ok()) return slice->Annotate(check.status());
  }
  return Status::OK();
}

SliceStoreStats BTreeSliceStore::GetStoreStats() const {
  SliceStoreStats s;
  s.wal = wal_->stats();
  BufferPoolStats p = pool_->stats();
  s.pool_hits = p.hits;
  s.pool_misses = p.misses;
  s.pool_evictions = p.evictions;
  s.pool_resident_frames = p.resident_frames;
  s.pool_frames_released = p.released;
  s.pool_writebacks = p.writebacks;
  s.checkpoint_cow_pages = p.cow_copies;
  s.checkpoint_captured_pages = p.captured;
  s.checkpoints = checkpoints_.load();
  s.checkpoint_lsn = checkpoint_lsn_.load();
  s.overlay_pages = file_->overlay_pages();
  s.spilled_pages = file_->spilled_pages();
  s.checkpoint_pause_max_us = pause_max_us_.load();
  s.checkpoint_pause_last_us = pause_last_us_.load();
  s.data_pages = file_->meta().page_count;
  return s;
}

}  // namespace

Result<std::unique_ptr<SliceStore>> SliceStore::Open(const std::string& dir, const SliceStoreOptions& options) {
  std::error_code ec;
  bool created = std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError(fmt::format("cannot create slice store {}: {}", dir, ec.message()));
  if (created) {
    // Make the new directory's own entry durable.
    std::filesystem::path path = std::filesystem::absolute(dir, ec).lexically_normal();
    if (!path.has_filename()) path = path.parent_path();  // "a/b/" names "a/b"
    if (!ec) SHALE_RETURN_IF_ERROR(SyncDir(path.parent_path().string()));
  }
  std::string lock_path = dir + "/LOCK";
  int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0) return ErrnoStatus("cannot open lock file", lock_path, errno);
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    ::close(lock_fd);
    if (err == EWOULDBLOCK) {
      return Status::Unavailable(fmt::format("slice store {} is already open (LOCK held)", dir));
    }
    return ErrnoStatus("cannot lock", lock_path, err);
  }
  auto store = std::make_unique<BTreeSliceStore>(dir, lock_fd, options);
  SHALE_RETURN_IF_ERROR(store->OpenAndRecover());
  return std::unique_ptr<SliceStore>(std::move(store));
}

}  // namespace shale::storage
