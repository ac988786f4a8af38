// Data file of pages; spec in docs/formats/page-format.md (Meta page, Free list).
#include "storage/page_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include <fmt/format.h>

#include "src/common/log.h"
#include "storage/file_io.h"

namespace shale::storage {

namespace {

// Meta page body, after the common header (offsets from the page start).
constexpr size_t kMetaMagic = 40;        // u64
constexpr size_t kMetaVersion = 48;      // u32
constexpr size_t kMetaPageSize = 52;     // u32
constexpr size_t kMetaRoot = 56;         // u64
constexpr size_t kMetaPageCount = 64;    // u64
constexpr size_t kMetaFreeHead = 72;     // u64
constexpr uint64_t kMagic = 0x3147504c41485300ull;  // "\0SHALPG1" little-endian

void EncodeMeta(const PageFileMeta& m, char* page) {
  InitPage(page, kMetaPageId, PageType::kMeta);
  StoreU64(page + kMetaMagic, kMagic);
  StoreU32(page + kMetaVersion, kPageFormatVersion);
  StoreU32(page + kMetaPageSize, static_cast<uint32_t>(kPageSize));
  StoreU64(page + kMetaRoot, m.root);
  StoreU64(page + kMetaPageCount, m.page_count);
  StoreU64(page + kMetaFreeHead, m.free_head);
  SealPage(page);
}

Status ReadExactAt(int fd, const std::string& path, char* buf, size_t n, uint64_t offset, PageId id,
                   bool* short_read) {
  size_t done = 0;
  *short_read = false;
  while (done < n) {
    ssize_t r = ::pread(fd, buf + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(fmt::format("cannot read page {} of data file", id), path, errno);
    }
    if (r == 0) {
      *short_read = true;
      return Status::OK();
    }
    done += static_cast<size_t>(r);
  }
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<PageFile>> PageFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("cannot open data file", path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Status s = ErrnoStatus("cannot stat data file", path, errno);
    ::close(fd);
    return s;
  }
  PageFileMeta meta;
  if (st.st_size == 0) {
    std::unique_ptr<PageFile> file(new PageFile(path, fd, meta));
    {
      std::lock_guard<std::mutex> l(file->meta_mu_);
      SHALE_RETURN_IF_ERROR(file->WriteMetaLocked());
    }
    size_t slash = path.rfind('/');
    SHALE_RETURN_IF_ERROR(SyncDir(slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash)));
    return file;
  }
  std::vector<char> buf(kPageSize);
  bool short_read = false;
  Status s = ReadExactAt(fd, path, buf.data(), kPageSize, 0, kMetaPageId, &short_read);
  if (s.ok() && short_read) {
    s = Status::Corruption(fmt::format("data file {}: meta page 0 is truncated ({} bytes)", path, st.st_size));
  }
  if (s.ok()) s = VerifyPage(buf.data(), kMetaPageId, path);
  if (s.ok() && (GetPageType(buf.data()) != PageType::kMeta || LoadU64(buf.data() + kMetaMagic) != kMagic)) {
    s = Status::Corruption(fmt::format("data file {}: page 0 is not a meta page", path));
  }
  if (s.ok() && LoadU32(buf.data() + kMetaVersion) != kPageFormatVersion) {
    s = Status::Corruption(fmt::format("data file {}: page format version {} (this build reads {})", path,
                                       LoadU32(buf.data() + kMetaVersion), kPageFormatVersion));
  }
  if (s.ok() && LoadU32(buf.data() + kMetaPageSize) != kPageSize) {
    s = Status::Corruption(fmt::format("data file {}: page size {} (this build uses {})", path,
                                       LoadU32(buf.data() + kMetaPageSize), kPageSize));
  }
  if (!s.ok()) {
    log::Error("{}", s.message());
    ::close(fd);
    return s;
  }
  meta.root = LoadU64(buf.data() + kMetaRoot);
  meta.page_count = LoadU64(buf.data() + kMetaPageCount);
  meta.free_head = LoadU64(buf.data() + kMetaFreeHead);
  return std::unique_ptr<PageFile>(new PageFile(path, fd, meta));
}

PageFile::~PageFile() { ::close(fd_); }

Status PageFile::ReadPage(PageId id, char* buf) const {
  bool short_read = false;
  Status s = ReadExactAt(fd_, path_, buf, kPageSize, id * kPageSize, id, &short_read);
  if (s.ok() && short_read) {
    s = Status::Corruption(fmt::format("data file {}: page {} is past the end of the file", path_, id));
  }
  if (s.ok()) s = VerifyPage(buf, id, path_);
  if (!s.ok()) log::Error("{}", s.message());
  return s;
}

Status PageFile::WritePage(PageId id, const char* buf) {
  // A private copy: the caller may hold only a shared latch on buf. On the
  // stack, not thread_local: pools are also flushed from static destructors,
  // after thread_locals are gone.
  alignas(64) char copy[kPageSize];
  std::memcpy(copy, buf, kPageSize);
  SealPage(copy);
  return WriteAllAt(fd_, path_, copy, kPageSize, id * kPageSize);
}

Status PageFile::Sync() {
  if (::fdatasync(fd_) != 0) return ErrnoStatus("cannot sync data file", path_, errno);
  return Status::OK();
}

Status PageFile::WriteMetaLocked() {
  std::vector<char> page(kPageSize);
  EncodeMeta(meta_, page.data());
  SHALE_RETURN_IF_ERROR(WriteAllAt(fd_, path_, page.data(), kPageSize, 0));
  if (::fsync(fd_) != 0) return ErrnoStatus("cannot sync data file", path_, errno);
  return Status::OK();
}

Status PageFile::SyncMeta() {
  SHALE_RETURN_IF_ERROR(Sync());
  std::lock_guard<std::mutex> l(meta_mu_);
  return WriteMetaLocked();
}

PageFileMeta PageFile::meta() const {
  std::lock_guard<std::mutex> l(meta_mu_);
  return meta_;
}

void PageFile::set_root(PageId root) {
  std::lock_guard<std::mutex> l(meta_mu_);
  meta_.root = root;
}

void PageFile::set_free_head(PageId head) {
  std::lock_guard<std::mutex> l(meta_mu_);
  meta_.free_head = head;
}

PageId PageFile::AppendPageId() {
  std::lock_guard<std::mutex> l(meta_mu_);
  return meta_.page_count++;
}

}  // namespace shale::storage
