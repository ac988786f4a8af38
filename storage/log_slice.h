// LogSlice: the first Slice engine. The rows live in an ordered in-memory map;
// durability comes from an append-only log, `slice-<id>.log` in the store
// directory, holding one CRC32C-checksummed record per Write() batch. Opening
// a slice replays its log. The record format and the recovery rules (torn
// tail versus corruption) are specified in docs/formats/slice-log.md.
//
// Invariants (in addition to those of storage/slice.h):
//  1. A batch is appended and fdatasync'ed before it is applied to the map;
//     readers never see a row that is not durable.
//  2. The log replays to exactly the map: records are applied in file order,
//     and a compaction replaces the log only with a complete, synced file
//     holding the same rows (write temp, fsync, rename, fsync directory).
//  3. After an I/O error on the log the slice refuses further writes (the
//     log's state on disk is unknown); reads keep working.
//
// Thread-safety: all methods may be called concurrently. Writers serialize
// on write_mu_ (which also orders compaction); readers take map_mu_ shared.
// Lock order: write_mu_ before map_mu_.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>

#include "storage/slice.h"

namespace shale::storage {

struct LogSliceOptions {
  // Compaction rewrites the log once it is larger than this many bytes and
  // more than `compact_ratio` times the size of the live rows it replays to.
  // Default: 4 MiB.
  uint64_t compact_min_log_bytes = 4ull << 20;
  // Values below 2 are treated as 2. Default: 2.
  uint64_t compact_ratio = 2;
};

class LogSlice final : public Slice {
 public:
  // The log file of slice `id` in store directory `dir`.
  static std::string LogPath(const std::string& dir, SliceId id);

  // Creates a new, empty slice: fails if its log exists. Syncs the directory.
  static Result<std::unique_ptr<LogSlice>> Create(const std::string& dir, SliceId id,
                                                  const LogSliceOptions& options = {});
  // Opens an existing slice and replays its log. A torn last record is cut
  // off (with a warning); any other damage is Status::Corruption.
  static Result<std::unique_ptr<LogSlice>> Recover(const std::string& dir, SliceId id,
                                                   const LogSliceOptions& options = {});

  ~LogSlice() override;
  LogSlice(const LogSlice&) = delete;
  LogSlice& operator=(const LogSlice&) = delete;

  SliceId id() const override { return id_; }
  Status Get(std::string_view key, std::string* value) const override;
  Status Write(const WriteBatch& batch) override;
  std::unique_ptr<SliceIterator> NewIterator(const KeyRange& range) const override;
  SliceStats GetStats() const override;

  // Rewrites the log to hold only the live rows, now.
  Status Compact();

  // Size of the log file in bytes.
  uint64_t TEST_LogBytes() const;

 private:
  using RowMap = std::map<std::string, std::string, std::less<>>;

  LogSlice(std::string dir, SliceId id, const LogSliceOptions& options, int fd);

  // Reads the whole log and applies every good record; handles a torn tail.
  Status Replay();
  // Appends one record and syncs it. REQUIRES: write_mu_ held.
  Status AppendRecord(const std::string& record);
  void ApplyLocked(const WriteBatch& batch);  // REQUIRES: map_mu_ held exclusively
  bool ShouldCompact() const;                 // REQUIRES: write_mu_ held
  Status CompactLocked();                     // REQUIRES: write_mu_ held

  const std::string dir_;
  const SliceId id_;
  const std::string path_;
  const LogSliceOptions options_;

  mutable std::mutex write_mu_;
  int fd_;                  // GUARDED_BY(write_mu_); the open log (O_RDWR)
  uint64_t log_bytes_ = 0;  // GUARDED_BY(write_mu_); size of the log file
  Status write_error_;      // GUARDED_BY(write_mu_); sticky, see invariant 3

  // The fields below change only with both write_mu_ and map_mu_ (exclusive)
  // held, so holding either one is enough to read them.
  mutable std::shared_mutex map_mu_;
  RowMap rows_;
  uint64_t live_bytes_ = 0;  // sum of key + value sizes
  // The rows' size as log put ops: about what a compacted log holds, so the
  // compaction trigger cannot fire on its own output.
  uint64_t live_log_bytes_ = 0;
};

}  // namespace shale::storage
