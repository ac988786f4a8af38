// PowerLossImage: what a power loss would leave of a store directory, for
// crash tests (test-only: include from *_test.cc files).
//
// The model is the strict POSIX one LevelDB's fault-injection test uses: a
// power loss keeps of every file exactly what it held at its last SyncFile
// (storage/file_io.h), and of every directory exactly the entries it held at
// its last SyncDir. A file whose entry was never synced is gone; an entry
// synced before any of its data holds an empty file. Writes, truncations,
// creations, renames and unlinks not followed by the matching sync are
// undone.
//
// As a SyncObserver (TEST_SetSyncObserver) it copies, after each sync, the
// synced file or the directory listing into `image_dir`, on disk, so the
// record survives the process: a test process that dies in `after_sync`
// leaves the image of a power loss at exactly that instant (nothing between
// two syncs changes what a power loss keeps). Materialize() then builds the
// surviving directory tree for recovery to open.
//
// Only files and directories below `root` are followed; `root` itself is
// taken as durable.
//
// Thread-safety: the observer methods may be called from any thread (one
// mutex); Materialize is a plain function.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include "shale/status.h"
#include "storage/file_io.h"

namespace shale::storage::testing {

class PowerLossImage : public SyncObserver {
 public:
  // `after_sync(n, path)` runs after the n-th sync (1-based) was recorded;
  // a test may end the process there.
  using AfterSync = std::function<void(uint64_t n, const std::string& path)>;

  PowerLossImage(const std::string& root, const std::string& image_dir, AfterSync after_sync = {})
      : root_(Normal(root)), image_dir_(image_dir), after_sync_(std::move(after_sync)) {
    std::filesystem::create_directories(image_dir_ + "/content");
    std::filesystem::create_directories(image_dir_ + "/dirs");
  }

  void FileSynced(int fd, const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    const std::string rel = Relative(path);
    if (!rel.empty()) {
      struct stat st;
      if (::fstat(fd, &st) == 0) {
        // The descriptor may be write-only: read the file through /proc.
        std::ifstream in(fmt::format("/proc/self/fd/{}", fd), std::ios::binary);
        std::ostringstream bytes;
        bytes << in.rdbuf();
        Put(fmt::format("content/{}", st.st_ino), bytes.str());
        Put(fmt::format("content/{}.name", st.st_ino), std::filesystem::path(rel).filename().string());
      }
    }
    Synced(path);
  }

  void DirSynced(const std::string& dir) override {
    std::lock_guard<std::mutex> l(mu_);
    const std::string rel = Relative(dir);
    if (!rel.empty()) {
      std::string listing;
      std::error_code ec;
      for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        struct stat st;
        if (::lstat(e.path().c_str(), &st) != 0) continue;
        listing += fmt::format("{}\t{}\t{}\n", e.path().filename().string(), st.st_ino,
                               S_ISDIR(st.st_mode) ? 'd' : 'f');
      }
      Put("dirs/" + Key(rel), listing);
    }
    Synced(dir);
  }

  uint64_t syncs() const {
    std::lock_guard<std::mutex> l(mu_);
    return syncs_;
  }

  // Builds at `out` (which must not exist) the tree below `root` that the
  // power loss recorded in `image_dir` leaves.
  static Status Materialize(const std::string& image_dir, const std::string& out) {
    return Build(image_dir, ".", out);
  }

 private:
  static std::string Normal(const std::string& p) {
    return std::filesystem::absolute(p).lexically_normal().string();
  }
  // "." for root, "a/b" below it, "" outside it.
  std::string Relative(const std::string& path) const {
    std::string rel = std::filesystem::path(Normal(path)).lexically_relative(root_).string();
    if (rel.empty() || rel.starts_with("..")) return "";
    return rel;
  }
  static std::string Key(const std::string& rel) {
    if (rel == ".") return "@root";
    std::string k;
    for (char c : rel) k += c == '/' ? '%' : c;
    return k;
  }
  void Put(const std::string& name, const std::string& bytes) {
    const std::string tmp = image_dir_ + "/" + name + ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    std::filesystem::rename(tmp, image_dir_ + "/" + name);
  }
  void Synced(const std::string& path) {
    const uint64_t n = ++syncs_;
    if (after_sync_) after_sync_(n, path);
  }
  static std::string Read(const std::string& path, bool* found) {
    std::ifstream in(path, std::ios::binary);
    *found = static_cast<bool>(in);
    std::ostringstream bytes;
    if (*found) bytes << in.rdbuf();
    return bytes.str();
  }
  static Status Build(const std::string& image_dir, const std::string& rel, const std::string& out) {
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (ec) return Status::IOError(fmt::format("cannot create {}: {}", out, ec.message()));
    bool found = false;
    std::istringstream listing(Read(image_dir + "/dirs/" + Key(rel), &found));
    std::string line;
    while (std::getline(listing, line)) {
      const size_t t1 = line.find('\t'), t2 = line.rfind('\t');
      const std::string name = line.substr(0, t1), ino = line.substr(t1 + 1, t2 - t1 - 1);
      const std::string sub = rel == "." ? name : rel + "/" + name;
      if (line.substr(t2 + 1) == "d") {
        SHALE_RETURN_IF_ERROR(Build(image_dir, sub, out + "/" + name));
        continue;
      }
      // The synced content of that inode, if it was synced under this name
      // (an inode number can be reused by a later file).
      bool has_name = false, has_bytes = false;
      std::string synced_name = Read(image_dir + "/content/" + ino + ".name", &has_name);
      std::string bytes = Read(image_dir + "/content/" + ino, &has_bytes);
      if (!has_name || synced_name != name) bytes.clear();
      std::ofstream f(out + "/" + name, std::ios::binary | std::ios::trunc);
      f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      if (!f) return Status::IOError(fmt::format("cannot write {}/{}", out, name));
    }
    return Status::OK();
  }

  const std::string root_;
  const std::string image_dir_;
  const AfterSync after_sync_;
  mutable std::mutex mu_;
  uint64_t syncs_ = 0;  // GUARDED_BY(mu_)
};

}  // namespace shale::storage::testing
