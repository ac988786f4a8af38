// BTree: a B+tree of byte-string keys and values on the pages of a
// BufferPool (storage/buffer_pool.h). Keys are memcomparable: ordered by
// memcmp, a proper prefix first (storage/slice.h invariant 3). Leaves hold
// key -> value cells; internal pages hold a leftmost child (the header link)
// and cells (separator key -> child) where child i+1 holds keys >= key i and
// < key i+1. Page layout: docs/formats/page-format.md; how the pieces fit:
// docs/storage.md.
//
// This is the single-version tree; MVCC versions come next (docs/storage.md).
// Several trees can share one data file and pool (OpenAt/CreateRoot): the
// slice store keeps one per slice. Durability is the caller's: the slice
// store logs every change in its WAL and checkpoints the pages.
//
// Invariants:
//  1. The root page id never changes: a root split moves the root's cells
//     into two new children and turns the root into their parent, and a root
//     left with one child absorbs that child. So no latch guards "which page
//     is the root".
//  2. All leaves are at level 0 and at the same depth; an internal page at
//     level L has children at level L-1.
//  3. Every key of the subtree under an internal cell's child is >= that
//     cell's key and < the next cell's key (the parent's bounds outside).
//  4. Latches are taken top-down only (parent before child), and a page's
//     sibling only while holding the parent exclusively, so latching cannot
//     deadlock; the buffer pool never waits on a latch while evicting.
//  5. A key is at most kMaxKeyBytes and key + value at most kMaxEntryBytes
//     (a quarter page), so a split always yields two pages that fit.
//  6. Underflow: after a delete, a non-root page using fewer than
//     kUnderflowBytes is merged with an adjacent sibling under the same
//     parent when the two fit in one page; the emptied page goes to the free
//     list. There is no redistribution: if they do not fit, the page stays
//     under-full (its sibling is then more than 3/4 full).
//
// Concurrency (latch coupling): readers descend with shared latches,
// releasing the parent once the child is latched. Writers first try the
// same descent, latching only the leaf exclusively, and finish there if the
// leaf can take the change without split or underflow; otherwise they retry
// pessimistically, holding exclusive latches on the path and releasing all
// ancestors whenever a child is safe (cannot split / cannot underflow).
//
// Thread-safety: all methods may be called concurrently. An iterator is used
// by one thread at a time; it holds no latch or pin between calls, and sees
// keys in increasing order, each leaf consistently, but is not a snapshot
// (that needs MVCC): it returns every key present for the whole scan.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shale/status.h"
#include "storage/buffer_pool.h"
#include "storage/page.h"
#include "storage/slice.h"

namespace shale::storage {

// Limits of one entry (invariant 5); larger ones are InvalidArgument. Large
// values will go to overflow pages later.
inline constexpr size_t kMaxKeyBytes = 2048;
inline constexpr size_t kMaxEntryBytes = kPageSize / 4;
// A non-root page below this many used bytes is merged if possible.
inline constexpr size_t kUnderflowBytes = SlottedPage::kUsable / 4;

struct BTreeCheck {
  uint64_t entries = 0;
  uint64_t leaf_pages = 0;
  uint64_t internal_pages = 0;
  uint32_t height = 0;  // 1 for a lone root leaf
};

class BTree {
 public:
  // Opens the tree whose root the pool's data file names in its meta page,
  // creating an empty one (a root leaf) if it names none. The pool must
  // outlive the tree; call pool->FlushAll() to make changes durable.
  static Result<std::unique_ptr<BTree>> Open(BufferPool* pool);
  // Opens the tree rooted at `root` (one of several trees in one data file,
  // e.g. one per slice). Corruption if `root` is not a tree page.
  static Result<std::unique_ptr<BTree>> OpenAt(BufferPool* pool, PageId root);
  // Like OpenAt, but does not read the root now: damage shows on first use,
  // so one bad page does not keep the rest of a store from opening.
  static std::unique_ptr<BTree> Attach(BufferPool* pool, PageId root);
  // Allocates an empty root leaf for a new tree and returns its page id.
  // `disk_compression` (a PageCompression value) is stamped on its pages.
  static Result<PageId> CreateRoot(BufferPool* pool, uint8_t disk_compression = 0);
  // Pages this tree allocates from now on ask to be stored on disk with
  // this PageCompression (page header byte 28). Call before concurrent use.
  void set_disk_compression(uint8_t c) { disk_compression_ = c; }

  // Frees every page of the tree, the root included, onto the pool's free
  // list. The tree must not be used afterwards.
  // REQUIRES: no concurrent use of the tree.
  Status FreeAllPages();

  // NotFound when absent.
  Status Get(std::string_view key, std::string* value) const;
  // Inserts or overwrites.
  Status Put(std::string_view key, std::string_view value);
  // A run of new keys in one descent (the bulk path of sorted writes: index
  // builds, ordered loads, WAL replay of their batches). Inserts run[0],
  // run[1], ... into the leaf that holds run[0]'s key, with one descent and
  // that leaf latched exclusively throughout, and stops before the first
  // entry that is not strictly above the previous one, is present in the
  // tree, lies at or above the leaf's upper fence, does not fit in the leaf,
  // or breaks an entry limit (invariant 5). Returns how many were inserted
  // into *inserted: 0 when run[0] itself does not qualify — the caller then
  // Puts it, which splits the leaf if needed, and continues after it. The
  // result is that of Put for each inserted entry, in order; together with
  // Put's append split (a key past a full leaf's last goes alone to a new
  // right leaf), sorted runs fill leaves completely.
  Status InsertRun(std::span<const std::pair<std::string_view, std::string_view>> run, size_t* inserted);
  // NotFound when absent.
  Status Delete(std::string_view key);
  // Rows of `range` in key order (see the iterator contract above).
  std::unique_ptr<SliceIterator> NewIterator(const KeyRange& range) const;
  // The first entry whose key is >= `start` and <= `last` (memcmp order):
  // its key into *key and value into *value (either may be null); NotFound
  // when there is none. One descent with shared latches and no iterator or
  // batch copy: the point-read primitive under MvccSlice::Get (a row's
  // newest visible version is the first key at or after a seek key).
  Status Seek(std::string_view start, std::string_view last, std::string* key, std::string* value) const;

  PageId root() const { return root_; }

  // Walks the whole tree checking invariants 2 and 3 and slot order.
  // Corruption on a violation. Needs no concurrent writers.
  Result<BTreeCheck> TEST_Check() const;

 private:
  friend class BTreeIterator;
  struct Path;
  BTree(BufferPool* pool, PageId root) : pool_(pool), root_(root) {}

  static constexpr int kAnyLevel = -1;
  // Fetches a tree page, Corruption (logged) unless it is a leaf or internal
  // page at `expected_level` (kAnyLevel: any): a checksummed page that the
  // tree does not expect there is never used as one.
  Result<PageGuard> FetchNode(PageId id, LatchMode mode, int expected_level) const;
  Status CheckEntry(std::string_view key, std::string_view value) const;
  // Optimistic descent for a write: shared latches down the inner nodes and
  // an exclusive one on the leaf holding `key`, left in *leaf. *leaf stays
  // empty when the root is a leaf (the caller goes pessimistic).
  Status LatchLeafOptimistic(std::string_view key, PageGuard* leaf);
  // Optimistic write: returns true in *done when finished (with the result).
  Status PutOptimistic(std::string_view key, std::string_view value, bool* done);
  Status PutPessimistic(std::string_view key, std::string_view value);
  Status DeleteOptimistic(std::string_view key, bool* done);
  Status DeletePessimistic(std::string_view key);
  // Latch coupling down to the leaf for `key` with exclusive latches, filling
  // *path; ancestors are released whenever `safe_child` says a child cannot
  // split or underflow from the pending change.
  Status DescendExclusive(std::string_view key, Path* path,
                          const std::function<bool(const SlottedPage&)>& safe_child);
  // Allocates into *spares every new page a split of path level `level` can
  // need (an upper bound), before any page changes.
  Status ReserveSplitPages(const Path& path, size_t level, std::vector<PageGuard>* spares);
  Result<PageGuard> TakeSpare(std::vector<PageGuard>* spares);
  // Inserts (key, value) at slot `slot` of path level `level`, splitting as
  // far up as needed, with new pages from *spares.
  Status InsertWithSplit(Path* path, size_t level, size_t slot, std::string key, std::string value,
                         std::vector<PageGuard>* spares);
  // Merges underflowing pages from the leaf up; collapses the root.
  Status FixUnderflow(Path* path);
  // One leaf's worth of a scan: up to `limit` entries >= seek (> seek if
  // !inclusive) and inside `range`'s end, stored into (*out)[*count...]
  // (reusing the strings already there; *count grows), *truncated if the
  // leaf had more, *past_end if an entry past the range's end was reached
  // (the scan is over), and the leaf's upper fence (lowest key the next leaf
  // may hold) in *fence if there is one.
  Status ScanLeaf(std::string_view seek, bool has_seek, bool inclusive, const KeyRange& range, size_t limit,
                  std::vector<std::pair<std::string, std::string>>* out, size_t* count, std::string* fence,
                  bool* has_fence, bool* truncated, bool* past_end) const;
  Status CollectPages(PageId id, std::vector<PageId>* out) const;
  Status CheckSubtree(PageId id, int expected_level, const std::string* lo, const std::string* hi,
                      BTreeCheck* out) const;

  BufferPool* const pool_;
  const PageId root_;
  uint8_t disk_compression_ = 0;
};

}  // namespace shale::storage
