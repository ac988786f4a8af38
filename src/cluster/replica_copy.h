// ReplicaCopy: fills the building replicas the rebalancer adds to the slice
// map (rebalancer/rebalancer.h), copying a consistent MVCC snapshot of the
// slice from a serving replica on another node while writes to the slice
// continue (docs/cluster.md "Reprotection and rebalancing").
//
// One object per node plays both sides of src/cluster/replica_copy.proto:
//  - source: serves CopySnapshot (a server stream of snapshot chunks,
//    storage/slice_stream.h) and CommitBarrier;
//  - target: a builder thread watches this node's applied slice map for
//    building replicas placed here and fills each one (resuming after the
//    last applied chunk after a restart), then asks the metadata leader to
//    promote it (Catalog::PromoteReplica); a copy that keeps failing is
//    given up (Catalog::CancelTask) and the rebalancer plans it again.
//
// The copy protocol (why no acknowledged write is missing from the new
// replica) is in docs/cluster.md. In short: the building replica is in the
// slice map before the snapshot is chosen; the source first runs the commit
// barrier on every member (the member has applied that map, and every
// commit there that writes the table under an older map has finished —
// commits hold the table's write mutex while they check that their table
// definitions are current and write, see Session::CommitChecked), then
// takes the snapshot at the cluster read watermark. A commit either
// finished before (its versions are at or below the snapshot and applied at
// the source, so they are streamed) or writes the new replica itself.
//
// Thread-safety: all methods may be called concurrently after Start.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "shale/status.h"
#include "src/catalog/catalog.h"
#include "src/txn/transaction.h"
#include "storage/slice.h"
#include "src/common/shared_mutex.h"

namespace grpc {
class Service;
}

namespace shale::cluster {

class ReplicaCopyGrpc;
class ReplicaCopyPeers;

struct ReplicaCopyOptions {
  // This node's name (as in SliceDef::replicas). Required.
  std::string node_name;
  // The metadata epoch sent with and checked on every request. Default: 0.
  std::function<uint64_t()> epoch;
  // A node name -> its cluster (gRPC) address. Required for remote calls.
  std::function<Result<std::string>(const std::string&)> address_of;
  // The cluster's members (the commit barrier runs on each). Default: this
  // node alone.
  std::function<std::vector<std::string>()> members;
  // The mutex a commit writing table `id` holds while it checks its table
  // definitions and writes (exec::Engine::TableWriteMutex). Required.
  std::function<WriterFirstSharedMutex&(uint64_t table_id)> table_write_mutex;
  // Bytes per second this node asks sources to send it at most, over all
  // of its copies together (--rebalance-rate-mb, SET GLOBAL
  // shale_rebalance_rate_mb); 0 = unlimited. Default: unlimited.
  std::function<uint64_t()> rate_bytes_per_sec;
  // The transactions prepared at this node whose writes touch a slice, with
  // their commit timestamps (SliceService::PreparedOn). A copy waits until
  // those prepared before its barrier are resolved and takes its snapshot
  // at or above their timestamps: their coordinator may have died, so they
  // may never reach the new replica otherwise. Default: none.
  std::function<std::map<std::string, uint64_t>(uint64_t slice_id)> prepared_on;
  // Called by the builder thread every poll (shaled: drops the storage of
  // replicas that left this node, exec::Engine::DropRetiredSlices).
  // Default: none.
  std::function<void()> on_poll;
  // About this many bytes of rows per streamed chunk. Default: 256 KiB.
  uint32_t chunk_bytes = 256 << 10;
  // The builder looks for new building replicas this often. Default: 200 ms.
  uint32_t poll_ms = 200;
  // Builds running at once on this node. Default: 4.
  uint32_t max_builds = 4;
  // A build is retried this many times (source busy or restarting) before
  // its task is cancelled. Default: 5.
  uint32_t max_attempts = 5;
};

class ReplicaCopy {
 public:
  // REQUIRES: catalog, store and txn outlive the object.
  ReplicaCopy(catalog::Catalog* catalog, storage::SliceStore* store, txn::TxnManager* txn,
              ReplicaCopyOptions options);
  ~ReplicaCopy();  // Stop()

  // The gRPC service to register on the node's RpcServer (before it starts).
  grpc::Service* service();
  // Starts the builder thread. Stop waits for running builds to end (they
  // stop at the next chunk) and is idempotent.
  void Start();
  void Stop();

  // Source side, also what a call naming this node runs.
  // Waits (up to 10 s) until this node applied version >= `table_version`
  // of table `table_id` (or the table is gone: Unavailable), then until no
  // commit holding the table's write mutex is in progress.
  Status CommitBarrier(uint64_t table_id, uint64_t table_version);
  // Runs the barrier on every member (`members`), in parallel.
  Status ClusterBarrier(uint64_t table_id, uint64_t table_version);

  // Builds finished (promoted) and bytes received since start.
  uint64_t builds_finished() const { return builds_finished_.load(std::memory_order_relaxed); }
  uint64_t bytes_received() const { return bytes_received_.load(std::memory_order_relaxed); }

 private:
  friend class ReplicaCopyGrpc;
  struct Build {
    uint64_t table_id = 0;
    uint64_t table_version = 0;
    uint64_t slice_id = 0;
    uint64_t task_id = 0;
    std::string source;
  };
  void BuilderLoop();
  // Building replicas on this node that no build is working on.
  std::vector<Build> PendingBuilds();
  void RunBuild(const Build& build);
  // One attempt: stream from the source into the building slice and finish
  // it. *bytes grows by what was received.
  Status CopyOnce(const Build& build, uint64_t* bytes);
  bool StillBuilding(const Build& build) const;
  // Sleeps so that copies on this node stay under the rate limit.
  void Throttle(uint64_t bytes);

  catalog::Catalog* const catalog_;
  storage::SliceStore* const store_;
  txn::TxnManager* const txn_;
  const ReplicaCopyOptions options_;
  std::unique_ptr<ReplicaCopyGrpc> grpc_;
  std::unique_ptr<ReplicaCopyPeers> peers_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                     // GUARDED_BY(mu_)
  std::set<uint64_t> active_;             // GUARDED_BY(mu_): task ids being built
  std::map<uint64_t, std::thread> workers_;  // GUARDED_BY(mu_): by task id
  std::vector<std::thread> finished_workers_;  // GUARDED_BY(mu_): to join
  std::thread builder_;
  std::mutex throttle_mu_;
  std::chrono::steady_clock::time_point throttle_until_;  // GUARDED_BY(throttle_mu_)
  std::atomic<uint64_t> builds_finished_{0};
  std::atomic<uint64_t> bytes_received_{0};
};

}  // namespace shale::cluster
