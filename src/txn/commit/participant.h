// Participant: a node's part in distributed commits
// (docs/transactions.md "Distributed commit", "One phase on two nodes").
//
// The commit module (src/txn/commit/) holds every party of a commit:
//  - the coordinator (coordinator.cc: TxnManager::CommitWrites and the
//    one-phase and two-phase paths it takes), which reaches the other
//    parties through txn::DataRouter;
//  - Paxos commit (paxos.h): the acceptor's step, the proposer, Drive;
//  - this class: everything a node keeps and does for transactions other
//    nodes coordinate, in three roles, one file each:
//      participant.cc  row locks of remote transactions (leases), prepare
//                      (a synced record of the write set), finish (apply or
//                      discard it), the one-phase applier's and replicas'
//                      Apply, and restart (prepared records loaded, their
//                      row locks taken again before the node serves);
//      decisions.cc    the acceptor of Paxos commit (synced state per
//                      transaction), the decider/backup records of commits
//                      from before Paxos commit, the one-phase applier's
//                      answer (its replica is the record), and dropping
//                      records (Forget) and saying which are still needed;
//      resolver.cc     a background thread that resolves prepared
//                      transactions whose coordinator went silent (asks the
//                      acceptors at a fresh ballot, the decider of an old
//                      record, or the one-phase applier; presumes a one-phase
//                      commit once the applier left the cluster) and ends
//                      the row locks of remote transactions whose lease ran
//                      out or whose coordinator left.
// The transport is the caller's: src/cluster/slice_service.cc serves these
// methods as gRPC calls and is the ParticipantHost (metadata waits, calls to
// other nodes' acceptors and deciders).
//
// Durable state (this node's MetaStore):
//   txn/prepared/<coordinator>/<id>  PreparedRecordPb (records.proto); kept
//                                    after a commit's Finish until its apply
//                                    is durable (SyncFinished)
//   txn/decision/<coordinator>/<id>  at an acceptor: its Paxos state
//                                    (EncodeAcceptorState, "Q\n..."); in
//                                    records from before Paxos commit and at
//                                    a one-phase applier: "C<ts>" or "A",
//                                    then "\n<node>" per participant (a
//                                    one-phase refusal: "A" and its two
//                                    nodes; a bare "A" when the asker named
//                                    none)
//   txn/presumed/<coordinator>/<id>  a one-phase transaction committed by
//                                    presumption (its applier left)
//
// Invariants:
//  1. A participant applies a prepared write set only after commit was
//     chosen (a majority of its acceptors accepted it at one ballot; for a
//     record from before Paxos commit, the decider recorded it; one phase,
//     the applier applied), and discards it only after abort was chosen or
//     the coordinator told it to (before it proposed commit).
//  2. An acceptor stores its state, synced, before it answers, one step of
//     a transaction at a time (the transaction's claim, ClaimDecision);
//     with paxos.h's invariants at most one outcome is chosen.
//  3. A prepared transaction keeps its row locks until it is finished, also
//     across a restart (a record whose commit was applied but not synced
//     before the restart loads as prepared again; of two records naming one
//     lock, the newer takes it); locks of a remote transaction that is not prepared
//     end after lock_lease_ms without a request from it, or once its
//     coordinator left the cluster; a later Prepare or Apply of it is then
//     refused.
//  4. One phase on two nodes: the applier's Apply is the decision. It
//     applies only while it holds the transaction's locks and no refusal is
//     recorded; it records a refusal only when its replica lacks the probe
//     at the commit timestamp; both under the transaction's claim. The
//     prepared node commits when the applier has the probe, aborts on its
//     refusal, presumes commit once the applier has left the cluster, and
//     until then makes any other writer of the record's keys wait. A
//     presumed commit writes no slice whose replica here is building or
//     that this node's applied map does not place here (a commit learned
//     from the applier skips the latter only).
//  5. A commit's apply is durable before its prepared record is deleted
//     and before SyncFinished returns OK after its Finish; a coordinator
//     forgets the acceptors' records only after that.
//
// Thread-safety: every method may be called concurrently (gRPC threads);
// Open starts two background threads (resolver.cc; the sync thread,
// SyncLoop), joined by Stop and the destructor.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "shale/status.h"
#include "src/txn/commit/paxos.h"
#include "src/txn/commit/records.pb.h"
#include "src/txn/data_router.h"
#include "src/txn/transaction.h"
#include "storage/meta_store.h"
#include "storage/slice.h"

namespace shale::txn::commit {

// A commit's Finish applied without its WAL sync is made durable (and its
// prepared record dropped) at most this long after, by the sync thread.
inline constexpr std::chrono::milliseconds kFinishSyncDelay{5};

inline constexpr char kPreparedPrefix[] = "txn/prepared/";
inline constexpr char kDecisionPrefix[] = "txn/decision/";
inline constexpr char kPresumedPrefix[] = "txn/presumed/";

// "<coordinator>/<id>" (TxnKey::ToString) of a record's transaction, and back.
std::string KeyOf(const TxnIdPb& id);
TxnKey ParseTxnKey(const std::string& key);

// A write set as repeated messages of the WritesPb shape (records.proto's
// WritesPb, data.proto's SliceWritesPb: slice, keys, values, deletes) and
// back (InvalidArgument for a malformed one: keys and values of different
// lengths). To: the rows written.
template <typename Pb>
uint64_t WritesToPb(const WriteSet& writes, google::protobuf::RepeatedPtrField<Pb>* out) {
  uint64_t rows = 0;
  for (const auto& [slice, keys] : writes) {
    Pb* w = out->Add();
    w->set_slice(slice);
    for (const auto& [key, value] : keys) {
      w->add_keys(key);
      w->add_values(value ? *value : std::string());
      w->add_deletes(!value.has_value());
      ++rows;
    }
  }
  return rows;
}
template <typename Pb>
Result<WriteSet> WritesFromPb(const google::protobuf::RepeatedPtrField<Pb>& in) {
  WriteSet out;
  for (const Pb& w : in) {
    if (w.keys_size() != w.values_size() || w.keys_size() != w.deletes_size()) {
      return Status::InvalidArgument("malformed write set for slice " + std::to_string(w.slice()));
    }
    auto& keys = out[w.slice()];
    for (int i = 0; i < w.keys_size(); ++i) {
      keys[w.keys(i)] = w.deletes(i) ? std::nullopt : std::optional<std::string>(w.values(i));
    }
  }
  return out;
}

// A decider's record (before Paxos commit) or a one-phase refusal:
// "C<ts>" or "A", then "\n<node>" per participant; and its participants
// (an acceptor record's too). Whether a record counts in
// Participant::decision_records(): all but a bare "A".
std::string DecisionValue(bool commit, uint64_t ts, const std::vector<std::string>& participants);
std::vector<std::string> DecisionParticipants(std::string_view value);
bool CountedDecision(std::string_view value);

// One Decide request at this node (records from before Paxos commit, and
// the one-phase applier): `backup` set — this node is the decider and
// records at the backup first; `decider` set — this node is the backup,
// asked directly (answers only while the decider is not a member);
// neither — a plain first-wins record here. `one_phase` set — this node is
// the applier of a one-phase transaction on two nodes: the answer is read
// from its replica.
struct DecideArgs {
  bool commit = false;
  uint64_t ts = 0;
  std::string backup;
  std::string decider;
  std::vector<std::string> participants;  // kept in the record (the sweep asks them)
  bool one_phase = false;
  storage::SliceId probe_slice = 0;
  std::string probe_key;
};

// What the participant needs from the node around it.
class ParticipantHost {
 public:
  virtual ~ParticipantHost() = default;
  // Waits until every slice of `writes` has its replica here for a request
  // routed by a slice map at metadata index `routed_at` (1047 if one does
  // not come).
  virtual Status AwaitSlices(const WriteSet& writes, uint64_t routed_at) const = 0;
  // This node's applied metadata index (0 outside a cluster).
  virtual uint64_t AppliedIndex() const = 0;
  // The outcome of a transaction from its acceptors, its decider or its
  // one-phase applier (DataRouter::Decide): the resolver's question.
  virtual Result<bool> Decide(const DeciderPair& deciders, const TxnKey& txn, bool commit, uint64_t ts) = 0;
  // Decide at `node` (a call to another node unless it is this one): the
  // decider's relay to its backup.
  virtual Result<bool> DecideAt(const std::string& node, const TxnKey& txn, const DecideArgs& args) = 0;
};

struct ParticipantOptions {
  // This node's name. Required.
  std::string node_name;
  // A node name -> its address; an error when it is not a cluster member.
  // Unset: every node counts as a member.
  std::function<Result<std::string>(const std::string&)> address_of;
  // Whether this node's applied slice map places a replica of the slice here
  // (unset: every stored slice), and names this node's replica the ranking
  // one (unset: a lock taken here is taken to rank here, any other not).
  std::function<bool(storage::SliceId)> placed_here;
  std::function<bool(storage::SliceId)> ranks_here;
  // Called after a prepared transaction was applied or dropped here, before
  // Finish returns: waits for this node's reports in flight to the
  // timestamp service. Unset: nothing.
  std::function<void()> report_barrier;
  // Locks of a remote transaction that is not prepared end after this long
  // without a request from it. Default: 60000.
  uint32_t lock_lease_ms = 60000;
  // A prepared transaction not finished this long after Prepare is resolved.
  // Default: 5000.
  uint32_t resolve_after_ms = 5000;
  // Deadline of a request from another node (adopting locks waits at most
  // half of it). Default: 10000.
  uint32_t rpc_timeout_ms = 10000;
  // Whether Open starts the background thread (resolver, lease expiry).
  // false: nothing is resolved but by TEST_ResolveNow (commit_sim_test
  // schedules every step itself). Default: true.
  bool background = true;
};

class Participant {
 public:
  // Loads the prepared records in `meta` (taking their row locks again;
  // they are resolved after resolve_after_ms) and counts the decision
  // records; starts the background thread.
  static Result<std::unique_ptr<Participant>> Open(TxnManager* txn, storage::SliceStore* store,
                                                   storage::MetaStore* meta, ParticipantHost* host,
                                                   ParticipantOptions options);
  // Stops the background thread (the destructor does too): no resolver
  // call starts after it returns. The other methods keep working.
  void Stop();
  ~Participant();

  // ---- row locks of remote transactions (participant.cc) ----
  // `holds_locks_here`: the coordinator says `txn` holds locks here
  // already; with no owner of it here (this node restarted since and lost
  // them) the request is refused with the retryable 1047: the transaction
  // is rolled back, as when a node holding its locks died.
  Status Lock(const std::string& txn, const std::string& name, LockMode mode, std::chrono::milliseconds wait,
              bool holds_locks_here = false);
  // Releases `txn`'s locks here unless it is prepared.
  void Unlock(const std::string& txn);
  // The holders of `names` here, by TxnKey: remote transactions through
  // their owners here, any other owner is a transaction of this node.
  std::vector<LockHolderInfo> LockHolders(const std::vector<std::string>& names) const;

  // ---- prepare, finish, apply (participant.cc) ----
  // Records `record` durably (synced) with the X row locks `txn` holds
  // here, after adopting `held` (the row locks it reports, "Row locks when
  // the ranking replica changes"). A repeated request answers OK.
  Status Prepare(const PreparedRecordPb& record, const HeldLocks& held, uint64_t routed_at);
  // Applies (commit) or discards a prepared write set. A commit skips the
  // slices not stored here; of a one-phase transaction also those this
  // node's applied map does not place here, and, `presumed` (a commit
  // presumed because the applier left), those whose replica here is
  // building. Not prepared here: drops its locks (abort: a later Prepare
  // of it is refused).
  // A commit (not presumed) is applied without waiting for its WAL sync
  // (TxnManager::ApplyAt's deferred write): its prepared record stays until
  // SyncFinished made the apply durable, so a crash before then brings the
  // record back and the restarted node resolves and applies it again.
  Status Finish(const std::string& txn, bool commit, bool presumed = false);
  // Makes every commit Finish applied here so far durable (one WAL group
  // commit) and then drops their prepared records (one unsynced MetaStore
  // batch). The background thread runs it within kFinishSyncDelay of a
  // Finish; a coordinator calls it at every participant before it drops
  // the acceptors' records (SliceService::ForgetLoop): once those are gone
  // a record back after a crash would be resolved to abort, and its commit
  // must not be lost with it.
  Status SyncFinished();
  // A replicated write at `ts` (txn null: no transaction's locks involved).
  // `decides`: the applier's Apply of a one-phase transaction on two nodes,
  // refused (*refused set, nothing written) when a resolver refused it
  // here, or its locks here are gone.
  Status Apply(const std::string* txn, uint64_t ts, const WriteSet& writes, uint64_t routed_at,
               const HeldLocks& locks, bool decides = false, bool* refused = nullptr);
  // Waits (at most a bounded time; 1205 then) until no key of `writes`
  // belongs to a one-phase transaction prepared here.
  Status AwaitWritable(const WriteSet& writes);

  // ---- decisions (decisions.cc) ----
  Result<bool> Decide(const std::string& txn, const DecideArgs& args);
  // The acceptor's step on `txn`'s record here, stored synced before it
  // returns; the record keeps `participants`. An error when the record is
  // of another kind.
  Result<Reply> Paxos(const std::string& txn, const Request& request, const std::vector<std::string>& participants);
  // Drops the decision records of `txns` here in one synced write; adds the
  // number of counted records that were there to *dropped (when set).
  Status Forget(const std::vector<std::string>& txns, uint64_t* dropped = nullptr);
  // For each of `txns`, whether this node may still need its outcome: it
  // holds it prepared, or is preparing or applying it, or applied it
  // without making it durable yet (SyncFinished), or holds row locks
  // of it for its remote coordinator, or it is its coordinator and the
  // commit is in progress (TxnManager::Committing).
  std::vector<bool> DecisionNeeded(const std::vector<TxnKey>& txns) const;
  // Whether `txn` is prepared, being applied or being presumed here (its
  // presumption mark stays while it is).
  bool Unsettled(const std::string& txn) const;
  // Decision records in this node's MetaStore, but for bare "A" records.
  uint64_t decision_records() const { return decision_records_.load(std::memory_order_relaxed); }

  // ---- what is in flight here ----
  size_t prepared_count() const;
  // The commit timestamps of the transactions prepared or being applied
  // here: commits in flight (reported to the cluster timestamp service).
  std::vector<uint64_t> PreparedTimestamps() const;
  // Those whose write set touches `slice` (and those being applied now),
  // by transaction, with their commit timestamps.
  std::map<std::string, uint64_t> PreparedOn(storage::SliceId slice) const;

  // ---- the resolver (resolver.cc) ----
  // One resolver pass now, every prepared transaction taken as overdue.
  void TEST_ResolveNow() { ResolvePass(/*all=*/true); }
  // While held, SyncFinished refuses (Unavailable) and changes nothing: the
  // finished commits stay unsynced, their records kept, as when the process
  // dies before their sync (also at Stop).
  void TEST_HoldSyncs(bool held) { syncs_held_.store(held, std::memory_order_relaxed); }

  const std::string& self() const { return options_.node_name; }

 private:
  Participant(TxnManager* txn, storage::SliceStore* store, storage::MetaStore* meta, ParticipantHost* host,
              ParticipantOptions options);

  // Lock owners of remote transactions at this node.
  struct Owner {
    uint64_t id = 0;  // LockManager owner id
    std::chrono::steady_clock::time_point last_used;
    bool prepared = false;
  };
  struct Prepared {
    std::unique_ptr<PreparedRecordPb> request;  // the record
    std::chrono::steady_clock::time_point since;
    bool loaded = false;  // from the MetaStore at Open (prepared before a restart)
  };

  // participant.cc
  // The sync thread: SyncFinished within kFinishSyncDelay of a Finish.
  void SyncLoop();
  // The X row locks `txn` (`key`) reports with its writes, for each slice
  // stored here: one taken at this node must still be held by `txn`, and
  // this node must still rank the slice; one taken at another node is
  // refused (1047) if this node ranks the slice now, else taken here for
  // `txn`, waiting while another transaction — one prepared here — holds
  // it. *owner_id: `txn`'s lock owner here (0: none, `locks` empty).
  Status AdoptLocks(const std::string& txn, const TxnKey& key, const HeldLocks& locks, uint64_t* owner_id);
  // REQUIRES: mu_ held.
  void ReleaseOwnerLocked(const std::string& txn);
  Status CheckNotExpired(const std::string& txn) const;
  // Waits (at most kOnePhaseWait) until `txn` is not being prepared here
  // and no key of `writes` belongs to a one-phase transaction other than
  // `txn` prepared here. 1205 when the wait ends first. REQUIRES: l holds mu_.
  bool OverlapsOnePhaseLocked(const std::string& txn, const WriteSet& writes) const;
  Status AwaitOnePhaseKeys(std::unique_lock<std::mutex>& l, const std::string& txn, const WriteSet& writes);
  // Adds/removes a one-phase prepared transaction's keys to one_phase_keys_.
  // REQUIRES: mu_ held.
  void IndexOnePhaseLocked(const std::string& txn, const PreparedRecordPb& record, bool add);

  // decisions.cc
  // Claims `txn` (waits for another claim on it) / gives it back: one
  // decision step of a transaction at a time here.
  void ClaimDecision(const std::string& txn);
  void ReleaseDecision(const std::string& txn);
  // At the applier of one-phase `txn`: commit when its replica of
  // probe_slice holds probe_key at ts (it applied), else records that
  // `txn` is refused here (its Apply fails from now on) and answers abort.
  // REQUIRES: the caller holds `txn`'s claim.
  Result<bool> DecideApplied(const std::string& txn, const DecideArgs& args);
  // Whether this node, the decider of `txn`, may record abort without its
  // backup: the backup has left the cluster, and this node prepared `txn`
  // itself (not loaded at a restart) while it has been a member without a
  // break, so no one can have read the backup's record directly.
  bool MayDecideAlone(const std::string& txn, const std::string& backup);

  // resolver.cc
  void BackgroundLoop();
  void ResolvePass(bool all);
  // Coordinators of this node's remote lock owners that are not members.
  std::set<std::string> CoordinatorsGone();
  // Ends the locks of remote transactions not prepared whose lease ran out
  // or whose coordinator left.
  void ExpireLeases();
  // One-phase resolution when the applier has left: commit at the prepared
  // timestamp, with a durable mark, so a coordinator's late Finish(abort)
  // learns it was committed.
  Status PresumeCommit(const std::string& txn);
  bool IsMember(const std::string& node) const {
    return !options_.address_of || options_.address_of(node).ok();
  }

  TxnManager* const txn_;
  storage::SliceStore* const store_;
  storage::MetaStore* const meta_;
  ParticipantHost* const host_;
  const ParticipantOptions options_;

  mutable std::mutex mu_;
  std::unordered_map<std::string, Owner> owners_;   // GUARDED_BY(mu_)
  std::unordered_set<std::string> expired_;         // GUARDED_BY(mu_): leases ended
  std::map<std::string, Prepared> prepared_;        // GUARDED_BY(mu_)
  std::map<std::string, uint64_t> finishing_;       // GUARDED_BY(mu_): being applied, -> commit ts
  std::set<std::string> preparing_;                 // GUARDED_BY(mu_): prepare record being written
  std::condition_variable prepare_cv_;              // preparing_ or one_phase_keys_ shrank
  // Keys (slice, user key) written by one-phase transactions prepared
  // here, -> the transaction (AwaitOnePhaseKeys).
  std::map<std::pair<storage::SliceId, std::string>, std::string> one_phase_keys_;  // GUARDED_BY(mu_)
  std::set<std::string> presuming_;                 // GUARDED_BY(mu_): PresumeCommit running
  // Commits applied here whose WAL record may not be durable yet (Finish)
  // -> (commit ts, WAL position to sync to); their prepared records stay
  // and their collection pins are held until SyncFinished.
  struct Unsynced {
    uint64_t ts = 0;
    uint64_t lsn = 0;
  };
  std::map<std::string, Unsynced> unsynced_;        // GUARDED_BY(mu_)
  std::mutex sync_mu_;                              // one SyncFinished at a time
  std::atomic<bool> syncs_held_{false};             // TEST_HoldSyncs

  std::mutex decide_mu_;
  std::condition_variable decide_cv_;
  std::set<std::string> deciding_;  // GUARDED_BY(decide_mu_): claimed transactions
  std::atomic<uint64_t> decision_records_{0};
  // Since when this node has been a cluster member without a break (seen by
  // the background thread); max() until it has seen itself a member.
  std::atomic<int64_t> member_since_ms_{INT64_MAX};

  std::mutex bg_mu_;
  std::condition_variable bg_cv_;
  bool stop_ = false;  // GUARDED_BY(bg_mu_)
  std::thread bg_thread_;
  std::condition_variable sync_cv_;  // with bg_mu_: a Finish left a commit unsynced
  bool sync_wanted_ = false;         // GUARDED_BY(bg_mu_)
  std::thread sync_thread_;
};

}  // namespace shale::txn::commit
