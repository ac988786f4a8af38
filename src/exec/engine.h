// Engine: everything one node runs statements against — the catalog, the
// node's slice store, and node-wide settings. One per shaled process.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "shale/status.h"
#include "src/catalog/accounts.h"
#include "src/catalog/catalog.h"
#include "src/common/value.h"
#include "src/txn/transaction.h"
#include "storage/meta_store.h"
#include "storage/slice.h"
#include "src/common/shared_mutex.h"

namespace shale::exec {

struct EngineOptions {
  // Directory holding this node's data: meta/ (RocksDB) and slices/.
  // Default: none; required.
  std::string data_dir;
  // Slices a new table's primary-key representation is cut into when the
  // statement does not say (CREATE TABLE ... SLICES=n). Default: 4.
  uint32_t default_slices = 4;
  // Name of this node, shown in system tables and logs. Default: "node1".
  std::string node_name = "node1";
  // The slice store: buffer pool, WAL mode, checkpoints (storage/slice.h).
  storage::SliceStoreOptions storage;
  // Leave slices no table refers to until ReconcileSlices() is called
  // (shaled: after the cluster replayed its metadata log, which may still
  // publish them). Default: false (Open removes them).
  bool defer_orphan_cleanup = false;
  // The default of shale_query_memory_limit: bytes of buffered rows one
  // statement may hold (src/exec/memory_budget.h); 0: no limit. Sorts past
  // it spill to <data_dir>/tmp (emptied at Open). Default: 512 MiB.
  uint64_t query_memory_limit = 512ull << 20;
  // The initial value of the global shale_rebalance_rate_mb: MiB/s this
  // node receives for rebalancer copies, 0 = unlimited (shaled
  // --rebalance-rate-mb). Default: 0.
  uint32_t rebalance_rate_mb = 0;
};

// What the cluster layer (src/cluster) tells the executor. shaled sets them
// before it serves clients; empty members mean a node outside any cluster
// (unit tests, tools), which always serves.
struct ClusterHooks {
  // OK while this node may serve statements; else the error to return
  // (ER_UNKNOWN_COM_ERROR 1047, "Cluster has no quorum ...").
  std::function<Status()> check_quorum;
  // The rows of system.nodes, in the order of SystemNodesColumns()
  // (src/exec/system_tables.h).
  std::function<std::vector<std::vector<Value>>()> nodes;
  // The names of the cluster's members, where new slices' replicas go
  // (empty function: this node alone).
  std::function<std::vector<std::string>()> members;
  // Whether the member named `name` is live (heard from within the node
  // timeout); empty function: only this node, which is.
  std::function<bool(const std::string& name)> is_live;
  // The metadata (Raft) log index this node has applied; it moves whenever
  // the membership, the catalog or the slice map changes (statement retry
  // waits for it). Empty function: a node outside any cluster.
  std::function<uint64_t()> metadata_index;
  // Waits (bounded) until this node has applied every metadata change the
  // leader had committed when called — a metadata read index; false if it
  // could not (no leader, timeout). A statement that met an unknown table
  // or database calls it before it is retried (session_retry.cc). Empty
  // function: a node outside any cluster.
  std::function<bool()> sync_metadata;
  // Waits (bounded) until every member has applied version >= `version` of
  // table `table_id` and no commit there that checked an older definition
  // is still writing (cluster::ReplicaCopy::ClusterBarrier); online DDL
  // (online_ddl.h) runs it after fencing a table. Empty function: this
  // node alone, where the table's write mutex does it.
  std::function<Status(uint64_t table_id, uint64_t version)> table_barrier;
  // Adds the cluster's counters to SHOW STATUS (name, value): the RPCs this
  // node sent and served, per method, and the bytes it sent
  // (src/cluster/rpc_stats.h). Empty function: none.
  std::function<void(std::vector<std::pair<std::string, uint64_t>>*)> status_counters;
};

// How well the slices are protected (system.protection,
// Shale_under_protected_slices).
struct ProtectionSummary {
  uint64_t slices = 0;
  // Slices with fewer replicas than they want: REPLICAS=n (default 2)
  // capped at the member count; building replicas do not count. The
  // rebalancer (rebalancer/rebalancer.h) restores them.
  uint64_t under_protected = 0;
  uint64_t lost = 0;  // slices with no replica left
};

class Engine {
 public:
  // Opens (creating if needed) the node's data directory and recovers it.
  static Result<std::unique_ptr<Engine>> Open(const EngineOptions& options);
  ~Engine();

  const EngineOptions& options() const { return options_; }
  catalog::Catalog* catalog() { return catalog_.get(); }
  // Users and privileges (src/catalog/accounts.h).
  catalog::Accounts* accounts() { return accounts_.get(); }
  storage::SliceStore* slices() { return slices_.get(); }
  storage::MetaStore* meta() { return meta_.get(); }
  // Transactions: timestamps, row locks, garbage collection (src/txn).
  txn::TxnManager* txn() { return txn_.get(); }
  // Global system variables (a copy); sessions copy them at connect.
  std::map<std::string, Value> global_variables() const;
  // The same, shared and immutable: what every statement reads (binding
  // @@global.x) without copying the map. SET GLOBAL publishes a new map;
  // a snapshot taken before keeps the old values.
  std::shared_ptr<const std::map<std::string, Value>> GlobalVariablesSnapshot() const;
  // SET GLOBAL: changes the global value (new sessions start with it).
  // ER_UNKNOWN_SYSTEM_VARIABLE (1193) if unknown, ER_INCORRECT_GLOBAL_LOCAL_VAR
  // (1238) if read-only.
  Status SetGlobalVariable(const std::string& name, Value value);
  // Whether the variable `name` is read-only (version, hostname, ...).
  static bool IsReadOnlyVariable(const std::string& name);
  // Keeps DDL on one table apart from the commits that write it: a commit
  // holds it shared while it checks that the definitions it wrote with are
  // still current and writes (so concurrent commits of one table share the
  // WAL's group commit), DDL and writes made outside transactions hold it
  // exclusively; an exclusive waiter goes before new commits.
  WriterFirstSharedMutex& TableWriteMutex(uint64_t table_id);
  // Where reads and writes of slice `def` of `table` go (docs/cluster.md
  // "Data path"): reads to the ranking replica, through this node's replica
  // when it ranks (or no data router is set), else over the router; writes
  // to every replica at commit. Unavailable when the ranking replica should
  // be here but is missing.
  Result<txn::SliceHandle> RouteSlice(const catalog::TableDef& table, const catalog::SliceDef& def);
  // The cluster data path (src/cluster/slice_service.h), set by shaled.
  // REQUIRES: called before statements run; outlives the engine's use.
  void SetDataRouter(txn::DataRouter* router) { txn_->SetRouter(router); }
  // REQUIRES: called before statements run (not thread-safe against them).
  void SetClusterHooks(ClusterHooks hooks) { cluster_hooks_ = std::move(hooks); }
  const ClusterHooks& cluster_hooks() const { return cluster_hooks_; }

  // The node names new slices' replicas may be placed on: the cluster's
  // members, or this node alone.
  std::vector<std::string> PlacementNodes() const;
  // Whether this node holds a replica of `slice` (its name is among the
  // replicas).
  bool HoldsReplica(const catalog::SliceDef& slice) const;
  // Counts the under-protected slices of every table.
  ProtectionSummary Protection() const;
  // Whether the applied slice map places a replica (serving or building) of
  // slice `id` here; cheap (a set kept by the table listener).
  bool PlacedHere(storage::SliceId id) const;
  // Whether the applied slice map names this node's replica of slice `id`
  // the ranking one (where its row locks are taken); cheap, as PlacedHere.
  bool RanksHere(storage::SliceId id) const;
  // The incarnation of this node's *serving* replica of slice `id` in the
  // applied map (not a building one: it serves no reads), 0 when it serves
  // none. A new number each time a replica here starts serving, so a read
  // routed to this node's replica (RouteSlice, txn::SliceHandle::
  // serving_token) is refused once the replica it routed to stopped serving
  // here — even if its storage slice was since replaced by a new replica of
  // the same slice (docs/cluster.md "Data path", invariant 6).
  uint64_t ServingToken(storage::SliceId id) const;
  // Drops the storage slices of replicas that left this node (moved by the
  // rebalancer, cancelled builds) at least `older_than` ago and are not
  // placed here again. shaled calls it periodically.
  void DropRetiredSlices(std::chrono::milliseconds older_than);
  // Drops the storage slices no table refers to, and those of replicas the
  // slice map does not place here (see EngineOptions::defer_orphan_cleanup).
  Status ReconcileSlices();

 private:
  explicit Engine(EngineOptions options);
  // The catalog's table listener: creates and drops this node's replicas.
  void OnTableChange(catalog::TableChangePhase phase, const catalog::TableDef* before,
                     const catalog::TableDef* after);

  EngineOptions options_;
  std::unique_ptr<storage::MetaStore> meta_;
  std::unique_ptr<storage::SliceStore> slices_;
  std::unique_ptr<txn::TxnManager> txn_;  // after slices_: destroyed first
  std::unique_ptr<catalog::Catalog> catalog_;
  std::unique_ptr<catalog::Accounts> accounts_;
  mutable std::mutex globals_mu_;
  // Copy on write: replaced, never changed in place, by SetGlobalVariable.
  std::shared_ptr<const std::map<std::string, Value>> globals_;  // GUARDED_BY(globals_mu_)
  std::mutex table_mutexes_mu_;
  std::map<uint64_t, std::unique_ptr<WriterFirstSharedMutex>> table_mutexes_;  // GUARDED_BY(table_mutexes_mu_)
  ClusterHooks cluster_hooks_;  // set once before serving
  mutable std::mutex placed_mu_;
  std::set<storage::SliceId> placed_;  // GUARDED_BY(placed_mu_): PlacedHere
  std::set<storage::SliceId> ranks_;   // GUARDED_BY(placed_mu_): RanksHere
  std::map<storage::SliceId, uint64_t> serving_;  // GUARDED_BY(placed_mu_): ServingToken
  uint64_t serving_seq_ = 0;                      // GUARDED_BY(placed_mu_)
  std::mutex retired_mu_;
  // Replicas that left this node, by when (DropRetiredSlices).
  std::map<storage::SliceId, std::chrono::steady_clock::time_point> retired_;  // GUARDED_BY(retired_mu_)
};

}  // namespace shale::exec
