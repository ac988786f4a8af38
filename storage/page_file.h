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
//  4. The meta page on disk is rewritten only by SyncMeta(), after the data
//     pages it refers to have been written and fsynced. Until the WAL comes,
//     a crash between SyncMeta() calls may lose or tear tree changes; crash
//     consistency is the next session's work (docs/storage.md).
//
// Thread-safety: ReadPage/WritePage may run concurrently (pread/pwrite on
// distinct pages). The meta fields are guarded by meta_mu_.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "shale/status.h"
#include "storage/page.h"

namespace shale::storage {

// The meta page's format version. Bump on incompatible change.
inline constexpr uint32_t kPageFormatVersion = 1;

struct PageFileMeta {
  PageId root = kInvalidPageId;           // B+tree root; kInvalidPageId if none yet
  uint64_t page_count = 1;                // pages allocated, the meta page included
  PageId free_head = kInvalidPageId;      // first free page; kInvalidPageId if none
};

class PageFile {
 public:
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
  void set_free_head(PageId head);
  // Reserves a new page id at the end of the file.
  PageId AppendPageId();

 private:
  PageFile(std::string path, int fd, const PageFileMeta& meta) : path_(std::move(path)), fd_(fd), meta_(meta) {}
  Status WriteMetaLocked();  // REQUIRES: meta_mu_ held

  const std::string path_;
  const int fd_;
  mutable std::mutex meta_mu_;
  PageFileMeta meta_;  // GUARDED_BY(meta_mu_)
};

}  // namespace shale::storage
