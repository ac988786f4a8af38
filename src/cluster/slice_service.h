// SliceService: the data path between nodes (docs/cluster.md "Data path").
//
// One object per node plays both sides of src/cluster/data.proto:
//  - server: it serves the SliceService RPCs for the slice replicas this
//    node stores (point reads and paged range scans at a snapshot, pushed
//    filters and partial aggregates over them (Fragment: compiled by
//    options.compile_fragment, with Scan's checks)), and carries the
//    requests of other nodes' commits (row locks, Prepare, Paxos, Decide,
//    Finish, Apply) to this node's txn::commit::Participant
//    (src/txn/commit/participant.h: the participant, acceptor and resolver
//    of commit, their durable records and invariants), registered on the
//    node's RpcServer;
//  - client: it is the txn::DataRouter the node's TxnManager routes through,
//    calling other nodes' SliceService (a call naming this node runs the
//    server side directly, no RPC): reads, and the coordinator's messages
//    of a commit (src/txn/commit/coordinator.cc), with the transport of a
//    Paxos round (PaxosTransport) and the coordinator's queue of decision
//    records to drop after it answered its client (Forget).
//
// Invariants (those of commit are the Participant's):
//  1. A request whose sender's metadata epoch is older than this node's is
//     refused (gRPC FAILED_PRECONDITION) before it touches anything; the
//     client turns that into ER_UNKNOWN_COM_ERROR 1047 (SQLSTATE 08S01, the
//     retryable "cluster changed" error).
//  2. A decision record is dropped only once no participant can need it:
//     by the coordinator (Forget) after every participant answered
//     Finish(commit) — it answers its client first and drops the records
//     from a background queue — or by the sweep of decision records at the
//     node keeping it (SweepDecisions) once its coordinator's commit is no
//     longer in progress and no participant that is a cluster member holds
//     it prepared (or is preparing or applying it, or, for a one-phase
//     applier's refusal, holds its row locks: its Apply is accepted only
//     while they are held; Participant::DecisionNeeded). A record without
//     participants (written before they were kept) is never dropped by the
//     sweep. A presumption mark (txn/presumed/) goes once its transaction is
//     settled here and its coordinator's commit is no longer in progress.
//
// Thread-safety: all methods may be called concurrently. gRPC runs on its
// own threads; the Participant runs the resolver's thread; one thread drops
// the decision records of finished commits (Forget); another sweeps the
// decision records kept here that no participant needs any more.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "shale/status.h"
#include "src/txn/commit/participant.h"
#include "src/txn/commit/paxos.h"
#include "src/txn/data_router.h"
#include "src/txn/transaction.h"
#include "storage/meta_store.h"
#include "storage/slice.h"

namespace grpc {
class Service;
}

namespace shale::cluster {

class SliceServiceGrpc;
class DataHandlers;
class LinkServer;
class SliceWritesPb;
class DataHeaderPb;
class ScanResponse;
class FragmentResponse;
class PeerStubs;

struct SliceServiceOptions {
  // This node's name (as in SliceDef::replicas). Required.
  std::string node_name;
  // The metadata epoch sent with and checked on every request. Default: 0.
  std::function<uint64_t()> epoch;
  // A node name -> its cluster (gRPC) address "host:port"; Unavailable if
  // unknown. Set by shaled from the cluster layer. Required for remote calls.
  std::function<Result<std::string>(const std::string&)> address_of;
  // The metadata log index this node has applied, sent with every request,
  // and a bounded wait until this node has applied an index (false: not
  // within the timeout). Unset (in-process tests): requests carry 0 and a
  // missing replica is waited for up to 5 s.
  std::function<uint64_t()> applied_index;
  std::function<bool(uint64_t index, std::chrono::milliseconds timeout)> await_applied;
  // Called after a prepared transaction was applied or dropped here, before
  // Finish is answered: waits for this node's reports in flight to the
  // timestamp service (ClusterTimestamps::ReportBarrier). Unset: nothing.
  std::function<void()> report_barrier;
  // Locks of a remote transaction that is not prepared are released after
  // this long without a request from it. Default: 60000.
  uint32_t lock_lease_ms = 60000;
  // A prepared transaction not finished this long after Prepare is resolved
  // from its decider's record. Default: 5000.
  uint32_t resolve_after_ms = 5000;
  // Deadline of a data RPC (a lock request adds its wait). Default: 10000.
  uint32_t rpc_timeout_ms = 10000;
  // Rows per Scan page. Default: 1024.
  uint32_t scan_page_rows = 1024;
  // Whether this node's applied slice map places a replica (serving or
  // building) of the slice here (exec::Engine::PlacedHere). A request for
  // a slice stored here but not placed here waits like one for a missing
  // slice. Default: none (every stored slice serves).
  std::function<bool(storage::SliceId)> placed_here;
  // Whether that replica is a serving one (exec::Engine::ServingToken != 0):
  // reads (Get, Scan, Fragment) of a replica still building here — the
  // sender routed by a map from before this node's replica was replaced —
  // are refused with the retryable 1047. Default: none (placed serves).
  std::function<bool(storage::SliceId)> serves_here;
  // Whether this node's applied slice map names its replica of the slice
  // the ranking one (exec::Engine::RanksHere): a commit's row locks taken
  // at another node's replica of a slice this node ranks now are refused
  // (docs/transactions.md "Row locks when the ranking replica changes").
  // Default: none (a lock taken here is taken to rank here, any other not).
  std::function<bool(storage::SliceId)> ranks_here;
  // Compiles pushed fragments (src/exec/pushdown.h; set by shaled). Unset:
  // Fragment requests are refused (InvalidArgument) and this node pushes
  // nothing (ScanFiltered / AggregateSlice read the rows and fail).
  txn::FragmentCompiler compile_fragment;
  // Stored rows a Fragment page examines at most. Default: 65536.
  uint32_t fragment_page_rows = 65536;
  // An aggregate page ends once it holds this many groups (bounds the
  // receiver's memory; the coordinator merges every page). Default: 4096.
  uint32_t fragment_page_groups = 4096;
  // How often this node sweeps the decision records it keeps (as a decider
  // or a backup), dropping those no participant needs any more: records
  // left by a coordinator that died before its Forget, or resolved by the
  // participants (docs/transactions.md "Collecting orphaned decision
  // records"). A record is dropped at the earliest by the second sweep
  // that sees it. 0: never (tests sweep with TEST_SweepDecisions).
  // Default: 10000.
  uint32_t decision_sweep_ms = 10000;
  // The cluster's members (ClusterNode::MemberNames): a commit's acceptors
  // beyond its participants come from them. Unset: none (a commit on two
  // nodes coordinated at one of them has two acceptors).
  std::function<std::vector<std::string>()> members;
};

class SliceService final : public txn::DataRouter {
 public:
  // Loads the prepared transactions recorded in `meta` (they are resolved
  // after resolve_after_ms) and starts the background thread.
  static Result<std::unique_ptr<SliceService>> Open(txn::TxnManager* txn, storage::SliceStore* store,
                                                    storage::MetaStore* meta, SliceServiceOptions options);
  ~SliceService() override;

  // The gRPC service to register on the node's RpcServer (before Start).
  grpc::Service* service();
  // Serves the same calls on the node's link (node_link.h; RpcServer::link).
  // REQUIRES: before the link starts; this service outlives it.
  void RegisterLink(LinkServer* link);

  // txn::DataRouter.
  const std::string& self() const override { return options_.node_name; }
  Status Get(const std::string& node, storage::SliceId slice, std::string_view key, uint64_t snapshot,
             std::string* value) override;
  std::unique_ptr<storage::SliceIterator> Scan(const std::string& node, storage::SliceId slice,
                                               const storage::KeyRange& range, uint64_t snapshot) override;
  std::unique_ptr<storage::SliceIterator> ScanFiltered(const std::string& node, storage::SliceId slice,
                                                       const storage::KeyRange& range, uint64_t snapshot,
                                                       const std::string& fragment) override;
  Status AggregateSlice(const std::string& node, storage::SliceId slice, const storage::KeyRange& range,
                        uint64_t snapshot, const std::string& fragment, std::vector<std::string>* partials) override;
  Status LookupFiltered(const std::string& node, storage::SliceId slice, const std::vector<std::string>& keys,
                        uint64_t snapshot, const std::string& fragment,
                        std::vector<std::pair<std::string, std::string>>* rows) override;
  Status LookupPrefixes(const std::string& node, storage::SliceId slice, const std::vector<std::string>& prefixes,
                        uint64_t snapshot, const std::string& fragment,
                        std::vector<std::pair<std::string, std::string>>* rows) override;
  Status Lock(const std::string& node, const txn::TxnKey& txn, const std::string& name, txn::LockMode mode,
              std::chrono::milliseconds timeout, const std::atomic<bool>* interrupt,
              const std::atomic<bool>* victim, bool holds_locks_there, LatestRead* read = nullptr) override;
  void Unlock(const std::string& node, const txn::TxnKey& txn) override;
  Status Prepare(const std::string& node, const txn::TxnKey& txn, uint64_t ts, const txn::WriteSet& writes,
                 const txn::DeciderPair& deciders) override;
  Result<bool> Decide(const txn::DeciderPair& deciders, const txn::TxnKey& txn, bool commit, uint64_t ts) override;
  bool IsMember(const std::string& node) override;
  std::vector<std::string> Members() override;
  Status Finish(const std::string& node, const txn::TxnKey& txn, bool commit) override;
  void Forget(const txn::DeciderPair& deciders, const txn::TxnKey& txn) override;
  Status Apply(const std::string& node, const txn::TxnKey* txn, uint64_t ts, const txn::WriteSet& writes,
               const txn::HeldLocks& locks) override;
  Status ApplyDecision(const std::string& node, const txn::TxnKey& txn, uint64_t ts, const txn::WriteSet& writes,
                       const txn::HeldLocks& locks, bool* refused) override;
  Status AwaitLocalWritable(const txn::WriteSet& writes) override;
  Result<std::vector<txn::LockWaitInfo>> LockWaits(const std::string& node) override;
  Result<std::vector<txn::LockHolderInfo>> LockHolders(const std::string& node,
                                                       const std::vector<std::string>& names) override;
  Result<bool> AbortLockWait(const txn::LockWaitInfo& wait) override;
  uint64_t rows_sent() const override { return rows_sent_.load(std::memory_order_relaxed); }
  uint64_t rows_received() const override { return rows_received_.load(std::memory_order_relaxed); }
  uint64_t decision_records() const override { return participant_->decision_records(); }

  // Prepared transactions waiting for their outcome at this node.
  size_t prepared_count() const;
  // The commit timestamps of the transactions prepared (or being applied)
  // here: commits in flight, reported to the cluster timestamp service so
  // no snapshot at or above one is taken before it is applied everywhere.
  std::vector<uint64_t> PreparedTimestamps() const;
  // Those whose write set touches `slice` (and those being applied right
  // now), by transaction, with their commit timestamps: a rebalancer copy
  // from this node waits for them (src/cluster/replica_copy.h).
  std::map<std::string, uint64_t> PreparedOn(storage::SliceId slice) const;
  // Runs one resolver pass now, treating every prepared transaction as
  // overdue (tests).
  void TEST_ResolveNow();
  // Participant::SyncFinished here now: the commits applied without their
  // WAL sync become durable and their prepared records go.
  Status TEST_SyncFinished();
  // Participant::TEST_HoldSyncs.
  void TEST_HoldSyncs(bool held);
  // Waits until no Paxos message this node sent is still on its way (a
  // round ends at a majority; the others' answers come later).
  void TEST_DrainPaxosCalls();
  // Makes this node's data RPCs to `node` fail as if it were unreachable.
  void TEST_SetUnreachable(const std::string& node, bool unreachable);
  // The decision records this node (as a coordinator) has still to drop
  // at deciders and backups: queued or being sent (tests).
  size_t pending_forgets() const;
  // Waits (at most `timeout`) until no Forget is queued or being sent,
  // retries included. Returns whether the queue drained.
  bool TEST_DrainForgets(std::chrono::milliseconds timeout);
  // Holds the queued Forgets back (true) or lets them go (false): a
  // coordinator that acknowledged its commits and has not dropped their
  // decision records yet.
  void TEST_PauseForgets(bool paused);
  // Forgets what is queued, as a coordinator killed after acknowledging
  // does: the records stay at the deciders and backups.
  void TEST_DropForgets();
  // Runs one sweep of the decision records kept here now, over every
  // record (not only those an earlier sweep saw). Returns the records
  // dropped.
  size_t TEST_SweepDecisions();

 private:
  friend class SliceServiceGrpc;
  friend class DataHandlers;
  SliceService(txn::TxnManager* txn, storage::SliceStore* store, storage::MetaStore* meta,
               SliceServiceOptions options);

  // Server side (also what a call naming this node runs).
  Status CheckEpoch(const DataHeaderPb& header) const;
  // The local replica of `slice` for a request routed by a slice map at
  // metadata index `routed_at` (the sender's applied index). A replica
  // named by a catalog change this node has not applied yet (the sender
  // applied it first) is waited for: until this node has applied
  // `routed_at`, at most kAwaitAppliedMs. A replica still missing then is
  // not here (it moved, or the sender's map is older than ours): 1047, the
  // retryable "slice map changed" error, so the sender re-routes.
  Result<storage::Slice*> AwaitSlice(storage::SliceId slice, uint64_t routed_at) const;
  Status AwaitSlices(const txn::WriteSet& writes, uint64_t routed_at) const;
  // A read at `snapshot` below what this node's garbage collector has
  // collected: 1047 ("snapshot too old", retryable), never wrong rows.
  Status CheckSnapshot(uint64_t snapshot) const;
  // The replica of `slice` a read at `snapshot` may use: placed here by a
  // map at least as new as the sender's (AwaitSlice), the snapshot not
  // collected (CheckSnapshot), and every version it sees held here
  // (TxnManager::CheckReadable). Every remote read (Get, Scan, Fragment)
  // goes through it.
  Result<storage::Slice*> ReadableReplica(storage::SliceId slice, uint64_t snapshot, uint64_t routed_at) const;
  // This node's applied metadata index (0 outside a cluster).
  uint64_t AppliedIndex() const { return options_.applied_index ? options_.applied_index() : 0; }
  Status LocalGet(storage::SliceId slice, std::string_view key, uint64_t snapshot, std::string* value,
                  uint64_t routed_at);
  Status LocalScan(storage::SliceId slice, const storage::KeyRange& range, uint64_t snapshot, uint32_t limit,
                   ScanResponse* out, uint64_t routed_at);
  // One page of a pushed fragment over the local replica (the checks of
  // LocalScan first): at most `limit` stored rows examined.
  // With `lookup_keys` (non-empty): those primary keys instead of `range`;
  // with `lookup_prefixes` too, every entry starting with each of them
  // (data.proto FragmentRequest.lookup_prefixes; `range.start`, if set,
  // is where the first prefix's entries resume).
  Status LocalFragment(storage::SliceId slice, const storage::KeyRange& range, uint64_t snapshot, uint32_t limit,
                       const std::string& fragment, FragmentResponse* out, uint64_t routed_at,
                       const std::vector<std::string>* lookup_keys = nullptr, bool lookup_prefixes = false);
  // One Fragment page at `node` (an RPC unless it is this node); counts
  // the rows received.
  Status FragmentPage(const std::string& node, storage::SliceId slice, const storage::KeyRange& range,
                      uint64_t snapshot, const std::string& fragment, FragmentResponse* page);
  // The acceptor's step (Participant::Paxos) at `node` (an RPC unless it
  // is this node).
  Result<txn::commit::Reply> PaxosAt(const std::string& node, const txn::TxnKey& txn,
                                     const txn::commit::Request& request,
                                     const std::vector<std::string>& participants);
  // Decide with acceptors: the coordinator's ballot 0 (`commit`) or a
  // resolver's fresh ballot, driven for up to one RPC timeout.
  Result<bool> PaxosDecide(const txn::DeciderPair& deciders, const txn::TxnKey& txn, bool commit, uint64_t ts);
  // A ballot above `above`, never used before by anyone (this node's
  // name, a random per-process nonce, a counter).
  txn::commit::Ballot NextBallot(const txn::commit::Ballot& above);
  class PaxosTransport;
  // Decide at `node` (an RPC unless it is this node).
  Result<bool> DecideAt(const std::string& node, const txn::TxnKey& txn, const txn::commit::DecideArgs& args);
  // Drops the decision records of `txns` at `node` in one MetaStore write
  // (one RPC unless it is this node).
  Status ForgetAt(const std::string& node, const std::vector<txn::TxnKey>& txns);
  // Participant::SyncFinished at `node` (this one: locally).
  Status SyncFinishedAt(const std::string& node);
  // The coordinator's Forget queue (Forget): drains it in batches per node,
  // retrying a failed node's share a few times.
  void ForgetLoop();

  // Participant::DecisionNeeded at `node` (RPCs unless it is this node, in
  // batches).
  Result<std::vector<bool>> DecisionNeededAt(const std::string& node, const std::vector<txn::TxnKey>& txns);
  // Drops the decision records kept here that no one needs: asks the
  // coordinator and the participants named in each record, each node once
  // for all its records, all nodes at once; a node that is not a cluster
  // member needs none (its replicas left the slice map with it), one that
  // does not answer needs all. Only records an earlier sweep saw (`all`:
  // every one). Also drops the presumption marks (txn/presumed/) whose
  // transaction is no longer prepared or being applied here and whose
  // coordinator's commit is not in progress (asked as above). Returns the
  // decision records dropped (not the marks).
  size_t SweepDecisions(bool all);
  void SweepLoop();

  Result<PeerStubs*> Peer(const std::string& node);
  void Header(DataHeaderPb* header) const;
  std::chrono::milliseconds RpcTimeout() const { return std::chrono::milliseconds(options_.rpc_timeout_ms); }

  txn::TxnManager* const txn_;
  storage::SliceStore* const store_;
  storage::MetaStore* const meta_;
  const SliceServiceOptions options_;
  std::unique_ptr<SliceServiceGrpc> grpc_;
  std::unique_ptr<DataHandlers> link_handlers_;
  // This node's part in other nodes' commits (src/txn/commit/participant.h),
  // and what it asks of this object (Host).
  class Host;
  std::unique_ptr<Host> host_;
  std::unique_ptr<txn::commit::Participant> participant_;

  // Paxos: this process's ballot ids, and the calls to acceptors still
  // running on threads of their own (PaxosTransport; the destructor waits
  // for them).
  const uint64_t ballot_nonce_;
  std::atomic<uint64_t> ballot_counter_{0};
  std::mutex paxos_calls_mu_;
  std::condition_variable paxos_calls_cv_;
  size_t paxos_calls_ = 0;  // GUARDED_BY(paxos_calls_mu_)
  // Those calls by transaction: its Forget waits for them, so a late
  // accept does not write a record again after the Forget dropped it.
  std::map<std::string, size_t> paxos_in_flight_;  // GUARDED_BY(paxos_calls_mu_)
  std::mutex peers_mu_;
  std::map<std::string, std::unique_ptr<PeerStubs>> peers_;  // GUARDED_BY(peers_mu_), by address
  std::set<std::string> unreachable_;                         // GUARDED_BY(peers_mu_), tests
  // Node name -> (address, when looked up).
  std::map<std::string, std::pair<std::string, std::chrono::steady_clock::time_point>> addresses_;  // GUARDED_BY(peers_mu_)
  // Rows this node sent to / received from other nodes: as the requester
  // (rows written to other replicas, rows read from them) and as the server
  // (rows read by other nodes, rows they wrote here).
  std::atomic<uint64_t> rows_sent_{0};
  std::atomic<uint64_t> rows_received_{0};
  // Requester side: also counted for the calling thread's statement.
  void CountSent(uint64_t rows) {
    rows_sent_.fetch_add(rows, std::memory_order_relaxed);
    txn::StatementRowsMoved() += rows;
  }
  void CountReceived(uint64_t rows) {
    rows_received_.fetch_add(rows, std::memory_order_relaxed);
    txn::StatementRowsMoved() += rows;
  }


  // Decision records to drop, after the client was answered (Forget).
  // Invariant: an entry is queued only once every participant of its
  // transaction has answered Finish(commit), so no participant will ask
  // that record for the outcome again; losing an entry (a crash, the cap,
  // retries exhausted) leaves a record behind, which is harmless.
  struct PendingForget {
    std::string node;  // the decider or the backup
    txn::TxnKey txn;
    // The transaction's participants (never null): each makes its applies
    // durable (SyncFinishedAt) before the record goes.
    std::shared_ptr<const std::vector<std::string>> participants;
    int attempts = 0;
    // Sent at or after this: its linger (kForgetLinger) or a retry's wait.
    std::chrono::steady_clock::time_point not_before;
  };
  mutable std::mutex forget_mu_;
  std::condition_variable forget_cv_;
  std::deque<PendingForget> forgets_;  // GUARDED_BY(forget_mu_)
  size_t forgets_busy_ = 0;            // GUARDED_BY(forget_mu_): being sent
  // First step of a Forget batch: every participant of its transactions
  // makes its finished applies durable (one request per node, all at once:
  // a prepared record back after a crash must still find the acceptors'
  // commit). The participants whose sync failed, and why.
  std::map<std::string, Status> SyncParticipantsOf(const std::vector<PendingForget>& batch);
  bool forgets_paused_ = false;        // GUARDED_BY(forget_mu_): tests
  bool forget_stop_ = false;           // GUARDED_BY(forget_mu_)
  std::thread forget_thread_;

  // The sweep of decision records (SweepLoop).
  std::mutex sweep_mu_;                // one sweep at a time
  std::set<std::string> sweep_seen_;   // GUARDED_BY(sweep_mu_): records the last sweep saw
  std::set<std::string> presumed_seen_;  // GUARDED_BY(sweep_mu_): presumption marks the last sweep saw
  std::mutex sweep_stop_mu_;
  std::condition_variable sweep_cv_;
  bool sweep_stop_ = false;            // GUARDED_BY(sweep_stop_mu_)
  std::thread sweep_thread_;
};

}  // namespace shale::cluster
