// Placement of new slices: how a new representation's hash space is cut into
// slices and which nodes hold each slice's replicas. The rebalancer's later
// tasks (reprotect, split, move, rerank) change placements; this is where
// they begin.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shale::rebalancer {

struct SlicePlacement {
  uint64_t hash_begin = 0;  // inclusive
  uint64_t hash_end = 0;    // inclusive
  std::vector<std::string> replicas;  // distinct nodes; the first one ranks
};

// Cuts [0, 2^64) into `count` contiguous ranges of equal width (the last
// takes the remainder) and gives each min(replicas, nodes.size()) replicas on
// distinct nodes, rotating the first (ranking) replica across the nodes so
// reads and writes spread evenly.
// REQUIRES: count >= 1, replicas >= 1, !nodes.empty().
std::vector<SlicePlacement> PlaceNewRepresentation(uint32_t count, uint32_t replicas,
                                                   const std::vector<std::string>& nodes);

}  // namespace shale::rebalancer
