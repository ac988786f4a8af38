// DistinctSketch: an estimate of the number of distinct values seen, in a
// fixed 4 KiB (a HyperLogLog sketch: Flajolet et al. 2007, with Ertl's 2017
// "improved raw estimator", which needs no empirical bias tables and is
// unbiased from one value to 2^54). The planner's distinct counts of each
// key prefix of a representation (docs/planner.md "Statistics").
//
// Contract:
//  - Add(v) for every value (duplicates included); Estimate() is within a
//    few percent of the number of distinct values (relative standard error
//    1.04 / sqrt(4096) = 1.6%; exact for an empty sketch).
//  - Merge is a register-wise max: merging the sketches of disjoint or
//    overlapping parts (slices, nodes) gives exactly the sketch of their
//    union, in any order. Values cannot be removed (deletes leave a sketch
//    counting too many; the owner rebuilds it, docs/planner.md).
//  - The hash is StatsHash, not the distribution hash: a slice holds one
//    range of the distribution hash, whose leading bits would bias the
//    sketch.
//  - Serialize/Parse round-trip the sketch exactly (format version 1).
//
// Thread-safety: none (one writer; copy to read elsewhere).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "shale/status.h"

namespace shale::planner::stats {

// A 64-bit hash for sketches: the distribution hash (src/common/hash.h)
// mixed again with a different constant, so that values of one slice (one
// range of the distribution hash) spread over every bit.
uint64_t StatsHash(std::string_view value);

class DistinctSketch {
 public:
  static constexpr int kPrecision = 12;  // 2^12 registers
  static constexpr size_t kRegisters = size_t{1} << kPrecision;

  void Add(std::string_view value) { AddHash(StatsHash(value)); }
  void AddHash(uint64_t hash);
  void Merge(const DistinctSketch& other);
  double Estimate() const;
  bool empty() const;

  std::string Serialize() const;
  // InvalidArgument for bytes that are not a serialized sketch.
  static Result<DistinctSketch> Parse(std::string_view bytes);

  bool operator==(const DistinctSketch& other) const { return registers_ == other.registers_; }

 private:
  // Per register: 1 + the leading zeros of the hash's low 52 bits (0: no
  // value hashed to this register yet), at most 53.
  std::array<uint8_t, kRegisters> registers_{};
};

}  // namespace shale::planner::stats
