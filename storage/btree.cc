#include "storage/btree.h"

#include <functional>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "src/common/log.h"
#include "src/common/module_profile.h"

namespace shale::storage {

namespace {

using Entry = std::pair<std::string, std::string>;

// The child slot (0 = leftmost) of an internal page that covers `key`.
size_t ChildIndexFor(const SlottedPage& p, std::string_view key) {
  bool found = false;
  size_t i = p.LowerBound(key, &found);
  return found ? i + 1 : i;
}

PageId ChildAtIndex(const SlottedPage& p, size_t c) { return c == 0 ? p.link() : p.ChildAt(c - 1); }

bool IsLeaf(const char* page) { return GetPageType(page) == PageType::kLeaf; }

// Rewrites `page` to hold exactly `entries` (in order).
void Rebuild(char* page, PageId id, PageType type, uint8_t level, PageId link, const std::vector<Entry>& entries,
             size_t from, size_t to) {
  uint64_t lsn = GetPageLsn(page);
  uint8_t disk_compression = GetPageDiskCompression(page);
  InitPage(page, id, type, level);
  SetPageLsn(page, lsn);
  SetPageDiskCompression(page, disk_compression);
  SlottedPage sp(page);
  sp.set_link(link);
  for (size_t i = from; i < to; ++i) {
    bool ok = sp.InsertAt(i - from, entries[i].first, entries[i].second);
    (void)ok;  // callers size the ranges to fit (invariant 5)
  }
}

std::vector<Entry> ReadEntries(const SlottedPage& p) {
  std::vector<Entry> v;
  v.reserve(p.slot_count() + 1);
  for (size_t i = 0; i < p.slot_count(); ++i) v.emplace_back(p.KeyAt(i), p.ValueAt(i));
  return v;
}

size_t Cost(const Entry& e) { return SlottedPage::CellCost(e.first.size(), e.second.size()); }

// Safe-for-insert: can take one more cell of any allowed size for its kind.
bool SafeForInsert(const SlottedPage& p, size_t leaf_cost) {
  size_t need = p.type() == PageType::kLeaf ? leaf_cost : SlottedPage::CellCost(kMaxKeyBytes, 8);
  return p.FreeBytes() >= need;
}

// Safe-for-delete: stays at or above kUnderflowBytes after losing one cell.
bool SafeForDelete(const SlottedPage& p, std::string_view key) {
  size_t loss;
  if (p.type() == PageType::kLeaf) {
    bool found = false;
    size_t i = p.LowerBound(key, &found);
    loss = found ? p.CellCostAt(i) : 0;
  } else {
    loss = SlottedPage::CellCost(kMaxKeyBytes, 8);
  }
  return p.UsedBytes() >= kUnderflowBytes + loss;
}

}  // namespace

// The exclusively latched pages of a pessimistic descent: guards[0] is the
// topmost still held; slots[j] is guards[j]'s child index in guards[j-1]
// (slots[0] unused).
struct BTree::Path {
  std::vector<PageGuard> guards;
  std::vector<size_t> slots;
  void ReleaseAncestors() {
    PageGuard last = std::move(guards.back());
    size_t slot = slots.back();
    guards.clear();
    slots.clear();
    guards.push_back(std::move(last));
    slots.push_back(slot);
  }
};

Result<PageGuard> BTree::FetchNode(PageId id, LatchMode mode, int expected_level) const {
  SHALE_ASSIGN_OR_RETURN(PageGuard g, pool_->Fetch(id, mode));
  const PageType type = GetPageType(g.data());
  const int level = static_cast<uint8_t>(g.data()[page_layout::kLevel]);
  const bool tree_page = (type == PageType::kLeaf && level == 0) || (type == PageType::kInternal && level > 0);
  if (!tree_page || (expected_level != kAnyLevel && level != expected_level)) {
    Status s = Status::Corruption(fmt::format(
        "data file {}: page {} is not the B+tree page its parent names (type {}, level {}, expected level {})",
        pool_->file()->path(), id, static_cast<int>(type), level, expected_level));
    log::Error("{}", s.message());
    return s;
  }
  return g;
}

Result<std::unique_ptr<BTree>> BTree::Open(BufferPool* pool) {
  PageId root = pool->file()->meta().root;
  if (root == kInvalidPageId) {
    SHALE_ASSIGN_OR_RETURN(PageGuard g, pool->NewPage(PageType::kLeaf, 0));
    root = g.page_id();
    pool->file()->set_root(root);
  } else {
    // Read the root now so a damaged root fails the open.
    SHALE_ASSIGN_OR_RETURN(PageGuard g, pool->Fetch(root, LatchMode::kShared));
    PageType t = GetPageType(g.data());
    if (t != PageType::kLeaf && t != PageType::kInternal) {
      return Status::Corruption(fmt::format("data file {}: root page {} is not a tree page (type {})",
                                            pool->file()->path(), root, static_cast<int>(t)));
    }
  }
  return std::unique_ptr<BTree>(new BTree(pool, root));
}

Result<std::unique_ptr<BTree>> BTree::OpenAt(BufferPool* pool, PageId root) {
  SHALE_ASSIGN_OR_RETURN(PageGuard g, pool->Fetch(root, LatchMode::kShared));
  PageType t = GetPageType(g.data());
  if (t != PageType::kLeaf && t != PageType::kInternal) {
    Status s = Status::Corruption(fmt::format("data file {}: root page {} is not a tree page (type {})",
                                              pool->file()->path(), root, static_cast<int>(t)));
    log::Error("{}", s.message());
    return s;
  }
  return std::unique_ptr<BTree>(new BTree(pool, root));
}

std::unique_ptr<BTree> BTree::Attach(BufferPool* pool, PageId root) {
  return std::unique_ptr<BTree>(new BTree(pool, root));
}

Result<PageId> BTree::CreateRoot(BufferPool* pool, uint8_t disk_compression) {
  SHALE_ASSIGN_OR_RETURN(PageGuard g, pool->NewPage(PageType::kLeaf, 0));
  SetPageDiskCompression(g.mutable_data(), disk_compression);
  return g.page_id();
}

Status BTree::CollectPages(PageId id, std::vector<PageId>* out) const {
  SHALE_ASSIGN_OR_RETURN(PageGuard g, FetchNode(id, LatchMode::kShared, kAnyLevel));
  out->push_back(id);
  SlottedPage p(const_cast<char*>(g.data()));
  if (p.type() == PageType::kLeaf) return Status::OK();
  std::vector<PageId> children{p.link()};
  for (size_t i = 0; i < p.slot_count(); ++i) children.push_back(p.ChildAt(i));
  g.Release();
  for (PageId c : children) SHALE_RETURN_IF_ERROR(CollectPages(c, out));
  return Status::OK();
}

Status BTree::FreeAllPages() {
  std::vector<PageId> pages;
  SHALE_RETURN_IF_ERROR(CollectPages(root_, &pages));
  for (PageId id : pages) {
    SHALE_ASSIGN_OR_RETURN(PageGuard g, pool_->Fetch(id, LatchMode::kExclusive));
    SHALE_RETURN_IF_ERROR(pool_->FreePage(std::move(g)));
  }
  return Status::OK();
}

Status BTree::CheckEntry(std::string_view key, std::string_view value) const {
  if (key.size() > kMaxKeyBytes) {
    return Status::InvalidArgument(fmt::format("B+tree key of {} bytes exceeds the limit of {}", key.size(),
                                               kMaxKeyBytes));
  }
  if (key.size() + value.size() > kMaxEntryBytes) {
    return Status::InvalidArgument(fmt::format("B+tree entry of {} bytes (key + value) exceeds the limit of {}",
                                               key.size() + value.size(), kMaxEntryBytes));
  }
  return Status::OK();
}

Status BTree::Get(std::string_view key, std::string* value) const {
  profile::ModuleScope profile_scope(profile::Module::kBtree);
  SHALE_ASSIGN_OR_RETURN(PageGuard g, FetchNode(root_, LatchMode::kShared, kAnyLevel));
  while (!IsLeaf(g.data())) {
    SlottedPage p(const_cast<char*>(g.data()));
    SHALE_ASSIGN_OR_RETURN(PageGuard child,
                           FetchNode(ChildAtIndex(p, ChildIndexFor(p, key)), LatchMode::kShared, p.level() - 1));
    g = std::move(child);  // latch coupling: the parent is released now
  }
  SlottedPage leaf(const_cast<char*>(g.data()));
  bool found = false;
  size_t i = leaf.LowerBound(key, &found);
  if (!found) return Status::NotFound("key not in B+tree");
  value->assign(leaf.ValueAt(i));
  return Status::OK();
}

Status BTree::Put(std::string_view key, std::string_view value) {
  profile::ModuleScope profile_scope(profile::Module::kBtree);
  SHALE_RETURN_IF_ERROR(CheckEntry(key, value));
  bool done = false;
  SHALE_RETURN_IF_ERROR(PutOptimistic(key, value, &done));
  if (done) return Status::OK();
  return PutPessimistic(key, value);
}

Status BTree::InsertRun(std::span<const std::pair<std::string_view, std::string_view>> run, size_t* inserted) {
  profile::ModuleScope profile_scope(profile::Module::kBtree);
  *inserted = 0;
  if (run.empty() || !CheckEntry(run[0].first, run[0].second).ok()) return Status::OK();
  // Descend as PutOptimistic does, keeping the tightest upper fence: while
  // the leaf is latched its key range cannot change (a split or merge of it
  // needs its latch, invariant 4), so every key in [run[0], fence) is its.
  std::string fence;
  bool has_fence = false;
  SHALE_ASSIGN_OR_RETURN(PageGuard g, FetchNode(root_, LatchMode::kShared, kAnyLevel));
  if (IsLeaf(g.data())) {
    // A root leaf: no insert here splits, so the exclusive latch on it is
    // enough. It may have split between the two latches.
    g.Release();
    SHALE_ASSIGN_OR_RETURN(g, FetchNode(root_, LatchMode::kExclusive, kAnyLevel));
    if (!IsLeaf(g.data())) return Status::OK();
  } else {
    while (!IsLeaf(g.data())) {
      SlottedPage p(const_cast<char*>(g.data()));
      const size_t c = ChildIndexFor(p, run[0].first);
      if (c < p.slot_count()) {  // the deepest fence is the tightest
        fence.assign(p.KeyAt(c));
        has_fence = true;
      }
      LatchMode mode = p.level() == 1 ? LatchMode::kExclusive : LatchMode::kShared;
      SHALE_ASSIGN_OR_RETURN(PageGuard child, FetchNode(ChildAtIndex(p, c), mode, p.level() - 1));
      g = std::move(child);
    }
  }
  SlottedPage leaf(g.mutable_data());
  size_t n = 0;
  for (; n < run.size(); ++n) {
    const std::string_view key = run[n].first;
    const std::string_view value = run[n].second;
    if (n > 0 && !(run[n - 1].first < key)) break;
    if (has_fence && !(key < fence)) break;
    if (n > 0 && !CheckEntry(key, value).ok()) break;
    // Sorted runs append: past the leaf's last key no search is needed.
    const size_t slots = leaf.slot_count();
    size_t slot = slots;
    if (slots > 0 && !(leaf.KeyAt(slots - 1) < key)) {
      bool found = false;
      slot = leaf.LowerBound(key, &found);
      if (found) break;
    }
    if (!leaf.InsertAt(slot, key, value)) break;
  }
  if (n > 0) g.MarkDirty();
  *inserted = n;
  return Status::OK();
}

Status BTree::Delete(std::string_view key) {
  profile::ModuleScope profile_scope(profile::Module::kBtree);
  if (key.size() > kMaxKeyBytes) return Status::NotFound("key not in B+tree");
  bool done = false;
  Status s = DeleteOptimistic(key, &done);
  if (done || !s.ok()) return s;
  return DeletePessimistic(key);
}

Status BTree::LatchLeafOptimistic(std::string_view key, PageGuard* leaf) {
  SHALE_ASSIGN_OR_RETURN(PageGuard g, FetchNode(root_, LatchMode::kShared, kAnyLevel));
  if (IsLeaf(g.data())) return Status::OK();
  while (!IsLeaf(g.data())) {
    SlottedPage p(const_cast<char*>(g.data()));
    LatchMode mode = p.level() == 1 ? LatchMode::kExclusive : LatchMode::kShared;
    SHALE_ASSIGN_OR_RETURN(PageGuard child, FetchNode(ChildAtIndex(p, ChildIndexFor(p, key)), mode, p.level() - 1));
    g = std::move(child);
  }
  *leaf = std::move(g);
  return Status::OK();
}

Status BTree::PutOptimistic(std::string_view key, std::string_view value, bool* done) {
  *done = false;
  PageGuard g;
  SHALE_RETURN_IF_ERROR(LatchLeafOptimistic(key, &g));
  if (!g.valid()) return Status::OK();  // a root leaf: go pessimistic
  SlottedPage leaf(g.mutable_data());
  bool found = false;
  size_t i = leaf.LowerBound(key, &found);
  bool ok = found ? leaf.ReplaceValueAt(i, value) : leaf.InsertAt(i, key, value);
  if (ok) {
    g.MarkDirty();
    *done = true;
  }
  return Status::OK();
}

Status BTree::DescendExclusive(std::string_view key, Path* path,
                               const std::function<bool(const SlottedPage&)>& safe_child) {
  SHALE_ASSIGN_OR_RETURN(PageGuard root, FetchNode(root_, LatchMode::kExclusive, kAnyLevel));
  path->guards.push_back(std::move(root));
  path->slots.push_back(0);
  while (!IsLeaf(path->guards.back().data())) {
    SlottedPage p(path->guards.back().mutable_data());
    size_t c = ChildIndexFor(p, key);
    SHALE_ASSIGN_OR_RETURN(PageGuard child,
                           FetchNode(ChildAtIndex(p, c), LatchMode::kExclusive, p.level() - 1));
    bool safe = safe_child(SlottedPage(child.mutable_data()));
    path->guards.push_back(std::move(child));
    path->slots.push_back(c);
    if (safe) path->ReleaseAncestors();
  }
  return Status::OK();
}

Status BTree::PutPessimistic(std::string_view key, std::string_view value) {
  const size_t cost = SlottedPage::CellCost(key.size(), value.size());
  Path path;
  SHALE_RETURN_IF_ERROR(DescendExclusive(key, &path, [cost](const SlottedPage& child) {
    return SafeForInsert(child, cost);
  }));
  PageGuard& leaf_guard = path.guards.back();
  SlottedPage leaf(leaf_guard.mutable_data());
  bool found = false;
  size_t i = leaf.LowerBound(key, &found);
  if (found ? leaf.ReplaceValueAt(i, value) : leaf.InsertAt(i, key, value)) {
    leaf_guard.MarkDirty();
    return Status::OK();
  }
  // The leaf splits. Allocate every page the split may need before changing
  // anything, so a failed allocation leaves the tree as it was.
  std::vector<PageGuard> spares;
  Status s = ReserveSplitPages(path, path.guards.size() - 1, &spares);
  if (s.ok()) {
    if (found) leaf.RemoveAt(i);  // re-inserted with its new value by the split
    leaf_guard.MarkDirty();
    s = InsertWithSplit(&path, path.guards.size() - 1, i, std::string(key), std::string(value), &spares);
  }
  for (PageGuard& g : spares) {
    Status fs = pool_->FreePage(std::move(g));
    if (s.ok()) s = fs;
  }
  return s;
}

Status BTree::ReserveSplitPages(const Path& path, size_t level, std::vector<PageGuard>* spares) {
  size_t need = 0;
  for (size_t j = level;; --j) {
    ++need;  // page j splits: one new page
    if (j == 0) {
      if (path.guards[0].page_id() != root_) {
        return Status::Internal(fmt::format("B+tree in {}: page {} must split but its parent is not latched",
                                            pool_->file()->path(), path.guards[0].page_id()));
      }
      ++need;  // a root split moves both halves to new pages (invariant 1)
      break;
    }
    // The parent takes one separator of at most kMaxKeyBytes; if that fits,
    // the split stops there.
    SlottedPage parent(const_cast<char*>(path.guards[j - 1].data()));
    if (parent.FreeBytes() >= SlottedPage::CellCost(kMaxKeyBytes, 8)) {
      break;
    }
  }
  for (size_t k = 0; k < need; ++k) {
    SHALE_ASSIGN_OR_RETURN(PageGuard g, pool_->NewPage(PageType::kLeaf, 0));
    SetPageDiskCompression(g.mutable_data(), disk_compression_);
    spares->push_back(std::move(g));
  }
  return Status::OK();
}

Result<PageGuard> BTree::TakeSpare(std::vector<PageGuard>* spares) {
  if (spares->empty()) {  // not reached: the reservation is an upper bound
    SHALE_ASSIGN_OR_RETURN(PageGuard g, pool_->NewPage(PageType::kLeaf, 0));
    SetPageDiskCompression(g.mutable_data(), disk_compression_);
    return g;
  }
  PageGuard g = std::move(spares->back());
  spares->pop_back();
  return g;
}

Status BTree::InsertWithSplit(Path* path, size_t level, size_t slot, std::string key, std::string value,
                              std::vector<PageGuard>* spares) {
  for (;;) {
    PageGuard& g = path->guards[level];
    SlottedPage p(g.mutable_data());
    if (p.InsertAt(slot, key, value)) {
      g.MarkDirty();
      return Status::OK();
    }
    // Split. Gather the cells with the new one in place.
    std::vector<Entry> entries = ReadEntries(p);
    entries.insert(entries.begin() + static_cast<ptrdiff_t>(slot), Entry(std::move(key), std::move(value)));
    const bool leaf = p.type() == PageType::kLeaf;
    const PageType type = p.type();
    const uint8_t lvl = p.level();
    const PageId leftmost = p.link();
    size_t total = 0;
    for (const Entry& e : entries) total += Cost(e);
    // Smallest m whose prefix [0, m) holds at least half the bytes (invariant
    // 5 makes both halves fit; see docs/formats/page-format.md, Splits).
    size_t m = 0, acc = 0;
    while (m < entries.size() && acc < total / 2) acc += Cost(entries[m++]);
    const size_t n = entries.size();
    if (leaf && slot == n - 1) {
      // An append past the leaf's last key (a load in key order, ascending
      // ids): the new key alone goes right, so ordered loads fill leaves
      // instead of leaving each half empty. The left half is the page as it
      // was, which fit.
      m = n - 1;
    } else if (leaf) {
      m = std::clamp<size_t>(m, 1, n - 1);
    } else {
      m = std::clamp<size_t>(m, 1, n - 2);
    }
    // Leaf: left [0, m), right [m, n), separator = first right key.
    // Internal: left [0, m), middle m goes up, right (m, n) with the
    // middle's child as its leftmost.
    std::string sep = entries[m].first;
    size_t right_from = leaf ? m : m + 1;
    PageId right_leftmost = leaf ? kInvalidPageId : LoadU64(entries[m].second.data());

    const bool is_root = g.page_id() == root_;
    if (is_root) {
      // Invariant 1: the root keeps its id and becomes the parent.
      SHALE_ASSIGN_OR_RETURN(PageGuard left, TakeSpare(spares));
      SHALE_ASSIGN_OR_RETURN(PageGuard right, TakeSpare(spares));
      Rebuild(left.mutable_data(), left.page_id(), type, lvl, leftmost, entries, 0, m);
      Rebuild(right.mutable_data(), right.page_id(), type, lvl, right_leftmost, entries, right_from, n);
      std::vector<Entry> root_cells{Entry(sep, EncodeChild(right.page_id()))};
      Rebuild(g.mutable_data(), g.page_id(), PageType::kInternal, static_cast<uint8_t>(lvl + 1), left.page_id(),
              root_cells, 0, 1);
      left.MarkDirty();
      right.MarkDirty();
      g.MarkDirty();
      return Status::OK();
    }
    if (level == 0) {  // excluded by ReserveSplitPages
      return Status::Internal(fmt::format("B+tree in {}: page {} split without its parent latched",
                                          pool_->file()->path(), g.page_id()));
    }
    SHALE_ASSIGN_OR_RETURN(PageGuard right, TakeSpare(spares));
    Rebuild(right.mutable_data(), right.page_id(), type, lvl, right_leftmost, entries, right_from, n);
    Rebuild(g.mutable_data(), g.page_id(), type, lvl, leftmost, entries, 0, m);
    right.MarkDirty();
    g.MarkDirty();
    // The new right page is child slot c+1 of the parent, i.e. cell c.
    slot = path->slots[level];
    key = std::move(sep);
    value = EncodeChild(right.page_id());
    --level;
  }
}

Status BTree::DeleteOptimistic(std::string_view key, bool* done) {
  *done = false;
  PageGuard g;
  SHALE_RETURN_IF_ERROR(LatchLeafOptimistic(key, &g));
  if (!g.valid()) return Status::OK();  // a root leaf: go pessimistic
  SlottedPage leaf(g.mutable_data());
  bool found = false;
  size_t i = leaf.LowerBound(key, &found);
  if (!found) {
    *done = true;
    return Status::NotFound("key not in B+tree");
  }
  if (leaf.UsedBytes() < kUnderflowBytes + leaf.CellCostAt(i)) return Status::OK();  // would underflow
  leaf.RemoveAt(i);
  g.MarkDirty();
  *done = true;
  return Status::OK();
}

Status BTree::DeletePessimistic(std::string_view key) {
  Path path;
  SHALE_RETURN_IF_ERROR(DescendExclusive(key, &path, [key](const SlottedPage& child) {
    return SafeForDelete(child, key);
  }));
  SlottedPage leaf(path.guards.back().mutable_data());
  bool found = false;
  size_t i = leaf.LowerBound(key, &found);
  if (!found) return Status::NotFound("key not in B+tree");
  leaf.RemoveAt(i);
  path.guards.back().MarkDirty();
  return FixUnderflow(&path);
}

Status BTree::FixUnderflow(Path* path) {
  for (size_t j = path->guards.size() - 1; j >= 1; --j) {
    SlottedPage node(path->guards[j].mutable_data());
    if (node.UsedBytes() >= kUnderflowBytes) return Status::OK();
    PageGuard& parent_guard = path->guards[j - 1];
    SlottedPage parent(parent_guard.mutable_data());
    if (parent.slot_count() == 0) continue;  // no sibling here; the parent underflows too
    const size_t c = path->slots[j];
    // Merge the right page of the pair into the left one.
    size_t left_slot = c > 0 ? c - 1 : c;
    PageGuard sibling;
    {
      size_t sib_slot = c > 0 ? c - 1 : c + 1;
      SHALE_ASSIGN_OR_RETURN(sibling,
                             FetchNode(ChildAtIndex(parent, sib_slot), LatchMode::kExclusive, parent.level() - 1));
    }
    PageGuard& left_guard = c > 0 ? sibling : path->guards[j];
    PageGuard& right_guard = c > 0 ? path->guards[j] : sibling;
    SlottedPage left(left_guard.mutable_data());
    SlottedPage right(right_guard.mutable_data());
    const std::string sep(parent.KeyAt(left_slot));  // cell left_slot points at the right page
    std::vector<Entry> merged = ReadEntries(left);
    if (node.type() == PageType::kInternal) merged.emplace_back(sep, EncodeChild(right.link()));
    for (Entry& e : ReadEntries(right)) merged.push_back(std::move(e));
    size_t total = 0;
    for (const Entry& e : merged) total += Cost(e);
    if (total > SlottedPage::kUsable) return Status::OK();  // no redistribution (invariant 6)
    Rebuild(left_guard.mutable_data(), left_guard.page_id(), left.type(), left.level(), left.link(), merged, 0,
            merged.size());
    left_guard.MarkDirty();
    parent.RemoveAt(left_slot);
    parent_guard.MarkDirty();
    PageGuard right_owned = std::move(right_guard);
    SHALE_RETURN_IF_ERROR(pool_->FreePage(std::move(right_owned)));
    sibling.Release();
    path->guards.resize(j);  // the parent is now the deepest page to check
    path->slots.resize(j);
  }
  // Invariant 1: a root with a single child absorbs it.
  PageGuard& top = path->guards[0];
  if (top.page_id() != root_) return Status::OK();
  while (!IsLeaf(top.data()) && SlottedPage(top.mutable_data()).slot_count() == 0) {
    SlottedPage root_page(top.mutable_data());
    SHALE_ASSIGN_OR_RETURN(PageGuard child,
                           FetchNode(root_page.link(), LatchMode::kExclusive, root_page.level() - 1));
    uint64_t lsn = GetPageLsn(top.data());
    std::memcpy(top.mutable_data(), child.data(), kPageSize);
    StoreU64(top.mutable_data() + page_layout::kPageId, root_);
    SetPageLsn(top.mutable_data(), lsn);
    top.MarkDirty();
    SHALE_RETURN_IF_ERROR(pool_->FreePage(std::move(child)));
  }
  return Status::OK();
}

Status BTree::ScanLeaf(std::string_view seek, bool has_seek, bool inclusive, const KeyRange& range, size_t limit,
                       std::vector<Entry>* out, size_t* count, std::string* fence, bool* has_fence, bool* truncated,
                       bool* past_end) const {
  *has_fence = false;
  *truncated = false;
  *past_end = false;
  SHALE_ASSIGN_OR_RETURN(PageGuard g, FetchNode(root_, LatchMode::kShared, kAnyLevel));
  while (!IsLeaf(g.data())) {
    SlottedPage p(const_cast<char*>(g.data()));
    size_t c = has_seek ? ChildIndexFor(p, seek) : 0;
    if (c < p.slot_count()) {  // the deepest fence is the tightest
      fence->assign(p.KeyAt(c));
      *has_fence = true;
    }
    SHALE_ASSIGN_OR_RETURN(PageGuard child, FetchNode(ChildAtIndex(p, c), LatchMode::kShared, p.level() - 1));
    g = std::move(child);
  }
  SlottedPage leaf(const_cast<char*>(g.data()));
  size_t i = 0;
  if (has_seek) {
    bool found = false;
    i = leaf.LowerBound(seek, &found);
    if (found && !inclusive) ++i;
  }
  for (; i < leaf.slot_count(); ++i) {
    if (*count >= limit) {
      *truncated = true;
      break;
    }
    std::string_view key = leaf.KeyAt(i);
    if (range.has_end) {  // stop at the end instead of copying rows the scan drops
      int c = key.compare(range.end);
      if (c > 0 || (c == 0 && !range.end_inclusive)) {
        *past_end = true;
        break;
      }
    }
    if (*count < out->size()) {
      (*out)[*count].first.assign(key);
      (*out)[*count].second.assign(leaf.ValueAt(i));
    } else {
      out->emplace_back(key, leaf.ValueAt(i));
    }
    ++*count;
  }
  return Status::OK();
}

Status BTree::Seek(std::string_view start, std::string_view last, std::string* key, std::string* value) const {
  profile::ModuleScope profile_scope(profile::Module::kBtree);
  std::string resume;  // where the search continues when a leaf has nothing >= start
  std::string fence;  // the leaf's tightest upper fence, copied: the page is released
  std::string_view seek = start;
  for (;;) {
    bool has_fence = false;
    SHALE_ASSIGN_OR_RETURN(PageGuard g, FetchNode(root_, LatchMode::kShared, kAnyLevel));
    while (!IsLeaf(g.data())) {
      SlottedPage p(const_cast<char*>(g.data()));
      size_t c = ChildIndexFor(p, seek);
      if (c < p.slot_count()) {  // the deepest fence is the tightest
        fence.assign(p.KeyAt(c));
        has_fence = true;
      }
      SHALE_ASSIGN_OR_RETURN(PageGuard child, FetchNode(ChildAtIndex(p, c), LatchMode::kShared, p.level() - 1));
      g = std::move(child);  // latch coupling: the parent is released now
    }
    SlottedPage leaf(const_cast<char*>(g.data()));
    bool found = false;
    size_t i = leaf.LowerBound(seek, &found);
    if (i < leaf.slot_count()) {
      std::string_view k = leaf.KeyAt(i);
      if (k > last) return Status::NotFound("no key in the seek range");
      if (key != nullptr) key->assign(k);
      if (value != nullptr) value->assign(leaf.ValueAt(i));
      return Status::OK();
    }
    // Every key of this leaf is below `seek`: continue at the next leaf,
    // whose keys start at the fence (only when `seek` falls between a
    // leaf's last key and its upper fence).
    if (!has_fence || fence > last) return Status::NotFound("no key in the seek range");
    resume.assign(fence);
    seek = resume;
  }
}

// --- Iterator ----------------------------------------------------------------

class BTreeIterator final : public SliceIterator {
 public:
  BTreeIterator(const BTree* tree, const KeyRange& range) : tree_(tree), range_(range) {
    has_seek_ = range_.has_start;
    seek_ = range_.start;
    inclusive_ = range_.start_inclusive;
    Fill();
  }
  bool Valid() const override { return pos_ < count_; }
  void Next() override {
    ++pos_;
    if (pos_ >= count_) Fill();
  }
  std::string_view key() const override { return buf_[pos_].first; }
  std::string_view value() const override { return buf_[pos_].second; }
  Status status() const override { return status_; }

 private:
  bool PastEnd(std::string_view key) const {
    if (!range_.has_end) return false;
    int c = key.compare(range_.end);
    return c > 0 || (c == 0 && !range_.end_inclusive);
  }

  // Loads the next non-empty leaf's worth of rows, or ends the scan. The
  // buffer's strings are reused from one leaf to the next.
  void Fill() {
  profile::ModuleScope profile_scope(profile::Module::kBtree);
    count_ = 0;
    pos_ = 0;
    while (!done_) {
      bool has_fence = false;
      bool truncated = false;
      bool past_end = false;
      // Small first batch (short scans copy little), larger ones after.
      size_t limit = fills_++ == 0 ? kFirstBatch : kBatch;
      Status s = tree_->ScanLeaf(seek_, has_seek_, inclusive_, range_, limit, &buf_, &count_, &fence_, &has_fence,
                                 &truncated, &past_end);
      if (!s.ok()) {
        status_ = s;
        count_ = 0;
        done_ = true;
        return;
      }
      if (past_end) {
        done_ = true;
        return;
      }
      if (truncated) {  // continue after the last row taken
        seek_.assign(buf_[count_ - 1].first);
        has_seek_ = true;
        inclusive_ = false;
        return;
      }
      // Rows below the fence were all taken from this leaf; continue there.
      if (!has_fence || PastEnd(fence_)) {
        done_ = true;
      } else {
        seek_.assign(fence_);
        has_seek_ = true;
        inclusive_ = true;
      }
      if (count_ > 0) return;
    }
  }

  static constexpr size_t kFirstBatch = 16;
  static constexpr size_t kBatch = 256;

  const BTree* tree_;
  const KeyRange range_;
  size_t fills_ = 0;
  std::vector<Entry> buf_;  // entries [0, count_) are the current batch
  size_t count_ = 0;
  size_t pos_ = 0;
  bool done_ = false;
  bool has_seek_ = false;
  bool inclusive_ = true;
  std::string seek_;
  std::string fence_;
  Status status_;
};

std::unique_ptr<SliceIterator> BTree::NewIterator(const KeyRange& range) const {
  profile::ModuleScope profile_scope(profile::Module::kBtree);
  return std::make_unique<BTreeIterator>(this, range);
}

// --- Checking ----------------------------------------------------------------

Result<BTreeCheck> BTree::TEST_Check() const {
  BTreeCheck out;
  SHALE_ASSIGN_OR_RETURN(PageGuard g, pool_->Fetch(root_, LatchMode::kShared));
  int level = static_cast<uint8_t>(g.data()[page_layout::kLevel]);
  g.Release();
  out.height = static_cast<uint32_t>(level + 1);
  SHALE_RETURN_IF_ERROR(CheckSubtree(root_, level, nullptr, nullptr, &out));
  return out;
}

Status BTree::CheckSubtree(PageId id, int expected_level, const std::string* lo, const std::string* hi,
                           BTreeCheck* out) const {
  SHALE_ASSIGN_OR_RETURN(PageGuard g, pool_->Fetch(id, LatchMode::kShared));
  SlottedPage p(const_cast<char*>(g.data()));
  auto bad = [&](std::string_view what) {
    return Status::Corruption(fmt::format("B+tree in {}: page {}: {}", pool_->file()->path(), id, what));
  };
  if (p.level() != expected_level) return bad(fmt::format("level {} where {} expected", p.level(), expected_level));
  if ((expected_level == 0) != (p.type() == PageType::kLeaf)) return bad("wrong page type for its level");
  if (expected_level != 0 && p.type() != PageType::kInternal) return bad("not an internal page");
  for (size_t i = 0; i < p.slot_count(); ++i) {
    std::string_view k = p.KeyAt(i);
    if (i > 0 && !(p.KeyAt(i - 1) < k)) return bad(fmt::format("slot {} out of order", i));
    if (lo != nullptr && k < *lo) return bad(fmt::format("slot {} below the parent's bound", i));
    if (hi != nullptr && !(k < *hi)) return bad(fmt::format("slot {} at or above the parent's bound", i));
  }
  if (p.type() == PageType::kLeaf) {
    ++out->leaf_pages;
    out->entries += p.slot_count();
    return Status::OK();
  }
  ++out->internal_pages;
  std::vector<Entry> cells = ReadEntries(p);
  PageId leftmost = p.link();
  g.Release();  // children are checked without holding this page
  for (size_t c = 0; c <= cells.size(); ++c) {
    const std::string* clo = c == 0 ? lo : &cells[c - 1].first;
    const std::string* chi = c == cells.size() ? hi : &cells[c].first;
    PageId child = c == 0 ? leftmost : LoadU64(cells[c - 1].second.data());
    SHALE_RETURN_IF_ERROR(CheckSubtree(child, expected_level - 1, clo, chi, out));
  }
  return Status::OK();
}

}  // namespace shale::storage
