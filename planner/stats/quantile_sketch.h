// QuantileSketch: the distribution of a key column's values, for the
// selectivity of a range, in O(k log(n/k)) items (a KLL sketch: Karnin,
// Lang and Liberty 2016). Items are byte strings compared bytewise: the
// memcomparable key encoding (src/catalog key encoding), so any column type
// orders as its index does.
//
// Contract:
//  - Rank(v) estimates how many added items are < v (<= v when inclusive);
//    its error is a small fraction of count() (about 1.7% at k = 200 with
//    99% confidence; see planner/stats/stats_test.cc for the measured
//    bound). Quantile(q) returns an added item whose rank is close to
//    q * count().
//  - Merge combines two sketches (of slices, of nodes) into one of the
//    union, with the same error bound. Items cannot be removed (deletes
//    leave the sketch as it was; the owner rebuilds it).
//  - Deterministic: the compactions' coin flips come from a generator
//    seeded at construction (two equal sequences of calls give equal
//    sketches).
//  - Serialize/Parse round-trip the sketch exactly (format version 1).
//
// Thread-safety: none.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shale/status.h"

namespace shale::planner::stats {

class QuantileSketch {
 public:
  static constexpr uint32_t kDefaultK = 200;
  explicit QuantileSketch(uint32_t k = kDefaultK, uint64_t seed = 1);

  void Add(std::string_view value);
  void Merge(const QuantileSketch& other);

  uint64_t count() const { return count_; }
  // Items retained (the sketch's size).
  size_t retained() const;
  double Rank(std::string_view value, bool inclusive = false) const;
  // The estimated share of items in [low, high).
  double FractionBetween(std::string_view low, std::string_view high) const;
  // An item whose rank is about q * count(), q in [0, 1]; empty when the
  // sketch is.
  std::string Quantile(double q) const;

  std::string Serialize() const;
  // InvalidArgument for bytes that are not a serialized sketch.
  static Result<QuantileSketch> Parse(std::string_view bytes);

 private:
  // Capacity of level `level` (items of weight 2^level) when the sketch
  // has `levels` levels: k (2/3)^(levels - 1 - level), at least 2.
  size_t Capacity(size_t level, size_t levels) const;
  // Halves the lowest level over its capacity while the sketch holds more
  // than its total capacity.
  void Compress();
  uint64_t NextRandom();

  uint32_t k_;
  uint64_t random_;  // splitmix64 state
  uint64_t count_ = 0;
  std::vector<std::vector<std::string>> levels_;  // level h: items of weight 2^h
};

}  // namespace shale::planner::stats
