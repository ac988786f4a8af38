#include "src/exec/memory_budget.h"

#include <algorithm>
#include <string>

#include "src/common/errors.h"

namespace shale::exec {

bool MemoryBudget::TryReserve(uint64_t bytes) {
  if (limit_ != 0 && used_ + bytes > limit_) return false;
  ForceReserve(bytes);
  return true;
}

void MemoryBudget::ForceReserve(uint64_t bytes) {
  used_ += bytes;
  peak_ = std::max(peak_, used_);
}

void MemoryBudget::Release(uint64_t bytes) { used_ -= std::min(bytes, used_); }

bool MemoryReservation::TryGrow(uint64_t bytes) {
  if (budget_ != nullptr && !budget_->TryReserve(bytes)) return false;
  held_ += bytes;
  return true;
}

void MemoryReservation::ForceGrow(uint64_t bytes) {
  if (budget_ != nullptr) budget_->ForceReserve(bytes);
  held_ += bytes;
}

Status MemoryReservation::Grow(uint64_t bytes, std::string_view table) {
  if (TryGrow(bytes)) return Status::OK();
  GlobalSpillStats().limit_errors.fetch_add(1, std::memory_order_relaxed);
  return SqlError(kRecordFileFull,
                  "The table '{}' is full (the statement needs more than shale_query_memory_limit = {} bytes)",
                  table, budget_->limit());
}

void MemoryReservation::ReleaseAll() {
  if (budget_ != nullptr) budget_->Release(held_);
  held_ = 0;
}

uint64_t RowBytes(const Row& row) {
  uint64_t bytes = sizeof(Row) + row.capacity() * sizeof(Value);
  for (const Value& v : row) {
    // Strings past the small-string buffer live on the heap.
    if (v.is_string() && v.as_string().size() >= sizeof(std::string)) bytes += v.as_string().capacity() + 1;
  }
  return bytes;
}

SpillStats& GlobalSpillStats() {
  static SpillStats stats;
  return stats;
}

}  // namespace shale::exec
