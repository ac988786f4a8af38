#include "storage/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace shale::storage {

namespace {
std::atomic<SyncObserver*> g_sync_observer{nullptr};
}  // namespace

void TEST_SetSyncObserver(SyncObserver* observer) { g_sync_observer.store(observer); }

Status SyncFile(int fd, const std::string& path) {
  if (::fdatasync(fd) != 0) return ErrnoStatus("cannot sync", path, errno);
  if (SyncObserver* o = g_sync_observer.load(std::memory_order_relaxed)) o->FileSynced(fd, path);
  return Status::OK();
}

Status ErrnoStatus(std::string_view what, const std::string& path, int err) {
  return Status::IOError(fmt::format("{} {}: {}", what, path, std::strerror(err)));
}

Status WriteAllAt(int fd, const std::string& path, const char* data, size_t n, uint64_t offset) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd, data, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("cannot write", path, errno);
    }
    data += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return Status::OK();
}

Status ReadAll(int fd, const std::string& path, std::string* out) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoStatus("cannot stat", path, errno);
  out->resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out->size()) {
    ssize_t r = ::pread(fd, out->data() + done, out->size() - done, static_cast<off_t>(done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("cannot read", path, errno);
    }
    if (r == 0) break;  // the file shrank under us; keep what was there
    done += static_cast<size_t>(r);
  }
  out->resize(done);
  return Status::OK();
}

Status SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("cannot open directory", dir, errno);
  Status s;
  if (::fsync(fd) != 0) s = ErrnoStatus("cannot sync directory", dir, errno);
  ::close(fd);
  if (SyncObserver* o = g_sync_observer.load(std::memory_order_relaxed); s.ok() && o != nullptr) o->DirSynced(dir);
  return s;
}

}  // namespace shale::storage
