// The participant role (participant.h): row locks of remote transactions,
// prepare, finish, apply, and the records loaded at a restart.
#include "src/txn/commit/participant.h"

#include <algorithm>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "src/common/errors.h"
#include "src/common/log.h"
#include "storage/mvcc.h"

namespace shale::txn::commit {
namespace {

// A writer of rows a one-phase transaction prepared here has written waits
// at most this long for its outcome (AwaitOnePhaseKeys).
constexpr std::chrono::milliseconds kOnePhaseWait{10000};

// The slices a prepared record writes (TxnManager::HoldReads).
std::vector<storage::SliceId> SlicesOf(const PreparedRecordPb& record) {
  std::vector<storage::SliceId> out;
  out.reserve(static_cast<size_t>(record.writes_size()));
  for (const WritesPb& w : record.writes()) out.push_back(w.slice());
  return out;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string KeyOf(const TxnIdPb& id) { return id.coordinator() + "/" + std::to_string(id.id()); }

TxnKey ParseTxnKey(const std::string& key) {
  const size_t slash = key.rfind('/');
  TxnKey k;
  k.coordinator = key.substr(0, slash);
  k.id = slash == std::string::npos ? 0 : std::strtoull(key.c_str() + slash + 1, nullptr, 10);
  return k;
}

Participant::Participant(TxnManager* txn, storage::SliceStore* store, storage::MetaStore* meta,
                         ParticipantHost* host, ParticipantOptions options)
    : txn_(txn), store_(store), meta_(meta), host_(host), options_(std::move(options)) {}

Result<std::unique_ptr<Participant>> Participant::Open(TxnManager* txn, storage::SliceStore* store,
                                                       storage::MetaStore* meta, ParticipantHost* host,
                                                       ParticipantOptions options) {
  if (options.node_name.empty()) return Status::InvalidArgument("commit participant: no node name");
  std::unique_ptr<Participant> s(new Participant(txn, store, meta, host, std::move(options)));
  // Transactions prepared before a restart: resolved after resolve_after_ms.
  Status scan_error;
  std::vector<std::unique_ptr<PreparedRecordPb>> loaded;
  SHALE_RETURN_IF_ERROR(meta->Scan(kPreparedPrefix, [&](std::string_view key, std::string_view value) {
    auto request = std::make_unique<PreparedRecordPb>();
    if (!request->ParseFromArray(value.data(), static_cast<int>(value.size()))) {
      scan_error = Status::Corruption(fmt::format("unreadable prepared transaction record {}", key));
      return false;
    }
    loaded.push_back(std::move(request));
    return true;
  }));
  SHALE_RETURN_IF_ERROR(scan_error);
  // Newest first: a record whose commit was applied but not yet synced
  // (Finish, SyncFinished) may name a row lock that a later transaction
  // took after it was released, and prepared too. Only the newest record
  // of a row can still be undecided (the older ones let go of the lock at
  // their Finish): it takes the lock; an older one is only resolved again.
  std::sort(loaded.begin(), loaded.end(),
            [](const auto& a, const auto& b) { return a->commit_ts() > b->commit_ts(); });
  std::set<std::string> taken;
  for (auto& request : loaded) {
    const std::string k = KeyOf(request->txn());
    const uint64_t owner_id = txn->NewOwnerId();
    // Its row locks again, before this node serves anyone: no other
    // transaction may write those rows until the outcome is known. (Nothing
    // else holds locks yet; a failure here is a bug, reported.)
    for (const std::string& name : request->locks()) {
      if (!taken.insert(name).second) continue;  // a newer record's
      Status locked = txn->locks()->Lock(owner_id, name, LockMode::kExclusive, std::chrono::milliseconds(0),
                                         nullptr);
      if (!locked.ok()) {
        return Status::Internal(
            fmt::format("prepared transaction {}: cannot take its row lock again: {}", k, locked.ToString()));
      }
    }
    s->owners_[k] = Owner{owner_id, std::chrono::steady_clock::now(), true};
    if (request->one_phase()) s->IndexOnePhaseLocked(k, *request, /*add=*/true);
    // Its share is not applied here: no read at or above its timestamp
    // until it is (the others may have applied theirs while this node was
    // down).
    txn->HoldReads(k, request->commit_ts(), SlicesOf(*request));
    s->prepared_[k] = Prepared{std::move(request), std::chrono::steady_clock::now(), /*loaded=*/true};
  }
  if (!s->prepared_.empty()) {
    log::Warn("node {}: {} prepared transaction(s) from before the restart; resolving them from their deciders",
              s->options_.node_name, s->prepared_.size());
  }
  uint64_t decisions = 0;
  SHALE_RETURN_IF_ERROR(meta->Scan(kDecisionPrefix, [&](std::string_view, std::string_view value) {
    if (CountedDecision(value)) ++decisions;
    return true;
  }));
  s->decision_records_.store(decisions, std::memory_order_relaxed);
  if (s->options_.background) {
    s->bg_thread_ = std::thread([raw = s.get()] { raw->BackgroundLoop(); });
    s->sync_thread_ = std::thread([raw = s.get()] { raw->SyncLoop(); });
  }
  return s;
}

void Participant::Stop() {
  {
    std::lock_guard<std::mutex> l(bg_mu_);
    stop_ = true;
  }
  bg_cv_.notify_all();
  sync_cv_.notify_all();
  if (bg_thread_.joinable()) bg_thread_.join();
  if (sync_thread_.joinable()) sync_thread_.join();
  // What is applied goes durable now, its records with it (a record left
  // would only be resolved again at the next Open).
  Status st = SyncFinished();
  if (!st.ok()) log::Warn("node {}: syncing finished commits: {}", options_.node_name, st.ToString());
}

Participant::~Participant() {
  Stop();
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [k, owner] : owners_) txn_->locks()->ReleaseAll(owner.id);
  for (const auto& [k, p] : prepared_) txn_->ReleaseReads(k);  // a node's next Participant loads them again
  // Applied, not synced (Stop's sync failed): the records stay, and a next
  // Participant loads them as prepared, which holds the read watermark (and
  // with it the collection horizon) below their timestamps again.
  for (const auto& [k, u] : unsynced_) txn_->UnpinCollection(u.ts);
}

Status Participant::CheckNotExpired(const std::string& txn) const {
  if (expired_.count(txn)) {
    return SqlError(ErrorCode::kLockWaitTimeout,
                    "Lock wait timeout exceeded; try restarting transaction (the row locks of transaction {} at "
                    "node '{}' ended with their lease)",
                    txn, options_.node_name);
  }
  return Status::OK();
}

Status Participant::Lock(const std::string& txn, const std::string& name, LockMode mode,
                         std::chrono::milliseconds wait, bool holds_locks_here) {
  uint64_t owner_id;
  {
    std::lock_guard<std::mutex> l(mu_);
    SHALE_RETURN_IF_ERROR(CheckNotExpired(txn));
    if (holds_locks_here && owners_.count(txn) == 0) {
      // Its locks here went with a restart of this node: another
      // transaction may have locked and written those rows since, so
      // locking afresh would let this one read and write past it.
      // The retryable "cluster changed" error: the whole transaction is
      // rolled back (Session), as when a node holding its locks died.
      return SqlError(ErrorCode::kUnknownCom,
                      "Cluster changed while the transaction ran (node '{}' restarted and lost the row locks of "
                      "transaction {}); it was rolled back, retry it",
                      options_.node_name, txn);
    }
    Owner& owner = owners_[txn];
    if (owner.id == 0) owner.id = txn_->NewOwnerId();
    owner.last_used = std::chrono::steady_clock::now();
    owner_id = owner.id;
  }
  return txn_->locks()->Lock(owner_id, name, mode, wait, nullptr);
}

void Participant::ReleaseOwnerLocked(const std::string& txn) {
  auto it = owners_.find(txn);
  if (it == owners_.end()) return;
  txn_->locks()->ReleaseAll(it->second.id);
  owners_.erase(it);
}

void Participant::Unlock(const std::string& txn) {
  // Not in the middle of its one-phase apply here (Apply): that apply
  // checked the locks are held and writes under them.
  ClaimDecision(txn);
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = owners_.find(txn);
    if (it != owners_.end() && !it->second.prepared) {  // a prepared one waits for its outcome
      ReleaseOwnerLocked(txn);
      expired_.erase(txn);
    }
  }
  ReleaseDecision(txn);
}

Status Participant::Prepare(const PreparedRecordPb& request, const HeldLocks& held, uint64_t routed_at) {
  const std::string k = KeyOf(request.txn());
  // Before taking mu_: the replicas may still be being created.
  auto writes = WritesFromPb(request.writes());
  SHALE_RETURN_IF_ERROR(writes.status());
  SHALE_RETURN_IF_ERROR(host_->AwaitSlices(*writes, routed_at));
  // Its row locks: checked where they were taken, taken at the other
  // replicas, so whichever replica ranks next holds them until the outcome.
  uint64_t adopted = 0;
  SHALE_RETURN_IF_ERROR(AdoptLocks(k, TxnKey{request.txn().coordinator(), request.txn().id()},
                                   held, &adopted));
  auto stored = std::make_unique<PreparedRecordPb>(request);
  stored->clear_locks();  // what is held here goes into `locks`
  stored->set_prepared_at_ms(static_cast<uint64_t>(NowMs()));
  std::unique_lock<std::mutex> l(mu_);
  // A repeated request waits for the first; a writer of rows of a one-phase
  // transaction prepared here waits for its outcome.
  Status ready = AwaitOnePhaseKeys(l, k, *writes);
  if (ready.ok()) ready = CheckNotExpired(k);
  if (!ready.ok()) {
    // Refused: the locks taken above go with an owner not prepared (an
    // abort that came first removed the owner: they go by their id).
    auto owner = owners_.find(k);
    if (owner == owners_.end()) {
      if (adopted != 0) txn_->locks()->ReleaseAll(adopted);
    } else if (!owner->second.prepared) {
      ReleaseOwnerLocked(k);
    }
    return ready;
  }
  if (prepared_.count(k)) return Status::OK();  // a repeated request
  SHALE_RETURN_IF_ERROR(WritesFromPb(stored->writes()).status());
  // This node's own transaction: its local row locks are owned by its id,
  // so they stay with the prepared share until it is finished.
  auto found = owners_.find(k);
  const bool had_owner = found != owners_.end();
  const uint64_t owner_id = had_owner && found->second.id != 0 ? found->second.id
                            : request.txn().coordinator() == options_.node_name ? request.txn().id()
                                                                                : txn_->NewOwnerId();
  // The row locks go into the record: a restart takes them again.
  for (std::string& name : txn_->locks()->ExclusiveLocksOf(owner_id)) stored->add_locks(std::move(name));
  // The synced write happens without mu_, so other transactions' locks,
  // prepares and finishes at this node go on meanwhile (under mu_ they all
  // waited for each prepare's sync in turn). The owner is marked prepared
  // first, so the lease sweeper and Unlock leave its locks alone; Finish
  // waits for preparing_ (the coordinator sends it only after this answer).
  Owner before = had_owner ? found->second : Owner{};
  Owner& owner = owners_[k];
  owner.id = owner_id;
  owner.prepared = true;
  preparing_.insert(k);
  l.unlock();
  const Status put = meta_->Put(kPreparedPrefix + k, stored->SerializeAsString());
  l.lock();
  preparing_.erase(k);
  prepare_cv_.notify_all();
  if (!put.ok()) {
    if (had_owner) {
      owners_[k] = before;
    } else {
      owners_.erase(k);
    }
    return put;
  }
  if (stored->one_phase()) IndexOnePhaseLocked(k, *stored, /*add=*/true);
  txn_->HoldReads(k, stored->commit_ts(), SlicesOf(*stored));
  prepared_[k] = Prepared{std::move(stored), std::chrono::steady_clock::now()};
  return Status::OK();
}

Status Participant::AdoptLocks(const std::string& txn, const TxnKey& key, const HeldLocks& locks,
                                uint64_t* owner_id) {
  *owner_id = 0;
  if (locks.empty()) return Status::OK();
  {
    std::lock_guard<std::mutex> l(mu_);
    SHALE_RETURN_IF_ERROR(CheckNotExpired(txn));
    Owner& owner = owners_[txn];
    // This node's own transaction owns its local locks by its id.
    if (owner.id == 0) owner.id = key.coordinator == self() ? key.id : txn_->NewOwnerId();
    owner.last_used = std::chrono::steady_clock::now();
    *owner_id = owner.id;
  }
  // A holder here is a transaction prepared here (its outcome comes within
  // moments, or a resolution in seconds): wait, within the request's time.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.rpc_timeout_ms / 2);
  for (const HeldLock& lock : locks) {
    if (!store_->GetSlice(lock.slice).ok()) continue;  // no replica here
    const bool taken_here = lock.node == self();
    const bool ranks = options_.ranks_here ? options_.ranks_here(lock.slice) : taken_here;
    if (ranks != taken_here) {
      // Another transaction may have locked the row at the replica that
      // ranks now, and read or written it since.
      return SqlError(ErrorCode::kUnknownCom,
                      "Cluster metadata changed while the transaction ran (transaction {} locked a row of slice {} "
                      "at node '{}', which no longer ranks for it); it was not committed, retry it",
                      txn, lock.slice, lock.node);
    }
    if (taken_here) {
      if (!txn_->locks()->Holds(*owner_id, lock.name, LockMode::kExclusive)) {
        return SqlError(ErrorCode::kLockWaitTimeout,
                        "Lock wait timeout exceeded; try restarting transaction (the row locks of transaction {} at "
                        "node '{}' are gone)",
                        txn, options_.node_name);
      }
      continue;
    }
    const auto left = std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                                 deadline - std::chrono::steady_clock::now()));
    SHALE_RETURN_IF_ERROR(txn_->locks()->Lock(*owner_id, lock.name, LockMode::kExclusive, left, nullptr));
  }
  return Status::OK();
}

bool Participant::OverlapsOnePhaseLocked(const std::string& txn, const WriteSet& writes) const {
  if (one_phase_keys_.empty()) return false;
  for (const auto& [slice, keys] : writes) {
    for (const auto& [key, value] : keys) {
      auto it = one_phase_keys_.find({slice, key});
      if (it != one_phase_keys_.end() && it->second != txn) return true;
    }
  }
  return false;
}

Status Participant::AwaitOnePhaseKeys(std::unique_lock<std::mutex>& l, const std::string& txn,
                                       const WriteSet& writes) {
  const auto deadline = std::chrono::steady_clock::now() + kOnePhaseWait;
  const bool done = prepare_cv_.wait_until(
      l, deadline, [&] { return preparing_.count(txn) == 0 && !OverlapsOnePhaseLocked(txn, writes); });
  if (done) return Status::OK();
  return SqlError(ErrorCode::kLockWaitTimeout,
                  "Lock wait timeout exceeded; try restarting transaction (transaction {} writes rows of a "
                  "transaction whose outcome node '{}' is still resolving)",
                  txn, options_.node_name);
}

Status Participant::AwaitWritable(const WriteSet& writes) {
  std::unique_lock<std::mutex> l(mu_);
  return AwaitOnePhaseKeys(l, std::string(), writes);
}

void Participant::IndexOnePhaseLocked(const std::string& txn, const PreparedRecordPb& request, bool add) {
  for (const WritesPb& w : request.writes()) {
    for (const auto& key : w.keys()) {
      if (add) {
        one_phase_keys_[{w.slice(), key}] = txn;
      } else {
        auto it = one_phase_keys_.find({w.slice(), key});
        if (it != one_phase_keys_.end() && it->second == txn) one_phase_keys_.erase(it);
      }
    }
  }
}


Status Participant::Finish(const std::string& txn, bool commit, bool presumed) {
  std::unique_ptr<PreparedRecordPb> request;
  {
    std::unique_lock<std::mutex> l(mu_);
    prepare_cv_.wait(l, [&] { return preparing_.count(txn) == 0; });
    auto it = prepared_.find(txn);
    if (!commit && presuming_.count(txn)) {
      return Status::Sql(1180 /* ER_ERROR_DURING_COMMIT */,
                         fmt::format("Got error during COMMIT: transaction {} is being committed at node '{}' (its "
                                     "applier left the cluster)",
                                     txn, options_.node_name));
    }
    if (it == prepared_.end()) {
      // Never prepared here, or finished already: only locks to drop.
      if (finishing_.count(txn)) return Status::OK();
      ReleaseOwnerLocked(txn);
      if (!commit) {
        // A prepare of it that arrives after this (delayed in the network)
        // is refused: its coordinator may have told the client it failed.
        if (expired_.size() > 100000) expired_.clear();
        expired_.insert(txn);
        // A one-phase transaction committed here by presumption: not aborted.
        std::string presumed;
        Status got = meta_->Get(kPresumedPrefix + txn, &presumed);
        if (got.ok()) {
          return Status::Sql(1180 /* ER_ERROR_DURING_COMMIT */,
                             fmt::format("Got error during COMMIT: transaction {} was committed at node '{}' (its "
                                         "applier left the cluster)",
                                         txn, options_.node_name));
        }
        if (!got.IsNotFound()) return got;
      }
      return Status::OK();
    }
    request = std::move(it->second.request);
    prepared_.erase(it);
    finishing_[txn] = request->commit_ts();
  }
  Status st;
  // No garbage-collection pass may take a horizon at or above this commit
  // until its prepared record's delete has returned (below, or
  // SyncFinished's).
  txn_->PinCollection(request->commit_ts());
  // The apply's WAL position when it was not synced (0: nothing deferred).
  uint64_t deferred_lsn = 0;
  if (commit) {
    auto writes = WritesFromPb(request->writes());
    // A slice whose replica left this node meanwhile (the node was removed
    // from the slice map while it was down, and its storage dropped; a DDL
    // dropped it): nothing to apply there. A drop may also land between
    // this check and the apply (the store refuses the whole write then,
    // logging nothing): check again and apply the rest.
    // Also skipped, for a one-phase transaction on two nodes
    // (docs/transactions.md "One phase on two nodes", "Where a late commit
    // at the prepared node goes"): a slice this node's applied map does
    // not place here (a storage slice left from a replica that left this
    // node: it is no replica, and whoever holds the slice now has the
    // commit from the applier or copies it), and, in a commit presumed
    // because the applier left, a replica still building here (its source
    // was the applier, now gone, or it is a new replica placed here after
    // this node was removed and came back, filled from serving replicas
    // that never had the transaction: the share would be versions no
    // other replica holds).
    const bool one_phase = request->one_phase();
    auto skip = [&](storage::SliceId id) -> const char* {
      auto slice = store_->GetSlice(id);
      if (!slice.ok() && slice.status().IsNotFound()) return "is no longer stored here";
      if (!slice.ok() || !one_phase) return nullptr;  // the apply reports an error
      if (options_.placed_here && !options_.placed_here(id)) return "is not placed here by this node's slice map";
      if (presumed) {
        auto state = store_->GetBuildState(id);
        if (state.ok() && state->state == storage::SliceState::kBuilding) {
          return "is a replica still building here (a presumed commit applies only to built replicas)";
        }
      }
      return nullptr;
    };
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (!writes.ok()) {
        st = writes.status();
        break;
      }
      for (auto it = writes->begin(); it != writes->end();) {
        if (const char* why = skip(it->first)) {
          log::Warn("node {}: transaction {}: slice {} {}; its share is skipped", options_.node_name, txn, it->first,
                    why);
          it = writes->erase(it);
        } else {
          ++it;
        }
      }
      st = txn_->ApplyAt(request->commit_ts(), *writes, nullptr, presumed ? nullptr : &deferred_lsn);
      if (!st.IsNotFound()) break;
    }
  }
  // A commit applied without its WAL sync keeps its record (and the pin)
  // until SyncFinished has made the apply durable and deleted it. Any
  // other record (an abort, a presumed commit, a commit with nothing to
  // apply here) goes now without an fsync: the delete is in RocksDB's WAL
  // file (it survives kill -9); a power loss before the next MetaStore sync
  // brings the record back, and the restarted node resolves it again:
  // commit applies the same versions at the same timestamp once more
  // (nothing of them is garbage-collected before the delete is synced,
  // TxnManager::CollectPass), abort — the decision record was forgotten,
  // so the resolver records abort — discards nothing that was applied.
  // Except a one-phase record discarded (abort): its client is told the
  // transaction failed, and such a record back after a power loss, with
  // the applier gone from the cluster by then, would be presumed committed.
  // That delete is synced (failure paths only).
  const bool deferred = st.ok() && deferred_lsn != 0;
  if (st.ok() && !deferred) {
    const std::string key = kPreparedPrefix + txn;
    st = !commit && request->one_phase() ? meta_->Delete(key) : meta_->DeleteUnsynced(key);
  }
  if (!deferred) txn_->UnpinCollection(request->commit_ts());
  std::unique_lock<std::mutex> l(mu_);
  finishing_.erase(txn);
  if (deferred) unsynced_[txn] = Unsynced{request->commit_ts(), deferred_lsn};
  if (!st.ok()) {
    // Still prepared: the resolver tries again.
    prepared_[txn] = Prepared{std::move(request), std::chrono::steady_clock::now()};
    return st;
  }
  ReleaseOwnerLocked(txn);
  if (request->one_phase()) {
    IndexOnePhaseLocked(txn, *request, /*add=*/false);
    prepare_cv_.notify_all();
  }
  l.unlock();
  if (deferred) {
    // Only the first Finish since the last sync wakes the sync thread (a
    // wake-up per Finish would cost a context switch each).
    bool wake;
    {
      std::lock_guard<std::mutex> b(bg_mu_);
      wake = !sync_wanted_;
      sync_wanted_ = true;
    }
    if (wake) sync_cv_.notify_one();
  }
  txn_->ReleaseReads(txn);  // applied (or discarded) here
  // No report to the timestamp service that still counts it as prepared
  // may arrive after the coordinator's FinishCommit.
  if (options_.report_barrier) options_.report_barrier();
  return Status::OK();
}

Status Participant::SyncFinished() {
  if (syncs_held_.load(std::memory_order_relaxed)) return Status::Unavailable("syncs of finished commits held (test)");
  std::lock_guard<std::mutex> one(sync_mu_);
  std::vector<std::pair<std::string, uint64_t>> done;  // transaction, commit ts
  uint64_t upto = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [txn, u] : unsynced_) {
      done.emplace_back(txn, u.ts);
      upto = std::max(upto, u.lsn);
    }
  }
  if (done.empty()) return Status::OK();
  SHALE_RETURN_IF_ERROR(store_->SyncWal(upto));
  // The applies are durable: the records can go, unsynced (Finish's
  // comment on the delete says why that is safe).
  std::vector<storage::MetaStore::Change> deletes;
  deletes.reserve(done.size());
  for (const auto& [txn, ts] : done) deletes.emplace_back(kPreparedPrefix + txn, std::nullopt);
  SHALE_RETURN_IF_ERROR(meta_->WriteUnsynced(deletes));
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [txn, ts] : done) unsynced_.erase(txn);
  }
  for (const auto& [txn, ts] : done) txn_->UnpinCollection(ts);
  return Status::OK();
}

void Participant::SyncLoop() {
  std::unique_lock<std::mutex> b(bg_mu_);
  while (!stop_) {
    sync_cv_.wait(b, [&] { return stop_ || sync_wanted_; });
    if (stop_) break;
    // Finishes arriving meanwhile share the sync (they are durable sooner
    // when another write's group commit takes them along); they do not
    // wake this wait (sync_wanted_ is set already).
    sync_cv_.wait_for(b, kFinishSyncDelay, [&] { return stop_; });
    sync_wanted_ = false;
    b.unlock();
    Status st = SyncFinished();
    b.lock();
    if (!st.ok()) {
      log::Warn("node {}: syncing finished commits: {}; trying again", options_.node_name, st.ToString());
      sync_wanted_ = true;
      sync_cv_.wait_for(b, std::chrono::milliseconds(200), [&] { return stop_; });
    }
  }
}

Status Participant::Apply(const std::string* txn, uint64_t ts, const WriteSet& writes,
                                uint64_t routed_at, const HeldLocks& locks, bool decides, bool* refused) {
  bool refused_here = false;
  if (decides && txn != nullptr) ClaimDecision(*txn);
  Status st = [&]() -> Status {
    if (decides && txn != nullptr) {
      // The applier of a one-phase transaction: this apply decides it,
      // unless the prepared node's resolver refused it here first.
      std::string recorded;
      Status got = meta_->Get(kDecisionPrefix + *txn, &recorded);
      if (got.ok()) {
        refused_here = true;
        return SqlError(ErrorCode::kLockDeadlock,
                        "Deadlock found when trying to get lock; try restarting transaction (transaction {} was "
                        "aborted at node '{}' by its prepared node's resolver)",
                        *txn, options_.node_name);
      }
      if (!got.IsNotFound()) {
        refused_here = true;
        return got;
      }
    }
    {
      std::unique_lock<std::mutex> l(mu_);
      if (txn != nullptr) {
        Status expired = CheckNotExpired(*txn);
        if (!expired.ok()) {
          refused_here = true;
          return expired;
        }
        auto owner = owners_.find(*txn);
        if (decides && ParseTxnKey(*txn).coordinator != self()) {
          // Its row locks here must still be held: after a restart (locks
          // gone) another writer may have read or locked its rows.
          if (owner == owners_.end()) {
            refused_here = true;
            return SqlError(ErrorCode::kLockWaitTimeout,
                            "Lock wait timeout exceeded; try restarting transaction (the row locks of transaction "
                            "{} at node '{}' are gone)",
                            *txn, options_.node_name);
          }
          owner->second.last_used = std::chrono::steady_clock::now();
        }
      }
      Status waited = AwaitOnePhaseKeys(l, txn != nullptr ? *txn : std::string(), writes);
      if (!waited.ok()) {
        refused_here = true;
        return waited;
      }
    }
    Status routed = host_->AwaitSlices(writes, routed_at);
    if (!routed.ok()) {
      refused_here = true;
      return routed;
    }
    if (txn != nullptr) {
      uint64_t adopted = 0;
      Status held = AdoptLocks(*txn, ParseTxnKey(*txn), locks, &adopted);
      if (!held.ok()) {
        refused_here = true;
        return held;
      }
    }
    return txn_->ApplyAt(ts, writes);
  }();
  if (txn != nullptr) {
    std::lock_guard<std::mutex> l(mu_);
    ReleaseOwnerLocked(*txn);
  }
  if (decides && txn != nullptr) ReleaseDecision(*txn);
  if (refused != nullptr) *refused = refused_here;
  return st;
}

std::vector<uint64_t> Participant::PreparedTimestamps() const {
  // Every one, also those whose decider is down: when it is back the
  // participants apply the outcome one after the other, and a snapshot at
  // or above T taken meanwhile would see some of them and not others. So a
  // transaction in doubt holds the read watermark (reads go stale, never
  // inconsistent) until it is resolved.
  std::lock_guard<std::mutex> l(mu_);
  std::vector<uint64_t> out;
  for (const auto& [k, p] : prepared_) out.push_back(p.request->commit_ts());
  for (const auto& [k, ts] : finishing_) out.push_back(ts);
  return out;
}

size_t Participant::prepared_count() const {
  std::lock_guard<std::mutex> l(mu_);
  return prepared_.size() + finishing_.size();
}

std::map<std::string, uint64_t> Participant::PreparedOn(storage::SliceId slice) const {
  std::map<std::string, uint64_t> out;
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [key, p] : prepared_) {
    for (const WritesPb& w : p.request->writes()) {
      if (w.slice() == slice) out[key] = p.request->commit_ts();
    }
  }
  for (const auto& [key, ts] : finishing_) out.emplace(key, ts);  // being applied now
  return out;
}

std::vector<LockHolderInfo> Participant::LockHolders(const std::vector<std::string>& names) const {
  std::vector<LockHolderInfo> out;
  std::vector<std::pair<std::string, std::vector<std::pair<uint64_t, LockMode>>>> held;
  for (const std::string& name : names) {
    auto holders = txn_->locks()->Holders(name);
    if (!holders.empty()) held.emplace_back(name, std::move(holders));
  }
  if (held.empty()) return out;
  std::unordered_map<uint64_t, std::string> remote;  // owner id -> "coordinator/id"
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [k, owner] : owners_) remote.emplace(owner.id, k);
  }
  for (const auto& [name, holders] : held) {
    for (const auto& [owner, mode] : holders) {
      auto r = remote.find(owner);
      // Not a remote owner: one of this node's transactions, whose lock
      // owner id is its transaction id (Transaction::key()).
      TxnKey k = r != remote.end() ? ParseTxnKey(r->second) : TxnKey{options_.node_name, owner};
      out.push_back(LockHolderInfo{name, std::move(k), mode});
    }
  }
  return out;
}
}  // namespace shale::txn::commit
