// Hotlist: a column's most frequent values with their counts, in at most
// `capacity` counters (the Misra–Gries summary, weighted, with the merge of
// Agarwal et al., "Mergeable Summaries", 2012). For the selectivity of an
// equality on a skewed column: a value in the hotlist has its own count;
// any other is at most error() (docs/planner.md "Statistics").
//
// Contract:
//  - After values with total count total() were added, Count(v) <=
//    (true count of v) <= Count(v) + error(), and error() <= total() /
//    (capacity + 1): every value more frequent than that is listed.
//  - Merge of two summaries (slices, nodes) keeps the same guarantee for
//    the union.
//  - Remove(v) for a deleted value lowers its counter when it is listed
//    (never below 0) and total(); an unlisted value's delete changes only
//    total(). The bounds then hold for the rows that remain only
//    approximately (the owner rebuilds the summary after many deletes).
//  - Serialize/Parse round-trip the summary exactly (format version 1).
//
// Thread-safety: none.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "shale/status.h"

namespace shale::planner::stats {

class Hotlist {
 public:
  static constexpr uint32_t kDefaultCapacity = 64;
  explicit Hotlist(uint32_t capacity = kDefaultCapacity);

  void Add(std::string_view value, uint64_t count = 1);
  void Remove(std::string_view value, uint64_t count = 1);
  void Merge(const Hotlist& other);

  uint64_t Count(std::string_view value) const;
  uint64_t error() const { return error_; }
  uint64_t total() const { return total_; }
  uint32_t capacity() const { return capacity_; }
  // How many values are listed (at most capacity()).
  size_t listed() const { return counters_.size(); }
  // The listed values, most frequent first (ties in value order).
  std::vector<std::pair<std::string, uint64_t>> Top() const;

  std::string Serialize() const;
  // InvalidArgument for bytes that are not a serialized summary.
  static Result<Hotlist> Parse(std::string_view bytes);

 private:
  // While more than capacity_ values are listed: subtracts the
  // (capacity_ + 1)-th largest count from every counter, drops those at 0,
  // and adds it to error_.
  void Reduce();

  uint32_t capacity_;
  std::unordered_map<std::string, uint64_t> counters_;
  uint64_t error_ = 0;
  uint64_t total_ = 0;
};

}  // namespace shale::planner::stats
