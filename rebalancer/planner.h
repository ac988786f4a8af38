// Planner: what the rebalancer does next, as a pure function of the slice
// map and the live members (rebalancer/rebalancer.h runs it on the metadata
// leader). Two kinds of task:
//
//  - reprotect: a slice with fewer serving + building replicas than it
//    wants (REPLICAS=n capped at the live member count) gets a new building
//    replica on a live node without one, copied from a serving replica;
//  - rebalance: when no slice is under-protected and nothing is copying,
//    and the replica counts of the live nodes differ by more than one, a
//    replica moves from the most loaded node to the least loaded one (the
//    target is added as a building replica; the most loaded node's replica
//    is dropped when the target is promoted).
//
// Choices: the target is the live node holding the fewest replicas (serving
// and building) among those without one of the slice, ties by name; the
// source is the serving replica that is the source or target of the fewest
// running copies, ties by rank (the ranking replica last, so reads are
// disturbed least). Limits: at most max_tasks copies in the cluster and
// max_per_node per node (as source or as target), counting the running
// ones. Slices are visited in (table id, slice id) order, so the plan is
// deterministic.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shale::rebalancer {

// One slice of the map as the planner sees it.
struct SliceState {
  uint64_t table_id = 0;
  uint64_t slice_id = 0;
  uint32_t wanted = 2;                 // REPLICAS=n of its table (not yet capped)
  std::vector<std::string> replicas;   // serving, the first ranks
  std::vector<std::string> building;   // nodes of its building replicas
  std::vector<std::string> building_sources;  // the source of each building replica
  // A DDL statement is changing its table (catalog::TableDef::ddl_owner):
  // its replicas count toward the nodes' load, but no task touches it.
  bool frozen = false;
};

struct PlanLimits {
  // Copies running in the whole cluster. Default: 16.
  uint32_t max_tasks = 16;
  // Copies a node takes part in at once (as source or target). Default: 4.
  uint32_t max_per_node = 4;
};

enum class TaskKind : uint8_t { kReprotect = 1, kRebalance = 2 };

struct PlannedTask {
  TaskKind kind = TaskKind::kReprotect;
  uint64_t table_id = 0;
  uint64_t slice_id = 0;
  std::string source;
  std::string target;
  std::string drop_from;  // kRebalance: the replica that leaves when the target is promoted
  bool operator==(const PlannedTask&) const = default;
};

// The tasks to start now (see the header comment). `live` are the member
// names the planner may place replicas on.
std::vector<PlannedTask> Plan(const std::vector<SliceState>& slices, const std::vector<std::string>& live,
                              const PlanLimits& limits);

const char* TaskKindName(TaskKind kind);

}  // namespace shale::rebalancer
