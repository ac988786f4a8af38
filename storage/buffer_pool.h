// BufferPool: a fixed number of page-sized frames caching the pages of one
// PageFile. Callers fetch a page as a PageGuard, which pins the frame (it
// cannot be evicted) and holds the frame's latch shared or exclusive until
// the guard is released or destroyed. Writers mark the page dirty; eviction
// (CLOCK: one reference bit per frame) writes a dirty victim back before
// reusing its frame, so a data set many times the pool works, only slower.
// The pool also allocates and frees pages (the free list of page_file.h).
//
// Invariants:
//  1. A page is in at most one frame; table_ maps it to that frame.
//  2. A frame is chosen as a victim only with mu_ held and pin count 0, and a
//     pin is only taken with mu_ held, so a victim cannot be pinned while it
//     is being reassigned. Unpin is a lock-free decrement.
//  3. No I/O happens under mu_. A dirty victim is pinned, written back under
//     its shared latch (try-locked: eviction never waits on a latch) with mu_
//     released, then unpinned and reconsidered. A
//     page being loaded is in table_ with its frame latched exclusively by
//     the loader; other fetchers pin it and wait on the latch, then check
//     that the load succeeded.
//  4. A page that fails its checksum is never handed out: the load's error
//     (Corruption naming file and page) is returned and the frame freed.
//  5. The dirty bit is cleared only by a writer-back holding the frame's
//     shared latch (or the checkpoint capture, holding it exclusively), so a
//     change made under the exclusive latch is never lost.
//  6. Copy-on-write checkpoint capture (page_file.h invariant 7): each frame
//     remembers the checkpoint epoch of its last change (`mod_epoch`, set by
//     mutable_data() before the caller changes anything). A dirty frame
//     whose mod_epoch is older than the file's checkpoint epoch is *owed* to
//     the running checkpoint: the first mutable_data() after the flip copies
//     it to the checkpoint before the change, a write-back sends it to the
//     checkpoint, and CaptureOwed() hands over the rest. No frame becomes
//     owed after the flip, so after CaptureOwed() none is.
//
// Latch order (deadlock freedom) is the caller's duty: the B+tree latches top
// down, and siblings only under their parent's exclusive latch.
//
// Thread-safety: all methods are thread-safe. A PageGuard belongs to one
// thread at a time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "shale/status.h"
#include "storage/page.h"
#include "storage/page_file.h"

namespace shale::storage {

struct BufferPoolOptions {
  // Number of page frames (kPageSize bytes each). At least kMinFrames; each
  // thread working on a B+tree pins up to about 2 x tree height + 3 frames at
  // once, so the pool must be larger than that times the number of threads.
  // Default: 1024 (16 MiB).
  size_t frames = 1024;
  static constexpr size_t kMinFrames = 8;
};

struct BufferPoolStats {
  uint64_t hits = 0;
  uint64_t misses = 0;     // pages read from the data file
  uint64_t evictions = 0;  // frames reused for another page
  uint64_t writebacks = 0; // dirty pages written to the data file
  uint64_t cow_copies = 0; // owed pages copied by a writer about to change them (invariant 6)
  uint64_t captured = 0;   // owed pages handed over by CaptureOwed
  uint64_t released = 0;   // frames given back to the OS by ReleaseFreeFrames
  uint64_t resident_frames = 0;  // frames in use since they were last given back (or ever)
};

class BufferPool;

enum class LatchMode : uint8_t { kShared, kExclusive };

// A pinned, latched page. Movable, not copyable. Release() (or the
// destructor) unlatches and unpins.
class PageGuard {
 public:
  PageGuard() = default;
  PageGuard(PageGuard&& other) noexcept { *this = std::move(other); }
  PageGuard& operator=(PageGuard&& other) noexcept;
  PageGuard(const PageGuard&) = delete;
  PageGuard& operator=(const PageGuard&) = delete;
  ~PageGuard() { Release(); }

  bool valid() const { return pool_ != nullptr; }
  PageId page_id() const { return page_id_; }
  LatchMode mode() const { return mode_; }
  const char* data() const;
  // REQUIRES: exclusive. Callers that change the page must MarkDirty().
  // Copies the page to a running checkpoint first if it is owed to it
  // (invariant 6), so call it before changing the page.
  char* mutable_data();
  void MarkDirty();
  void Release();

 private:
  friend class BufferPool;
  PageGuard(BufferPool* pool, size_t frame, PageId id, LatchMode mode)
      : pool_(pool), frame_(frame), page_id_(id), mode_(mode) {}
  size_t frame_index() const { return frame_; }

  BufferPool* pool_ = nullptr;  // nullptr when released
  size_t frame_ = 0;
  PageId page_id_ = kInvalidPageId;
  LatchMode mode_ = LatchMode::kShared;
};

class BufferPool {
 public:
  // `file` must outlive the pool.
  BufferPool(PageFile* file, const BufferPoolOptions& options = {});
  // Writes back dirty pages (errors are logged) — call FlushAll() first to
  // see them.
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  PageFile* file() const { return file_; }
  size_t frame_count() const { return frames_.size(); }

  // Pins and latches page `id`, reading it if it is not cached. Errors: the
  // read's (Corruption for a bad page, invariant 4); Unavailable if every
  // frame is pinned.
  Result<PageGuard> Fetch(PageId id, LatchMode mode);

  // Allocates a page (from the free list, else at the end of the file) and
  // returns it initialized as `type`, latched exclusively and dirty.
  Result<PageGuard> NewPage(PageType type, uint8_t level = 0);
  // Puts the page on the free list. REQUIRES: exclusive guard; no other
  // reference to the page remains in any tree. Releases the guard.
  Status FreePage(PageGuard guard);

  // Writes back every dirty page, fsyncs, and writes the meta page.
  Status FlushAll();
  // For a running checkpoint of a file in spill mode (after
  // PageFile::BeginCheckpoint flipped the epoch): hands a copy of every
  // frame still owed to it to PageFile::CaptureImage and marks it clean
  // (invariant 6). Writers keep running; each frame is latched exclusively
  // only for its copy. Returns the number of pages handed over.
  size_t CaptureOwed();

  // Gives the memory of frames holding no useful page back to the OS
  // (madvise MADV_DONTNEED): frames that hold a free page (PageType::kFree,
  // clean: its free-list link is on disk) leave the table, and those and
  // every other unassigned frame that was in use are released. A released
  // frame is taken again like any free frame (its next page is read or
  // initialized into it). Skips frames that are pinned, dirty or latched.
  // Called after a checkpoint that followed dropped slices. Returns the
  // number of frames released.
  size_t ReleaseFreeFrames();

  BufferPoolStats stats() const;

 private:
  friend class PageGuard;
  struct Frame {
    char* data = nullptr;
    PageId page_id = kInvalidPageId;  // GUARDED_BY(mu_); kInvalidPageId = free
    bool loaded = false;              // set by the loader under the exclusive latch
    bool resident = false;            // GUARDED_BY(mu_): used since last released
    std::atomic<uint32_t> pins{0};
    std::atomic<bool> dirty{false};
    std::atomic<bool> referenced{false};
    // Checkpoint epoch of the last change (invariant 6); written under the
    // exclusive latch, read under a latch.
    std::atomic<uint64_t> mod_epoch{0};
    std::shared_mutex latch;
  };
  // Whether frame `fr`, dirty, belongs to a checkpoint after it. REQUIRES: a latch.
  bool Owed(const Frame& fr) const {
    return fr.dirty.load(std::memory_order_acquire) &&
           fr.mod_epoch.load(std::memory_order_relaxed) < file_->checkpoint_epoch();
  }
  // mutable_data()'s copy-on-write step. REQUIRES: exclusive latch on f.
  void BeforeChange(size_t f);

  void Unpin(size_t frame) { frames_[frame]->pins.fetch_sub(1, std::memory_order_acq_rel); }
  void Latch(size_t frame, LatchMode mode);
  void Unlatch(size_t frame, LatchMode mode);
  // Latches a frame just taken as a victim exclusively. REQUIRES: mu_ held.
  void LatchUnpinned(size_t frame);
  // Finds a frame with no pins and a clean page, writing back dirty
  // candidates on the way (with mu_ released). Returns with `l` held and the
  // frame removed from table_. Unavailable if all frames are pinned.
  Result<size_t> TakeVictim(std::unique_lock<std::mutex>& l);
  // Writes back frame f if dirty, under its shared latch. With !wait, gives
  // up (OK, *written false) if the latch is taken: an evicting thread may
  // hold tree latches, so it must never wait on another page's latch.
  // REQUIRES: caller holds a pin on f.
  Status WriteBack(size_t f, bool wait, bool* written);

  PageFile* const file_;
  std::vector<std::unique_ptr<Frame>> frames_;
  char* memory_ = nullptr;  // frames_.size() * kPageSize bytes

  mutable std::mutex mu_;
  std::unordered_map<PageId, size_t> table_;  // GUARDED_BY(mu_)
  size_t clock_hand_ = 0;                     // GUARDED_BY(mu_)

  std::mutex free_mu_;  // serializes free-list changes (NewPage/FreePage)

  std::atomic<uint64_t> hits_{0}, misses_{0}, evictions_{0}, writebacks_{0}, cow_copies_{0}, captured_{0},
      released_{0};
};

}  // namespace shale::storage
