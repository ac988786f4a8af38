// The memory allocator's own figures (jemalloc, which shaled links:
// src/shaled/allocator.cc), for SHOW STATUS: what the heap holds against
// what the process keeps resident for it. In a binary without jemalloc
// (the unit tests) `available` is false and every figure 0.
#pragma once

#include <cstdint>

namespace shale {

struct AllocatorStats {
  bool available = false;
  uint64_t allocated = 0;  // bytes the program has allocated and not freed
  uint64_t active = 0;     // bytes in pages holding allocations
  uint64_t metadata = 0;   // the allocator's own structures
  uint64_t resident = 0;   // bytes of the allocator's pages in memory (heap, metadata, cached free pages)
  uint64_t retained = 0;   // address space kept for reuse, not resident
};

// Refreshes and reads jemalloc's statistics (mallctl "epoch", "stats.*").
// Thread-safe; costs a few microseconds.
AllocatorStats ReadAllocatorStats();

}  // namespace shale
