// Data file of pages; spec in docs/formats/page-format.md (Meta page, Free list).
#include "storage/page_file.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "src/common/log.h"
#include "storage/crc32c.h"
#include "storage/file_io.h"
#include "storage/kill_point.h"

namespace shale::storage {

namespace {

// The directory holding `path` ("." for a bare name).
std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return path.substr(0, slash == 0 ? 1 : slash);
}

// A random non-zero data file id (PageFileMeta::file_id).
uint64_t NewFileId() {
  std::random_device rd;
  uint64_t id = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return id == 0 ? 1 : id;
}

// Meta page body, after the common header (offsets from the page start).
constexpr size_t kMetaMagic = 40;        // u64
constexpr size_t kMetaVersion = 48;      // u32
constexpr size_t kMetaPageSize = 52;     // u32
constexpr size_t kMetaRoot = 56;         // u64
constexpr size_t kMetaPageCount = 64;    // u64
constexpr size_t kMetaFreeHead = 72;     // u64
constexpr size_t kMetaCheckpointLsn = 80;  // u64
constexpr size_t kMetaFileId = 88;         // u64, 0 in files of older builds
constexpr uint64_t kMagic = 0x3147504c41485300ull;  // "\0SHALPG1" little-endian

void EncodeMeta(const PageFileMeta& m, char* page) {
  InitPage(page, kMetaPageId, PageType::kMeta);
  StoreU64(page + kMetaMagic, kMagic);
  StoreU32(page + kMetaVersion, kPageFormatVersion);
  StoreU32(page + kMetaPageSize, static_cast<uint32_t>(kPageSize));
  StoreU64(page + kMetaRoot, m.root);
  StoreU64(page + kMetaPageCount, m.page_count);
  StoreU64(page + kMetaFreeHead, m.free_head);
  StoreU64(page + kMetaCheckpointLsn, m.checkpoint_lsn);
  StoreU64(page + kMetaFileId, m.file_id);
  SealPage(page);
}

// Compressed page images on disk (docs/formats/page-format.md "Compressed
// pages"): a 40-byte header, then the zlib or zstd frame of the whole
// sealed page.
// The image's own CRC32C covers bytes [4, 40 + compressed length), what is
// on disk; the rest of the 16 KiB slot is a hole in the file.
constexpr size_t kCompAlgorithm = 5;   // u8 PageCompression
constexpr size_t kCompLength = 24;     // u32 compressed bytes
constexpr size_t kCompData = kPageHeaderSize;
constexpr size_t kFsBlock = 4096;
// Only worth it if at least one file-system block is saved.
constexpr size_t kCompMaxLength = kPageSize - kFsBlock - kCompData;

// Builds in `out` (kPageSize bytes, zero after the image) the compressed
// image of the sealed page `page`; returns the bytes used, or 0 if it does
// not compress well enough (the page is then stored as it is).
constexpr uint8_t kAlgoZlib = 1;  // storage::PageCompression::kZlib
constexpr uint8_t kAlgoZstd = 2;  // storage::PageCompression::kZstd

size_t CompressImage(const char* page, PageId id, char* out) {
  std::memset(out, 0, kPageSize);
  const uint8_t algo = GetPageDiskCompression(page);
  size_t len = 0;
  if (algo == kAlgoZlib) {
    uLongf n = kCompMaxLength;
    if (::compress2(reinterpret_cast<Bytef*>(out + kCompData), &n, reinterpret_cast<const Bytef*>(page), kPageSize,
                    Z_BEST_SPEED) != Z_OK) {
      return 0;  // Z_BUF_ERROR: larger than kCompMaxLength
    }
    len = n;
  } else if (algo == kAlgoZstd) {
    len = ZSTD_compress(out + kCompData, kCompMaxLength, page, kPageSize, 1);
    if (ZSTD_isError(len)) return 0;  // dstSize_tooSmall: larger than kCompMaxLength
  } else {
    return 0;
  }
  out[page_layout::kType] = static_cast<char>(PageType::kCompressed);
  out[kCompAlgorithm] = static_cast<char>(algo);
  StoreU64(out + page_layout::kPageId, id);
  StoreU64(out + page_layout::kLsn, GetPageLsn(page));
  StoreU32(out + kCompLength, static_cast<uint32_t>(len));
  StoreU32(out + page_layout::kCrc, crc32c::Value(out + 4, kCompData + len - 4));
  return kCompData + len;
}

// If `buf` holds a compressed image, checks it and replaces it by the page
// it holds (still to be verified by VerifyPage).
Status ExpandImage(char* buf, PageId id, const std::string& path) {
  if (GetPageType(buf) != PageType::kCompressed) return Status::OK();
  const uint32_t len = LoadU32(buf + kCompLength);
  const uint8_t algo = static_cast<uint8_t>(buf[kCompAlgorithm]);
  if (len > kPageSize - kCompData || (algo != kAlgoZlib && algo != kAlgoZstd)) {
    return Status::Corruption(fmt::format("data file {}: page {} has a bad compressed image header", path, id));
  }
  const uint32_t crc = crc32c::Value(buf + 4, kCompData + len - 4);
  if (LoadU32(buf + page_layout::kCrc) != crc) {
    return Status::Corruption(fmt::format("data file {}: page {} fails its checksum (stored {:08x}, computed {:08x}, "
                                          "compressed image)", path, id, LoadU32(buf + page_layout::kCrc), crc));
  }
  if (GetPageId(buf) != id) {
    return Status::Corruption(fmt::format("data file {}: page {} holds the image of page {} (misdirected write)", path,
                                          id, GetPageId(buf)));
  }
  alignas(64) char page[kPageSize];
  bool ok;
  if (algo == kAlgoZlib) {
    uLongf out_len = kPageSize;
    ok = ::uncompress(reinterpret_cast<Bytef*>(page), &out_len, reinterpret_cast<const Bytef*>(buf + kCompData), len) ==
             Z_OK &&
         out_len == kPageSize;
  } else {
    ok = ZSTD_decompress(page, kPageSize, buf + kCompData, len) == kPageSize;
  }
  if (!ok) {
    return Status::Corruption(fmt::format("data file {}: page {}: compressed image does not inflate to a page", path, id));
  }
  std::memcpy(buf, page, kPageSize);
  return Status::OK();
}

// Writes page `id` (a sealed image) in place, compressed if it asks to be
// and compresses enough; the unused blocks of a compressed page's slot are
// punched out of the file.
Status WritePageInPlace(int fd, const std::string& path, const char* page, PageId id) {
  if (GetPageDiskCompression(page) == 0) return WriteAllAt(fd, path, page, kPageSize, id * kPageSize);
  alignas(64) char image[kPageSize];
  const size_t used = CompressImage(page, id, image);
  if (used == 0) return WriteAllAt(fd, path, page, kPageSize, id * kPageSize);
  SHALE_RETURN_IF_ERROR(WriteAllAt(fd, path, image, kPageSize, id * kPageSize));
  const size_t keep = (used + kFsBlock - 1) / kFsBlock * kFsBlock;
  if (::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(id * kPageSize + keep),
                  static_cast<off_t>(kPageSize - keep)) != 0 &&
      errno != EOPNOTSUPP) {
    return ErrnoStatus(fmt::format("cannot punch the unused blocks of compressed page {}", id), path, errno);
  }
  return Status::OK();
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

// Makes `path` a fresh data file holding only its meta page, atomically: the
// page goes to a temporary file, synced, renamed over `path`, and the
// directory synced. A crash at any instant leaves no data file or a whole
// one, never a torn meta page a restart would refuse.
Status CreateDataFile(const std::string& path) {
  const std::string tmp = path + ".new";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("cannot create data file", tmp, errno);
  std::vector<char> page(kPageSize);
  PageFileMeta fresh;
  fresh.file_id = NewFileId();
  EncodeMeta(fresh, page.data());
  Status s = WriteAllAt(fd, tmp, page.data(), kPageSize / 2, 0);
  TEST_KillPoint("data-file-create");  // half of the meta page written
  if (s.ok()) s = WriteAllAt(fd, tmp, page.data() + kPageSize / 2, kPageSize / 2, kPageSize / 2);
  if (s.ok()) s = SyncFile(fd, tmp);
  ::close(fd);
  SHALE_RETURN_IF_ERROR(s);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return ErrnoStatus("cannot rename data file", tmp, errno);
  return SyncDir(DirOf(path));
}

}  // namespace

Result<std::unique_ptr<PageFile>> PageFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  struct stat st;
  // Absent, or empty (an older build made it in place and died before
  // writing its meta page): make it.
  if ((fd < 0 && errno == ENOENT) || (fd >= 0 && ::fstat(fd, &st) == 0 && st.st_size == 0)) {
    if (fd >= 0) ::close(fd);
    SHALE_RETURN_IF_ERROR(CreateDataFile(path));
    fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  }
  if (fd < 0) return ErrnoStatus("cannot open data file", path, errno);
  if (::fstat(fd, &st) != 0) {
    Status s = ErrnoStatus("cannot stat data file", path, errno);
    ::close(fd);
    return s;
  }
  PageFileMeta meta;
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
  if (s.ok() && (LoadU32(buf.data() + kMetaVersion) < kOldestPageFormatVersion ||
                 LoadU32(buf.data() + kMetaVersion) > kPageFormatVersion)) {
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
  meta.checkpoint_lsn = LoadU64(buf.data() + kMetaCheckpointLsn);
  meta.file_id = LoadU64(buf.data() + kMetaFileId);
  // A file of an older build gets its id now; its next checkpoint stores it.
  if (meta.file_id == 0) meta.file_id = NewFileId();
  return std::unique_ptr<PageFile>(new PageFile(path, fd, meta));
}

PageFile::~PageFile() {
  ::close(fd_);
  if (spill_fd_ >= 0) ::close(spill_fd_);
}

Status PageFile::ReadPage(PageId id, char* buf) const {
  if (spill_) {
    std::lock_guard<std::mutex> l(overlay_mu_);
    // Invariant 7: the newest version first, then the running checkpoint's.
    auto it = overlay_.find(id);
    if (it == overlay_.end()) {
      it = ckpt_overlay_.find(id);
      if (it == ckpt_overlay_.end()) it = overlay_.end();
    }
    if (it != overlay_.end()) {
      // Read under overlay_mu_ so the slot cannot be reused meanwhile.
      Status s = ReadEntry({id, it->second.image, it->second.slot}, buf);
      if (s.ok()) s = VerifyPage(buf, id, it->second.image ? path_ + " (checkpoint image)" : spill_path_);
      if (!s.ok()) log::Error("{}", s.message());
      return s;
    }
  }
  bool short_read = false;
  Status s = ReadExactAt(fd_, path_, buf, kPageSize, id * kPageSize, id, &short_read);
  if (s.ok() && short_read) {
    s = Status::Corruption(fmt::format("data file {}: page {} is past the end of the file", path_, id));
  }
  if (s.ok()) s = ExpandImage(buf, id, path_);
  if (s.ok()) s = VerifyPage(buf, id, path_);
  if (!s.ok()) log::Error("{}", s.message());
  return s;
}

Status PageFile::WritePage(PageId id, const char* buf) { return WriteBackPage(id, buf, checkpoint_epoch()); }

Status PageFile::WriteBackPage(PageId id, const char* buf, uint64_t mod_epoch) {
  // A private copy: the caller may hold only a shared latch on buf. On the
  // stack, not thread_local: pools are also flushed from static destructors,
  // after thread_locals are gone.
  alignas(64) char copy[kPageSize];
  std::memcpy(copy, buf, kPageSize);
  SealPage(copy);
  if (!spill_) return WriteAllAt(fd_, path_, copy, kPageSize, id * kPageSize);
  int64_t slot;
  {
    std::lock_guard<std::mutex> l(overlay_mu_);
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
    } else {
      slot = spill_slots_++;
    }
    spill_in_use_.fetch_add(1, std::memory_order_relaxed);
  }
  Status s = WriteAllAt(spill_fd_, spill_path_, copy, kPageSize, static_cast<uint64_t>(slot) * kPageSize);
  std::lock_guard<std::mutex> l(overlay_mu_);
  if (!s.ok()) {
    ReleaseSlotLocked(slot);
    return s;
  }
  InstallLocked(OverlayForLocked(mod_epoch), id, OverlayEntry{nullptr, slot});
  TEST_KillPoint("spill-write");
  return Status::OK();
}

PageFile::Overlay& PageFile::OverlayForLocked(uint64_t mod_epoch) {
  if (!checkpoint_active_ || mod_epoch >= ckpt_epoch_.load(std::memory_order_relaxed)) return overlay_;
  if (checkpoint_collected_) {
    // Invariant 7 says this cannot happen; if it did, the version would be
    // missing from the checkpoint being written.
    log::Error("data file {}: a page version owed to the checkpoint arrived after its pages were listed", path_);
  }
  return ckpt_overlay_;
}

void PageFile::ReleaseSlotLocked(int64_t slot) {
  if (slot < 0) return;
  free_slots_.push_back(slot);
  spill_in_use_.fetch_sub(1, std::memory_order_relaxed);
}

void PageFile::InstallLocked(Overlay& map, PageId id, OverlayEntry e) {
  auto [it, inserted] = map.try_emplace(id);
  if (!inserted) {
    // A slot the running checkpoint listed stays its own until it ends.
    if (&map == &ckpt_overlay_ && checkpoint_collected_ && it->second.slot >= 0) {
      deferred_free_.push_back(it->second.slot);
    } else {
      ReleaseSlotLocked(it->second.slot);
    }
  }
  it->second = std::move(e);
}

void PageFile::CaptureImage(PageId id, const char* page, uint64_t mod_epoch) {
  auto image = std::make_shared<std::string>(page, kPageSize);
  SealPage(image->data());
  std::lock_guard<std::mutex> l(overlay_mu_);
  InstallLocked(OverlayForLocked(mod_epoch), id, OverlayEntry{std::move(image), -1});
}

Status PageFile::EnableSpill(const std::string& spill_path, const std::string& dw_path) {
  int fd = ::open(spill_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("cannot open spill file", spill_path, errno);
  spill_fd_ = fd;
  spill_path_ = spill_path;
  dw_path_ = dw_path;
  spill_ = true;
  return Status::OK();
}

size_t PageFile::overlay_pages() const {
  std::lock_guard<std::mutex> l(overlay_mu_);
  return overlay_.size() + ckpt_overlay_.size();
}

Status PageFile::ReadEntry(const CheckpointSet::Entry& e, char* buf) const {
  if (e.image) {
    std::memcpy(buf, e.image->data(), kPageSize);
    return Status::OK();
  }
  bool short_read = false;
  SHALE_RETURN_IF_ERROR(ReadExactAt(spill_fd_, spill_path_, buf, kPageSize,
                                    static_cast<uint64_t>(e.slot) * kPageSize, e.id, &short_read));
  if (short_read) {
    return Status::Corruption(fmt::format("spill file {}: slot {} of page {} is truncated", spill_path_, e.slot, e.id));
  }
  return Status::OK();
}

CheckpointSet PageFile::BeginCheckpoint(uint64_t lsn) {
  CheckpointSet set;
  set.lsn = lsn;
  set.meta = meta();
  set.meta.checkpoint_lsn = lsn;
  std::lock_guard<std::mutex> l(overlay_mu_);
  if (checkpoint_active_) log::Error("data file {}: a checkpoint began while another ran", path_);
  checkpoint_active_ = true;
  checkpoint_collected_ = false;
  set.epoch = ckpt_epoch_.load(std::memory_order_relaxed) + 1;
  ckpt_epoch_.store(set.epoch, std::memory_order_release);
  ckpt_overlay_.swap(overlay_);  // O(1); overlay_ was empty (EndCheckpoint)
  return set;
}

void PageFile::CollectCheckpoint(CheckpointSet* set) {
  std::lock_guard<std::mutex> l(overlay_mu_);
  checkpoint_collected_ = true;
  set->pages.clear();
  set->pages.reserve(ckpt_overlay_.size());
  for (const auto& [id, e] : ckpt_overlay_) set->pages.push_back({id, e.image, e.slot});
  std::sort(set->pages.begin(), set->pages.end(),
            [](const CheckpointSet::Entry& a, const CheckpointSet::Entry& b) { return a.id < b.id; });
}

namespace {
// Double-write file header (page 0 of the file); pages follow, each a sealed
// data page naming its own id. See docs/formats/page-format.md.
constexpr uint64_t kDwMagic = 0x3157444c41485300ull;  // "\0SHALDW1" little-endian
constexpr size_t kDwMagicAt = 0;                      // u64
constexpr size_t kDwLsnAt = 8;                        // u64 checkpoint LSN
constexpr size_t kDwCountAt = 16;                     // u64 pages that follow
constexpr size_t kDwCrcAt = 24;                       // u32 CRC32C of bytes [0, 24)
constexpr size_t kDwFileIdAt = 28;                    // u64 the data file's PageFileMeta::file_id
constexpr size_t kDwFileIdCrcAt = 36;                 // u32 CRC32C of bytes [0, 36); absent in older files

// The data file id a double-write header names, or 0 if it names none (a
// file of an older build).
uint64_t DwFileId(const char* h) {
  return LoadU32(h + kDwFileIdCrcAt) == crc32c::Value(h, kDwFileIdCrcAt) ? LoadU64(h + kDwFileIdAt) : 0;
}
}  // namespace

Status PageFile::WriteCheckpoint(const CheckpointSet& set) {
  // 1. The double-write file: header, the pages, the meta page; synced, and
  // its directory entry too before the first page is written in place (a
  // power loss must not take the file that repairs those writes).
  int dw = ::open(dw_path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (dw < 0) return ErrnoStatus("cannot open double-write file", dw_path_, errno);
  struct CloseDw {
    int fd;
    ~CloseDw() { ::close(fd); }
  } close_dw{dw};
  std::vector<char> buf(kPageSize);
  std::vector<char> meta_page(kPageSize);
  EncodeMeta(set.meta, meta_page.data());
  Status s;
  {
    std::fill(buf.begin(), buf.end(), 0);
    StoreU64(buf.data() + kDwMagicAt, kDwMagic);
    StoreU64(buf.data() + kDwLsnAt, set.lsn);
    StoreU64(buf.data() + kDwCountAt, set.pages.size() + 1);
    StoreU32(buf.data() + kDwCrcAt, crc32c::Value(buf.data(), kDwCrcAt));
    StoreU64(buf.data() + kDwFileIdAt, set.meta.file_id);
    StoreU32(buf.data() + kDwFileIdCrcAt, crc32c::Value(buf.data(), kDwFileIdCrcAt));
    s = WriteAllAt(dw, dw_path_, buf.data(), kPageSize, 0);
  }
  uint64_t at = kPageSize;
  for (size_t i = 0; s.ok() && i < set.pages.size(); ++i, at += kPageSize) {
    {
      std::lock_guard<std::mutex> l(overlay_mu_);  // spill slots stay ours (deferred free)
      s = ReadEntry(set.pages[i], buf.data());
    }
    if (s.ok()) s = VerifyPage(buf.data(), set.pages[i].id, spill_path_);
    if (s.ok()) s = WriteAllAt(dw, dw_path_, buf.data(), kPageSize, at);
    if (i == set.pages.size() / 2) TEST_KillPoint("checkpoint-dw");
  }
  if (s.ok()) s = WriteAllAt(dw, dw_path_, meta_page.data(), kPageSize, at);
  if (s.ok()) s = SyncFile(dw, dw_path_);
  if (s.ok() && !dw_entry_synced_) {
    s = SyncDir(DirOf(dw_path_));
    dw_entry_synced_ = s.ok();
  }
  SHALE_RETURN_IF_ERROR(s);
  // 2. In place, synced; 3. the meta page last, synced.
  for (size_t i = 0; i < set.pages.size(); ++i) {
    const CheckpointSet::Entry& e = set.pages[i];
    {
      std::lock_guard<std::mutex> l(overlay_mu_);
      SHALE_RETURN_IF_ERROR(ReadEntry(e, buf.data()));
    }
    SHALE_RETURN_IF_ERROR(WritePageInPlace(fd_, path_, buf.data(), e.id));
    if (i == set.pages.size() / 2) TEST_KillPoint("checkpoint-inplace");
  }
  SHALE_RETURN_IF_ERROR(Sync());
  TEST_KillPoint("checkpoint-meta");
  SHALE_RETURN_IF_ERROR(WriteAllAt(fd_, path_, meta_page.data(), kPageSize, 0));
  SHALE_RETURN_IF_ERROR(Sync());
  // 4. The checkpoint is whole in the data file: retire its double-write
  // copy (invariant 6), so no double-write file outlives the checkpoint it
  // belongs to. Not synced: one that survives a power loss names the LSN the
  // meta page has and is not applied.
  TEST_KillPoint("checkpoint-done");
  if (::ftruncate(dw, 0) != 0) return ErrnoStatus("cannot empty double-write file", dw_path_, errno);
  return Status::OK();
}

void PageFile::EndCheckpoint(const CheckpointSet& /*set*/, bool written) {
  std::lock_guard<std::mutex> l(overlay_mu_);
  for (auto& [id, e] : ckpt_overlay_) {
    if (!written && overlay_.count(id) == 0) {
      overlay_.emplace(id, std::move(e));  // still the newest version: keep it
    } else {
      ReleaseSlotLocked(e.slot);  // in the data file now, or superseded
    }
  }
  ckpt_overlay_.clear();
  for (int64_t slot : deferred_free_) ReleaseSlotLocked(slot);
  deferred_free_.clear();
  checkpoint_active_ = false;
  checkpoint_collected_ = false;
}

Status PageFile::RecoverDoubleWrite(const std::string& path, const std::string& dw_path) {
  int dw = ::open(dw_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (dw < 0) {
    if (errno == ENOENT) return Status::OK();
    return ErrnoStatus("cannot open double-write file", dw_path, errno);
  }
  std::string data;
  Status s = ReadAll(dw, dw_path, &data);
  ::close(dw);
  SHALE_RETURN_IF_ERROR(s);
  auto ignore = [&](std::string_view why) {
    log::Info("double-write file {} not applied: {}", dw_path, why);
    return Status::OK();
  };
  if (data.size() < kPageSize) return ignore("no header");
  const char* h = data.data();
  if (LoadU64(h + kDwMagicAt) != kDwMagic || LoadU32(h + kDwCrcAt) != crc32c::Value(h, kDwCrcAt)) {
    return ignore("bad header");
  }
  const uint64_t lsn = LoadU64(h + kDwLsnAt);
  const uint64_t count = LoadU64(h + kDwCountAt);
  if (data.size() < (count + 1) * kPageSize) return ignore("incomplete (crash while writing it)");
  for (uint64_t i = 0; i < count; ++i) {
    const char* p = data.data() + (i + 1) * kPageSize;
    if (!VerifyPage(p, GetPageId(p), dw_path).ok()) return ignore("a page fails its checksum");
  }
  const char* dw_meta = data.data() + count * kPageSize;
  if (GetPageId(dw_meta) != kMetaPageId || GetPageType(dw_meta) != PageType::kMeta) return ignore("no meta page");
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    // A data file is made before its first checkpoint and never removed, so
    // this copy belongs to a store that is gone. Applied to the data file
    // made next it would claim a checkpoint no WAL there reaches (the
    // store could not open again): remove it.
    log::Warn("double-write file {} not applied: there is no data file {}; removing it", dw_path, path);
    if (::unlink(dw_path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoStatus("cannot remove double-write file", dw_path, errno);
    }
    return SyncDir(DirOf(dw_path));
  }
  if (fd < 0) return ErrnoStatus("cannot open data file", path, errno);
  std::vector<char> cur(kPageSize);
  bool short_read = false;
  s = ReadExactAt(fd, path, cur.data(), kPageSize, 0, kMetaPageId, &short_read);
  const bool meta_ok = s.ok() && !short_read && VerifyPage(cur.data(), kMetaPageId, path).ok();
  const uint64_t dw_file = DwFileId(h);
  if (meta_ok && dw_file != 0 && LoadU64(cur.data() + kMetaFileId) != 0 &&
      LoadU64(cur.data() + kMetaFileId) != dw_file) {
    ::close(fd);
    // Left in this directory by a process of another store (whose
    // directory was removed and made again under it): its checkpoint is
    // not this data file's, and its LSN is not this WAL's.
    log::Warn("double-write file {} not applied: written for another data file than {}; removing it", dw_path,
              path);
    if (::unlink(dw_path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoStatus("cannot remove double-write file", dw_path, errno);
    }
    return SyncDir(DirOf(dw_path));
  }
  if (meta_ok && LoadU64(cur.data() + kMetaCheckpointLsn) >= lsn) {
    ::close(fd);
    return Status::OK();  // that checkpoint completed
  }
  log::Warn("data file {}: re-applying {} pages of checkpoint LSN {} from {}", path, count, lsn, dw_path);
  for (uint64_t i = 0; s.ok() && i + 1 < count; ++i) {
    const char* p = data.data() + (i + 1) * kPageSize;
    s = WriteAllAt(fd, path, p, kPageSize, GetPageId(p) * kPageSize);
  }
  if (s.ok()) s = SyncFile(fd, path);
  if (s.ok()) s = WriteAllAt(fd, path, dw_meta, kPageSize, 0);
  if (s.ok()) s = SyncFile(fd, path);
  ::close(fd);
  return s;
}

Status PageFile::VerifyOnDisk(uint64_t* pages) const {
  const uint64_t count = meta().page_count;
  std::vector<char> buf(kPageSize);
  *pages = 0;
  for (PageId id = 1; id < count; ++id) {
    bool short_read = false;
    SHALE_RETURN_IF_ERROR(ReadExactAt(fd_, path_, buf.data(), kPageSize, id * kPageSize, id, &short_read));
    if (short_read) continue;  // allocated after the last checkpoint: not on disk yet
    Status s = ExpandImage(buf.data(), id, path_);
    if (s.ok()) s = VerifyPage(buf.data(), id, path_);
    if (!s.ok()) {
      log::Error("{}", s.message());
      return s;
    }
    ++*pages;
  }
  return Status::OK();
}

Status PageFile::Sync() {
  return SyncFile(fd_, path_);
}

Status PageFile::WriteMetaLocked() {
  std::vector<char> page(kPageSize);
  EncodeMeta(meta_, page.data());
  SHALE_RETURN_IF_ERROR(WriteAllAt(fd_, path_, page.data(), kPageSize, 0));
  return SyncFile(fd_, path_);
}

Status PageFile::SyncMeta() {
  if (spill_) return Status::OK();  // only checkpoints write the data file (invariant 5)
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
