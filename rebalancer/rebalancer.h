// Rebalancer: the background agent on the metadata leader that keeps slices
// protected and balanced (ARCHITECTURE.md "Rebalancer", docs/cluster.md
// "Reprotection and rebalancing"). Every poll_ms, on the leader only, it
// reads the applied slice map, plans reprotect and rebalance tasks
// (rebalancer/planner.h) and starts each by adding a building replica
// through the metadata log (Catalog::AddBuildingReplica). The target node
// fills it (src/cluster/replica_copy.h) and asks for its promotion; the
// rebalancer only plans, so a leader change loses nothing: the next leader
// sees the same map and running tasks. A task running longer than
// task_timeout_ms is cancelled and planned again. Tables an online DDL is
// changing (catalog::TableDef::ddl_owner) are left alone; a fence whose
// owner is no longer live is removed.
//
// Thread-safety: Start/Stop from one owning thread; the loop runs on its own
// thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rebalancer/planner.h"
#include "src/catalog/catalog.h"

namespace shale::rebalancer {

struct RebalancerOptions {
  // Whether this node is the metadata leader now. Required.
  std::function<bool()> is_leader;
  // Members that are live (heard from within the node timeout). Required.
  std::function<std::vector<std::string>()> live_members;
  // How often the map is looked at. Default: 500 ms.
  uint32_t poll_ms = 500;
  PlanLimits limits;
  // A copy running longer than this is cancelled (and planned again).
  // Default: 600000 ms.
  uint64_t task_timeout_ms = 600000;
};

class Rebalancer {
 public:
  // REQUIRES: catalog outlives the rebalancer.
  Rebalancer(catalog::Catalog* catalog, RebalancerOptions options);
  ~Rebalancer();  // Stop()

  void Start();
  void Stop();
  // One planning round now (also what the loop runs): starts the planned
  // tasks and returns how many were started.
  size_t RunOnce();

 private:
  void Loop();
  // Removes the online-DDL fence (catalog::TableDef::ddl_owner) of tables
  // whose owner is not among the `live` members (src/exec/online_ddl.h).
  void ClearAbandonedFences(const std::vector<std::string>& live);

  catalog::Catalog* const catalog_;
  const RebalancerOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // GUARDED_BY(mu_)
  std::thread thread_;
};

// The planner's view of the catalog's slice map.
std::vector<SliceState> SliceStates(const catalog::Catalog& catalog);

}  // namespace shale::rebalancer
