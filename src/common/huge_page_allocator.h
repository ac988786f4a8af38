// An allocator for large arrays that are read at random (the lock table):
// an allocation of at least kHugePageMinBytes is mapped on its own, aligned
// to 2 MiB and marked MADV_HUGEPAGE, so the kernel may back it with
// transparent huge pages (Debian's default THP mode, "madvise", uses them
// only where asked). A probe then costs a cache miss rather than a cache
// and a TLB miss, and a table of 64 MiB faults in 32 pages instead of
// 16,384. Smaller allocations use operator new, aligned to 4 KiB (so
// either kind can be given back page by page with madvise). Without THP
// the mapping is ordinary pages and nothing else changes.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>

namespace shale {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;
inline constexpr size_t kHugePageMinBytes = size_t{4} << 20;
inline constexpr std::align_val_t kSmallPageAlign{4096};

template <typename T>
class HugePageAllocator {
 public:
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT: allocators convert implicitly

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePageMinBytes) return static_cast<T*>(::operator new(bytes, kSmallPageAlign));
    // Map one huge page more than needed and trim both ends to the 2 MiB
    // boundaries inside it.
    const size_t mapped = RoundUp(bytes) + kHugePageBytes;
    void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t start = reinterpret_cast<uintptr_t>(p);
    const uintptr_t aligned = (start + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
    if (aligned > start) ::munmap(p, aligned - start);
    const uintptr_t end = start + mapped;
    const uintptr_t used_end = aligned + RoundUp(bytes);
    if (end > used_end) ::munmap(reinterpret_cast<void*>(used_end), end - used_end);
    ::madvise(reinterpret_cast<void*>(aligned), RoundUp(bytes), MADV_HUGEPAGE);
    return reinterpret_cast<T*>(aligned);
  }

  void deallocate(T* p, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePageMinBytes) {
      ::operator delete(p, kSmallPageAlign);
      return;
    }
    ::munmap(p, RoundUp(bytes));
  }

  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }

 private:
  static size_t RoundUp(size_t bytes) { return (bytes + kHugePageBytes - 1) & ~(kHugePageBytes - 1); }
};

}  // namespace shale
