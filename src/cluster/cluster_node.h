// ClusterNode: this node's membership in the cluster. It runs the Raft node
// (raft.h) of the metadata group over gRPC (RaftService in raft.proto),
// applies the log to the Metadata state machine (metadata.h), joins a
// cluster (`shaled --join`) or bootstraps a one-node one, rejoins by itself
// after a restart, removes members silent past the node timeout (leader
// only), and tells the SQL layer whether this node may serve (a majority of
// members reachable). docs/cluster.md describes the design.
//
// Threads (none of them MySQL I/O threads):
//   - gRPC's server threads run the RaftService handlers;
//   - one ticker thread advances the Raft clock every tick_ms and detects
//     failed members;
//   - one sender thread per peer sends that peer's messages in order and
//     steps the replies;
//   - one joiner thread asks a member to (re)admit this node while it is not
//     a voter or has heard from no leader for a while.
// Every touch of the Raft node and the metadata holds mu_.
//
// Invariants:
//  1. A request whose sender is not a member and whose metadata epoch is
//     older than ours is refused (stale epoch); Raft refuses stale terms.
//  2. HasQuorum() is false unless Raft vouches for a live majority
//     (RaftNode::HasQuorum) — as of the last tick or message.
//
// Thread-safety: all public methods may be called concurrently after Start.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "shale/status.h"
#include "src/cluster/metadata.h"
#include "src/cluster/node_identity.h"
#include "src/cluster/raft.h"
#include "src/cluster/raft.pb.h"

namespace grpc {
class Service;
class Status;
}  // namespace grpc

namespace shale::storage {
class MetaStore;
}

namespace shale::cluster {

class ClusterTimestamps;

// The MetaStore key remembering the addresses this node was told to join
// (newline-separated), so it can find its cluster again after a restart.
inline constexpr std::string_view kSeedsKey = "cluster/seeds";

struct ClusterOptions {
  // This node's cluster (gRPC) address as peers should dial it. Required.
  std::string rpc_address;
  // This node's MySQL address, shown in system.nodes. Default: empty.
  std::string sql_address;
  // Cluster addresses of members to join (--join). Empty on a node that
  // has never joined: it bootstraps a one-node cluster. Default: empty.
  std::vector<std::string> join;
  // Raft election timeout T (followers campaign after [T, 2T) of silence; a
  // leader steps down after T without a majority). Default: 1000 ms.
  uint64_t election_timeout_ms = 1000;
  // Leader heartbeat period. Default: 100 ms.
  uint64_t heartbeat_interval_ms = 100;
  // The leader removes a member it has not heard from for this long.
  // Must exceed the election timeout. Default: 3000 ms.
  uint64_t node_timeout_ms = 3000;
  // Raft clock resolution. Default: 20 ms.
  uint64_t tick_ms = 20;
  // Log entries applied before the log is compacted into a snapshot.
  // Default: 1000.
  uint64_t snapshot_threshold = 1000;
};

// One row of system.nodes, as this node sees it.
struct NodeStatus {
  std::string id;
  std::string name;
  std::string address;      // cluster (gRPC)
  std::string sql_address;  // MySQL
  // online: heard from within the node timeout (or this node with a
  // quorum); unreachable: should be heard from and is not; no-quorum: this
  // node, cut off from a majority; member: a voter this node does not talk
  // to directly (a follower talks only to the leader).
  std::string state;
  uint64_t epoch = 0;
  bool is_leader = false;
  std::optional<int64_t> last_heartbeat_ms;  // ms since last heard; none if unknown
};

// Where a node is, for the data path (AddressOf).
struct NodeAddress {
  std::string id;
  std::string address;      // cluster (gRPC) host:port
  std::string sql_address;  // MySQL host:port
  bool live = false;        // a member heard from within the node timeout (this node: has a quorum)
};

class ClusterNode {
 public:
  // REQUIRES: store outlives the node.
  ClusterNode(NodeIdentity identity, ClusterOptions options, storage::MetaStore* store);
  ~ClusterNode();  // Stop()
  ClusterNode(const ClusterNode&) = delete;
  ClusterNode& operator=(const ClusterNode&) = delete;

  // The RaftService to register on the node's RpcServer before it starts.
  grpc::Service* service();

  // The cluster address peers dial, once the RPC server knows its port.
  // REQUIRES: before Start.
  void SetRpcAddress(std::string address) { options_.rpc_address = std::move(address); }
  // Loads the Raft state from the MetaStore; on a node with none, bootstraps
  // a one-node cluster (no --join) or remembers the seeds (--join); starts
  // the threads. A lone voter is leader when this returns.
  Status Start();
  // Stops the threads. Idempotent.
  void Stop();

  // Whether this node can reach a majority of the members (see invariants).
  bool HasQuorum() const { return has_quorum_.load(std::memory_order_acquire); }
  // OK, or ER_UNKNOWN_COM_ERROR (1047, SQLSTATE 08S01, retryable) naming
  // this node and the member count: the node may not serve statements.
  Status CheckQuorum() const;
  // Members and what this node knows about them.
  std::vector<NodeStatus> Nodes() const;
  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }
  // The metadata log index this node has applied (membership, catalog,
  // slice map); it never decreases.
  uint64_t applied_index() const { return applied_index_.load(std::memory_order_acquire); }
  // Waits up to `timeout` until this node has applied `index`; false if it
  // has not (no quorum, or the entry is not committed yet).
  bool AwaitApplied(uint64_t index, std::chrono::milliseconds timeout);
  // Waits up to `timeout` until every other live member has applied
  // `index` too (asking them in parallel, AwaitApplied RPC); true if all
  // did. A member that does not answer is skipped once the wait runs out:
  // the failure detector is removing it. Used before a user-visible catalog
  // change (DDL, GRANT) is acknowledged, so it is visible through every node.
  bool AwaitMembersApplied(uint64_t index, std::chrono::milliseconds timeout);
  // The metadata log index this node knows to be committed (on the leader:
  // every entry a client was told is done).
  uint64_t commit_index() const { return commit_index_.load(std::memory_order_acquire); }
  const NodeIdentity& identity() const { return identity_; }

  // How applied entries reach the catalog. REQUIRES: before Start.
  void SetMetadataHooks(MetadataHooks hooks) { metadata_.SetHooks(std::move(hooks)); }

  // Appends a catalog command (a serialized shale.catalog.pb.Command) to the
  // metadata log — directly on the leader, forwarded to it over gRPC on a
  // follower — and returns its result once it is committed and applied on
  // *this* node, so the caller's next statement sees it. Retries while
  // there is no leader, up to a deadline; then ER_UNKNOWN_COM_ERROR (1047,
  // 08S01): the outcome of a command that may have been appended is then
  // unknown to the caller (it is applied everywhere or nowhere).
  ApplyResult ProposeCatalog(const std::string& command);
  // The same for any metadata command.
  ApplyResult ProposeMetadata(const MetadataCommandPb& command);

  // The applied members' names, in config order (placement of new slices).
  std::vector<std::string> MemberNames() const;
  // The applied members' node ids (empty before the first config applies).
  std::vector<std::string> MemberIds() const;
  // Where the member named `name` is; nullopt if no member has that name.
  std::optional<NodeAddress> AddressOf(const std::string& name) const;
  // Whether this node is the Raft leader now.
  bool IsLeader() const;
  // The leader's cluster address, if known and not this node.
  std::optional<std::string> LeaderAddress() const;
  // The applied timestamp high-water mark (timestamp_service.h).
  uint64_t TimestampHighWater() const;
  // The current Raft term (0 before Start).
  uint64_t term() const { return term_.load(std::memory_order_acquire); }

  // Serves RaftService.Timestamps. REQUIRES: before the RPC server starts;
  // `service` outlives it.
  void SetTimestampService(ClusterTimestamps* service) { timestamp_service_ = service; }

  // RaftService handlers (cluster_node.cc).
  grpc::Status HandleRaft(const RaftMessagePb& request, RaftMessagePb* reply);
  grpc::Status HandleJoin(const JoinRequest& request, JoinResponse* response);
  grpc::Status HandlePropose(const ProposeRequest& request, ProposeResponse* response);
  grpc::Status HandleTimestamps(const TimestampRequest& request, TimestampResponse* response);
  grpc::Status HandleAwaitApplied(const AwaitAppliedRequest& request, AwaitAppliedResponse* response);

 private:
  struct Peer;

  uint64_t NowMs() const;
  void OnSend(raft::Message m);  // REQUIRES: mu_ held
  Peer* PeerFor(const std::string& id, const std::string& address);  // REQUIRES: mu_ held
  void PeerLoop(Peer* peer);
  void TickLoop();
  void JoinLoop();
  void DetectFailures();  // REQUIRES: mu_ held
  void UpdateStatus();    // REQUIRES: mu_ held
  bool NeedsJoin();       // REQUIRES: mu_ held
  std::vector<std::string> JoinTargets();  // REQUIRES: mu_ held
  void FillJoinResponse(JoinResponse* response);  // REQUIRES: mu_ held
  raft::Member SelfMember() const;
  // Leader: appends `bytes` and waits until applied. REQUIRES: lock holds mu_.
  Result<std::pair<uint64_t, ApplyResult>> ProposeAsLeader(std::unique_lock<std::mutex>& lock, const std::string& bytes);
  // Waits until this node applied `index`. REQUIRES: lock holds mu_.
  bool WaitApplied(std::unique_lock<std::mutex>& lock, uint64_t index, std::chrono::steady_clock::time_point until);

  const NodeIdentity identity_;
  ClusterOptions options_;  // rpc_address set before Start, then constant
  storage::MetaStore* store_;
  const uint64_t start_time_ms_;

  class Service;
  std::unique_ptr<Service> service_;

  mutable std::mutex mu_;
  std::unique_ptr<raft::RaftStorage> raft_storage_;
  Metadata metadata_;                  // GUARDED_BY(mu_)
  std::unique_ptr<raft::RaftNode> raft_;  // GUARDED_BY(mu_)
  std::vector<std::string> seeds_;     // GUARDED_BY(mu_)
  std::map<std::string, std::unique_ptr<Peer>> peers_;  // GUARDED_BY(mu_)
  // While a handler steps a request: the sender, and the reply Raft made.
  std::string capture_for_;                 // GUARDED_BY(mu_)
  std::optional<raft::Message> captured_;   // GUARDED_BY(mu_)
  std::condition_variable applied_cv_;      // notified (under mu_) whenever entries may have been applied
  ClusterTimestamps* timestamp_service_ = nullptr;  // set before serving
  uint64_t last_quorum_ms_ = 0;             // GUARDED_BY(mu_)
  bool was_leader_ = false;                 // GUARDED_BY(mu_)

  std::atomic<bool> has_quorum_{false};
  std::atomic<uint64_t> epoch_{0};
  std::atomic<uint64_t> applied_index_{0};
  std::atomic<uint64_t> commit_index_{0};
  std::atomic<uint64_t> term_{0};
  std::atomic<bool> is_leader_{false};

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;  // GUARDED_BY(stop_mu_)
  bool started_ = false;
  std::thread ticker_;
  std::thread joiner_;
};

}  // namespace shale::cluster
