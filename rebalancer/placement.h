// Placement of new slices: how a new representation's hash space is cut into
// slices and which nodes hold each slice's replicas. The rebalancer's later
// tasks (reprotect, split, move, rerank) change placements; this is where
// they begin.
//
// New replicas go where the cluster is emptiest: each slice's replicas are
// put on the nodes holding the fewest replicas so far (counting every
// table's serving and building replicas, and the slices placed before it in
// the same call), so the per-node replica counts stay within one of each
// other — the planner's notion of "even" (planner.h, rebalance) — and a
// freshly created table gives the rebalancer nothing to move. Among a
// slice's replicas the one on the node ranking the fewest slices ranks, so
// ranking replicas spread too (within two of each other: replica counts
// come first).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shale::rebalancer {

struct SlicePlacement {
  uint64_t hash_begin = 0;  // inclusive
  uint64_t hash_end = 0;    // inclusive
  std::vector<std::string> replicas;  // distinct nodes; the first one ranks
};

// What each node already holds. Nodes missing from the maps hold nothing.
struct NodeLoad {
  std::map<std::string, uint32_t> replicas;  // serving + building replicas
  std::map<std::string, uint32_t> ranking;   // slices whose first replica it is
  // Counts one more slice placed on `replicas` (the first ranks).
  void Add(const std::vector<std::string>& replicas);
};

// Cuts [0, 2^64) into `count` contiguous ranges of equal width (the last
// takes the remainder) and gives each min(replicas, nodes.size()) replicas on
// distinct nodes of `nodes`: the ones with the fewest replicas in *load
// (ties: fewest ranking slices, then a rotation, so equal loads spread the
// ranking replicas), the one ranking the fewest slices first. *load grows
// by what is placed, so the next representation of the same statement sees
// it. `load` may be null (an empty cluster).
// REQUIRES: count >= 1, replicas >= 1, !nodes.empty().
std::vector<SlicePlacement> PlaceNewRepresentation(uint32_t count, uint32_t replicas,
                                                   const std::vector<std::string>& nodes,
                                                   NodeLoad* load = nullptr);

}  // namespace shale::rebalancer
