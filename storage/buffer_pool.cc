#include "storage/buffer_pool.h"

#include <sys/mman.h>

#include <cstdlib>

#include <fmt/format.h>

#include "src/common/log.h"
#include "storage/kill_point.h"
#include "src/common/module_profile.h"

namespace shale::storage {

// --- PageGuard ---------------------------------------------------------------

PageGuard& PageGuard::operator=(PageGuard&& other) noexcept {
  if (this != &other) {
    Release();
    pool_ = other.pool_;
    frame_ = other.frame_;
    page_id_ = other.page_id_;
    mode_ = other.mode_;
    other.pool_ = nullptr;
    other.page_id_ = kInvalidPageId;
  }
  return *this;
}

const char* PageGuard::data() const { return pool_->frames_[frame_index()]->data; }

char* PageGuard::mutable_data() {
  pool_->BeforeChange(frame_index());
  return pool_->frames_[frame_index()]->data;
}

void PageGuard::MarkDirty() { pool_->frames_[frame_index()]->dirty.store(true, std::memory_order_release); }

void PageGuard::Release() {
  if (pool_ == nullptr) return;
  pool_->Unlatch(frame_, mode_);
  pool_->Unpin(frame_);
  pool_ = nullptr;
  page_id_ = kInvalidPageId;
}

// --- BufferPool --------------------------------------------------------------

BufferPool::BufferPool(PageFile* file, const BufferPoolOptions& options) : file_(file) {
  size_t n = std::max(options.frames, BufferPoolOptions::kMinFrames);
  memory_ = static_cast<char*>(std::aligned_alloc(4096, n * kPageSize));
  frames_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    frames_.push_back(std::make_unique<Frame>());
    frames_.back()->data = memory_ + i * kPageSize;
  }
}

BufferPool::~BufferPool() {
  Status s = FlushAll();
  if (!s.ok()) log::Error("buffer pool of {}: flush at close failed: {}", file_->path(), s.ToString());
  std::free(memory_);
}

void BufferPool::Latch(size_t f, LatchMode mode) {
  if (mode == LatchMode::kShared) {
    frames_[f]->latch.lock_shared();
  } else {
    frames_[f]->latch.lock();
  }
}

void BufferPool::Unlatch(size_t f, LatchMode mode) {
  if (mode == LatchMode::kShared) {
    frames_[f]->latch.unlock_shared();
  } else {
    frames_[f]->latch.unlock();
  }
}

void BufferPool::LatchUnpinned(size_t f) {
  // Every latch holder (guards, write-back) holds a pin, so a frame chosen
  // with no pins has a free latch. try_lock, not lock: taking a latch under
  // mu_ must never wait (and must not look like a lock order to tools).
  if (!frames_[f]->latch.try_lock()) {
    log::Error("buffer pool of {}: latch of unpinned frame {} is held", file_->path(), f);
    frames_[f]->latch.lock();
  }
}

void BufferPool::BeforeChange(size_t f) {
  Frame& fr = *frames_[f];
  const uint64_t epoch = file_->checkpoint_epoch();
  if (fr.mod_epoch.load(std::memory_order_relaxed) == epoch) return;  // the common case
  if (fr.dirty.load(std::memory_order_acquire)) {
    // Owed to the running checkpoint: it gets the page as it is now.
    file_->CaptureImage(GetPageId(fr.data), fr.data, fr.mod_epoch.load(std::memory_order_relaxed));
    cow_copies_.fetch_add(1, std::memory_order_relaxed);
    TEST_KillPoint("checkpoint-cow");
  }
  fr.mod_epoch.store(epoch, std::memory_order_relaxed);
}

Status BufferPool::WriteBack(size_t f, bool wait, bool* written) {
  Frame& fr = *frames_[f];
  *written = false;
  if (wait) {
    fr.latch.lock_shared();
  } else if (!fr.latch.try_lock_shared()) {
    return Status::OK();
  }
  Status s;
  if (fr.dirty.load(std::memory_order_acquire)) {
    s = file_->WriteBackPage(GetPageId(fr.data), fr.data, fr.mod_epoch.load(std::memory_order_relaxed));
    if (s.ok()) {
      fr.dirty.store(false, std::memory_order_release);  // invariant 5
      *written = true;
      writebacks_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  fr.latch.unlock_shared();
  return s;
}

Result<size_t> BufferPool::TakeVictim(std::unique_lock<std::mutex>& l) {
  const size_t n = frames_.size();
  size_t pinned_seen = 0;
  for (size_t step = 0;; ++step) {
    if (step >= 3 * n) {
      if (pinned_seen >= 3 * n) {
        return Status::Unavailable(fmt::format("buffer pool of {}: all {} frames are pinned", file_->path(), n));
      }
      step = 0;
      pinned_seen = 0;
    }
    size_t f = clock_hand_;
    clock_hand_ = (clock_hand_ + 1) % n;
    Frame& fr = *frames_[f];
    if (fr.pins.load(std::memory_order_acquire) != 0) {
      ++pinned_seen;
      continue;
    }
    if (fr.page_id != kInvalidPageId && fr.referenced.exchange(false, std::memory_order_relaxed)) continue;
    if (fr.page_id != kInvalidPageId && fr.dirty.load(std::memory_order_acquire)) {
      // Invariant 3: pin, write back without mu_, reconsider.
      fr.pins.fetch_add(1, std::memory_order_acq_rel);
      l.unlock();
      bool written = false;
      Status s = WriteBack(f, /*wait=*/false, &written);
      l.lock();
      fr.pins.fetch_sub(1, std::memory_order_acq_rel);
      if (!s.ok()) return s;
      continue;
    }
    if (fr.page_id != kInvalidPageId) {
      table_.erase(fr.page_id);
      evictions_.fetch_add(1, std::memory_order_relaxed);
    }
    fr.page_id = kInvalidPageId;
    return f;
  }
}

Result<PageGuard> BufferPool::Fetch(PageId id, LatchMode mode) {
  profile::ModuleScope profile_scope(profile::Module::kBufferPool);
  if (id == kInvalidPageId) {
    return Status::Internal(fmt::format("buffer pool of {}: fetch of page 0 (the meta page)", file_->path()));
  }
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    auto it = table_.find(id);
    if (it != table_.end()) {
      size_t f = it->second;
      Frame& fr = *frames_[f];
      fr.pins.fetch_add(1, std::memory_order_acq_rel);
      fr.referenced.store(true, std::memory_order_relaxed);
      l.unlock();
      Latch(f, mode);
      // If the page was being loaded, the load is over now. A failed load
      // left `loaded` false and the frame out of table_ (invariant 4); our
      // pin kept the frame from reuse meanwhile.
      if (fr.loaded) {
        hits_.fetch_add(1, std::memory_order_relaxed);
        return PageGuard(this, f, id, mode);
      }
      Unlatch(f, mode);
      Unpin(f);
      l.lock();
      continue;  // retry: the next attempt reloads and reports the error
    }
    break;
  }
  SHALE_ASSIGN_OR_RETURN(size_t f, TakeVictim(l));
  // TakeVictim may have released mu_: another thread may have loaded `id`.
  if (table_.count(id) != 0) {
    l.unlock();
    return Fetch(id, mode);  // frame f stays free (page_id invalid)
  }
  Frame& fr = *frames_[f];
  fr.page_id = id;
  fr.resident = true;
  fr.loaded = false;
  fr.pins.store(1, std::memory_order_release);
  fr.referenced.store(true, std::memory_order_relaxed);
  fr.dirty.store(false, std::memory_order_relaxed);
  fr.mod_epoch.store(file_->checkpoint_epoch(), std::memory_order_relaxed);
  LatchUnpinned(f);
  table_[id] = f;
  l.unlock();
  misses_.fetch_add(1, std::memory_order_relaxed);
  Status s = file_->ReadPage(id, fr.data);
  if (!s.ok()) {
    l.lock();
    table_.erase(id);
    fr.page_id = kInvalidPageId;
    l.unlock();
    fr.latch.unlock();
    Unpin(f);
    return s;
  }
  fr.loaded = true;
  if (mode == LatchMode::kShared) {
    // Downgrade: no one else can be holding the latch; waiters get it after.
    fr.latch.unlock();
    fr.latch.lock_shared();  // still ours: our pin keeps it from eviction
  }
  return PageGuard(this, f, id, mode);
}

Result<PageGuard> BufferPool::NewPage(PageType type, uint8_t level) {
  std::lock_guard<std::mutex> fl(free_mu_);
  PageId head = file_->meta().free_head;
  if (head != kInvalidPageId) {
    SHALE_ASSIGN_OR_RETURN(PageGuard g, Fetch(head, LatchMode::kExclusive));
    if (GetPageType(g.data()) != PageType::kFree) {
      return Status::Corruption(fmt::format("data file {}: page {} is on the free list but has type {}",
                                            file_->path(), head,
                                            static_cast<int>(GetPageType(g.data()))));
    }
    file_->set_free_head(GetPageLink(g.data()));
    InitPage(g.mutable_data(), head, type, level);
    g.MarkDirty();
    return g;
  }
  PageId id = file_->AppendPageId();
  std::unique_lock<std::mutex> l(mu_);
  SHALE_ASSIGN_OR_RETURN(size_t f, TakeVictim(l));
  Frame& fr = *frames_[f];
  fr.page_id = id;
  fr.resident = true;
  fr.loaded = true;
  fr.pins.store(1, std::memory_order_release);
  fr.referenced.store(true, std::memory_order_relaxed);
  fr.mod_epoch.store(file_->checkpoint_epoch(), std::memory_order_relaxed);  // a new page owes nothing
  LatchUnpinned(f);
  table_[id] = f;
  l.unlock();
  InitPage(fr.data, id, type, level);
  fr.dirty.store(true, std::memory_order_release);
  return PageGuard(this, f, id, LatchMode::kExclusive);
}

Status BufferPool::FreePage(PageGuard guard) {
  std::lock_guard<std::mutex> fl(free_mu_);
  PageId id = guard.page_id();
  PageId head = file_->meta().free_head;
  InitPage(guard.mutable_data(), id, PageType::kFree);
  SetPageLink(guard.mutable_data(), head);
  guard.MarkDirty();
  file_->set_free_head(id);
  guard.Release();
  return Status::OK();
}

size_t BufferPool::ReleaseFreeFrames() {
  size_t released = 0;
  for (size_t f = 0; f < frames_.size(); ++f) {
    Frame& fr = *frames_[f];
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!fr.resident || fr.pins.load(std::memory_order_acquire) != 0) continue;
      if (fr.page_id != kInvalidPageId) {
        if (fr.dirty.load(std::memory_order_acquire) || !fr.latch.try_lock()) continue;
        const bool free_page = fr.loaded && !fr.dirty.load(std::memory_order_acquire) &&
                               GetPageType(fr.data) == PageType::kFree;
        if (free_page) {
          table_.erase(fr.page_id);
          fr.page_id = kInvalidPageId;
        }
        fr.latch.unlock();
        if (!free_page) continue;
      }
      // Pinned while its memory goes, so no fetch takes it meanwhile
      // (TakeVictim skips pinned frames); mu_ is not held over the call.
      fr.resident = false;
      fr.pins.fetch_add(1, std::memory_order_acq_rel);
    }
    ::madvise(fr.data, kPageSize, MADV_DONTNEED);
    Unpin(f);
    ++released;
  }
  released_.fetch_add(released, std::memory_order_relaxed);
  return released;
}

Status BufferPool::FlushAll() {
  for (size_t f = 0; f < frames_.size(); ++f) {
    {
      std::lock_guard<std::mutex> l(mu_);
      Frame& fr = *frames_[f];
      if (fr.page_id == kInvalidPageId || !fr.dirty.load(std::memory_order_acquire)) continue;
      fr.pins.fetch_add(1, std::memory_order_acq_rel);
    }
    bool written = false;
    Status s = WriteBack(f, /*wait=*/true, &written);
    Unpin(f);
    SHALE_RETURN_IF_ERROR(s);
  }
  return file_->SyncMeta();
}

size_t BufferPool::CaptureOwed() {
  size_t captured = 0;
  for (size_t f = 0; f < frames_.size(); ++f) {
    Frame& fr = *frames_[f];
    {
      std::lock_guard<std::mutex> l(mu_);
      if (fr.page_id == kInvalidPageId || !fr.dirty.load(std::memory_order_acquire)) continue;
      fr.pins.fetch_add(1, std::memory_order_acq_rel);
    }
    // Exclusive, not shared: a write-back of this frame that started before
    // the flip holds the shared latch until its version is installed, and
    // must be done before the checkpoint lists its pages (page_file.h
    // invariant 7).
    fr.latch.lock();
    if (fr.loaded && Owed(fr)) {
      file_->CaptureImage(GetPageId(fr.data), fr.data, fr.mod_epoch.load(std::memory_order_relaxed));
      fr.dirty.store(false, std::memory_order_release);
      ++captured;
      if (captured == 8) TEST_KillPoint("checkpoint-capture");
    }
    fr.latch.unlock();
    Unpin(f);
  }
  captured_.fetch_add(captured, std::memory_order_relaxed);
  return captured;
}

BufferPoolStats BufferPool::stats() const {
  BufferPoolStats s;
  s.hits = hits_.load(std::memory_order_relaxed);
  s.misses = misses_.load(std::memory_order_relaxed);
  s.evictions = evictions_.load(std::memory_order_relaxed);
  s.writebacks = writebacks_.load(std::memory_order_relaxed);
  s.cow_copies = cow_copies_.load(std::memory_order_relaxed);
  s.captured = captured_.load(std::memory_order_relaxed);
  s.released = released_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& fr : frames_) s.resident_frames += fr->resident ? 1 : 0;
  return s;
}

}  // namespace shale::storage
