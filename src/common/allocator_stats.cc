#include "src/common/allocator_stats.h"

#include <cstddef>

// jemalloc's control interface, when jemalloc is linked in: a weak
// reference, null otherwise.
extern "C" int mallctl(const char* name, void* oldp, size_t* oldlenp, void* newp, size_t newlen)
    __attribute__((weak));

namespace shale {

AllocatorStats ReadAllocatorStats() {
  AllocatorStats s;
  if (mallctl == nullptr) return s;
  uint64_t epoch = 1;
  size_t len = sizeof(epoch);
  if (mallctl("epoch", &epoch, &len, &epoch, sizeof(epoch)) != 0) return s;
  auto read = [](const char* name, uint64_t* out) {
    size_t value = 0;
    size_t n = sizeof(value);
    if (mallctl(name, &value, &n, nullptr, 0) != 0) return false;
    *out = value;
    return true;
  };
  s.available = read("stats.allocated", &s.allocated) && read("stats.active", &s.active) &&
                read("stats.metadata", &s.metadata) && read("stats.resident", &s.resident) &&
                read("stats.retained", &s.retained);
  return s;
}

}  // namespace shale
