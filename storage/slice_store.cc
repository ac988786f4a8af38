// The directory-backed SliceStore: one LogSlice per `slice-<id>.log` file in
// the store directory (docs/formats/slice-log.md), plus a `LOCK` file held
// with flock(2) so two processes never open the same store.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "src/common/log.h"
#include "storage/file_io.h"
#include "storage/log_slice.h"
#include "storage/slice.h"

namespace shale::storage {
namespace {

// The id of a slice log named exactly "slice-<decimal id>.log", as LogPath
// writes it (no sign, no leading zeros).
std::optional<SliceId> ParseLogName(std::string_view name) {
  constexpr std::string_view kPrefix = "slice-";
  constexpr std::string_view kSuffix = ".log";
  if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) ||
      !name.ends_with(kSuffix)) {
    return std::nullopt;
  }
  std::string_view digits = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  if (digits.size() > 1 && digits[0] == '0') return std::nullopt;
  SliceId id = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) return std::nullopt;
  return id;
}

class LogSliceStore final : public SliceStore {
 public:
  LogSliceStore(std::string dir, int lock_fd) : dir_(std::move(dir)), lock_fd_(lock_fd) {}
  ~LogSliceStore() override {
    slices_.clear();
    ::close(lock_fd_);  // releases the flock
  }

  Status RecoverAll() {
    std::error_code ec;
    std::vector<SliceId> ids;
    for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
      std::string name = entry.path().filename().string();
      if (auto id = ParseLogName(name)) ids.push_back(*id);
    }
    if (ec) return Status::IOError(fmt::format("cannot list slice store {}: {}", dir_, ec.message()));
    for (SliceId id : ids) {
      SHALE_ASSIGN_OR_RETURN(std::unique_ptr<LogSlice> slice, LogSlice::Recover(dir_, id));
      slices_.emplace(id, std::move(slice));
    }
    log::Info("slice store {}: recovered {} slices", dir_, slices_.size());
    return Status::OK();
  }

  Result<Slice*> CreateSlice(SliceId id) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (slices_.count(id) != 0) {
      return Status::InvalidArgument(fmt::format("slice {} already exists in {}", id, dir_));
    }
    SHALE_ASSIGN_OR_RETURN(std::unique_ptr<LogSlice> slice, LogSlice::Create(dir_, id));
    Slice* raw = slice.get();
    slices_.emplace(id, std::move(slice));
    return raw;
  }

  Result<Slice*> GetSlice(SliceId id) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slices_.find(id);
    if (it == slices_.end()) {
      return Status::NotFound(fmt::format("slice {} does not exist in {}", id, dir_));
    }
    return static_cast<Slice*>(it->second.get());
  }

  Status DropSlice(SliceId id) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slices_.find(id);
    if (it == slices_.end()) {
      return Status::NotFound(fmt::format("slice {} does not exist in {}", id, dir_));
    }
    std::string path = LogSlice::LogPath(dir_, id);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoStatus(fmt::format("slice {}: cannot delete log", id), path, errno);
    }
    slices_.erase(it);
    SHALE_RETURN_IF_ERROR(SyncDir(dir_));
    return Status::OK();
  }

  std::vector<SliceId> ListSlices() const override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<SliceId> ids;
    ids.reserve(slices_.size());
    for (const auto& [id, slice] : slices_) ids.push_back(id);
    return ids;
  }

 private:
  const std::string dir_;
  const int lock_fd_;
  mutable std::mutex mu_;
  std::map<SliceId, std::unique_ptr<LogSlice>> slices_;  // GUARDED_BY(mu_)
};

}  // namespace

Result<std::unique_ptr<SliceStore>> SliceStore::Open(const std::string& dir) {
  std::error_code ec;
  bool created = std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError(fmt::format("cannot create slice store {}: {}", dir, ec.message()));
  if (created) {
    // Make the new directory's own entry durable.
    std::filesystem::path path = std::filesystem::absolute(dir, ec).lexically_normal();
    if (!path.has_filename()) path = path.parent_path();  // "a/b/" names "a/b"
    if (!ec) SHALE_RETURN_IF_ERROR(SyncDir(path.parent_path().string()));
  }
  std::string lock_path = dir + "/LOCK";
  int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0) return ErrnoStatus("cannot open lock file", lock_path, errno);
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    ::close(lock_fd);
    if (err == EWOULDBLOCK) {
      return Status::Unavailable(fmt::format("slice store {} is already open (LOCK held)", dir));
    }
    return ErrnoStatus("cannot lock", lock_path, err);
  }
  auto store = std::make_unique<LogSliceStore>(dir, lock_fd);
  SHALE_RETURN_IF_ERROR(store->RecoverAll());
  return std::unique_ptr<SliceStore>(std::move(store));
}

}  // namespace shale::storage
