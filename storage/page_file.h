// PageFile: one data file of fixed-size pages (storage/page.h). Page p lives
// at byte offset p * kPageSize. Page 0 is the meta page: format version, page
// size, the B+tree root, the page count and the head of the free-page list
// (a chain of kFree pages linked through their header `link`). Layout in
// docs/formats/page-format.md.
//
// Invariants:
//  1. ReadPage never returns a page that fails VerifyPage: a bad checksum, a
//     header naming another page or a short read is Status::Corruption naming
//     the file and the page, and is logged as an error.
//  2. WritePage seals (checksums) a private copy of the page, so callers may
//     keep reading the buffer under a shared latch while it is written.
//  3. The file grows by writing pages past its end; page ids below
//     page_count() are allocated (tree, free list or meta).
//  4. Without spill mode (unit tests, tools), the meta page on disk is
//     rewritten only by SyncMeta(), after the data pages it refers to have
//     been written and fsynced; a crash between SyncMeta() calls may lose or
//     tear changes.
//  5. In spill mode (EnableSpill; what the slice store uses), the data file
//     itself is written only by checkpoints, so between checkpoints it holds
//     exactly the tree of the last complete checkpoint. WritePage (buffer
//     pool write-back) goes to an overlay instead: a spill file that is
//     discarded at the next open, plus page images captured for a running
//     checkpoint. ReadPage consults the overlay first, so the pool always
//     reads back the newest version of a page.
//  6. A checkpoint first writes every page it changes (and the meta page,
//     which records the checkpoint LSN) to the double-write file, fsyncs it,
//     then writes them in place, fsyncs, and writes the meta page last. At
//     open, RecoverDoubleWrite() re-applies a complete double-write file
//     whose LSN is newer than the meta page's, so a crash (and any torn page
//     write) in the middle of a checkpoint leaves the last complete
//     checkpoint or the new one, never a mix. Once the meta page is synced
//     the double-write file is emptied, so none outlives its checkpoint; and
//     it names the data file it was written for (PageFileMeta::file_id), so
//     one left by another store in the same directory is never applied.
//     The data file itself is made whole (meta page written to a temporary
//     file, synced, renamed) and every directory entry a checkpoint needs is
//     synced before it is relied on. Format: docs/formats/page-format.md.
//  7. Checkpoint epochs (copy-on-write capture): BeginCheckpoint bumps
//     checkpoint_epoch() and moves the whole overlay, in O(1), to the
//     running checkpoint (ckpt_overlay_). A page version made before the
//     flip (its `mod_epoch` is older than the checkpoint's epoch) goes to
//     ckpt_overlay_ when it is written back or captured, any later version
//     to the overlay; the epoch is compared under overlay_mu_, the lock the
//     flip takes, so a write-back racing with the flip lands on the right
//     side. Reads look in the overlay, then ckpt_overlay_, then the data
//     file. After CollectCheckpoint nothing more may enter ckpt_overlay_
//     (the buffer pool has handed over every page owed, buffer_pool.h
//     invariant 6); EndCheckpoint drops it once the data file holds it.
//
// Thread-safety: ReadPage/WritePage may run concurrently (pread/pwrite on
// distinct pages). The meta fields are guarded by meta_mu_, the overlay by
// overlay_mu_. One checkpoint runs at a time (the caller's duty).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "shale/status.h"
#include "storage/page.h"

namespace shale::storage {

// The meta page's format version. Bump on incompatible change. Version 2
// added compressed page images, version-2 slice catalog entries and WAL
// record types 5 and 6; this build still opens version-1 files (and
// rewrites them as version 2 at the next checkpoint), older builds refuse
// version 2.
inline constexpr uint32_t kPageFormatVersion = 2;
inline constexpr uint32_t kOldestPageFormatVersion = 1;

struct PageFileMeta {
  PageId root = kInvalidPageId;           // B+tree root; kInvalidPageId if none yet
  uint64_t page_count = 1;                // pages allocated, the meta page included
  PageId free_head = kInvalidPageId;      // first free page; kInvalidPageId if none
  uint64_t checkpoint_lsn = 0;            // WAL LSN the pages are complete up to
  // Random, non-zero, chosen when the file is made (0 in files of older
  // builds until their next checkpoint): names the data file a double-write
  // file was written for.
  uint64_t file_id = 0;
};

// The pages of one checkpoint: every page version made before its epoch
// flip and not yet in the data file.
struct CheckpointSet {
  struct Entry {
    PageId id = kInvalidPageId;
    std::shared_ptr<const std::string> image;  // sealed page, or null: read `slot` of the spill file
    int64_t slot = -1;
  };
  uint64_t lsn = 0;
  uint64_t epoch = 0;  // checkpoint_epoch() of this checkpoint
  PageFileMeta meta;
  std::vector<Entry> pages;  // filled by CollectCheckpoint, in page order
};

class PageFile {
 public:
  // Re-applies the double-write file `dw_path` to the data file `path` if it
  // is complete, newer than the data file's meta page and written for that
  // data file (invariant 6). Call before Open. A missing, empty or
  // incomplete double-write file is ignored; one written for another data
  // file (or with no data file at all) is removed.
  static Status RecoverDoubleWrite(const std::string& path, const std::string& dw_path);

  // Opens `path`, creating it (with a fresh meta page, fsynced) if absent.
  // Corruption if the meta page fails its checksum or names another format.
  static Result<std::unique_ptr<PageFile>> Open(const std::string& path);
  ~PageFile();
  PageFile(const PageFile&) = delete;
  PageFile& operator=(const PageFile&) = delete;

  const std::string& path() const { return path_; }

  // Reads page `id` into buf[0, kPageSize) and verifies it (invariant 1).
  // REQUIRES: id != kMetaPageId.
  Status ReadPage(PageId id, char* buf) const;
  // Writes buf as page `id` with a fresh checksum (invariant 2).
  Status WritePage(PageId id, const char* buf);
  // fsyncs the data file.
  Status Sync();
  // Writes the in-memory meta to page 0 and fsyncs (invariant 4).
  Status SyncMeta();

  PageFileMeta meta() const;
  void set_root(PageId root);

  // Switches to spill mode (invariant 5), truncating `spill_path`.
  Status EnableSpill(const std::string& spill_path, const std::string& dw_path);
  // Spill mode: writes back (to the spill file) a page last changed in
  // checkpoint epoch `mod_epoch` (invariant 7 chooses overlay or running
  // checkpoint). Without spill mode, the same as WritePage.
  Status WriteBackPage(PageId id, const char* buf, uint64_t mod_epoch);
  // Spill mode: hands a sealed copy of page `id`, last changed before the
  // running checkpoint's flip, to that checkpoint (invariant 7).
  void CaptureImage(PageId id, const char* page, uint64_t mod_epoch);
  // The epoch of the running (or last) checkpoint; a page changed in an
  // older epoch and still dirty in the pool is owed to it. Lock-free.
  uint64_t checkpoint_epoch() const { return ckpt_epoch_.load(std::memory_order_acquire); }
  // Spill mode: starts a checkpoint at `lsn` in O(1): snapshots the meta,
  // bumps the epoch and moves the overlay to the checkpoint (invariant 7).
  // REQUIRES: no writer is changing pages (the caller paused them); no
  // checkpoint running.
  CheckpointSet BeginCheckpoint(uint64_t lsn);
  // Lists the checkpoint's pages into set->pages. REQUIRES: the buffer pool
  // handed over every page owed to the checkpoint (BufferPool::CaptureOwed).
  void CollectCheckpoint(CheckpointSet* set);
  // Writes the set: double-write file, in place, meta page (invariant 6).
  Status WriteCheckpoint(const CheckpointSet& set);
  // Ends the checkpoint: written, its pages leave the overlay (the data
  // file has them); not written, they go back to the overlay unless a newer
  // version is there.
  void EndCheckpoint(const CheckpointSet& set, bool written);
  // Pages in the overlay (spilled or captured), for tests and stats.
  size_t overlay_pages() const;
  // Slots of the spill file in use (pages evicted since the last checkpoint
  // and not yet checkpointed). Cheap: no lock.
  size_t spilled_pages() const { return spill_in_use_.load(std::memory_order_relaxed); }
  // Reads and verifies every page of the data file as on disk (no overlay):
  // Corruption naming the first bad page. *pages counts the pages read.
  Status VerifyOnDisk(uint64_t* pages) const;
  void set_free_head(PageId head);
  // Reserves a new page id at the end of the file.
  PageId AppendPageId();

 private:
  PageFile(std::string path, int fd, const PageFileMeta& meta) : path_(std::move(path)), fd_(fd), meta_(meta) {}
  Status WriteMetaLocked();  // REQUIRES: meta_mu_ held

  struct OverlayEntry {
    std::shared_ptr<const std::string> image;
    int64_t slot = -1;
  };
  using Overlay = std::unordered_map<PageId, OverlayEntry>;
  // The map a page version last changed in `mod_epoch` belongs in
  // (invariant 7). REQUIRES: overlay_mu_ held.
  Overlay& OverlayForLocked(uint64_t mod_epoch);
  // Stores `e` as the newest version of `id` in `map`. REQUIRES: overlay_mu_ held.
  void InstallLocked(Overlay& map, PageId id, OverlayEntry e);
  void ReleaseSlotLocked(int64_t slot);  // REQUIRES: overlay_mu_ held
  Status ReadEntry(const CheckpointSet::Entry& e, char* buf) const;

  const std::string path_;
  const int fd_;
  mutable std::mutex meta_mu_;
  PageFileMeta meta_;  // GUARDED_BY(meta_mu_)

  mutable std::mutex overlay_mu_;
  bool spill_ = false;  // set once by EnableSpill before concurrent use
  int spill_fd_ = -1;
  std::string spill_path_, dw_path_;
  bool dw_entry_synced_ = false;  // only the checkpoint thread: data.dw's entry made durable
  Overlay overlay_;                       // GUARDED_BY(overlay_mu_): versions after the last flip
  Overlay ckpt_overlay_;                  // GUARDED_BY(overlay_mu_): owed to the running checkpoint
  bool checkpoint_active_ = false;        // GUARDED_BY(overlay_mu_)
  bool checkpoint_collected_ = false;     // GUARDED_BY(overlay_mu_): set->pages listed
  std::atomic<uint64_t> ckpt_epoch_{0};   // written under overlay_mu_
  int64_t spill_slots_ = 0;               // GUARDED_BY(overlay_mu_): slots ever used
  std::vector<int64_t> free_slots_;       // GUARDED_BY(overlay_mu_)
  std::vector<int64_t> deferred_free_;    // GUARDED_BY(overlay_mu_): listed by the running checkpoint
  std::atomic<size_t> spill_in_use_{0};   // slots taken and not back in free_slots_
};

}  // namespace shale::storage
