#include "src/txn/transaction.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <unordered_set>

#include <fmt/format.h>

#include "src/common/appending_map.h"
#include "src/common/critical_path.h"
#include "src/common/errors.h"
#include "src/common/log.h"

namespace shale::txn {
namespace {

using WriteMap = SliceWrites;

constexpr char kReadableFromPrefix[] = "txn/readable_from/";
// The number of times this node's TxnManager was opened before (durable):
// transaction ids of incarnation i start at i * kIdsPerIncarnation + 1, so
// a restarted coordinator never reuses a TxnKey another node may still hold
// a prepared or decision record of.
constexpr char kIncarnationKey[] = "txn/incarnation";
constexpr uint64_t kIdsPerIncarnation = 1'000'000'000'000ULL;

bool ParseU64(std::string_view text, uint64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

// A scan that fails at once (a read the replica cannot answer).
class FailedIterator final : public storage::SliceIterator {
 public:
  explicit FailedIterator(Status st) : st_(std::move(st)) {}
  bool Valid() const override { return false; }
  void Next() override {}
  std::string_view key() const override { return {}; }
  std::string_view value() const override { return {}; }
  Status status() const override { return st_; }

 private:
  Status st_;
};

// The rows of a snapshot iterator with a transaction's own writes to the
// same slice laid over them: a buffered put replaces or adds a row, a
// buffered delete hides one. Both inputs are in key order.
class OverlayIterator final : public storage::SliceIterator {
 public:
  OverlayIterator(std::unique_ptr<storage::SliceIterator> base, const WriteMap* writes,
                  const storage::KeyRange& range)
      : base_(std::move(base)), range_(range) {
    auto it = range.has_start ? writes->lower_bound(range.start) : writes->begin();
    for (; it != writes->end(); ++it) {
      if (range_.has_end && !range_.Contains(it->first) && it->first > range_.end) break;
      if (range_.Contains(it->first)) own_.emplace_back(it->first, it->second);
    }
    Settle();
  }
  bool Valid() const override { return valid_; }
  void Next() override {
    if (from_own_) {
      // The base row under the same key (if any) was replaced.
      if (base_->Valid() && base_->key() == own_[pos_].first) base_->Next();
      ++pos_;
    } else {
      base_->Next();
    }
    Settle();
  }
  std::string_view key() const override { return from_own_ ? own_[pos_].first : base_->key(); }
  std::string_view value() const override { return from_own_ ? *own_[pos_].second : base_->value(); }
  Status status() const override { return base_->status(); }

 private:
  void Settle() {
    valid_ = false;
    while (true) {
      const bool have_base = base_->Valid();
      const bool have_own = pos_ < own_.size();
      if (!have_base && !have_own) return;
      if (have_own && (!have_base || own_[pos_].first <= base_->key())) {
        if (own_[pos_].second) {
          from_own_ = true;
          valid_ = true;
          return;
        }
        // A buffered delete: skip it and the base row it hides.
        if (have_base && base_->key() == own_[pos_].first) base_->Next();
        ++pos_;
        continue;
      }
      from_own_ = false;
      valid_ = true;
      return;
    }
  }

  std::unique_ptr<storage::SliceIterator> base_;
  const storage::KeyRange range_;
  std::vector<std::pair<std::string, std::optional<std::string>>> own_;
  size_t pos_ = 0;
  bool from_own_ = false;
  bool valid_ = false;
};

}  // namespace

const char* IsolationName(Isolation i) {
  switch (i) {
    case Isolation::kReadUncommitted: return "READ-UNCOMMITTED";
    case Isolation::kReadCommitted: return "READ-COMMITTED";
    case Isolation::kRepeatableRead: return "REPEATABLE-READ";
    case Isolation::kSerializable: return "SERIALIZABLE";
  }
  return "REPEATABLE-READ";
}

bool ParseIsolation(std::string_view text, Isolation* out) {
  std::string t;
  for (char c : text) t.push_back(c == ' ' || c == '_' ? '-' : static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  for (Isolation i : {Isolation::kReadUncommitted, Isolation::kReadCommitted, Isolation::kRepeatableRead,
                      Isolation::kSerializable}) {
    if (t == IsolationName(i)) {
      *out = i;
      return true;
    }
  }
  return false;
}

// ---- TxnManager ---------------------------------------------------------

Result<std::unique_ptr<TxnManager>> TxnManager::Open(storage::SliceStore* store, storage::MetaStore* meta,
                                                     TxnManagerOptions options) {
  std::unique_ptr<TxnManager> m(new TxnManager(store, meta, options));
  SHALE_ASSIGN_OR_RETURN(m->oracle_, TimestampOracle::Open(meta));
  Status bad;
  SHALE_RETURN_IF_ERROR(meta->Scan(kReadableFromPrefix, [&](std::string_view key, std::string_view value) {
    uint64_t slice = 0, ts = 0;
    const std::string_view id = key.substr(std::string_view(kReadableFromPrefix).size());
    if (!ParseU64(id, &slice) || !ParseU64(value, &ts)) {
      bad = Status::Corruption(fmt::format("unreadable record {}", key));
      return false;
    }
    m->readable_from_[slice] = ts;
    return true;
  }));
  SHALE_RETURN_IF_ERROR(bad);
  uint64_t incarnation = 0;
  {
    std::string before;
    Status got = meta->Get(kIncarnationKey, &before);
    if (got.ok()) {
      if (!ParseU64(before, &incarnation)) {
        return Status::Corruption(fmt::format("unreadable record {}", kIncarnationKey));
      }
      ++incarnation;
    } else if (!got.IsNotFound()) {
      return got;
    }
  }
  SHALE_RETURN_IF_ERROR(meta->Put(kIncarnationKey, std::to_string(incarnation)));
  m->next_txn_id_.store(incarnation * kIdsPerIncarnation + 1);
  m->gc_thread_ = std::thread([raw = m.get()] { raw->GcLoop(); });
  return m;
}

TxnManager::~TxnManager() {
  {
    std::lock_guard<std::mutex> l(gc_mu_);
    stop_ = true;
  }
  gc_cv_.notify_all();
  if (gc_thread_.joinable()) gc_thread_.join();
}

std::unique_ptr<Transaction> TxnManager::Begin(const TxnOptions& options) {
  TxnOptions o = options;
  // Documented mappings: READ UNCOMMITTED reads committed rows only;
  // SERIALIZABLE runs as REPEATABLE READ (plus locking reads, see session).
  if (o.isolation == Isolation::kReadUncommitted) o.isolation = Isolation::kReadCommitted;
  return std::unique_ptr<Transaction>(new Transaction(this, next_txn_id_.fetch_add(1), o));
}

Result<uint64_t> TxnManager::AcquireSnapshot() {
  // In a cluster taken before snap_mu_: it may wait (briefly) for commits
  // in flight below the newest acknowledged one. Until it is registered the
  // GC horizon cannot pass it: the cluster's horizon holds read timestamps
  // the leader handed out within the last seconds (docs/transactions.md
  // "Garbage collection"). Locally it is taken under snap_mu_ (Horizon).
  TimestampOracle* oracle = Oracle();
  const bool cluster = oracle->has_source();
  uint64_t ts = 0;
  if (cluster) {
    SHALE_ASSIGN_OR_RETURN(ts, oracle->SnapshotTimestamp());
  }
  // Route by a slice map at least as new as the one of every commit this
  // snapshot may see (a replica moved away is not read).
  if (metadata_sync_) metadata_sync_();
  std::lock_guard<std::mutex> l(snap_mu_);
  if (!cluster) ts = oracle->ReadTimestamp();
  snapshots_.insert(ts);
  oldest_snapshot_.store(*snapshots_.begin(), std::memory_order_release);
  return ts;
}

void TxnManager::ReleaseSnapshot(uint64_t ts) {
  std::lock_guard<std::mutex> l(snap_mu_);
  auto it = snapshots_.find(ts);
  if (it != snapshots_.end()) snapshots_.erase(it);
  oldest_snapshot_.store(snapshots_.empty() ? UINT64_MAX : *snapshots_.begin(), std::memory_order_release);
}

uint64_t TxnManager::Horizon() {
  // Snapshots on other nodes may read this node's replicas: the cluster's
  // bound (0 until known) caps this node's own.
  const uint64_t cluster = Oracle()->GcHorizon();
  std::lock_guard<std::mutex> l(snap_mu_);
  uint64_t now = Oracle()->ReadTimestamp();
  uint64_t h = snapshots_.empty() ? now : std::min(now, *snapshots_.begin());
  if (!collection_pins_.empty()) {
    const uint64_t pin = *collection_pins_.begin();
    h = std::min(h, pin > 0 ? pin - 1 : 0);
  }
  return std::min(h, cluster);
}

void TxnManager::PinCollection(uint64_t ts) {
  std::lock_guard<std::mutex> l(snap_mu_);
  collection_pins_.insert(ts);
}

void TxnManager::UnpinCollection(uint64_t ts) {
  std::lock_guard<std::mutex> l(snap_mu_);
  auto it = collection_pins_.find(ts);
  if (it != collection_pins_.end()) collection_pins_.erase(it);
}

Status TxnManager::NoteReadableFrom(storage::SliceId slice, uint64_t ts) {
  std::lock_guard<std::mutex> l(readable_mu_);
  uint64_t& from = readable_from_[slice];
  if (ts <= from) return Status::OK();
  SHALE_RETURN_IF_ERROR(meta_->Put(kReadableFromPrefix + std::to_string(slice), std::to_string(ts)));
  from = ts;
  return Status::OK();
}

uint64_t TxnManager::ReadableFrom(storage::SliceId slice) const {
  std::lock_guard<std::mutex> l(readable_mu_);
  auto it = readable_from_.find(slice);
  return it == readable_from_.end() ? 0 : it->second;
}

Status TxnManager::CheckPlaced(const SliceHandle& slice, const std::string& node) const {
  if (!serving_token_) return Status::OK();
  const uint64_t now = serving_token_(slice.id);
  if (now != 0 && now == slice.serving_token) return Status::OK();
  return Status::Sql(static_cast<uint16_t>(ErrorCode::kUnknownCom),
                     fmt::format("Cluster metadata changed while the statement ran (the replica of slice {} on node "
                                 "'{}' it was routed to no longer serves: it moved, or it was replaced by a replica "
                                 "being built); the statement was not run, retry it",
                                 slice.id, node));
}

Status TxnManager::CheckReadable(storage::SliceId slice, uint64_t snapshot, const std::string& node) const {
  if (snapshot == storage::kLatestSnapshot) return Status::OK();
  const uint64_t from = ReadableFrom(slice);
  if (snapshot < from) {
    return Status::Sql(static_cast<uint16_t>(ErrorCode::kUnknownCom),
                       fmt::format("Snapshot too old: the replica of slice {} on node '{}' was copied at timestamp {} "
                                   "and holds no older versions; the transaction reads at {}; retry the transaction",
                                   slice, node, from, snapshot));
  }
  if (snapshot < held_min_ts_.load(std::memory_order_acquire)) return Status::OK();
  // A commit at or below the snapshot may still have to be applied here.
  auto pending = [&] {
    for (const auto& [txn, held] : held_) {
      if (held.first <= snapshot &&
          std::find(held.second.begin(), held.second.end(), slice) != held.second.end()) {
        return true;
      }
    }
    return false;
  };
  std::unique_lock<std::mutex> l(held_mu_);
  if (held_cv_.wait_for(l, std::chrono::milliseconds(options_.read_hold_wait_ms), [&] { return !pending(); })) {
    return Status::OK();
  }
  return Status::Sql(static_cast<uint16_t>(ErrorCode::kUnknownCom),
                     fmt::format("A transaction committed at or below the snapshot ({}) is not applied yet at the "
                                 "replica of slice {} on node '{}' (its outcome is being resolved there); retry the "
                                 "transaction",
                                 snapshot, slice, node));
}

void TxnManager::HoldReads(const std::string& txn, uint64_t ts, std::vector<storage::SliceId> slices) {
  std::lock_guard<std::mutex> l(held_mu_);
  held_[txn] = {ts, std::move(slices)};
  if (ts < held_min_ts_.load(std::memory_order_relaxed)) held_min_ts_.store(ts, std::memory_order_release);
}

void TxnManager::ReleaseReads(const std::string& txn) {
  {
    std::lock_guard<std::mutex> l(held_mu_);
    if (held_.erase(txn) == 0) return;
    uint64_t low = UINT64_MAX;
    for (const auto& [k, held] : held_) low = std::min(low, held.first);
    held_min_ts_.store(low, std::memory_order_release);
  }
  held_cv_.notify_all();
}

uint64_t TxnManager::OldestSnapshot() const { return oldest_snapshot_.load(std::memory_order_acquire); }

Status TxnManager::ApplyAt(uint64_t ts, const WriteSet& writes, const FreshKeys* fresh, uint64_t* deferred_lsn) {
  if (deferred_lsn != nullptr) *deferred_lsn = 0;
  std::vector<storage::WriteBatch> batches(writes.size());
  std::vector<std::pair<storage::SliceId, const storage::WriteBatch*>> refs;
  size_t i = 0;
  for (const auto& [slice, keys] : writes) {
    batches[i].Reserve(keys.size());
    for (const auto& [key, value] : keys) {
      storage::AppendVersion(value ? storage::WriteOp::Kind::kPut : storage::WriteOp::Kind::kDelete, key,
                             value ? std::string_view(*value) : std::string_view(), ts, &batches[i]);
    }
    if (!batches[i].empty()) refs.emplace_back(slice, &batches[i]);
    ++i;
  }
  Status st = refs.empty()               ? Status::OK()
              : deferred_lsn != nullptr ? store_->WriteDeferred(refs, deferred_lsn)
                                        : store_->Write(refs);
  applied_commits_.fetch_add(1, std::memory_order_acq_rel);
  if (!st.ok()) return st;
  std::vector<GarbageBatch> queued;
  for (const auto& [slice, keys] : writes) {
    const std::vector<std::string_view>* skip = nullptr;
    if (fresh != nullptr) {
      auto f = fresh->find(slice);
      if (f != fresh->end()) skip = &f->second;
    }
    GarbageBatch batch;
    batch.slice = slice;
    batch.ts = ts;
    batch.keys.Reserve(keys.size());
    size_t next = 0;  // merge cursor into *skip (both ascending)
    for (const auto& [key, value] : keys) {
      if (skip != nullptr && value) {
        while (next < skip->size() && (*skip)[next] < key) ++next;
        if (next < skip->size() && (*skip)[next] == key) continue;
      }
      batch.keys.Append(key);
    }
    if (!batch.keys.empty()) queued.push_back(std::move(batch));
  }
  if (queued.empty()) return Status::OK();
  std::lock_guard<std::mutex> l(gc_mu_);
  for (GarbageBatch& batch : queued) {
    if (garbage_keys_ + batch.keys.size() > options_.gc_queue_keys) {
      // Too many to list (a snapshot held open under heavy writes, or one
      // huge statement): the slice is swept whole instead.
      uint64_t& at = sweeps_[batch.slice];
      at = std::max(at, batch.ts);
      continue;
    }
    garbage_keys_ += batch.keys.size();
    gc_queued_.fetch_add(batch.keys.size(), std::memory_order_relaxed);
    garbage_.push_back(std::move(batch));
  }
  return Status::OK();
}

Status TxnManager::Apply(const WriteSet& writes, const FreshKeys* fresh) {
  if (router_ != nullptr) SHALE_RETURN_IF_ERROR(router_->AwaitLocalWritable(writes));
  SHALE_ASSIGN_OR_RETURN(uint64_t ts, Oracle()->BeginCommit());
  Status st = ApplyAt(ts, writes, fresh);
  Oracle()->FinishCommit(ts);
  return st;
}

uint64_t TxnManager::CollectPass() {
  std::lock_guard<std::mutex> pass(pass_mu_);
  const uint64_t horizon = Horizon();
  // A participant deletes a finished transaction's prepared record without
  // an fsync (SliceService::LocalFinish). Until that delete is synced, a
  // power loss brings the record back and the restarted node applies the
  // write set again at its timestamp: the same versions, harmless as long
  // as none of them was collected meanwhile (a version collected under a
  // later tombstone would come back). A version is collected only below
  // the horizon, and a horizon taken while a participant applies a commit
  // stays below it (PinCollection), so every commit at or below `horizon`
  // had its prepared record deleted before `horizon` was taken: one sync of
  // the MetaStore here makes those deletes durable first.
  if (Status synced = meta_->SyncUnsynced(); !synced.ok()) {
    log::Warn("garbage collection: {}; nothing collected this pass", synced.ToString());
    return 0;
  }
  if (horizon > collected_horizon_.load(std::memory_order_relaxed)) {
    collected_horizon_.store(horizon, std::memory_order_release);
  }
  std::deque<GarbageBatch> work;
  std::map<storage::SliceId, uint64_t> sweeps;
  {
    std::lock_guard<std::mutex> l(gc_mu_);
    work.swap(garbage_);
    garbage_keys_ = 0;
    sweeps.swap(sweeps_);
  }
  std::deque<GarbageBatch> keep;
  std::map<storage::SliceId, uint64_t> keep_sweeps;
  for (auto it = sweeps.begin(); it != sweeps.end();) {
    if (it->second <= horizon) {
      ++it;
    } else {
      keep_sweeps.insert(*it);
      it = sweeps.erase(it);
    }
  }
  // The keys at or below the horizon, per slice, sorted and once each
  // (a key written many times since the last pass is collected once):
  // views into the batches of `work`.
  std::map<storage::SliceId, std::vector<std::string_view>> ready;
  for (GarbageBatch& batch : work) {
    if (batch.ts > horizon) {
      keep.push_back(std::move(batch));
      continue;
    }
    if (sweeps.count(batch.slice) > 0) continue;  // swept whole below
    std::vector<std::string_view>& keys = ready[batch.slice];
    keys.reserve(keys.size() + batch.keys.size());
    for (size_t i = 0; i < batch.keys.size(); ++i) keys.push_back(batch.keys[i]);
  }
  uint64_t removed = 0;
  {
    std::shared_lock<std::shared_mutex> drop_guard(slice_drop_mu_);
    for (auto& [id, keys] : ready) {
      auto slice = store_->GetSlice(id);
      if (!slice.ok()) continue;  // dropped
      if (keys.size() >= kSweepAtKeys && keys.size() * 4 >= (*slice)->GetStats().rows) {
        sweeps.emplace(id, horizon);  // a bulk UPDATE or DELETE: one pass over the slice costs less
        continue;
      }
      if (!std::is_sorted(keys.begin(), keys.end())) std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      storage::MvccSlice mvcc(*slice);
      storage::WriteBatch doomed;
      for (std::string_view key : keys) {
        auto n = mvcc.CollectKeyGarbage(key, horizon, &doomed);
        if (!n.ok()) log::Warn("garbage collection of slice {}: {}", id, n.status().ToString());
      }
      if (doomed.empty()) continue;
      Status st = (*slice)->Write(doomed);
      if (!st.ok()) {
        log::Warn("garbage collection of slice {}: {}", id, st.ToString());
        continue;
      }
      removed += doomed.size();
    }
    for (const auto& [id, ts] : sweeps) {
      auto slice = store_->GetSlice(id);
      if (!slice.ok()) continue;  // dropped
      auto n = storage::MvccSlice(*slice).CollectGarbage(horizon);
      if (!n.ok()) {
        log::Warn("garbage collection of slice {}: {}", id, n.status().ToString());
        continue;
      }
      removed += *n;
    }
  }
  if (!keep.empty() || !keep_sweeps.empty()) {
    std::lock_guard<std::mutex> l(gc_mu_);
    for (GarbageBatch& batch : keep) {
      garbage_keys_ += batch.keys.size();
      garbage_.push_back(std::move(batch));
    }
    for (const auto& [id, ts] : keep_sweeps) {
      uint64_t& at = sweeps_[id];
      at = std::max(at, ts);
    }
  }
  gc_removed_.fetch_add(removed, std::memory_order_relaxed);
  gc_passes_.fetch_add(1, std::memory_order_relaxed);
  return removed;
}

uint64_t TxnManager::TEST_CollectGarbage() { return CollectPass(); }

void TxnManager::GcLoop() {
  std::unique_lock<std::mutex> l(gc_mu_);
  while (!stop_) {
    gc_cv_.wait_for(l, std::chrono::milliseconds(options_.gc_interval_ms));
    if (stop_) break;
    if (garbage_.empty() && sweeps_.empty()) continue;
    l.unlock();
    CollectPass();
    l.lock();
  }
}

TxnStats TxnManager::stats() const {
  TxnStats s;
  s.commits = commits_.load();
  s.rollbacks = rollbacks_.load();
  s.gc_removed = gc_removed_.load();
  s.gc_queued = gc_queued_.load();
  s.gc_passes = gc_passes_.load();
  s.one_phase_commits = one_phase_commits_.load();
  s.two_phase_commits = two_phase_commits_.load();
  s.write_commits = write_commits_.load();
  s.write_commit_rounds = write_commit_rounds_.load();
  s.write_commit_synced_writes = write_commit_synced_writes_.load();
  s.deadlocks = locks_.deadlocks() + remote_deadlocks_.load();
  s.row_locks_held = locks_.locks_held();
  s.stale_snapshot_waits = Oracle()->StaleWaits();
  return s;
}

// ---- Transaction --------------------------------------------------------

Transaction::~Transaction() {
  if (!done_) Rollback();
}

void Transaction::BeginStatement() {
  statement_mark_ = undo_.size();
  routing_synced_ = false;
  locked_read_.reset();
  if (stmt_snapshot_) {
    manager_->ReleaseSnapshot(*stmt_snapshot_);
    stmt_snapshot_.reset();
  }
}

void Transaction::RollbackStatement() {
  UndoTo(statement_mark_);
  locked_read_.reset();
}

void Transaction::UndoTo(size_t mark) {
  while (undo_.size() > mark) {
    Undo& u = undo_.back();
    if (u.whole_slice) {
      writes_.erase(u.slice);
      undo_.pop_back();
      continue;
    }
    if (!u.moved.empty()) {
      auto& keys = writes_[u.slice];
      for (SliceWrites::iterator it : u.moved) keys.erase(it);
      if (keys.empty()) writes_.erase(u.slice);
      undo_.pop_back();
      continue;
    }
    auto& keys = writes_[u.slice];
    if (u.existed) {
      keys[u.key] = std::move(u.previous);
    } else {
      keys.erase(u.key);
      if (keys.empty()) writes_.erase(u.slice);
    }
    undo_.pop_back();
  }
}

namespace {
bool SameSavepointName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}
}  // namespace

Result<size_t> Transaction::FindSavepoint(std::string_view name) const {
  for (size_t i = 0; i < savepoints_.size(); ++i) {
    if (SameSavepointName(savepoints_[i].name, name)) return i;
  }
  return SqlError(ErrorCode::kSpDoesNotExist, "SAVEPOINT {} does not exist", name);
}

void Transaction::SetSavepoint(std::string_view name) {
  // MySQL deletes an older savepoint of the same name; the new one is the
  // newest (a later ROLLBACK TO an earlier savepoint removes it).
  Result<size_t> old = FindSavepoint(name);
  if (old.ok()) savepoints_.erase(savepoints_.begin() + static_cast<std::ptrdiff_t>(*old));
  savepoints_.push_back({std::string(name), undo_.size()});
}

Status Transaction::RollbackToSavepoint(std::string_view name) {
  SHALE_ASSIGN_OR_RETURN(size_t i, FindSavepoint(name));
  const size_t mark = savepoints_[i].mark;
  UndoTo(mark);
  // The statement running now (ROLLBACK TO itself) must not undo past it.
  statement_mark_ = std::min(statement_mark_, mark);
  savepoints_.resize(i + 1);
  return Status::OK();
}

Status Transaction::ReleaseSavepoint(std::string_view name) {
  SHALE_ASSIGN_OR_RETURN(size_t i, FindSavepoint(name));
  savepoints_.resize(i);
  return Status::OK();
}

void Transaction::SyncRoutingForLatest() {
  // A newest-version read (UPDATE/DELETE row reads, locking reads) takes no
  // snapshot; once per statement it syncs like one (SetRoutingChecks).
  read_latest_ = true;
  if (routing_synced_) return;
  routing_synced_ = true;
  if (manager_->metadata_sync_) manager_->metadata_sync_();
}

Result<uint64_t> Transaction::Snapshot() {
  std::optional<uint64_t>& held = options_.isolation == Isolation::kReadCommitted ? stmt_snapshot_ : txn_snapshot_;
  if (!held) {
    SHALE_ASSIGN_OR_RETURN(held, manager_->AcquireSnapshot());
  }
  return *held;
}

Status Transaction::Get(const SliceHandle& slice, std::string_view key, bool latest, std::string* value) {
  auto s = writes_.find(slice.id);
  if (s != writes_.end()) {
    auto it = FindAppending(s->second, key);
    if (it != s->second.end()) {
      if (!it->second) return Status::NotFound("deleted by this transaction");
      *value = *it->second;
      return Status::OK();
    }
  }
  storage::ReadOptions ro;
  if (latest) {
    ro.snapshot = storage::kLatestSnapshot;
    SyncRoutingForLatest();
    if (locked_read_ && slice.remote() && locked_read_->read.slice == slice.id && locked_read_->read.key == key &&
        locked_read_->node == slice.ranking()) {
      // Read at the ranking replica when its lock was granted (Lock).
      DataRouter::LatestRead read = std::move(locked_read_->read);
      locked_read_.reset();
      if (read.status.ok()) *value = std::move(read.value);
      return read.status;
    }
  } else {
    SHALE_ASSIGN_OR_RETURN(ro.snapshot, Snapshot());
  }
  if (slice.remote()) return slice.router->Get(slice.ranking(), slice.id, key, ro.snapshot, value);
  if (slice.router != nullptr) SHALE_RETURN_IF_ERROR(manager_->CheckPlaced(slice, LocalName()));
  SHALE_RETURN_IF_ERROR(manager_->CheckReadable(slice.id, ro.snapshot, LocalName()));
  return storage::MvccSlice(slice.local).Get(ro, key, value);
}

std::unique_ptr<storage::SliceIterator> Transaction::NewIterator(const SliceHandle& slice,
                                                                 const storage::KeyRange& range, bool latest,
                                                                 const std::string* filter) {
  storage::ReadOptions ro;
  if (latest) {
    ro.snapshot = storage::kLatestSnapshot;
    SyncRoutingForLatest();
  } else {
    Result<uint64_t> snapshot = Snapshot();
    if (!snapshot.ok()) return FailedScan(snapshot.status());
    ro.snapshot = *snapshot;
  }
  if (!slice.remote()) {
    Status readable = slice.router != nullptr ? manager_->CheckPlaced(slice, LocalName()) : Status::OK();
    if (readable.ok()) readable = manager_->CheckReadable(slice.id, ro.snapshot, LocalName());
    if (!readable.ok()) return FailedScan(std::move(readable));
  }
  auto base = !slice.remote() ? storage::MvccSlice(slice.local).NewIterator(ro, range)
               : filter != nullptr ? slice.router->ScanFiltered(slice.ranking(), slice.id, range, ro.snapshot, *filter)
                                   : slice.router->Scan(slice.ranking(), slice.id, range, ro.snapshot);
  auto s = writes_.find(slice.id);
  if (s == writes_.end() || s->second.empty()) return base;
  return std::make_unique<OverlayIterator>(std::move(base), &s->second, range);
}

void Transaction::Buffer(storage::SliceId slice, std::string key, std::optional<std::string> value, bool fresh) {
  auto& keys = writes_[slice];
  auto it = FindAppending(keys, key);
  Undo u{slice, key, it != keys.end(), std::nullopt, fresh && it == keys.end()};
  if (it != keys.end()) {
    u.previous = std::move(it->second);
    it->second = std::move(value);
  } else {
    TryEmplaceAppending(keys, std::move(key)).first->second = std::move(value);
  }
  undo_.push_back(std::move(u));
}

void Transaction::Put(storage::SliceId slice, std::string key, std::string value, bool fresh) {
  Buffer(slice, std::move(key), std::move(value), fresh);
}

void Transaction::Delete(storage::SliceId slice, std::string key) { Buffer(slice, std::move(key), std::nullopt); }

void Transaction::NotePlacement(const SliceHandle& slice) {
  if (slice.replicas == nullptr || slice.router == nullptr) return;
  auto [it, added] = placement_.try_emplace(slice.id);
  if (added) it->second = *slice.replicas;
}

void Transaction::Put(const SliceHandle& slice, std::string key, std::string value, bool fresh) {
  NotePlacement(slice);
  Buffer(slice.id, std::move(key), std::move(value), fresh);
}

void Transaction::Delete(const SliceHandle& slice, std::string key) {
  NotePlacement(slice);
  Buffer(slice.id, std::move(key), std::nullopt);
}

void Transaction::PutAll(const SliceHandle& slice, SliceWrites&& writes, std::vector<std::string_view>&& fresh) {
  if (writes.empty()) return;
  NotePlacement(slice);
  SliceWrites& keys = writes_[slice.id];
  if (keys.empty()) {
    // No live undo entry names this slice (an entry's key stays in the map
    // until that entry is undone), so dropping the map undoes exactly this.
    keys = std::move(writes);
    Undo u{slice.id, std::string(), false, std::nullopt};
    u.whole_slice = true;
    u.fresh_keys = std::move(fresh);
    undo_.push_back(std::move(u));
    return;
  }
  if (!std::is_sorted(fresh.begin(), fresh.end())) std::sort(fresh.begin(), fresh.end());
  Undo u{slice.id, std::string(), false, std::nullopt};
  size_t next = 0;  // merge cursor into `fresh` (both ascending)
  for (auto it = writes.begin(); it != writes.end();) {
    const auto from = it++;
    while (next < fresh.size() && fresh[next] < from->first) ++next;
    const bool is_fresh = next < fresh.size() && fresh[next] == from->first;
    auto placed = MoveNodeAppending(keys, writes, from);
    if (placed == keys.end()) {
      // Written before in this transaction: its undo entry keeps the value.
      Buffer(slice.id, from->first, std::move(from->second), is_fresh);
      continue;
    }
    u.moved.push_back(placed);
    if (is_fresh) u.fresh_keys.push_back(placed->first);
  }
  if (!u.moved.empty()) undo_.push_back(std::move(u));
}

std::string Transaction::LocalName() const {
  return manager_->router_ != nullptr ? manager_->router_->self() : std::string("this node");
}

TxnKey Transaction::key() const {
  DataRouter* router = manager_->router_;
  return TxnKey{router ? router->self() : std::string(), id_};
}

int64_t Transaction::NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status Transaction::Lock(std::string name, LockMode mode, std::chrono::milliseconds timeout,
                         const std::atomic<bool>* interrupt, const SliceHandle* at, const std::string* read_key) {
  locked_read_.reset();
  if (at != nullptr && at->replicas != nullptr && at->router != nullptr && !at->replicas->empty() &&
      at->ranking() != at->router->self()) {
    const std::string& node = at->ranking();
    lock_nodes_.insert(node);
    // Registered for the whole request (all its waits at `node`), so the
    // cluster's deadlock detector sees one continuous wait.
    TxnManager::RemoteWait wait;
    wait.txn = id_;
    wait.txn_started_us = started_us_;
    wait.node = node;
    wait.name = name;
    wait.mode = mode;
    const uint64_t wait_id = manager_->RegisterRemoteWait(&wait);
    std::optional<DataRouter::LatestRead> read;
    if (read_key != nullptr) {
      // As the newest-version Get it stands for would, before it reads.
      SyncRoutingForLatest();
      read.emplace();
      read->slice = at->id;
      read->key = *read_key;
    }
    Status st = at->router->Lock(node, key(), name, mode, timeout, interrupt, &wait.victim,
                                 locked_at_.count(node) > 0, read ? &*read : nullptr);
    manager_->UnregisterRemoteWait(wait_id);
    if (st.code() == StatusCode::kSqlError && st.mysql_code() == static_cast<uint16_t>(ErrorCode::kLockDeadlock)) {
      manager_->remote_deadlocks_.fetch_add(1, std::memory_order_relaxed);
    }
    SHALE_RETURN_IF_ERROR(st);
    locked_at_.insert(node);
    if (read && read->done) locked_read_ = LockedRead{node, std::move(*read)};
    // Where the row was first locked stays: if the ranking replica moved
    // since, the commit is refused (the row may have been written at the
    // new one between the two locks).
    if (mode == LockMode::kExclusive) held_locks_.Add(name, at->id, node);
    return Status::OK();
  }
  // Only a transaction of a cluster node reports its local waits (the
  // detector needs a router to reach it).
  const int64_t reported = manager_->router_ != nullptr ? started_us_ : 0;
  if (mode == LockMode::kExclusive && at != nullptr && at->replicas != nullptr && !at->replicas->empty()) {
    bool acquired = false;
    SHALE_RETURN_IF_ERROR(manager_->locks_.Lock(id_, name, mode, timeout, interrupt, reported, &acquired));
    if (acquired) held_locks_.Add(name, at->id, at->ranking());
    return Status::OK();
  }
  return manager_->locks_.Lock(id_, name, mode, timeout, interrupt, reported);
}

void Transaction::HeldLockLog::Add(std::string_view name, storage::SliceId slice, const std::string& node) {
  size_t n = 0;
  while (n < nodes_.size() && nodes_[n] != node) ++n;
  if (n == nodes_.size()) nodes_.push_back(node);
  names_.Append(name);
  entries_.push_back(Entry{slice, n});
}

HeldLocks Transaction::HeldLockLog::List() const {
  // By name, and for each name the entry taken first.
  std::vector<size_t> order(entries_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return names_[a] < names_[b]; });
  HeldLocks out;
  for (size_t k = 0; k < order.size(); ++k) {
    const size_t i = order[k];
    if (k > 0 && names_[order[k - 1]] == names_[i]) continue;
    out.push_back(HeldLock{std::string(names_[i]), entries_[i].slice, nodes_[entries_[i].node]});
  }
  return out;
}

void Transaction::HeldLockLog::clear() {
  names_.clear();
  entries_.clear();
  nodes_.clear();
}

uint64_t TxnManager::RegisterRemoteWait(RemoteWait* wait) {
  std::lock_guard<std::mutex> l(waits_mu_);
  const uint64_t id = next_remote_wait_id_++;
  remote_waits_[id] = wait;
  return id;
}

void TxnManager::UnregisterRemoteWait(uint64_t wait_id) {
  std::lock_guard<std::mutex> l(waits_mu_);
  remote_waits_.erase(wait_id);
}

std::vector<LockWaitInfo> TxnManager::LockWaits(const std::string& self) const {
  std::vector<LockWaitInfo> out;
  for (const LockWaiter& w : locks_.Waiters()) {
    out.push_back(LockWaitInfo{TxnKey{self, w.txn}, w.txn_started_us, self, w.name, w.mode, w.wait_id});
  }
  std::lock_guard<std::mutex> l(waits_mu_);
  for (const auto& [id, w] : remote_waits_) {
    out.push_back(LockWaitInfo{TxnKey{self, w->txn}, w->txn_started_us, w->node, w->name, w->mode, id});
  }
  return out;
}

bool TxnManager::AbortLockWait(uint64_t txn, const std::string& node, const std::string& self, uint64_t wait_id) {
  if (node == self) return locks_.AbortWait(txn, wait_id);
  std::lock_guard<std::mutex> l(waits_mu_);
  auto it = remote_waits_.find(wait_id);
  if (it == remote_waits_.end() || it->second->txn != txn || it->second->node != node) return false;
  it->second->victim.store(true, std::memory_order_relaxed);
  return true;
}

void Transaction::ReleaseSnapshots() {
  if (stmt_snapshot_) manager_->ReleaseSnapshot(*stmt_snapshot_);
  if (txn_snapshot_) manager_->ReleaseSnapshot(*txn_snapshot_);
  stmt_snapshot_.reset();
  txn_snapshot_.reset();
}

void Transaction::Finish() {
  done_ = true;
  if (!lock_nodes_.empty()) {
    const TxnKey k = key();
    for (const std::string& node : lock_nodes_) manager_->router_->Unlock(node, k);
  }
  lock_nodes_.clear();
  locked_at_.clear();
  held_locks_.clear();
  placement_.clear();
  writes_.clear();
  undo_.clear();
  statement_mark_ = 0;
  savepoints_.clear();
  ReleaseSnapshots();
  if (!keep_local_locks_) manager_->locks_.ReleaseAll(id_);
}

Status Transaction::Commit() {
  if (done_) return Status::OK();
  Status st;
  // Drop entries a statement savepoint emptied.
  for (auto it = writes_.begin(); it != writes_.end();) {
    it = it->second.empty() ? writes_.erase(it) : std::next(it);
  }
  const bool writes = !writes_.empty();
  const critical_path::PathCounts path_before = critical_path::This();
  if (writes) {
    if (manager_->OnlyHere(writes_, placement_)) {
      // The undo log holds each key's first write; a fresh one whose last
      // write is a put needs no collection (FreshKeys).
      FreshKeys fresh;
      for (const Undo& u : undo_) {
        if (u.fresh) fresh[u.slice].push_back(u.key);
        if (!u.fresh_keys.empty()) {
          std::vector<std::string_view>& keys = fresh[u.slice];
          keys.insert(keys.end(), u.fresh_keys.begin(), u.fresh_keys.end());
        }
      }
      for (auto& [slice, keys] : fresh) {
        if (!std::is_sorted(keys.begin(), keys.end())) std::sort(keys.begin(), keys.end());
      }
      st = manager_->Apply(writes_, fresh.empty() ? nullptr : &fresh);
    } else {
      std::set<std::string> participants;
      bool in_doubt = false;
      const HeldLocks locks = held_locks_.List();
      st = manager_->CommitWrites(key(), writes_, placement_, &participants, &in_doubt, &lock_nodes_, &locks);
      // The commit released our locks at the nodes that wrote (or they stay
      // with the prepared transaction until it is resolved).
      for (const std::string& node : participants) lock_nodes_.erase(node);
      // Our share here is prepared too: its lock owner is this transaction
      // (SliceService), which keeps our local locks until it is resolved.
      if (in_doubt && participants.count(manager_->router_->self())) keep_local_locks_ = true;
    }
  }
  if (st.ok()) {
    manager_->commits_.fetch_add(1, std::memory_order_relaxed);
    if (writes) {
      // What the commit waited for (docs/cluster.md "Counters of the data path").
      const critical_path::PathCounts path = critical_path::This() - path_before;
      manager_->write_commits_.fetch_add(1, std::memory_order_relaxed);
      manager_->write_commit_rounds_.fetch_add(path.rounds, std::memory_order_relaxed);
      manager_->write_commit_synced_writes_.fetch_add(path.synced_writes, std::memory_order_relaxed);
    }
  } else {
    manager_->rollbacks_.fetch_add(1, std::memory_order_relaxed);
  }
  // A commit of our own is acknowledged only after every commit below its
  // timestamp finished (the watermark passed it), which covers what our
  // newest-version reads saw; without one, wait for them here.
  if (!writes || !st.ok()) {
    Status waited = AwaitWhatLatestReadsSaw();
    // Nothing was written: the COMMIT fails rather than answer before
    // what its reads saw is visible everywhere.
    if (st.ok()) st = waited;
  }
  Finish();
  return st;
}

void Transaction::Rollback() {
  if (done_) return;
  manager_->rollbacks_.fetch_add(1, std::memory_order_relaxed);
  Status waited = AwaitWhatLatestReadsSaw();
  if (!waited.ok()) log::Warn("transaction {}: rollback: {}", key().ToString(), waited.ToString());
  Finish();
}

Status Transaction::AwaitWhatLatestReadsSaw() {
  // docs/transactions.md "Newest-version reads and acknowledgements": on
  // one node a commit's locks are released only after it finished, so
  // only a cluster (locks released at the replicas before the coordinator
  // finishes) needs this.
  const bool wait = read_latest_ && manager_->router_ != nullptr;
  read_latest_ = false;
  return wait ? manager_->Oracle()->AwaitCommitsInFlight() : Status::OK();
}

std::unique_ptr<storage::SliceIterator> FailedScan(Status st) {
  return std::make_unique<FailedIterator>(std::move(st));
}

uint64_t& StatementRowsMoved() {
  thread_local uint64_t rows = 0;
  return rows;
}

Status ReadLatest(const SliceHandle& slice, std::string_view key, std::string* value) {
  if (slice.remote()) return slice.router->Get(slice.ranking(), slice.id, key, storage::kLatestSnapshot, value);
  return storage::MvccSlice(slice.local).Get(storage::ReadOptions{}, key, value);
}

std::unique_ptr<storage::SliceIterator> ScanLatest(const SliceHandle& slice, const storage::KeyRange& range,
                                                   const std::string* filter) {
  if (slice.remote() && filter != nullptr) {
    return slice.router->ScanFiltered(slice.ranking(), slice.id, range, storage::kLatestSnapshot, *filter);
  }
  if (slice.remote()) return slice.router->Scan(slice.ranking(), slice.id, range, storage::kLatestSnapshot);
  return storage::MvccSlice(slice.local).NewIterator(storage::ReadOptions{}, range);
}

}  // namespace shale::txn
