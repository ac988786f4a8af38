// Transactions over MVCC slices (docs/transactions.md).
//
// TxnManager (one per node) owns the timestamp oracle, the lock manager, the
// set of snapshots in use and the background garbage collector. A
// Transaction reads at a snapshot through storage::MvccSlice, buffers its
// writes in a write set (which every read of the transaction overlays, so it
// reads its own writes), and at Commit writes the whole write set as row
// versions at one new commit timestamp with ONE SliceStore::Write: one WAL
// record, so after a crash a transaction is there whole or not at all.
// Rollback discards the write set; nothing was written.
//
// In a cluster (a DataRouter is set) a slice's replicas may live on other
// nodes: reads through a remote SliceHandle go to the ranking replica over
// RPC, row locks are taken at the ranking replica's node, and a commit whose
// write set reaches other nodes runs two-phase commit over every replica of
// every written slice (docs/transactions.md "Distributed commit"). With every
// replica local nothing changes: no RPC, no copy.
//
// Invariants:
//  1. Rows written by a transaction become visible to others only at its
//     commit timestamp T, to snapshots >= T, all at once (the oracle keeps
//     every snapshot below a commit that is not fully applied).
//  2. A transaction holds its row locks until Commit or Rollback. A writer
//     holds an exclusive lock on every primary key it writes, so a key's
//     versions are written in commit-timestamp order.
//  3. A snapshot in use is registered until released; garbage collection
//     never removes a version a registered snapshot (or a later one) can see.
//  4. Statement savepoint: RollbackStatement undoes exactly the writes
//     buffered since the last BeginStatement (locks are kept, as InnoDB does).
//  5. Named savepoints (SAVEPOINT s) are marks in the same undo log, in the
//     order set: RollbackToSavepoint undoes exactly the writes buffered since
//     the mark, keeps the locks, and drops the savepoints set after it.
//
// Thread-safety: TxnManager methods may be called concurrently. A
// Transaction is used by one thread at a time (its session's).
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
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "shale/status.h"
#include "src/common/packed_strings.h"
#include "src/txn/data_router.h"
#include "src/txn/lock_manager.h"
#include "src/txn/timestamp_oracle.h"
#include "storage/meta_store.h"
#include "storage/mvcc.h"
#include "storage/slice.h"

namespace shale::txn {

// MySQL's four levels. READ UNCOMMITTED runs as READ COMMITTED and
// SERIALIZABLE as REPEATABLE READ (docs/transactions.md).
enum class Isolation : uint8_t { kReadUncommitted, kReadCommitted, kRepeatableRead, kSerializable };

// "REPEATABLE-READ" etc. (the transaction_isolation variable's values).
const char* IsolationName(Isolation i);
// Parses "REPEATABLE-READ" / "REPEATABLE READ" (any case); false if unknown.
bool ParseIsolation(std::string_view text, Isolation* out);

struct TxnOptions {
  Isolation isolation = Isolation::kRepeatableRead;
  bool read_only = false;
};

class Transaction;

struct TxnManagerOptions {
  // How often the garbage collector removes versions no snapshot can see.
  // Default: 200 ms.
  uint32_t gc_interval_ms = 200;
  // At most this many keys wait for the collector; a commit's keys beyond
  // it have their slice swept whole by a later pass. Default: 2^20.
  size_t gc_queue_keys = size_t{1} << 20;
  // How long a read waits for a prepared transaction at or below its
  // snapshot to be applied here (HoldReads) before it fails with the
  // retryable 1047. Longer than a resolution after a restart (the
  // participant's resolve_after_ms, 5 s by default). Default: 8000 ms.
  uint32_t read_hold_wait_ms = 8000;
  // How long a coordinator asks its acceptors again (every 200 ms) while no
  // majority of them answers its commit, before it answers 1180 (the
  // participants resolve it). Default: 8000 ms.
  uint32_t decide_retry_ms = 8000;
};

struct TxnStats {
  uint64_t commits = 0, rollbacks = 0, gc_removed = 0, gc_queued = 0;
  uint64_t gc_passes = 0;  // collection passes run
  // Lock waits of this node's transactions ended with 1213: cycles this
  // node's LockManager found, and victims of the cluster's detector.
  uint64_t deadlocks = 0;
  uint64_t row_locks_held = 0;  // locks in this node's LockManager now
  // Commits this node coordinated across nodes: one phase on two
  // nodes (docs/transactions.md "One phase on two nodes") and full
  // two-phase commit (SHOW STATUS Shale_one_phase_commits,
  // Shale_two_phase_commits).
  uint64_t one_phase_commits = 0, two_phase_commits = 0;
  // Commits with writes this node coordinated (local ones included), and
  // the RPC round trips and synced writes here their commits waited for,
  // one after another (src/common/critical_path.h; SHOW STATUS
  // Shale_write_commits, Shale_write_commit_rpc_rounds,
  // Shale_write_commit_synced_writes).
  uint64_t write_commits = 0, write_commit_rounds = 0, write_commit_synced_writes = 0;
  // Snapshots (and acknowledgements after newest-version reads) that
  // waited snapshot_wait_ms for the commits in flight and failed with the
  // retryable 1047 (SHOW STATUS Shale_stale_snapshot_waits; docs/transactions.md
  // "Snapshots see every acknowledged commit").
  uint64_t stale_snapshot_waits = 0;
};

class TxnManager {
 public:
  static Result<std::unique_ptr<TxnManager>> Open(storage::SliceStore* store, storage::MetaStore* meta,
                                                  TxnManagerOptions options = {});
  ~TxnManager();

  std::unique_ptr<Transaction> Begin(const TxnOptions& options);
  // Writes `batches` (user keys) as versions at a new commit timestamp in one
  // atomic store write, outside any transaction: DDL (index builds, ALTER
  // TABLE rewrites). REQUIRES: no transaction writes the same keys
  // concurrently (the caller holds the table's write mutex).
  // `placement`: where the written slices' replicas are (null: all local);
  // every replica receives the batches before this returns OK.
  Status CommitBatches(const std::vector<std::pair<storage::SliceId, const storage::WriteBatch*>>& batches,
                       const Placement* placement = nullptr);
  // CommitBatches for slices created empty for this write, which nothing
  // else writes until the DDL publishes them: the fill of a new index
  // (exec::BuildIndex). `entries` are (key, row) puts per slice, each list
  // in key order (the store then fills the trees a leaf at a time,
  // storage/btree.h InsertRun); the views need only live until this
  // returns. Locally (no replica elsewhere in `placement`) the versions are
  // made straight from them, without a write set, and nothing is queued
  // for garbage collection: a key's only version has nothing to collect.
  // Otherwise it is CommitBatches.
  // REQUIRES: the slices held nothing before, and no transaction or
  // one-phase commit writes them concurrently (they are not published).
  using SliceFill = std::vector<std::pair<std::string_view, std::string_view>>;
  Status FillNewSlices(const std::vector<std::pair<storage::SliceId, SliceFill>>& entries,
                       const Placement* placement = nullptr);

  // The cluster data path; null outside a cluster. REQUIRES: set before
  // transactions run; outlives the manager's transactions.
  void SetRouter(DataRouter* router) { router_ = router; }
  DataRouter* router() const { return router_; }
  // Cluster routing freshness (docs/cluster.md "Data path", invariant 6).
  // `sync` waits (bounded) until this node has applied every metadata
  // change the cluster had committed when the snapshot or commit timestamp
  // just taken was handed out; it runs after each snapshot is acquired and
  // after each distributed commit's timestamp is taken, so the slice map
  // the node routes by (and sends as DataHeaderPb.applied_index) is at
  // least as new as any map a commit acknowledged before used. `placed`
  // says whether this node's applied slice map still places a replica of a
  // slice here; a local read of a slice that is no longer placed here (it
  // moved away; the statement was routed by an older map) fails with the
  // retryable 1047. REQUIRES: set before transactions run. Unset: no sync,
  // every stored slice is placed.
  void SetRoutingChecks(std::function<void()> sync, std::function<uint64_t(storage::SliceId)> serving) {
    metadata_sync_ = std::move(sync);
    serving_token_ = std::move(serving);
  }
  // OK, or 1047 when this node's slice map no longer has the replica `slice`
  // routed to serving here: it moved away, or it was replaced — this node
  // was removed and its replica dropped, and a new one, building or built
  // since, took its place (the storage slice the handle routed to is gone).
  Status CheckPlaced(const SliceHandle& slice, const std::string& node) const;
  // Participant side: writes `writes` (user keys) as versions at `ts`, a
  // timestamp the coordinator took, in one atomic store write, and queues
  // every key for garbage collection except the puts listed in `fresh`.
  // With `deferred_lsn`, the store write does not wait for its WAL sync
  // (SliceStore::WriteDeferred): `*deferred_lsn` is the WAL position
  // SliceStore::SyncWal must reach before the write is durable.
  Status ApplyAt(uint64_t ts, const WriteSet& writes, const FreshKeys* fresh = nullptr,
                 uint64_t* deferred_lsn = nullptr);
  // A fresh lock-owner id (remote transactions' locks at this node).
  uint64_t NewOwnerId() { return next_txn_id_.fetch_add(1); }

  LockManager* locks() { return &locks_; }
  // The row-lock waits in progress of this node's transactions: in this
  // node's LockManager and at other nodes (Transaction::Lock registers those
  // for the length of the request). What the cluster's deadlock detector
  // collects (src/txn/deadlock_detector.h). `self`: this node's name.
  std::vector<LockWaitInfo> LockWaits(const std::string& self) const;
  // Ends wait `wait_id` of this node's transaction `txn` at `node` with
  // ER_LOCK_DEADLOCK 1213, if it is still in progress: at once when it waits
  // here, else when its current request to `node` returns (at most 250 ms).
  // The session then rolls the whole transaction back. Returns whether the
  // wait was in progress.
  bool AbortLockWait(uint64_t txn, const std::string& node, const std::string& self, uint64_t wait_id);
  // Whether this node's two-phase commit, or one-phase commit on two
  // nodes, of its transaction `id` is in progress: from before its first
  // Prepare until CommitWrites returns. Until then it may still ask the
  // decider for commit (two phases), or send the applier's apply or the
  // other node's Finish(abort) (one phase), so no decision record, refusal
  // or presumption mark of it may be dropped (SliceService's sweep of
  // decision records, docs/transactions.md "Collecting orphaned decision
  // records").
  bool Committing(uint64_t id) const;
  TimestampOracle* oracle() { return Oracle(); }
  // Takes commit and read timestamps from `shared` instead of this node's
  // own oracle: in-process multi-node tests, until the cluster timestamp
  // service replaces the oracle. REQUIRES: before any transaction; `shared`
  // outlives the manager.
  void TEST_UseOracle(TimestampOracle* shared) { shared_oracle_ = shared; }
  // The commit of `writes` as transaction `key` through the router
  // (src/txn/commit/commit_sim_test.cc drives the coordinator directly).
  Status TEST_CommitWrites(const TxnKey& key, const WriteSet& writes, const Placement& placement, bool* in_doubt) {
    std::set<std::string> participants;
    return CommitWrites(key, writes, placement, &participants, in_doubt);
  }
  // Runs between the prepare and the decision of every two-phase commit
  // (tests: stop a participant or an acceptor there).
  void TEST_SetAfterPrepare(std::function<void()> hook) { after_prepare_ = std::move(hook); }
  // Runs after the commit decision was recorded, before the participants
  // are told (tests: lose an acceptor or the coordinator there).
  void TEST_SetAfterDecide(std::function<void(const DeciderPair&)> hook) { after_decide_ = std::move(hook); }
  // One phase on two nodes (tests): runs once the other node has prepared,
  // before the applier applies (`deciders.decider` is the applier), and
  // once the applier has applied, before the other node finishes.
  void TEST_SetAfterOnePhasePrepare(std::function<void(const DeciderPair&)> hook) {
    after_one_phase_prepare_ = std::move(hook);
  }
  void TEST_SetAfterOnePhaseApply(std::function<void(const DeciderPair&)> hook) {
    after_one_phase_apply_ = std::move(hook);
  }
  // One phase on two nodes (tests): sees the other node's answer to the
  // prepare and returns the one the coordinator acts on (a failure in
  // place of an OK: the answer was lost after the node prepared).
  void TEST_SetOnePhasePrepareAnswer(std::function<Status(const DeciderPair&, Status)> hook) {
    one_phase_prepare_answer_ = std::move(hook);
  }
  // How long a one-phase commit whose prepare got no answer waits for the
  // other node to answer or leave the cluster before it answers 1180.
  void TEST_SetPrepareLostWait(std::chrono::milliseconds wait) { prepare_lost_wait_ = wait; }
  storage::SliceStore* store() { return store_; }
  // The garbage collector holds this shared while it works on slices; hold
  // it exclusively to drop slices.
  std::shared_mutex& slice_drop_mutex() { return slice_drop_mu_; }
  // The oldest snapshot this node's transactions read at; UINT64_MAX when
  // none is in use (reported to the cluster timestamp service). Lock-free:
  // safe to call from inside the timestamp source.
  uint64_t OldestSnapshot() const;
  // A count of the commits applied to this node's slices (every Apply,
  // ApplyAt and FillNewSlices), raised after their versions are written and
  // before their row locks are released. A locking read that saw no change
  // between reading a row and getting its lock knows the row it read is
  // still the newest (exec's SliceScanSource).
  uint64_t applied_commits() const { return applied_commits_.load(std::memory_order_acquire); }
  // Held by a participant from before it applies a prepared transaction at
  // `ts` until its prepared record's delete (unsynced) has returned
  // (SliceService::LocalFinish): a garbage-collection pass whose horizon is
  // taken meanwhile stays below ts, one taken afterwards syncs that delete
  // before it collects (CollectPass). So no version of the transaction is
  // collected while a power loss could still bring its prepared record back
  // (and with it a second apply).
  void PinCollection(uint64_t ts);
  void UnpinCollection(uint64_t ts);
  // The highest horizon a garbage-collection pass used: versions only a
  // snapshot below it could see may be gone from this node's replicas.
  uint64_t collected_horizon() const { return collected_horizon_.load(std::memory_order_acquire); }
  TxnStats stats() const;
  // Runs one garbage-collection pass now (tests). Returns versions removed.
  uint64_t TEST_CollectGarbage();

  // A replica built from a snapshot stream at T (the rebalancer's copy,
  // src/cluster/replica_copy.h) holds, for every key, the newest version at
  // or below T and every later one: complete only for snapshots >= T. Its
  // builder records T here (durably, MetaStore key
  // txn/readable_from/<slice>, the highest T of any chunk) before the
  // replica can serve reads; a read of that slice at a snapshot below it
  // fails with the retryable 1047 ("snapshot too old") instead of missing
  // rows. 0: complete for every snapshot.
  Status NoteReadableFrom(storage::SliceId slice, uint64_t ts);
  uint64_t ReadableFrom(storage::SliceId slice) const;
  // A transaction prepared here (commit::Participant) whose share of
  // `slices` is not applied yet: a read of one of them at a snapshot at or
  // above `ts` waits until it is released (applied, or discarded). Reads
  // at such a snapshot happen only when the watermark passed ts while this
  // node was down (its report of the prepared transaction went with it)
  // or its Finish was lost: the other participants applied their shares,
  // so reading this replica before its share is applied would show the
  // commit half (issue 16's Jepsen bank run with kills). Idempotent.
  void HoldReads(const std::string& txn, uint64_t ts, std::vector<storage::SliceId> slices);
  void ReleaseReads(const std::string& txn);
  // OK, or the 1047 above when `snapshot` (not kLatestSnapshot) is below
  // ReadableFrom(slice). Waits (at most read_hold_wait_ms; then 1047) while
  // a transaction held by HoldReads at or below `snapshot` writes `slice`.
  // `node` names this node in the messages.
  Status CheckReadable(storage::SliceId slice, uint64_t snapshot, const std::string& node) const;

 private:
  friend class Transaction;
  TxnManager(storage::SliceStore* store, storage::MetaStore* meta, TxnManagerOptions options)
      : store_(store), meta_(meta), options_(options) {}

  TimestampOracle* Oracle() { return shared_oracle_ != nullptr ? shared_oracle_ : oracle_.get(); }
  const TimestampOracle* Oracle() const { return shared_oracle_ != nullptr ? shared_oracle_ : oracle_.get(); }
  Result<uint64_t> AcquireSnapshot();
  void ReleaseSnapshot(uint64_t ts);
  // Writes the write set at a new timestamp; queues its keys for GC
  // (except the puts in `fresh`).
  Status Apply(const WriteSet& writes, const FreshKeys* fresh = nullptr);
  // Commits `writes` to every replica of every slice (`placement`): local
  // Apply when all are here, one-phase Apply at a single remote node, else
  // two-phase commit. *participants gets the nodes that wrote (their locks
  // for `key` are released by the commit).
  // *in_doubt: the outcome is unknown (1180); the participants keep the
  // writes prepared, and their locks, until they resolve it.
  // `lock_nodes`: the other nodes where the transaction holds row locks
  // (null: none known, as for DDL batches); a write set on exactly two
  // nodes, one of them this node or one of those, commits in one phase on
  // two nodes (CommitOnePhase). `locks`: the transaction's X row locks and
  // where they were taken (null: none), sent with the writes so each node
  // checks them against the ranking replicas it knows (docs/transactions.md
  // "Row locks when the ranking replica changes").
  // Whether every replica of every slice `writes` names (by `placement`;
  // an unlisted slice is this node's) is on this node: its commit is a
  // local Apply.
  bool OnlyHere(const WriteSet& writes, const Placement& placement) const;
  Status CommitWrites(const TxnKey& key, const WriteSet& writes, const Placement& placement,
                      std::set<std::string>* participants, bool* in_doubt = nullptr,
                      const std::set<std::string>* lock_nodes = nullptr, const HeldLocks* locks = nullptr);
  // One phase on two nodes (docs/transactions.md "One phase on two
  // nodes"): prepare at `deciders`' other node, Apply at the applier
  // (deciders.decider) — the decision —, then Finish at the other node.
  Status CommitOnePhase(const TxnKey& key, uint64_t ts, const std::map<std::string, WriteSet>& by_node,
                        const DeciderPair& deciders, const std::string& other, bool* in_doubt);
  // The prepare at `other` got no answer and `other` did not confirm it
  // discarded its share: the applier records the refusal, then the retryable
  // 1047 once `other` discarded its share or left the cluster (within
  // prepare_lost_wait_), else `unknown(...)` (1180).
  Status PrepareLost(const TxnKey& key, uint64_t ts, const DeciderPair& deciders, const std::string& other,
                     const std::string& why, const std::function<Status(const std::string&)>& unknown);
  uint64_t Horizon();
  uint64_t CollectPass();
  void GcLoop();

  storage::SliceStore* const store_;
  storage::MetaStore* const meta_;
  const TxnManagerOptions options_;
  mutable std::mutex readable_mu_;
  std::map<storage::SliceId, uint64_t> readable_from_;  // GUARDED_BY(readable_mu_)
  // HoldReads: transaction -> (commit ts, slices), and the lowest ts held
  // (UINT64_MAX: none; a read below it does not lock).
  mutable std::mutex held_mu_;
  mutable std::condition_variable held_cv_;
  std::map<std::string, std::pair<uint64_t, std::vector<storage::SliceId>>> held_;  // GUARDED_BY(held_mu_)
  std::atomic<uint64_t> held_min_ts_{UINT64_MAX};
  std::unique_ptr<TimestampOracle> oracle_;
  TimestampOracle* shared_oracle_ = nullptr;
  std::function<void()> after_prepare_;  // tests
  std::function<void()> metadata_sync_;                 // SetRoutingChecks
  std::function<uint64_t(storage::SliceId)> serving_token_;  // SetRoutingChecks
  std::function<void(const DeciderPair&)> after_decide_;  // tests
  std::function<void(const DeciderPair&)> after_one_phase_prepare_;  // tests
  std::function<void(const DeciderPair&)> after_one_phase_apply_;    // tests
  std::function<Status(const DeciderPair&, Status)> one_phase_prepare_answer_;  // tests
  std::chrono::milliseconds prepare_lost_wait_{8000};
  DataRouter* router_ = nullptr;
  LockManager locks_;
  std::atomic<uint64_t> next_txn_id_{1};
  // Two-phase and one-phase (two nodes) commits in progress here, by
  // transaction id (Committing):
  // a CommitInProgress registers one for its lifetime.
  class CommitInProgress;
  mutable std::mutex committing_mu_;
  std::set<uint64_t> committing_;  // GUARDED_BY(committing_mu_)

  // Waits of this node's transactions for locks at other nodes.
  struct RemoteWait {
    uint64_t txn = 0;
    int64_t txn_started_us = 0;
    std::string node, name;
    LockMode mode = LockMode::kShared;
    std::atomic<bool> victim{false};  // AbortLockWait: the request ends with 1213
  };
  // Registers `wait` (owned by the waiting thread) until Unregister; returns its id.
  uint64_t RegisterRemoteWait(RemoteWait* wait);
  void UnregisterRemoteWait(uint64_t wait_id);
  mutable std::mutex waits_mu_;
  std::map<uint64_t, RemoteWait*> remote_waits_;  // GUARDED_BY(waits_mu_), by wait id
  uint64_t next_remote_wait_id_ = 1;             // GUARDED_BY(waits_mu_)

  std::mutex snap_mu_;
  std::multiset<uint64_t> snapshots_;  // GUARDED_BY(snap_mu_)
  std::multiset<uint64_t> collection_pins_;  // GUARDED_BY(snap_mu_): PinCollection

  // The keys one commit wrote to one slice, whose older versions may be
  // garbage once the horizon passes `ts`: in one buffer, in key order.
  struct GarbageBatch {
    storage::SliceId slice = 0;
    uint64_t ts = 0;
    PackedStrings keys;
  };
  // A pass sweeps a whole slice instead of seeking each key when the keys
  // to collect are at least this many and a quarter of its versions.
  static constexpr size_t kSweepAtKeys = 1u << 14;
  std::mutex gc_mu_;
  std::condition_variable gc_cv_;
  std::deque<GarbageBatch> garbage_;  // GUARDED_BY(gc_mu_)
  size_t garbage_keys_ = 0;           // GUARDED_BY(gc_mu_): the keys in garbage_
  // Slices to sweep whole once the horizon passes the timestamp.
  std::map<storage::SliceId, uint64_t> sweeps_;  // GUARDED_BY(gc_mu_)
  bool stop_ = false;            // GUARDED_BY(gc_mu_)
  std::shared_mutex slice_drop_mu_;
  std::mutex pass_mu_;  // one collection pass at a time
  std::thread gc_thread_;
  std::atomic<uint64_t> commits_{0}, rollbacks_{0}, gc_removed_{0}, gc_queued_{0};
  std::atomic<uint64_t> collected_horizon_{0};
  std::atomic<uint64_t> applied_commits_{0};
  std::atomic<uint64_t> gc_passes_{0};
  std::atomic<uint64_t> one_phase_commits_{0}, two_phase_commits_{0};
  std::atomic<uint64_t> write_commits_{0}, write_commit_rounds_{0}, write_commit_synced_writes_{0};
  std::atomic<uint64_t> remote_deadlocks_{0};  // 1213 from a wait at another node
  std::atomic<uint64_t> oldest_snapshot_{UINT64_MAX};  // min of snapshots_, written under snap_mu_
};

class Transaction {
 public:
  ~Transaction();  // rolls back if neither committed nor rolled back
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  uint64_t id() const { return id_; }
  Isolation isolation() const { return options_.isolation; }
  bool read_only() const { return options_.read_only; }
  bool has_writes() const { return !writes_.empty(); }
  bool done() const { return done_; }

  // Statement boundaries: a savepoint for RollbackStatement; under READ
  // COMMITTED the next read takes a fresh snapshot.
  void BeginStatement();
  void RollbackStatement();
  // SQL savepoints (MySQL semantics; names compare case-insensitively, as
  // identifiers). SetSavepoint marks the write set's current state; a
  // savepoint of the same name is replaced. RollbackToSavepoint undoes the
  // writes buffered since `name` was set, keeps every lock taken since (as
  // InnoDB), keeps `name` and removes the savepoints set after it.
  // ReleaseSavepoint removes `name` and the savepoints set after it.
  // Both fail with 1305 when no savepoint is named `name`.
  // Commit and Rollback remove them all.
  void SetSavepoint(std::string_view name);
  Status RollbackToSavepoint(std::string_view name);
  Status ReleaseSavepoint(std::string_view name);
  // The snapshot the current statement reads at: REPEATABLE READ takes it at
  // the transaction's first read, READ COMMITTED at the statement's.
  // Unavailable (1047, retryable) when the cluster cannot give one that
  // covers every acknowledged commit (no timestamp leader reachable).
  Result<uint64_t> Snapshot();
  void SyncRoutingForLatest();
  // START TRANSACTION WITH CONSISTENT SNAPSHOT: take it now.
  Status TakeSnapshot() { return Snapshot().status(); }

  // Reads key (a user key) of `slice` at the statement's snapshot, or the
  // newest committed version when `latest` (locking reads, the row reads of
  // UPDATE and DELETE, key checks), overlaid by the transaction's own writes.
  Status Get(const SliceHandle& slice, std::string_view key, bool latest, std::string* value);
  // `filter` (a filter fragment, txn::RowFragment): a remote slice sends
  // only the committed rows that pass it; the transaction's own writes are
  // overlaid unfiltered, so the caller applies the filter to every row.
  std::unique_ptr<storage::SliceIterator> NewIterator(const SliceHandle& slice, const storage::KeyRange& range,
                                                      bool latest, const std::string* filter = nullptr);
  // Whether the transaction has buffered writes in `slice` (its reads of
  // that slice need the overlay, so they cannot be answered elsewhere).
  bool HasWritesIn(storage::SliceId slice) const {
    auto it = writes_.find(slice);
    return it != writes_.end() && !it->second.empty();
  }
  Status Get(storage::Slice* slice, std::string_view key, bool latest, std::string* value) {
    return Get(SliceHandle{slice->id(), slice, nullptr, nullptr}, key, latest, value);
  }
  std::unique_ptr<storage::SliceIterator> NewIterator(storage::Slice* slice, const storage::KeyRange& range,
                                                      bool latest) {
    return NewIterator(SliceHandle{slice->id(), slice, nullptr, nullptr}, range, latest);
  }
  // Buffers a write (seen by this transaction's reads at once). The handle
  // form remembers where the slice's replicas are, for the commit.
  // `fresh`: the caller saw no committed version of `key` under its lock
  // (an INSERT of a new row): if this is the transaction's first write of
  // the key and its last one is a put, the commit does not queue the key
  // for garbage collection (FreshKeys).
  void Put(storage::SliceId slice, std::string key, std::string value, bool fresh = false);
  void Delete(storage::SliceId slice, std::string key);
  void Put(const SliceHandle& slice, std::string key, std::string value, bool fresh = false);
  void Delete(const SliceHandle& slice, std::string key);
  // Buffers every write of `writes` (a statement's changes to one slice),
  // as Put/Delete of each would, `fresh` listing the keys whose first write
  // in `writes` was a fresh put (views of `writes`' keys). When the
  // transaction has no write in the slice yet, the map is taken whole, with
  // one undo entry for all of it; else the entries of keys new to the
  // slice move over node by node, also under one undo entry, and only keys
  // written before are buffered one by one: no copy or allocation per new
  // key.
  void PutAll(const SliceHandle& slice, SliceWrites&& writes, std::vector<std::string_view>&& fresh);

  // Takes a row lock: in this node's LockManager (at once when already
  // held strongly enough), or at the ranking replica's node when `at` is a
  // slice whose ranking replica is elsewhere (asked there again each time:
  // that node may have restarted and lost it, and another transaction
  // written the row since; the request then fails, Participant::Lock,
  // instead of the newest-version read after it reading past that write).
  // `read_key` (a user key of `at`): when the lock is taken at another
  // node, the row read under it comes back with the grant (one round trip,
  // DataRouter::LatestRead) and answers this statement's next newest-version
  // Get of that key in `at` (the lock held, no one else can have changed
  // the key's newest version in between).
  Status Lock(std::string name, LockMode mode, std::chrono::milliseconds timeout,
              const std::atomic<bool>* interrupt, const SliceHandle* at = nullptr,
              const std::string* read_key = nullptr);
  // The transaction's cluster-wide name.
  TxnKey key() const;
  std::string LocalName() const;  // this node's name in messages

  // Writes the write set atomically at a new commit timestamp, then releases
  // locks and snapshots. On failure nothing is written and the transaction
  // is rolled back.
  Status Commit();
  void Rollback();

 private:
  friend class TxnManager;
  Transaction(TxnManager* manager, uint64_t id, TxnOptions options)
      : manager_(manager), id_(id), options_(options), started_us_(NowMicros()) {}
  static int64_t NowMicros();
  void Buffer(storage::SliceId slice, std::string key, std::optional<std::string> value, bool fresh = false);
  void NotePlacement(const SliceHandle& slice);
  void ReleaseSnapshots();
  // Commit and Rollback without a commit of our own: see read_latest_.
  [[nodiscard]] Status AwaitWhatLatestReadsSaw();
  void Finish();
  // Undoes the buffered writes after undo_[mark - 1] (newest first).
  void UndoTo(size_t mark);
  // The index in savepoints_ of `name`, or 1305.
  Result<size_t> FindSavepoint(std::string_view name) const;

  TxnManager* const manager_;
  const uint64_t id_;
  const TxnOptions options_;
  const int64_t started_us_;  // wall clock: the youngest of a deadlock cycle is its victim
  std::optional<uint64_t> txn_snapshot_;   // REPEATABLE READ
  std::optional<uint64_t> stmt_snapshot_;  // READ COMMITTED
  bool routing_synced_ = false;            // this statement's SyncRoutingForLatest ran
  // The row read that came back with the last remote lock (Lock's
  // `read_key`) and the node it was read at; taken by the next
  // newest-version Get of that key in that slice, dropped by the next Lock
  // and at each statement's start.
  struct LockedRead {
    std::string node;
    DataRouter::LatestRead read;
  };
  std::optional<LockedRead> locked_read_;
  // A newest-version read ran (locking reads, UPDATE/DELETE row reads): it
  // may have seen a commit not finished yet, so ending without a commit of
  // our own waits for the commits in flight (Commit, Rollback).
  bool read_latest_ = false;
  WriteSet writes_;  // nullopt value: delete
  Placement placement_;  // written slices with replicas on other nodes
  std::set<std::string> lock_nodes_;  // other nodes holding our row locks
  // Those where a lock request succeeded: a later request there says so,
  // and is refused if that node lost them (DataRouter::Lock).
  std::set<std::string> locked_at_;
  // X locks on cluster slices, in the order taken: the slice and the node
  // (its ranking replica's) each was taken at. Appending costs no
  // allocation per lock (names share one buffer); List() gives each name
  // once, with where it was first taken, for a commit that involves other
  // nodes.
  class HeldLockLog {
   public:
    void Add(std::string_view name, storage::SliceId slice, const std::string& node);
    HeldLocks List() const;
    void clear();

   private:
    struct Entry {
      storage::SliceId slice;
      size_t node;  // index in nodes_
    };
    PackedStrings names_;  // names_[i] is entries_[i]'s
    std::vector<Entry> entries_;
    std::vector<std::string> nodes_;  // distinct, few
  };
  HeldLockLog held_locks_;
  struct Undo {
    storage::SliceId slice;
    std::string key;
    bool existed;                         // the key was in the write set before
    std::optional<std::string> previous;  // its value then
    bool fresh = false;                   // first write of the key, and Put(..., fresh)
    // PutAll took the slice's whole map (the slice had no write before):
    // undone by dropping the slice's writes. Or it moved in the map nodes
    // of the keys new to the slice, `moved`: undone by erasing them.
    // `fresh_keys` are the fresh puts among them (views of the nodes' keys,
    // which stay put while the nodes live).
    bool whole_slice = false;
    std::vector<SliceWrites::iterator> moved = {};
    std::vector<std::string_view> fresh_keys = {};
  };
  std::vector<Undo> undo_;
  size_t statement_mark_ = 0;
  struct Savepoint {
    std::string name;
    size_t mark;  // undo_.size() when it was set
  };
  std::vector<Savepoint> savepoints_;  // oldest first
  bool done_ = false;
  bool keep_local_locks_ = false;  // an in-doubt commit's prepared share holds them
};

}  // namespace shale::txn
