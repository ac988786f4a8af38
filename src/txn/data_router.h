// DataRouter: how the transaction layer reaches slice replicas stored on
// other nodes (docs/cluster.md "Data path", docs/transactions.md
// "Distributed commit"). The interface lives here, below src/cluster, so
// src/txn and src/exec never include gRPC; src/cluster/slice_service.h
// implements it over the SliceService RPCs (SliceClient).
//
// A SliceHandle is what the executor resolves a catalog::SliceDef to: reads
// go to the slice's ranking replica (replicas[0]), through `local` when this
// node holds it (no RPC, no copy) and through the router otherwise.
//
// Every call naming `node` == self() runs locally (the participant side of
// two-phase commit is the same code for the coordinator's own replicas).
//
// Thread-safety: implementations are safe to call concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shale/status.h"
#include "src/txn/lock_manager.h"
#include "storage/slice.h"

namespace shale::txn {

class DataRouter;

// One slice of a representation as reads and writes see it.
struct SliceHandle {
  storage::SliceId id = 0;
  // This node's replica when reads go to it (it ranks, or the node is not in
  // a cluster); null when the ranking replica is on another node.
  storage::Slice* local = nullptr;
  // Node names holding replicas, the first ranks; null when the only
  // replica is this node's (every write stays local). Points into the
  // catalog's TableDef, which the statement keeps alive.
  const std::vector<std::string>* replicas = nullptr;
  DataRouter* router = nullptr;  // set when replicas is
  // With a data router: the incarnation of this node's serving replica when
  // the statement routed to `local` (exec::Engine::ServingToken; 0: it served
  // none). A read through `local` is refused unless the same replica still
  // serves here (TxnManager::CheckPlaced).
  uint64_t serving_token = 0;
  bool remote() const { return local == nullptr; }
  const std::string& ranking() const { return (*replicas)[0]; }
};

// A transaction, cluster-wide: its coordinating node and its id there.
struct TxnKey {
  std::string coordinator;
  uint64_t id = 0;
  std::string ToString() const { return coordinator + "/" + std::to_string(id); }
};

// A transaction's wait for a row lock, as the cluster's deadlock detector
// collects it (src/txn/deadlock_detector.h) from the transaction's
// coordinator, which knows exactly while the wait lasts.
struct LockWaitInfo {
  TxnKey txn;
  // The coordinator's clock (microseconds since the epoch) when the
  // transaction began: the youngest transaction of a cycle is its victim.
  int64_t txn_started_us = 0;
  std::string node;  // where the lock is (the ranking replica's node)
  std::string name;  // LockManager name
  LockMode mode = LockMode::kShared;
  // This wait (one lock request of the transaction), unique per
  // coordinator and node: a wait seen twice with the same id lasted between
  // the two sightings.
  uint64_t wait_id = 0;
};

// A holder of a row lock at some node.
struct LockHolderInfo {
  std::string name;
  TxnKey txn;
  LockMode mode = LockMode::kShared;
};

// Where a two-phase commit's decision is kept: the decider (a participant
// other than the coordinator) and the backup (another node, when there is
// one), which holds the authoritative record (docs/transactions.md
// "Distributed commit").
//
// A one-phase transaction on two nodes (`one_phase`, docs/transactions.md
// "One phase on two nodes") has no decision record: `decider` is the
// applier, whose Apply of its share is the decision, and `backup` is empty.
// Whether it applied is read from its replica of `probe_slice`: the version
// of `probe_key` (a put of the transaction) at the commit timestamp.
// A row lock a transaction holds in X mode, as its commit reports it to the
// nodes that write (docs/transactions.md "Row locks when the ranking replica
// changes"): the lock's name, the slice whose ranking replica it was taken
// at, and the node that replica was on.
struct HeldLock {
  std::string name;
  storage::SliceId slice = 0;
  std::string node;
};
using HeldLocks = std::vector<HeldLock>;

// Two-phase commit (`acceptors` set): the outcome is chosen by Paxos
// among `acceptors` (src/txn/commit/paxos.h, ChooseAcceptors), and
// `decider`/`backup` are empty. A prepared record from before Paxos commit
// names a decider and a backup instead and no acceptors.
struct DeciderPair {
  std::string decider;
  std::string backup;  // empty: the decider alone
  std::vector<std::string> acceptors = {};
  // Every node the transaction prepares at. Kept with the prepared records
  // and the decision records, so a decision record no participant needs
  // any more can be collected (docs/transactions.md "Collecting orphaned
  // decision records"). Empty: unknown (such a record is kept). One phase
  // on two nodes: the two nodes, kept with the applier's refusal.
  std::vector<std::string> participants = {};
  bool one_phase = false;
  storage::SliceId probe_slice = 0;
  std::string probe_key;
  // The transaction's X row locks: each node that prepares checks those of
  // the slices it ranks and takes the others.
  HeldLocks locks = {};
};

// Buffered writes: per slice, key -> value (nullopt: delete), in key order.
using SliceWrites = std::map<std::string, std::optional<std::string>>;
using WriteSet = std::map<storage::SliceId, SliceWrites>;
// Keys of a write set, per slice and ascending, whose put needs no entry in
// the garbage collector's queue: the key had no committed version that was
// live when it was written under its lock (a new row), so every older
// version of it is a deleted row's, queued by the delete that made its
// tombstone; that entry's pass removes the tombstone and all below it, or,
// once the horizon passed the new put, everything below the put
// (MvccSlice::CollectKeyGarbage). A bulk INSERT leaves no work for the
// collector.
using FreshKeys = std::map<storage::SliceId, std::vector<std::string_view>>;
// Where written slices' replicas are: slice -> node names. A slice missing
// from the map has only this node's replica.
using Placement = std::map<storage::SliceId, std::vector<std::string>>;

// A fragment of a statement pushed to the node holding a slice replica
// (docs/cluster.md "Query path"): its bytes are a Sierra plan
// (docs/formats/sierra-plan.md "Pushed fragments") that src/exec/pushdown.h
// makes and compiles; this layer only carries them. One object runs over
// the stored rows of one slice range on one thread.
class RowFragment {
 public:
  virtual ~RowFragment() = default;
  // True: the fragment aggregates (its output is partial rows); false: it
  // filters (its output is the stored rows it passes).
  virtual bool aggregates() const = 0;
  // Feeds one stored row (the value of a primary-representation entry).
  // A filter sets *pass; an aggregate adds the row to its groups.
  virtual Status Add(std::string_view value, bool* pass) = 0;
  // An aggregate: the number of groups held (a page ends early past a bound).
  virtual size_t groups() const = 0;
  // An aggregate: appends the partial rows of the rows added since the last
  // call (one per group, in order of first appearance) and starts over.
  virtual void TakePartials(std::vector<std::string>* out) = 0;
};
// Compiles fragment bytes to run over the rows of `slice` on the node that
// stores it (set by shaled from src/exec/pushdown.h): InvalidArgument for
// bytes that are not a fragment it may run, 1412 for a table at another
// definition version, 1047 when `slice` is not the fragment's table's.
using FragmentCompiler =
    std::function<Result<std::unique_ptr<RowFragment>>(const std::string& fragment, storage::SliceId slice)>;

class DataRouter {
 public:
  virtual ~DataRouter() = default;
  // This node's name (as in SliceDef::replicas).
  virtual const std::string& self() const = 0;

  // Reads of the replica `slice` on `node` at `snapshot`
  // (storage::kLatestSnapshot: the newest committed version).
  virtual Status Get(const std::string& node, storage::SliceId slice, std::string_view key, uint64_t snapshot,
                     std::string* value) = 0;
  virtual std::unique_ptr<storage::SliceIterator> Scan(const std::string& node, storage::SliceId slice,
                                                       const storage::KeyRange& range, uint64_t snapshot) = 0;

  // Push-down (docs/cluster.md "Query path"): the rows of `range` at
  // `snapshot` that pass the filter fragment `fragment`, evaluated at
  // `node` with the same checks as Scan; only those travel.
  virtual std::unique_ptr<storage::SliceIterator> ScanFiltered(const std::string& node, storage::SliceId slice,
                                                               const storage::KeyRange& range, uint64_t snapshot,
                                                               const std::string& fragment) = 0;
  // The aggregate fragment `fragment` over the rows of `range` at
  // `snapshot`, run at `node` (same checks as Scan): appends its partial
  // rows (possibly several per group: one set per page) to *partials.
  virtual Status AggregateSlice(const std::string& node, storage::SliceId slice, const storage::KeyRange& range,
                                uint64_t snapshot, const std::string& fragment,
                                std::vector<std::string>* partials) = 0;

  // Batched key lookup (a join's inner side, an index scan's rows,
  // docs/cluster.md "Query path"): the rows with primary keys `keys`
  // (encoded, at most kMaxLookupKeys) of `slice` at `snapshot` that exist
  // and pass the filter fragment `fragment` (empty: every row passes),
  // evaluated at `node` with the same checks as Scan; appended to *rows as
  // (key, value) in the order of `keys`.
  static constexpr size_t kMaxLookupKeys = 1024;
  virtual Status LookupFiltered(const std::string& node, storage::SliceId slice,
                                const std::vector<std::string>& keys, uint64_t snapshot,
                                const std::string& fragment,
                                std::vector<std::pair<std::string, std::string>>* rows) = 0;
  // Batched prefix lookup (a join on a prefix of the primary key or on the
  // leading columns of a secondary index, docs/cluster.md "Query path"):
  // every entry of `slice` at `snapshot` whose key starts with one of
  // `prefixes` (encoded leading key columns, distinct, at most
  // kMaxLookupKeys) and passes the filter fragment `fragment` (on an index
  // slice: a filter passing every entry), evaluated at `node` with the same
  // checks as Scan; appended to *rows as (key, value), prefix after prefix
  // in the order of `prefixes`, each prefix's entries in key order. Paged
  // underneath (SliceServiceOptions::fragment_page_rows entries examined per
  // request).
  virtual Status LookupPrefixes(const std::string& node, storage::SliceId slice,
                                const std::vector<std::string>& prefixes, uint64_t snapshot,
                                const std::string& fragment,
                                std::vector<std::pair<std::string, std::string>>* rows) = 0;

  // A row lock held for `txn` at `node` (the ranking replica's node), with
  // the LockManager's errors (1205 after `timeout`, 1317 when *interrupt;
  // 1213 when *victim — the cluster's deadlock detector chose this wait —
  // both checked at least every 250 ms). `holds_locks_there`: `txn` already
  // holds locks at `node`; if that node has none of it (it restarted and
  // lost them, and another transaction may have written those rows since)
  // the request is refused with the retryable 1047 (the session rolls the
  // transaction back) instead of locking afresh. `read` (optional): once
  // the lock is granted at a node other than this one, the newest committed
  // version of read->key in read->slice there, read after the grant as
  // Get(node, slice, key, kLatestSnapshot) would (read->done set; its
  // status and value), so a lock and the row read under it cost one round
  // trip.
  struct LatestRead {
    storage::SliceId slice = 0;
    std::string key;
    bool done = false;
    Status status;
    std::string value;
  };
  virtual Status Lock(const std::string& node, const TxnKey& txn, const std::string& name, LockMode mode,
                      std::chrono::milliseconds timeout, const std::atomic<bool>* interrupt,
                      const std::atomic<bool>* victim, bool holds_locks_there, LatestRead* read = nullptr) = 0;
  // Releases every lock `txn` holds at `node`. Best effort: a lock the
  // release does not reach ends with its lease.
  virtual void Unlock(const std::string& node, const TxnKey& txn) = 0;

  // Two-phase commit, participant side at `node`: record `writes` (the
  // slices of `node`'s replicas) durably, to be applied at `ts`. The
  // decision is kept by `decider` and, authoritatively, by `backup` (empty:
  // by the decider alone).
  virtual Status Prepare(const std::string& node, const TxnKey& txn, uint64_t ts, const WriteSet& writes,
                         const DeciderPair& deciders) = 0;
  // With acceptors (Paxos commit): `commit` — the coordinator's proposal
  // at ballot 0, commit at ts; abort — a resolver's, phase 1 at a fresh
  // ballot (abort unless a value was accepted). Returns the chosen outcome
  // (true: commit at ts); fails when no majority of the acceptors answered
  // (the outcome may be chosen or not).
  // Otherwise (a decider): records commit (at ts) or abort unless an
  // outcome is recorded already; returns the recorded outcome (true:
  // commit). With a backup: asks the
  // decider (which records at the backup first and keeps a copy), and when
  // the decider does not answer and has left the cluster, the backup
  // directly. Fails when neither can give the outcome.
  virtual Result<bool> Decide(const DeciderPair& deciders, const TxnKey& txn, bool commit, uint64_t ts) = 0;
  // Whether `node` is a cluster member (as this node last saw the
  // membership). A node that left had its replicas removed from the slice
  // map; if it returns it is rebuilt from empty replicas.
  virtual bool IsMember(const std::string& node) {
    (void)node;
    return true;
  }
  // The cluster's members as this node last saw them (empty: unknown). The
  // acceptors of a commit come from the participants first, then these.
  virtual std::vector<std::string> Members() { return {}; }
  // Applies (commit) or discards the prepared writes; releases the locks.
  virtual Status Finish(const std::string& node, const TxnKey& txn, bool commit) = 0;
  // Once every participant has finished: drops the decision records at
  // the acceptors (or the decider and the backup) (best effort; a record
  // left behind is harmless).
  virtual void Forget(const DeciderPair& deciders, const TxnKey& txn) = 0;
  // One-phase: writes at `ts` at once (durable when OK) and, when txn is
  // set, releases its locks at `node`.
  // `locks`: the transaction's X row locks (checked at `node` as a
  // Prepare checks them).
  virtual Status Apply(const std::string& node, const TxnKey* txn, uint64_t ts, const WriteSet& writes,
                       const HeldLocks& locks) = 0;
  // One phase on two nodes: the applier's Apply, which is the commit
  // decision (the other node has prepared, naming `node` as its applier).
  // OK: applied (durable), locks released. An error with *refused set:
  // `node` answered that it wrote nothing and will not apply this
  // transaction (it was refused there by a resolver, its locks there
  // ended, or the route was stale). An error without: the outcome is
  // unknown (no answer; the prepared node resolves it).
  virtual Status ApplyDecision(const std::string& node, const TxnKey& txn, uint64_t ts, const WriteSet& writes,
                               const HeldLocks& locks, bool* refused) = 0;

  // Before this node commits `writes` to its own replicas only (no RPC):
  // waits while a one-phase transaction prepared here, its outcome not yet
  // known, has written one of those keys (1205 when that lasts), as a
  // Prepare or Apply from another node does.
  virtual Status AwaitLocalWritable(const WriteSet& writes) {
    (void)writes;
    return Status::OK();
  }

  // The cluster's deadlock detector (src/txn/deadlock_detector.h):
  // the row-lock waits of the transactions `node` coordinates, wherever
  // they wait (TxnManager::LockWaits there).
  virtual Result<std::vector<LockWaitInfo>> LockWaits(const std::string& node) = 0;
  // The holders of the row locks `names` at `node` (local transactions and
  // other nodes' transactions alike, by TxnKey).
  virtual Result<std::vector<LockHolderInfo>> LockHolders(const std::string& node,
                                                          const std::vector<std::string>& names) = 0;
  // At wait.txn's coordinator: ends that wait with ER_LOCK_DEADLOCK 1213
  // if it is still in progress (TxnManager::AbortLockWait). Returns whether
  // it was.
  virtual Result<bool> AbortLockWait(const LockWaitInfo& wait) = 0;

  // Rows this node sent to / received from other nodes on the data path,
  // as requester and as server (SHOW STATUS Shale_rows_sent_to_other_nodes,
  // Shale_rows_received_from_other_nodes; Shale_rows_sent_between_nodes is
  // their sum, rows_moved()).
  virtual uint64_t rows_sent() const = 0;
  virtual uint64_t rows_received() const = 0;
  uint64_t rows_moved() const { return rows_sent() + rows_received(); }
  // Decision records of two-phase commits this node keeps, as a decider or
  // a backup (SHOW STATUS Shale_decision_records; docs/transactions.md).
  virtual uint64_t decision_records() const { return 0; }
};

// Whether a failed statement may be run again as a whole once the cluster
// has moved on: ER_UNKNOWN_COM_ERROR 1047 (SQLSTATE 08S01) — a node holding
// a replica did not answer, a data request met a newer epoch or slice map,
// or this node had no quorum. Nothing the statement wrote was committed: a
// commit whose outcome is unknown fails with 1180 instead.
inline bool IsRetryableClusterError(const Status& st) {
  return st.code() == StatusCode::kSqlError && st.mysql_code() == 1047;
}

// Rows the calling thread's requests moved between this node and others
// (both directions; reset by whoever measures a statement: EXPLAIN ANALYZE,
// SHOW STATUS Shale_last_statement_rows_moved).
uint64_t& StatementRowsMoved();

// A scan that fails at once with `st` (a read that cannot be answered).
std::unique_ptr<storage::SliceIterator> FailedScan(Status st);

// Newest committed version of `key` through a handle (no transaction).
Status ReadLatest(const SliceHandle& slice, std::string_view key, std::string* value);
// Newest committed rows of `range` through a handle (no transaction).
// With `filter` (a filter fragment, see RowFragment): a remote slice
// returns only the rows that pass it (a local one returns every row; the
// caller applies the filter either way).
std::unique_ptr<storage::SliceIterator> ScanLatest(const SliceHandle& slice, const storage::KeyRange& range,
                                                   const std::string* filter = nullptr);

}  // namespace shale::txn
