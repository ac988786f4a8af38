// Wal: the node-wide write-ahead log. Every change to the node's slices is a
// record appended here before (durable mode) or while (async mode) it is
// applied to the pages, so recovery can replay it over the last checkpoint.
// The log is a sequence of append-only segment files `wal-<start lsn, 16 hex
// digits>.log` in one directory; an LSN is a byte position in the logical
// stream (the first segment starts at LSN 0). Each record carries a CRC32C.
// Format: docs/formats/wal.md (this file and wal.cc implement it).
//
// Invariants:
//  1. Records are appended in LSN order and never rewritten; Append returns
//     the LSN one past the record's end.
//  2. Durable mode (WalSyncMode::kDurable): Append returns only once the
//     record and every record before it are fdatasync'ed. Concurrent
//     appenders share fsyncs (group commit): whoever finds no flush running
//     becomes the leader and writes and syncs everything buffered so far,
//     for all waiters at once.
//  3. Async mode (WalSyncMode::kAsync): Append returns once the record is in
//     the in-memory buffer; a background thread flushes the buffer at least
//     every `flush_interval_ms`. An appender blocks while the buffer holds
//     `buffer_bytes` or more, and the time spent blocked is added to
//     buffer_wait_micros().
//  4. After a failed write or sync the log refuses every further append (the
//     file's state is unknown): errors are sticky.
//  5. Open() cuts a torn tail (an incomplete or checksum-failing last
//     record of the last segment) off before appending; a bad record with
//     good records after it is Corruption.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "shale/status.h"

namespace shale::storage {

enum class WalSyncMode : uint8_t {
  kDurable = 0,  // acknowledge after fdatasync (group commit)
  kAsync = 1,    // acknowledge when buffered; flushed within flush_interval_ms
};

struct WalOptions {
  // See WalSyncMode. Default: kDurable.
  WalSyncMode sync_mode = WalSyncMode::kDurable;
  // Async mode: the longest a buffered record waits before it is written and
  // synced. Default: 10 ms.
  uint32_t flush_interval_ms = 10;
  // Async mode: appenders block while the buffer holds this many bytes.
  // Default: 4 MiB.
  size_t buffer_bytes = 4u << 20;
  // A segment that has grown past this size is closed and a new one started.
  // Default: 16 MiB.
  uint64_t segment_bytes = 16ull << 20;
};

// Record types, stored in every record header. DO NOT CHANGE values.
enum class WalRecordType : uint8_t {
  kBatch = 1,        // a multi-slice write batch (slice_store.cc encodes it)
  kCreateSlice = 2,  // u64 slice id
  kDropSlice = 3,    // u64 slice id
  kCheckpoint = 4,   // u64 checkpoint LSN: pages hold every record before it
  kLoadChunk = 5,    // a chunk of a slice being built, with its resume key (slice_store.cc)
  kSliceState = 6,   // new lifecycle states of slices (slice_store.cc)
};

struct WalStats {
  uint64_t appended_records = 0;
  uint64_t syncs = 0;               // fdatasync calls on segments
  uint64_t buffer_wait_micros = 0;  // async mode: time appenders waited for space
  uint64_t durable_lsn = 0;
  uint64_t next_lsn = 0;
};

class Wal {
 public:
  // Opens (creating if needed) the log in `dir`. Every complete record with
  // LSN >= `replay_from` is passed to `replay` in order before Open returns
  // (invariant 5 for the tail). An error from `replay` fails the open.
  using ReplayFn = std::function<Status(uint64_t lsn, WalRecordType type, std::string_view payload)>;
  static Result<std::unique_ptr<Wal>> Open(const std::string& dir, const WalOptions& options,
                                           uint64_t replay_from, const ReplayFn& replay);
  ~Wal();  // flushes what is buffered (errors are logged)
  Wal(const Wal&) = delete;
  Wal& operator=(const Wal&) = delete;

  // Appends one record; returns the LSN just past it (invariants 2 and 3).
  Result<uint64_t> Append(WalRecordType type, std::string_view payload);
  // Appends one record without waiting for it to be durable, in either
  // mode; returns the LSN just past it. It becomes durable with the next
  // group commit (any durable Append's flush, Sync, SyncTo; async mode: the
  // flusher). For a writer that keeps what it needs to redo the record
  // until SyncTo(its LSN) returned.
  Result<uint64_t> AppendDeferred(WalRecordType type, std::string_view payload);
  // Writes and syncs everything appended so far (both modes).
  Status Sync();
  // Returns once every record before `lsn` is durable: at once when it is
  // already, else it leads or joins a group commit.
  Status SyncTo(uint64_t lsn);
  // The LSN the next record will get.
  uint64_t next_lsn() const;
  // Deletes segments that hold only records before `lsn` (they are covered
  // by a checkpoint). The current segment is never deleted.
  Status RecycleBefore(uint64_t lsn);

  // Total time appenders spent blocked on a full buffer (async mode), in
  // microseconds. For SHOW STATUS as Shale_wal_buffer_wait_us.
  uint64_t buffer_wait_micros() const { return buffer_wait_us_.load(std::memory_order_relaxed); }
  WalStats stats() const;
  const std::string& dir() const { return dir_; }

  static std::string SegmentName(uint64_t start_lsn);

 private:
  struct Segment {
    uint64_t start_lsn;
    std::string path;
  };
  Wal(std::string dir, const WalOptions& options);
  // `tail_zero`: the last segment holds only zeros after last_valid_in_last.
  Status OpenForAppend(std::vector<Segment> segments, uint64_t end_lsn, uint64_t last_valid_in_last,
                       bool tail_zero);
  // Writes `data` (whole records starting at `lsn`) to the current segment
  // and syncs it; rolls to a new segment afterwards if it is full.
  // Called by one flusher at a time (flushing_), without mu_.
  Status WriteAndSync(const std::string& data, uint64_t lsn);
  // One appender waiting for its record to be durable (durable mode and
  // Sync), on the waiter's own stack. A leader wakes it under its own
  // mutex, after releasing mu_: the woken thread neither blocks on mu_
  // nor can return (and free the waiter) before the leader is done with it.
  struct Waiter {
    uint64_t end = 0;  // durable once durable_lsn_ >= end
    std::mutex mu;
    std::condition_variable cv;
    bool woken = false;  // GUARDED_BY(mu)
  };
  // Returns once everything before `end` is durable or the log failed:
  // flushes as the leader when no flush is running, else waits to be woken
  // by the leader whose sync covered `end` (or to lead the next group).
  // REQUIRES l holds mu_.
  Status WaitDurable(std::unique_lock<std::mutex>& l, uint64_t end);
  // Append and AppendDeferred: waits for durability when `wait`.
  Result<uint64_t> AppendRecord(WalRecordType type, std::string_view payload, bool wait);
  // Leader flush: writes and syncs the buffer, then wakes the waiters the
  // sync covered and the first one it did not (to lead the next flush).
  // REQUIRES l holds mu_ and !flushing_; returns with l held.
  void FlushLocked(std::unique_lock<std::mutex>& l);
  void FlusherLoop();

  const std::string dir_;
  const WalOptions options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;       // async mode: space freed or a flush ended
  std::vector<Waiter*> waiters_;     // GUARDED_BY(mu_): asleep, in LSN order
  std::condition_variable flush_cv_; // wakes the async flusher
  std::string buffer_;               // GUARDED_BY(mu_): records not yet taken by a flusher
  uint64_t buffer_lsn_ = 0;          // GUARDED_BY(mu_): LSN of buffer_[0]
  uint64_t next_lsn_ = 0;            // GUARDED_BY(mu_)
  uint64_t durable_lsn_ = 0;         // GUARDED_BY(mu_)
  bool flushing_ = false;            // GUARDED_BY(mu_)
  bool stop_ = false;                // GUARDED_BY(mu_)
  Status error_;                     // GUARDED_BY(mu_): sticky (invariant 4)
  std::vector<Segment> segments_;    // GUARDED_BY(mu_); last is current

  // Owned by the single flusher (flushing_ == true).
  int fd_ = -1;
  uint64_t segment_size_ = 0;

  std::atomic<uint64_t> buffer_wait_us_{0};
  std::atomic<uint64_t> records_{0};
  std::atomic<uint64_t> syncs_{0};
  std::thread flusher_;
};

}  // namespace shale::storage
