// Write-ahead log; record format in docs/formats/wal.md.
#include "storage/wal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>

#include <fmt/format.h>

#include "src/common/critical_path.h"
#include "src/common/log.h"
#include "storage/crc32c.h"
#include "storage/file_io.h"
#include "storage/kill_point.h"
#include "storage/page.h"
#include "src/common/module_profile.h"

namespace shale::storage {
namespace {

// Record header: u32 crc, u32 payload length, u8 type. The CRC32C covers the
// record's LSN (u64, little-endian, not stored) followed by bytes [4, end):
// a record copied to another position does not verify there.
constexpr size_t kHeaderSize = 9;
// Guards against absurd lengths in a damaged header.
constexpr uint32_t kMaxPayload = 1u << 30;

uint32_t RecordCrc(uint64_t lsn, const char* rest, size_t n) {
  char lsn_bytes[8];
  StoreU64(lsn_bytes, lsn);
  return crc32c::Extend(crc32c::Value(lsn_bytes, 8), rest, n);
}

void EncodeRecord(uint64_t lsn, WalRecordType type, std::string_view payload, std::string* out) {
  size_t at = out->size();
  out->resize(at + kHeaderSize + payload.size());
  char* p = out->data() + at;
  StoreU32(p + 4, static_cast<uint32_t>(payload.size()));
  p[8] = static_cast<char>(type);
  std::memcpy(p + kHeaderSize, payload.data(), payload.size());
  StoreU32(p, RecordCrc(lsn, p + 4, kHeaderSize - 4 + payload.size()));
}

bool KnownType(uint8_t t) { return t >= 1 && t <= static_cast<uint8_t>(WalRecordType::kSliceState); }

std::optional<uint64_t> ParseSegmentName(const std::string& name) {
  if (name.size() != 4 + 16 + 4 || !name.starts_with("wal-") || !name.ends_with(".log")) return std::nullopt;
  uint64_t v = 0;
  for (size_t i = 4; i < 20; ++i) {
    char c = name[i];
    int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v * 16 + static_cast<uint64_t>(d);
  }
  return v;
}


// Zeros [from, to) of a segment and syncs it: how segments are
// preallocated (docs/formats/wal.md, "Segments").
Status WriteZeros(int fd, const std::string& path, uint64_t from, uint64_t to) {
  static const std::string kZeros(1u << 20, '\0');
  for (uint64_t at = from; at < to;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kZeros.size(), to - at));
    SHALE_RETURN_IF_ERROR(WriteAllAt(fd, path, kZeros.data(), n, at));
    at += n;
  }
  return SyncFile(fd, path);
}

// Whether every byte of `rest` is zero: the unwritten, preallocated end of
// a segment.
bool AllZero(std::string_view rest) {
  return std::all_of(rest.begin(), rest.end(), [](char c) { return c == 0; });
}

}  // namespace

std::string Wal::SegmentName(uint64_t start_lsn) { return fmt::format("wal-{:016x}.log", start_lsn); }

Wal::Wal(std::string dir, const WalOptions& options) : dir_(std::move(dir)), options_(options) {}

Result<std::unique_ptr<Wal>> Wal::Open(const std::string& dir, const WalOptions& options, uint64_t replay_from,
                                       const ReplayFn& replay) {
  std::error_code ec;
  const bool created = std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError(fmt::format("cannot create WAL directory {}: {}", dir, ec.message()));
  if (created) {
    // The directory's own entry, or a power loss takes every segment with it.
    std::filesystem::path path = std::filesystem::absolute(dir, ec).lexically_normal();
    if (!path.has_filename()) path = path.parent_path();
    if (!ec) SHALE_RETURN_IF_ERROR(SyncDir(path.parent_path().string()));
  }
  std::vector<Segment> segments;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (auto lsn = ParseSegmentName(name)) segments.push_back({*lsn, dir + "/" + name});
  }
  if (ec) return Status::IOError(fmt::format("cannot list WAL directory {}: {}", dir, ec.message()));
  std::sort(segments.begin(), segments.end(),
            [](const Segment& a, const Segment& b) { return a.start_lsn < b.start_lsn; });

  std::unique_ptr<Wal> wal(new Wal(dir, options));
  if (segments.empty()) {
    SHALE_RETURN_IF_ERROR(wal->OpenForAppend({}, replay_from, 0, true));
    return wal;
  }
  if (segments.front().start_lsn > replay_from) {
    return Status::Corruption(fmt::format("WAL {}: first segment starts at LSN {} but recovery needs LSN {}", dir,
                                          segments.front().start_lsn, replay_from));
  }
  uint64_t end_lsn = segments.front().start_lsn;
  uint64_t last_valid = 0;
  bool tail_zero = false;  // the last segment ends in zeros only (no torn record)
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment& seg = segments[i];
    const bool last = i + 1 == segments.size();
    if (seg.start_lsn != end_lsn) {
      return Status::Corruption(fmt::format("WAL {}: segment {} starts at LSN {}, previous one ends at {}", dir,
                                            seg.path, seg.start_lsn, end_lsn));
    }
    if (!last && segments[i + 1].start_lsn <= replay_from) {
      end_lsn = segments[i + 1].start_lsn;  // wholly before the checkpoint: not read
      continue;
    }
    int fd = ::open(seg.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus("cannot open WAL segment", seg.path, errno);
    std::string data;
    Status rs = ReadAll(fd, seg.path, &data);
    ::close(fd);
    SHALE_RETURN_IF_ERROR(rs);
    size_t off = 0;
    while (off < data.size()) {
      const uint64_t lsn = seg.start_lsn + off;
      bool good = data.size() - off >= kHeaderSize;
      uint32_t len = 0;
      if (good) {
        len = LoadU32(data.data() + off + 4);
        good = len <= kMaxPayload && data.size() - off - kHeaderSize >= len &&
               KnownType(static_cast<uint8_t>(data[off + 8])) &&
               LoadU32(data.data() + off) == RecordCrc(lsn, data.data() + off + 4, kHeaderSize - 4 + len);
      }
      if (!good && AllZero(std::string_view(data).substr(off))) {
        // The preallocated end of the segment: the log ends here.
        if (last) tail_zero = true;
        break;
      }
      if (!good) {
        if (!last) {
          return Status::Corruption(
              fmt::format("WAL segment {}: bad record at offset {} (LSN {}) before the last segment", seg.path,
                          off, lsn));
        }
        log::Warn("WAL segment {}: torn or damaged tail at offset {} (LSN {}), {} bytes cut off", seg.path, off,
                  lsn, data.size() - off);
        break;
      }
      if (lsn >= replay_from) {
        auto type = static_cast<WalRecordType>(static_cast<uint8_t>(data[off + 8]));
        Status s = replay(lsn, type, std::string_view(data.data() + off + kHeaderSize, len));
        if (!s.ok()) return s;
      }
      off += kHeaderSize + len;
    }
    end_lsn = seg.start_lsn + off;
    if (last) last_valid = off;
  }
  if (end_lsn < replay_from) {
    return Status::Corruption(fmt::format("WAL {}: ends at LSN {} but the checkpoint is at LSN {}", dir, end_lsn,
                                          replay_from));
  }
  SHALE_RETURN_IF_ERROR(wal->OpenForAppend(std::move(segments), end_lsn, last_valid, tail_zero));
  return wal;
}

Status Wal::OpenForAppend(std::vector<Segment> segments, uint64_t end_lsn, uint64_t last_valid_in_last,
                          bool tail_zero) {
  if (segments.empty()) {
    Segment seg{end_lsn, dir_ + "/" + SegmentName(end_lsn)};
    fd_ = ::open(seg.path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return ErrnoStatus("cannot create WAL segment", seg.path, errno);
    SHALE_RETURN_IF_ERROR(WriteZeros(fd_, seg.path, 0, options_.segment_bytes));
    SHALE_RETURN_IF_ERROR(SyncDir(dir_));
    segments.push_back(seg);
    segment_size_ = 0;
  } else {
    const Segment& seg = segments.back();
    fd_ = ::open(seg.path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) return ErrnoStatus("cannot open WAL segment", seg.path, errno);
    struct stat st;
    if (::fstat(fd_, &st) != 0) return ErrnoStatus("cannot stat WAL segment", seg.path, errno);
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    if (!tail_zero || size < options_.segment_bytes) {
      // Bytes of a torn record after the log's end are zeroed, not cut
      // off: a stale record left there could otherwise pass its checksum
      // (it covers the LSN, which is the same place again) once new
      // records end before it. Zeroing to the preallocated size keeps the
      // file's size fixed.
      SHALE_RETURN_IF_ERROR(WriteZeros(fd_, seg.path, last_valid_in_last,
                                       std::max<uint64_t>(size, options_.segment_bytes)));
    }
    segment_size_ = last_valid_in_last;
  }
  segments_ = std::move(segments);
  next_lsn_ = durable_lsn_ = buffer_lsn_ = end_lsn;
  if (options_.sync_mode == WalSyncMode::kAsync) flusher_ = std::thread([this] { FlusherLoop(); });
  return Status::OK();
}

Wal::~Wal() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  flush_cv_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  Status s = Sync();
  if (!s.ok()) log::Error("WAL {}: flush at close failed: {}", dir_, s.ToString());
  if (fd_ >= 0) ::close(fd_);
}

Status Wal::WriteAndSync(const std::string& data, uint64_t lsn) {
  profile::ModuleScope profile_scope(profile::Module::kWal);
  std::string path;
  {
    std::lock_guard<std::mutex> l(mu_);
    path = segments_.back().path;
  }
  if (TEST_KillPointDue("wal-write")) {
    // What a SIGKILL in the middle of a large write(2) leaves: a prefix.
    (void)WriteAllAt(fd_, path, data.data(), data.size() / 2, segment_size_);
    TEST_KillNow();
  }
  SHALE_RETURN_IF_ERROR(WriteAllAt(fd_, path, data.data(), data.size(), segment_size_));
  SHALE_RETURN_IF_ERROR(SyncFile(fd_, path));
  syncs_.fetch_add(1, std::memory_order_relaxed);
  critical_path::Node().wal_syncs.fetch_add(1, std::memory_order_relaxed);
  segment_size_ += data.size();
  if (segment_size_ >= options_.segment_bytes) {
    const uint64_t next = lsn + data.size();
    Segment seg{next, dir_ + "/" + SegmentName(next)};
    int fd = ::open(seg.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoStatus("cannot create WAL segment", seg.path, errno);
    Status s = WriteZeros(fd, seg.path, 0, options_.segment_bytes);
    if (s.ok()) s = SyncDir(dir_);
    if (!s.ok()) {
      ::close(fd);
      return s;
    }
    ::close(fd_);
    fd_ = fd;
    segment_size_ = 0;
    {
      std::lock_guard<std::mutex> l(mu_);
      segments_.push_back(seg);
    }
    TEST_KillPoint("wal-roll");
  }
  return Status::OK();
}

void Wal::FlushLocked(std::unique_lock<std::mutex>& l) {
  flushing_ = true;
  std::string data;
  data.swap(buffer_);
  const uint64_t start = buffer_lsn_;
  buffer_lsn_ += data.size();
  // Buffer space freed: wakes appenders waiting for room (asynchronous
  // mode only; durable appenders wait for the sync below).
  if (options_.sync_mode == WalSyncMode::kAsync) cv_.notify_all();
  l.unlock();
  Status s = WriteAndSync(data, start);
  l.lock();
  flushing_ = false;
  if (s.ok()) {
    durable_lsn_ = start + data.size();
  } else if (error_.ok()) {
    log::Error("WAL {}: {}; refusing further writes", dir_, s.message());
    error_ = s;
  }
  // Wake only whom this flush concerns: every waiter it made durable (all
  // of them on an error), and the first one still waiting, which leads
  // the next flush. The others sleep on: each wake-up is a context switch.
  size_t covered = 0;
  while (covered < waiters_.size() && (waiters_[covered]->end <= durable_lsn_ || !error_.ok())) ++covered;
  const size_t wake = std::min(waiters_.size(), covered + 1);
  std::vector<Waiter*> woken(waiters_.begin(), waiters_.begin() + static_cast<std::ptrdiff_t>(wake));
  waiters_.erase(waiters_.begin(), waiters_.begin() + static_cast<std::ptrdiff_t>(wake));
  const bool async = options_.sync_mode == WalSyncMode::kAsync;
  l.unlock();
  for (Waiter* w : woken) {
    std::lock_guard<std::mutex> g(w->mu);
    w->woken = true;
    w->cv.notify_one();
  }
  if (async) cv_.notify_all();
  l.lock();
}

Status Wal::WaitDurable(std::unique_lock<std::mutex>& l, uint64_t end) {
  // Invariant: `self` is in waiters_ exactly while this thread sleeps
  // below (a leader takes a waiter off the list when it wakes it).
  Waiter self;
  self.end = end;
  // This thread waits for a sync (its own or the one a group shares).
  if (durable_lsn_ < end) critical_path::CountSyncedWrite();
  while (durable_lsn_ < end && error_.ok()) {
    if (!flushing_) {
      FlushLocked(l);
      continue;
    }
    // The running flush wakes this waiter if it covers `end`, or if this
    // is the first waiter it does not cover; that one's flush takes the
    // whole buffer, this record included. Records are appended in LSN
    // order, so the list stays sorted by `end`.
    self.woken = false;  // no leader holds `self` now: it is on no list
    auto at = std::upper_bound(waiters_.begin(), waiters_.end(), end,
                               [](uint64_t e, const Waiter* w) { return e < w->end; });
    waiters_.insert(at, &self);
    l.unlock();
    {
      std::unique_lock<std::mutex> g(self.mu);
      self.cv.wait(g, [&] { return self.woken; });
    }
    l.lock();
  }
  return error_;
}

Result<uint64_t> Wal::Append(WalRecordType type, std::string_view payload) {
  return AppendRecord(type, payload, /*wait=*/true);
}

Result<uint64_t> Wal::AppendDeferred(WalRecordType type, std::string_view payload) {
  return AppendRecord(type, payload, /*wait=*/false);
}

Result<uint64_t> Wal::AppendRecord(WalRecordType type, std::string_view payload, bool wait) {
  profile::ModuleScope profile_scope(profile::Module::kWal);
  std::unique_lock<std::mutex> l(mu_);
  if (!error_.ok()) return error_;
  if (options_.sync_mode == WalSyncMode::kAsync) {
    const size_t need = kHeaderSize + payload.size();
    if (!buffer_.empty() && buffer_.size() + need > options_.buffer_bytes) {
      auto t0 = std::chrono::steady_clock::now();
      while (!buffer_.empty() && buffer_.size() + need > options_.buffer_bytes && error_.ok() && !stop_) {
        flush_cv_.notify_one();
        cv_.wait(l);
      }
      auto waited = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
      buffer_wait_us_.fetch_add(static_cast<uint64_t>(waited.count()), std::memory_order_relaxed);
      if (!error_.ok()) return error_;
    }
  }
  EncodeRecord(next_lsn_, type, payload, &buffer_);
  next_lsn_ += kHeaderSize + payload.size();
  const uint64_t end = next_lsn_;
  records_.fetch_add(1, std::memory_order_relaxed);
  if (options_.sync_mode == WalSyncMode::kAsync) {
    if (buffer_.size() >= options_.buffer_bytes / 2) flush_cv_.notify_one();
    return end;
  }
  if (wait) SHALE_RETURN_IF_ERROR(WaitDurable(l, end));
  return end;
}

Status Wal::Sync() {
  profile::ModuleScope profile_scope(profile::Module::kWal);
  std::unique_lock<std::mutex> l(mu_);
  return WaitDurable(l, next_lsn_);
}

Status Wal::SyncTo(uint64_t lsn) {
  profile::ModuleScope profile_scope(profile::Module::kWal);
  std::unique_lock<std::mutex> l(mu_);
  return WaitDurable(l, std::min(lsn, next_lsn_));
}

void Wal::FlusherLoop() {
  profile::SetThreadModule(profile::Module::kWal);
  std::unique_lock<std::mutex> l(mu_);
  const auto interval = std::chrono::milliseconds(std::max<uint32_t>(1, options_.flush_interval_ms));
  while (!stop_) {
    flush_cv_.wait_for(l, interval);
    if (!buffer_.empty() && !flushing_ && error_.ok()) FlushLocked(l);
  }
}

uint64_t Wal::next_lsn() const {
  std::lock_guard<std::mutex> l(mu_);
  return next_lsn_;
}

Status Wal::RecycleBefore(uint64_t lsn) {
  std::vector<std::string> doomed;
  {
    std::lock_guard<std::mutex> l(mu_);
    while (segments_.size() > 1 && segments_[1].start_lsn <= lsn) {
      doomed.push_back(segments_.front().path);
      segments_.erase(segments_.begin());
    }
  }
  for (const std::string& path : doomed) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoStatus("cannot delete WAL segment", path, errno);
  }
  if (!doomed.empty()) SHALE_RETURN_IF_ERROR(SyncDir(dir_));
  return Status::OK();
}

WalStats Wal::stats() const {
  WalStats s;
  s.appended_records = records_.load(std::memory_order_relaxed);
  s.syncs = syncs_.load(std::memory_order_relaxed);
  s.buffer_wait_micros = buffer_wait_micros();
  std::lock_guard<std::mutex> l(mu_);
  s.durable_lsn = durable_lsn_;
  s.next_lsn = next_lsn_;
  return s;
}

}  // namespace shale::storage
