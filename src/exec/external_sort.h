// ExternalSorter: sorts rows by their sort keys within a MemoryBudget,
// spilling to disk when the rows do not fit (an external merge sort).
//
// Rows are added with their sort keys. While the reservation can grow, rows
// stay in memory; when it cannot (and at least kMinRunBytes are held), the
// rows in memory are stable-sorted and written as one sorted *run* to a
// temporary file in `spill_dir`, and the reservation is released. Finish()
// sorts what is left; if runs were written, it merges them (at most
// kMaxFanIn at a time, merging groups into longer runs first when there are
// more) with what is left in memory, and Next() returns the merged rows.
// While spilling, kMaxFanIn runs of one level are merged into one run of
// the next level (tiered, as an LSM tree), so few runs are open at a time
// and each row is rewritten about log_kMaxFanIn(runs) times.
// Ties keep insertion order (runs are merged by age), so the sort is stable
// as std::stable_sort.
//
// Run files (docs/formats/spill-run.md): created in `spill_dir` with
// O_EXCL and unlinked at once, so they vanish when the sorter is destroyed
// — after the last row, on an error, on KILL or when the client goes away —
// and even after a crash; the node clears `spill_dir` at start as well.
// A write or read failure answers ER_ERROR_ON_WRITE (1026).
//
// Thread-safety: none; one sorter per sort operator of one statement.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "shale/status.h"
#include "src/common/value.h"
#include "src/exec/memory_budget.h"

namespace shale::exec {

class ExternalSorter {
 public:
  // True if keys `a` sort before keys `b`.
  using Less = std::function<bool(const Row& a, const Row& b)>;

  // The least a sort keeps in memory before it may spill, even when the
  // budget is used up by other operators (so runs are never tiny).
  static constexpr uint64_t kMinRunBytes = 64 << 10;
  // Runs merged at once; each reader buffers kReadBuffer bytes.
  static constexpr size_t kMaxFanIn = 16;
  static constexpr size_t kReadBuffer = 64 << 10;

  // `budget` may be null (no limit: never spills). `spill_dir` is created
  // if missing.
  ExternalSorter(Less less, MemoryBudget* budget, std::string spill_dir);
  ~ExternalSorter();
  ExternalSorter(const ExternalSorter&) = delete;
  ExternalSorter& operator=(const ExternalSorter&) = delete;

  // REQUIRES: Finish() not called; every `keys` has the same size.
  Status Add(Row keys, Row row);
  Status Finish();
  // The rows in key order; false after the last.
  Result<bool> Next(Row* row);

  uint64_t runs_written() const { return runs_written_; }
  uint64_t merge_passes() const { return merge_passes_; }

 private:
  struct Entry {
    Row keys;
    Row row;
  };
  class Run;

  void SortMemory();
  Status SpillMemory();
  Status MergeTail(size_t count);
  Result<std::unique_ptr<Run>> MergeRuns(std::vector<std::unique_ptr<Run>> runs);
  Result<std::unique_ptr<Run>> NewRun();

  Less less_;
  std::string spill_dir_;
  MemoryReservation memory_;
  std::vector<Entry> entries_;  // in memory, in insertion order until sorted
  std::vector<std::unique_ptr<Run>> runs_;  // oldest first
  std::vector<int> levels_;                 // of each run: merged this many times
  size_t next_ = 0;  // without runs: the next entry to return
  // With runs: the merge of every run and the sorted entries.
  struct Merge;
  std::unique_ptr<Merge> merge_;
  uint64_t runs_written_ = 0;
  uint64_t merge_passes_ = 0;
};

}  // namespace shale::exec
