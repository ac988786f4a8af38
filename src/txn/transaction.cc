#include "src/txn/transaction.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <unordered_set>

#include <fmt/format.h>

#include "src/common/log.h"

namespace shale::txn {
namespace {

using WriteMap = std::map<std::string, std::optional<std::string>>;

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
  std::unique_ptr<TxnManager> m(new TxnManager(store, options));
  SHALE_ASSIGN_OR_RETURN(m->oracle_, TimestampOracle::Open(meta));
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

uint64_t TxnManager::AcquireSnapshot() {
  std::lock_guard<std::mutex> l(snap_mu_);
  uint64_t ts = oracle_->ReadTimestamp();
  snapshots_.insert(ts);
  return ts;
}

void TxnManager::ReleaseSnapshot(uint64_t ts) {
  std::lock_guard<std::mutex> l(snap_mu_);
  auto it = snapshots_.find(ts);
  if (it != snapshots_.end()) snapshots_.erase(it);
}

uint64_t TxnManager::Horizon() {
  std::lock_guard<std::mutex> l(snap_mu_);
  uint64_t now = oracle_->ReadTimestamp();
  return snapshots_.empty() ? now : std::min(now, *snapshots_.begin());
}

Status TxnManager::Apply(const std::map<storage::SliceId, WriteMap>& writes) {
  std::vector<storage::WriteBatch> batches(writes.size());
  std::vector<std::pair<storage::SliceId, const storage::WriteBatch*>> refs;
  SHALE_ASSIGN_OR_RETURN(uint64_t ts, oracle_->BeginCommit());
  size_t i = 0;
  for (const auto& [slice, keys] : writes) {
    for (const auto& [key, value] : keys) {
      storage::WriteOp op;
      op.kind = value ? storage::WriteOp::Kind::kPut : storage::WriteOp::Kind::kDelete;
      op.key = key;
      if (value) op.value = *value;
      storage::AppendVersion(op, ts, &batches[i]);
    }
    if (!batches[i].empty()) refs.emplace_back(slice, &batches[i]);
    ++i;
  }
  Status st = refs.empty() ? Status::OK() : store_->Write(refs);
  oracle_->FinishCommit(ts);
  if (!st.ok()) return st;
  std::lock_guard<std::mutex> l(gc_mu_);
  for (const auto& [slice, keys] : writes) {
    for (const auto& [key, value] : keys) {
      if (garbage_.size() >= kMaxGarbageQueue) break;  // left for a later sweep (docs/transactions.md)
      garbage_.push_back({slice, key, ts});
      gc_queued_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  return Status::OK();
}

Status TxnManager::CommitBatches(const std::vector<std::pair<storage::SliceId, const storage::WriteBatch*>>& batches) {
  std::map<storage::SliceId, WriteMap> writes;
  for (const auto& [slice, batch] : batches) {
    for (const storage::WriteOp& op : batch->ops()) {
      writes[slice][op.key] =
          op.kind == storage::WriteOp::Kind::kPut ? std::optional<std::string>(op.value) : std::nullopt;
    }
  }
  return Apply(writes);
}

uint64_t TxnManager::CollectPass() {
  std::lock_guard<std::mutex> pass(pass_mu_);
  const uint64_t horizon = Horizon();
  std::deque<Garbage> work;
  {
    std::lock_guard<std::mutex> l(gc_mu_);
    work.swap(garbage_);
  }
  std::deque<Garbage> keep;
  std::map<storage::SliceId, std::set<std::string>> ready;
  for (Garbage& g : work) {
    if (g.ts <= horizon) {
      ready[g.slice].insert(std::move(g.key));
    } else {
      keep.push_back(std::move(g));
    }
  }
  uint64_t removed = 0;
  {
    std::shared_lock<std::shared_mutex> drop_guard(slice_drop_mu_);
    for (const auto& [id, keys] : ready) {
      auto slice = store_->GetSlice(id);
      if (!slice.ok()) continue;  // dropped
      storage::MvccSlice mvcc(*slice);
      storage::WriteBatch doomed;
      for (const std::string& key : keys) {
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
  }
  if (!keep.empty()) {
    std::lock_guard<std::mutex> l(gc_mu_);
    for (Garbage& g : keep) garbage_.push_back(std::move(g));
  }
  gc_removed_.fetch_add(removed, std::memory_order_relaxed);
  return removed;
}

uint64_t TxnManager::TEST_CollectGarbage() { return CollectPass(); }

void TxnManager::GcLoop() {
  std::unique_lock<std::mutex> l(gc_mu_);
  while (!stop_) {
    gc_cv_.wait_for(l, std::chrono::milliseconds(options_.gc_interval_ms));
    if (stop_) break;
    if (garbage_.empty()) continue;
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
  return s;
}

// ---- Transaction --------------------------------------------------------

Transaction::~Transaction() {
  if (!done_) Rollback();
}

void Transaction::BeginStatement() {
  statement_mark_ = undo_.size();
  if (stmt_snapshot_) {
    manager_->ReleaseSnapshot(*stmt_snapshot_);
    stmt_snapshot_.reset();
  }
}

void Transaction::RollbackStatement() {
  while (undo_.size() > statement_mark_) {
    Undo& u = undo_.back();
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

uint64_t Transaction::Snapshot() {
  if (options_.isolation == Isolation::kReadCommitted) {
    if (!stmt_snapshot_) stmt_snapshot_ = manager_->AcquireSnapshot();
    return *stmt_snapshot_;
  }
  if (!txn_snapshot_) txn_snapshot_ = manager_->AcquireSnapshot();
  return *txn_snapshot_;
}

Status Transaction::Get(storage::Slice* slice, std::string_view key, bool latest, std::string* value) {
  auto s = writes_.find(slice->id());
  if (s != writes_.end()) {
    auto it = s->second.find(std::string(key));
    if (it != s->second.end()) {
      if (!it->second) return Status::NotFound("deleted by this transaction");
      *value = *it->second;
      return Status::OK();
    }
  }
  storage::ReadOptions ro;
  ro.snapshot = latest ? storage::kLatestSnapshot : Snapshot();
  return storage::MvccSlice(slice).Get(ro, key, value);
}

std::unique_ptr<storage::SliceIterator> Transaction::NewIterator(storage::Slice* slice, const storage::KeyRange& range,
                                                                 bool latest) {
  storage::ReadOptions ro;
  ro.snapshot = latest ? storage::kLatestSnapshot : Snapshot();
  auto base = storage::MvccSlice(slice).NewIterator(ro, range);
  auto s = writes_.find(slice->id());
  if (s == writes_.end() || s->second.empty()) return base;
  return std::make_unique<OverlayIterator>(std::move(base), &s->second, range);
}

void Transaction::Buffer(storage::SliceId slice, std::string key, std::optional<std::string> value) {
  auto& keys = writes_[slice];
  auto it = keys.find(key);
  Undo u{slice, key, it != keys.end(), std::nullopt};
  if (it != keys.end()) {
    u.previous = std::move(it->second);
    it->second = std::move(value);
  } else {
    keys.emplace(std::move(key), std::move(value));
  }
  undo_.push_back(std::move(u));
}

void Transaction::Put(storage::SliceId slice, std::string key, std::string value) {
  Buffer(slice, std::move(key), std::move(value));
}

void Transaction::Delete(storage::SliceId slice, std::string key) { Buffer(slice, std::move(key), std::nullopt); }

Status Transaction::Lock(const std::string& name, LockMode mode, std::chrono::milliseconds timeout,
                         const std::atomic<bool>* interrupt) {
  return manager_->locks_.Lock(id_, name, mode, timeout, interrupt);
}

bool Transaction::HoldsLock(const std::string& name, LockMode mode) const {
  return manager_->locks_.Holds(id_, name, mode);
}

void Transaction::ReleaseSnapshots() {
  if (stmt_snapshot_) manager_->ReleaseSnapshot(*stmt_snapshot_);
  if (txn_snapshot_) manager_->ReleaseSnapshot(*txn_snapshot_);
  stmt_snapshot_.reset();
  txn_snapshot_.reset();
}

void Transaction::Finish() {
  done_ = true;
  writes_.clear();
  undo_.clear();
  statement_mark_ = 0;
  ReleaseSnapshots();
  manager_->locks_.ReleaseAll(id_);
}

Status Transaction::Commit() {
  if (done_) return Status::OK();
  Status st;
  // Drop entries a statement savepoint emptied.
  for (auto it = writes_.begin(); it != writes_.end();) {
    it = it->second.empty() ? writes_.erase(it) : std::next(it);
  }
  if (!writes_.empty()) st = manager_->Apply(writes_);
  if (st.ok()) {
    manager_->commits_.fetch_add(1, std::memory_order_relaxed);
  } else {
    manager_->rollbacks_.fetch_add(1, std::memory_order_relaxed);
  }
  Finish();
  return st;
}

void Transaction::Rollback() {
  if (done_) return;
  manager_->rollbacks_.fetch_add(1, std::memory_order_relaxed);
  Finish();
}

}  // namespace shale::txn
