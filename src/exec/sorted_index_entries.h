// SortedIndexEntries: the entries of one slice of a secondary index being
// built (src/exec/index_backfill.cc), collected in any order into one byte
// arena, sorted once, and checked for UNIQUE duplicates by comparing
// neighbours. It replaces a std::map of string keys per slice: adding is an
// append, and the one sort compares fixed-size key prefixes first, so a
// 1M-row index build spends its time reading rows, not chasing tree nodes.
//
// An entry is (key, value, shown): `key` is the stored index key — the
// encoded index values (its first `values_size` bytes) followed by the
// encoded primary key, so keys are unique; `value` the stored value (the
// primary-key row); `shown` the index values as stored (an encoded row),
// kept only to name a duplicate in ER_DUP_ENTRY's message.
//
// Invariants:
//  1. After Sort(), entries [0, size()) are in memcmp order of their keys
//     (storage/slice.h invariant 3: a proper prefix first).
//  2. Two entries are duplicates when both were added as unique candidates
//     (a UNIQUE index, no NULL among the values) and their first
//     `values_size` key bytes are equal. Equal encoded values are adjacent
//     after Sort(): the value encoding is self-delimiting, so no other key
//     sorts between two keys that start with the same values.
//
// Thread-safety: none; one builder per slice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shale::exec {

class SortedIndexEntries {
 public:
  // Appends an entry. `order` is the entry's position in the scan that
  // produced it (over all slices of the index), so FirstDuplicate can name
  // the row a scan that checked as it went would have stopped at.
  // `unique_candidate`: the index is UNIQUE and the values hold no NULL.
  // REQUIRES: values_size <= key.size(); Sort() not called yet.
  void Add(std::string_view key, size_t values_size, bool unique_candidate, std::string_view value,
           std::string_view shown, uint64_t order);
  // Sorts the entries by key (invariant 1). Called once, after every Add.
  void Sort();

  size_t size() const { return refs_.size(); }
  bool empty() const { return refs_.empty(); }
  // REQUIRES: i < size(). The views stay valid while this object lives.
  std::string_view key(size_t i) const { return {arena_.data() + refs_[i].offset, refs_[i].key_size}; }
  std::string_view value(size_t i) const {
    return {arena_.data() + refs_[i].offset + refs_[i].key_size, refs_[i].value_size};
  }

  // After Sort(): the duplicate (invariant 2) with the smallest `order`
  // among the entries that have a duplicate of smaller `order` — the entry
  // at which checking the entries one by one in `order` would first have
  // found a repeat. Its `order` and `shown`; nullopt when there is none.
  struct Duplicate {
    uint64_t order = 0;
    std::string shown;
  };
  std::optional<Duplicate> FirstDuplicate() const;

 private:
  // kNotUnique in values_size: the entry is no unique candidate.
  static constexpr uint32_t kNotUnique = UINT32_MAX;
  struct Ref {
    uint64_t prefix;  // the key's first 8 bytes, big-endian, zero-padded: most comparisons end here
    uint64_t offset;  // into arena_: key, value, then shown
    uint64_t order;
    uint32_t key_size;
    uint32_t value_size;
    uint32_t shown_size;
    uint32_t values_size;  // or kNotUnique
  };
  std::string_view values(const Ref& r) const { return {arena_.data() + r.offset, r.values_size}; }

  std::string arena_;
  std::vector<Ref> refs_;
};

}  // namespace shale::exec
