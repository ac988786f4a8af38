// MemoryBudget: how many bytes of buffered rows one statement's operators
// may hold (the session variable `shale_query_memory_limit`, default from
// shaled's --query-memory-limit-mb; docs/sql-compatibility.md "Memory
// limit").
//
// Every operator that buffers rows — sort, the build side of a join, hash
// aggregation, DISTINCT (and so UNION DISTINCT), a materialized subquery —
// holds a MemoryReservation on the statement's budget and grows it by the
// approximate size of each row it keeps (RowBytes). When a reservation
// cannot grow, a sort spills a sorted run to disk (external_sort.h) and
// starts again with nothing held; the other operators fail the statement
// with ER_RECORD_FILE_FULL (1114, "The table '#sql-...' is full", as MySQL
// answers for an in-memory temporary table over its limit). The sizes are
// estimates of the rows' heap footprint, not allocator-exact, so the memory
// a statement uses may pass the limit by a bounded amount (one row, plus a
// sort's minimum run and merge buffers).
//
// Key invariants:
//  1. used() == the sum of the held() of the live reservations on the budget.
//  2. A reservation releases everything it holds when destroyed, so an
//     operator torn down by an error, KILL or a closed connection gives its
//     bytes back.
//
// Thread-safety: a budget belongs to one statement, whose plan runs on one
// thread; the spill counters are process-wide atomics.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "shale/status.h"
#include "src/common/errors.h"
#include "src/common/value.h"

namespace shale::exec {

// MySQL errors of the memory limit and spill files (SQLSTATEs in
// src/common/errors.cc).
inline constexpr ErrorCode kErrorOnWrite = static_cast<ErrorCode>(1026);     // ER_ERROR_ON_WRITE
inline constexpr ErrorCode kRecordFileFull = static_cast<ErrorCode>(1114);   // ER_RECORD_FILE_FULL

class MemoryBudget {
 public:
  // `limit` in bytes; 0 means no limit.
  explicit MemoryBudget(uint64_t limit) : limit_(limit) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Takes `bytes` if used() + bytes stays within the limit.
  bool TryReserve(uint64_t bytes);
  // Takes `bytes` even past the limit (bounded overshoots, e.g. a sort's
  // minimum run).
  void ForceReserve(uint64_t bytes);
  void Release(uint64_t bytes);

  uint64_t limit() const { return limit_; }
  uint64_t used() const { return used_; }
  uint64_t peak() const { return peak_; }

 private:
  const uint64_t limit_;
  uint64_t used_ = 0;
  uint64_t peak_ = 0;
};

// The part of a budget one operator holds. A null budget is unlimited.
class MemoryReservation {
 public:
  explicit MemoryReservation(MemoryBudget* budget) : budget_(budget) {}
  ~MemoryReservation() { ReleaseAll(); }
  MemoryReservation(const MemoryReservation&) = delete;
  MemoryReservation& operator=(const MemoryReservation&) = delete;

  bool TryGrow(uint64_t bytes);
  void ForceGrow(uint64_t bytes);
  // Grows by `bytes` or answers ER_RECORD_FILE_FULL (1114) naming the
  // operator's temporary table `table` (e.g. "#sql-hash-join").
  Status Grow(uint64_t bytes, std::string_view table);
  void ReleaseAll();
  uint64_t held() const { return held_; }

 private:
  MemoryBudget* budget_;
  uint64_t held_ = 0;
};

// The approximate heap footprint of a buffered row: the vector, its values
// and the bytes of their strings.
uint64_t RowBytes(const Row& row);

// Spilling since the process started (SHOW GLOBAL STATUS: Sort_merge_passes,
// Shale_sort_spill_runs, Shale_sort_spill_bytes, Shale_memory_limit_errors).
struct SpillStats {
  std::atomic<uint64_t> sort_runs{0};        // sorted runs written to disk
  std::atomic<uint64_t> merge_passes{0};     // merges of runs (MySQL's Sort_merge_passes)
  std::atomic<uint64_t> bytes_written{0};    // bytes of runs written
  std::atomic<uint64_t> limit_errors{0};     // statements stopped with 1114
};
SpillStats& GlobalSpillStats();

}  // namespace shale::exec
