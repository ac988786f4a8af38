// Small POSIX file helpers shared by the storage engines: whole-buffer reads
// and writes that retry short transfers and EINTR, directory sync, and
// errno-to-Status conversion whose messages name the file.
//
// Thread-safety: stateless functions; the caller owns the descriptors.
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

// fsyncs directory `dir`, making creations, renames and unlinks in it durable.
Status SyncDir(const std::string& dir);

}  // namespace shale::storage
