#include "src/exec/sorted_index_entries.h"

#include <algorithm>
#include <cstring>

namespace shale::exec {

namespace {

// The first 8 bytes of `key` as a big-endian integer, zero-padded: a
// different prefix orders two keys as memcmp does (a shorter key padded
// with zeros compares below any longer key it is a proper prefix of, or
// equal, and equal prefixes fall back to the full comparison).
uint64_t KeyPrefix(std::string_view key) {
  uint64_t p = 0;
  const size_t n = std::min<size_t>(key.size(), 8);
  for (size_t i = 0; i < n; ++i) p |= static_cast<uint64_t>(static_cast<uint8_t>(key[i])) << (56 - 8 * i);
  return p;
}

}  // namespace

void SortedIndexEntries::Add(std::string_view key, size_t values_size, bool unique_candidate, std::string_view value,
                             std::string_view shown, uint64_t order) {
  Ref r;
  r.prefix = KeyPrefix(key);
  r.offset = arena_.size();
  r.order = order;
  r.key_size = static_cast<uint32_t>(key.size());
  r.value_size = static_cast<uint32_t>(value.size());
  r.shown_size = unique_candidate ? static_cast<uint32_t>(shown.size()) : 0;
  r.values_size = unique_candidate ? static_cast<uint32_t>(values_size) : kNotUnique;
  arena_.append(key);
  arena_.append(value);
  if (unique_candidate) arena_.append(shown);
  refs_.push_back(r);
}

void SortedIndexEntries::Sort() {
  const char* base = arena_.data();
  std::sort(refs_.begin(), refs_.end(), [base](const Ref& a, const Ref& b) {
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    return std::string_view(base + a.offset, a.key_size) < std::string_view(base + b.offset, b.key_size);
  });
}

std::optional<SortedIndexEntries::Duplicate> SortedIndexEntries::FirstDuplicate() const {
  const Ref* best = nullptr;
  size_t i = 0;
  while (i < refs_.size()) {
    if (refs_[i].values_size == kNotUnique) {
      ++i;
      continue;
    }
    // The group of adjacent unique candidates with these values (invariant 2):
    // its second smallest order is where a one-by-one check fails.
    const std::string_view v = values(refs_[i]);
    const Ref* first = &refs_[i];
    const Ref* second = nullptr;
    size_t j = i + 1;
    for (; j < refs_.size() && refs_[j].values_size == first->values_size && values(refs_[j]) == v; ++j) {
      const Ref* r = &refs_[j];
      if (r->order < first->order) {
        second = first;
        first = r;
      } else if (second == nullptr || r->order < second->order) {
        second = r;
      }
    }
    if (second != nullptr && (best == nullptr || second->order < best->order)) best = second;
    i = j;
  }
  if (best == nullptr) return std::nullopt;
  Duplicate d;
  d.order = best->order;
  d.shown.assign(arena_.data() + best->offset + best->key_size + best->value_size, best->shown_size);
  return d;
}

}  // namespace shale::exec
