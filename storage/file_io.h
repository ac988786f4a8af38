// Small POSIX file helpers shared by the storage engines: whole-buffer reads
// and writes that retry short transfers and EINTR, file and directory syncs,
// and errno-to-Status conversion whose messages name the file.
//
// Every fdatasync/fsync of the slice store goes through SyncFile or SyncDir,
// so a test can watch exactly what a power loss would keep
// (TEST_SetSyncObserver; storage/testing/power_loss.h builds the surviving
// directory from it).
//
// Thread-safety: stateless functions (the observer is a process-wide test
// hook, set before the files are used); the caller owns the descriptors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "shale/status.h"

namespace shale::storage {

// Status::IOError "<what> <path>: <strerror(err)>".
Status ErrnoStatus(std::string_view what, const std::string& path, int err);

// Writes all of data[0, n) at `offset`.
Status WriteAllAt(int fd, const std::string& path, const char* data, size_t n, uint64_t offset);

// Reads the whole file behind `fd` into `*out`.
Status ReadAll(int fd, const std::string& path, std::string* out);

// fdatasyncs `fd` (the file at `path`): its data and size are durable.
Status SyncFile(int fd, const std::string& path);

// fsyncs directory `dir`, making creations, renames and unlinks in it durable.
Status SyncDir(const std::string& dir);

// Test hook: told after every successful SyncFile / SyncDir, in the thread
// that synced. A power loss keeps of each file what it held at its last
// SyncFile, and of each directory the entries it held at its last SyncDir.
class SyncObserver {
 public:
  virtual ~SyncObserver() = default;
  virtual void FileSynced(int fd, const std::string& path) = 0;
  virtual void DirSynced(const std::string& dir) = 0;
};
// Installs `observer` (nullptr: none, the default). REQUIRES: no file is
// being synced meanwhile.
void TEST_SetSyncObserver(SyncObserver* observer);

}  // namespace shale::storage
