#include "src/exec/executor.h"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "planner/planner.h"
#include "sierra/eval.h"
#include "src/common/collation.h"
#include "src/common/datetime.h"
#include "src/common/errors.h"
#include "src/common/log.h"
#include "src/common/warnings.h"
#include "src/exec/auto_increment.h"
#include "src/exec/external_sort.h"
#include "src/exec/online_ddl.h"
#include "src/exec/pushdown.h"
#include "src/common/module_profile.h"

namespace shale::exec {
namespace {

// The KILL QUERY flag of the statement running on this thread (InterruptScope).
thread_local const std::atomic<bool>* t_interrupt = nullptr;

// ER_QUERY_INTERRUPTED once the running statement has been killed. Cheap
// enough for every row: one relaxed load.
Status CheckInterrupted() {
  if (t_interrupt != nullptr && t_interrupt->load(std::memory_order_relaxed)) {
    return SqlError(ErrorCode::kQueryInterrupted, "Query execution was interrupted");
  }
  return Status::OK();
}

using planner::PhysicalKind;
using planner::PhysicalOperator;

// The transaction context of the statement running on this thread.
thread_local StatementContext* t_statement = nullptr;

txn::Transaction* CurrentTxn() { return t_statement ? t_statement->txn : nullptr; }

// The running statement's memory budget (null: no limit) and spill directory.
MemoryBudget* StatementMemory() { return t_statement ? t_statement->memory : nullptr; }
std::string StatementSpillDir() { return t_statement ? t_statement->spill_dir : std::string(); }

// The bytes a hash table entry costs beyond its row or key: the node, the
// bucket slot and the key's string header.
constexpr uint64_t kHashEntryBytes = 64;

// Reads a row of a slice: through the statement's transaction (its snapshot,
// or the newest committed version when `latest`, overlaid by its own
// writes), or without one the newest committed version.
// The slice may be on another node (txn::SliceHandle, docs/cluster.md).
Status ReadRow(const txn::SliceHandle& slice, std::string_view key, bool latest, std::string* value) {
  if (txn::Transaction* t = CurrentTxn()) return t->Get(slice, key, latest, value);
  return txn::ReadLatest(slice, key, value);
}

// `filter`: a pushed filter fragment; a remote slice then sends only the
// rows that pass it (the caller still filters every row: the
// transaction's own writes are not filtered).
std::unique_ptr<storage::SliceIterator> ReadRange(const txn::SliceHandle& slice, const storage::KeyRange& range,
                                                  bool latest, const std::string* filter = nullptr) {
  if (txn::Transaction* t = CurrentTxn()) return t->NewIterator(slice, range, latest, filter);
  return txn::ScanLatest(slice, range, filter);
}

// The lock mode reads of `table` take in this statement, if any.
std::optional<txn::LockMode> LockingReadOf(const catalog::TableDef& table) {
  if (!CurrentTxn() || !t_statement->locking_read) return std::nullopt;
  if (t_statement->lock_table_id != 0 && t_statement->lock_table_id != table.id) return std::nullopt;
  return t_statement->locking_read;
}

// What `op` pushes to the slices in this statement (src/exec/pushdown.h):
// nothing when shale_pushdown is off or the scanned table is read with
// locks (a locking read locks and re-reads each row here).
Pushdown PushdownHere(const PhysicalOperator& op) {
  if (t_statement != nullptr && !t_statement->pushdown) return {};
  if (op.kind != PhysicalKind::kFilter && op.kind != PhysicalKind::kHashAggregate) return {};
  Pushdown p = PushdownOf(op);
  if (p.kind != Pushdown::Kind::kNone && LockingReadOf(*p.scan->table)) return {};
  return p;
}

// Row lock names: 'R' table id, encoded primary key; 'U' index slice id,
// encoded unique key values.
std::string LockName(char kind, uint64_t id, std::string_view key) {
  std::string name(1, kind);
  for (int i = 7; i >= 0; --i) name.push_back(static_cast<char>((id >> (8 * i)) & 0xff));
  name.append(key);
  return name;
}

// `at`: the slice whose ranking replica's node holds the lock (null: here).
Status AcquireLock(const std::string& name, txn::LockMode mode, const txn::SliceHandle* at = nullptr) {
  txn::Transaction* t = CurrentTxn();
  if (!t) return Status::OK();
  if (t->HoldsLock(name, mode)) return Status::OK();
  return t->Lock(name, mode, t_statement->lock_wait_timeout, t_statement->interrupt, at);
}

// Locks the row with primary key `pk_key` of `table` in `mode`, then reads
// its newest committed version (the lock keeps it from changing): NotFound
// if it is gone.
Status LockAndReadRow(const catalog::TableDef& table, const txn::SliceHandle& slice, std::string_view pk_key,
                      txn::LockMode mode, std::string* value) {
  SHALE_RETURN_IF_ERROR(AcquireLock(LockName('R', table.id, pk_key), mode, &slice));
  return ReadRow(slice, pk_key, /*latest=*/true, value);
}

class RowSource {
 public:
  virtual ~RowSource() = default;
  // Sets *row to the next row and returns true, or returns false at the end.
  virtual Result<bool> Next(Row* row) = 0;
};

// `top_n` (0: none): only the first top_n rows of the result will be read
// (a LIMIT above, through 1:1 operators), so a sort may keep only those.
Result<std::unique_ptr<RowSource>> Build(Engine* engine, const PhysicalOperator& op, uint64_t top_n = 0);

// Where a slice's reads go: this node's replica, or its ranking replica on
// another node (Engine::RouteSlice).
Result<txn::SliceHandle> LocalSlice(Engine* engine, const catalog::TableDef& table, const catalog::SliceDef& def) {
  return engine->RouteSlice(table, def);
}

Status RowCorrupt(const catalog::TableDef& table, const catalog::SliceDef& def, const Status& st) {
  log::Error("unreadable row in slice {} of table {}.{}: {}", def.id, table.db, table.name,
             st.ToString());
  return Status::Corruption(fmt::format("unreadable row in slice {} of table {}.{}", def.id,
                                        table.db, table.name));
}

class ValuesSource : public RowSource {
 public:
  explicit ValuesSource(const PhysicalOperator& op) : op_(op) {}
  Result<bool> Next(Row* row) override {
    if (next_ >= op_.rows.size()) return false;
    const auto& exprs = op_.rows[next_++];
    row->clear();
    static const Row kEmpty;
    for (const auto& e : exprs) {
      SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*e, kEmpty));
      row->push_back(std::move(v));
    }
    return true;
  }

 private:
  const PhysicalOperator& op_;
  size_t next_ = 0;
};

class PointGetSource : public RowSource {
 public:
  PointGetSource(Engine* engine, const PhysicalOperator& op) : engine_(engine), op_(op) {}
  Result<bool> Next(Row* row) override {
    if (done_) return false;
    done_ = true;
    SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, LocalSlice(engine_, *op_.table, op_.slices[0]));
    std::string value;
    auto lock = LockingReadOf(*op_.table);
    Status st = lock ? LockAndReadRow(*op_.table, slice, op_.key, *lock, &value)
                     : ReadRow(slice, op_.key, /*latest=*/false, &value);
    if (st.IsNotFound()) return false;
    SHALE_RETURN_IF_ERROR(st);
    Status decoded = DecodeRow(value, row);
    if (!decoded.ok()) return RowCorrupt(*op_.table, op_.slices[0], decoded);
    return true;
  }

 private:
  Engine* engine_;
  const PhysicalOperator& op_;
  bool done_ = false;
};

// The stored entries an access path reads: for each of its key ranges in
// order (`ranges`, else `range`), the entries of every listed slice —
// merged into key order when `merge`, else one slice after another.
class EntryStream {
 public:
  // `filter` (null: none): a pushed filter fragment for remote slices.
  EntryStream(Engine* engine, const PhysicalOperator& op, bool merge, const std::string* filter = nullptr)
      : engine_(engine), op_(op), merge_(merge), latest_(LockingReadOf(*op.table).has_value()), filter_(filter) {}

  // The iterator positioned at the next entry, or null at the end. The
  // caller reads key() and value(), then calls Advance().
  Result<storage::SliceIterator*> Current() {
    const size_t range_count = op_.ranges.empty() ? 1 : op_.ranges.size();
    while (true) {
      if (next_range_ >= range_count) return nullptr;
      const storage::KeyRange& range = op_.ranges.empty() ? op_.range : op_.ranges[next_range_];
      if (!open_) {
        // Merging needs every slice's iterator; otherwise one at a time.
        for (size_t i = 0; i < (merge_ ? op_.slices.size() : std::min<size_t>(1, op_.slices.size())); ++i) {
          SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, LocalSlice(engine_, *op_.table, op_.slices[i]));
          iters_.push_back(ReadRange(slice, range, latest_, filter_));
        }
        open_ = true;
        pos_ = 0;
      }
      if (merge_) {
        current_ = nullptr;
        for (size_t i = 0; i < iters_.size(); ++i) {
          storage::SliceIterator* it = iters_[i].get();
          if (!it->Valid()) {
            SHALE_RETURN_IF_ERROR(it->status());
            continue;
          }
          if (!current_ || it->key() < current_->key()) {
            current_ = it;
            current_slice_ = i;
          }
        }
        if (current_) return current_;
      } else {
        // iters_ holds the iterator of slice pos_.
        while (!iters_.empty()) {
          if (iters_[0]->Valid()) {
            current_ = iters_[0].get();
            current_slice_ = pos_;
            return current_;
          }
          SHALE_RETURN_IF_ERROR(iters_[0]->status());
          iters_.clear();
          if (++pos_ < op_.slices.size()) {
            SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, LocalSlice(engine_, *op_.table, op_.slices[pos_]));
            iters_.push_back(ReadRange(slice, range, latest_, filter_));
          }
        }
      }
      iters_.clear();
      open_ = false;
      ++next_range_;
    }
  }
  void Advance() { current_->Next(); }
  // The slice the current entry comes from (and its index in the operator's slices).
  const catalog::SliceDef& current_slice() const { return op_.slices[current_slice_]; }
  size_t current_slice_index() const { return current_slice_; }

 private:
  Engine* engine_;
  const PhysicalOperator& op_;
  const bool merge_;
  // Locking reads read the newest committed versions (InnoDB).
  const bool latest_;
  const std::string* const filter_;
  bool open_ = false;
  size_t next_range_ = 0;
  size_t pos_ = 0;
  std::vector<std::unique_ptr<storage::SliceIterator>> iters_;
  storage::SliceIterator* current_ = nullptr;
  size_t current_slice_ = 0;
};

// One stored entry kept by a descending read.
struct TailEntry {
  std::string key;
  std::string value;
  size_t slice = 0;  // index into the operator's slices
};

// Reads the entries of `stream` to the end, keeping the last `keep` of them
// (oldest first): a descending read without a reverse iterator.
Result<std::deque<TailEntry>> LastEntries(EntryStream* stream, uint64_t keep) {
  std::deque<TailEntry> out;
  while (true) {
    SHALE_ASSIGN_OR_RETURN(storage::SliceIterator * it, stream->Current());
    if (it == nullptr) return out;
    SHALE_RETURN_IF_ERROR(CheckInterrupted());
    if (keep > 0) {
      if (out.size() >= keep) out.pop_front();
      out.push_back({std::string(it->key()), std::string(it->value()), stream->current_slice_index()});
    }
    stream->Advance();
  }
}

class SliceScanSource : public RowSource {
 public:
  // `filter`: a pushed filter fragment (the Filter above still applies it).
  SliceScanSource(Engine* engine, const PhysicalOperator& op, std::string filter = {})
      : engine_(engine),
        op_(op),
        filter_(std::move(filter)),
        stream_(engine, op, op.ordered || op.reverse, filter_.empty() ? nullptr : &filter_),
        lock_(LockingReadOf(*op.table)) {}
  Result<bool> Next(Row* row) override {
    while (true) {
      std::string_view key, value;
      const catalog::SliceDef* def = nullptr;
      bool from_stream = false;  // key and value point into the stream's iterator
      if (op_.reverse) {
        if (!tail_) {
          SHALE_ASSIGN_OR_RETURN(auto tail, LastEntries(&stream_, op_.limit_hint));
          tail_ = std::move(tail);
        }
        if (tail_->empty()) return false;
        entry_ = std::move(tail_->back());
        tail_->pop_back();
        key = entry_.key;
        value = entry_.value;
        def = &op_.slices[entry_.slice];
      } else {
        SHALE_ASSIGN_OR_RETURN(storage::SliceIterator * it, stream_.Current());
        if (it == nullptr) return false;
        SHALE_RETURN_IF_ERROR(CheckInterrupted());
        key = it->key();
        value = it->value();
        def = &stream_.current_slice();
        from_stream = true;
      }
      if (lock_) {
        // Lock, then re-read: the row may have changed or gone meanwhile.
        SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, LocalSlice(engine_, *op_.table, *def));
        Status st = LockAndReadRow(*op_.table, slice, key, *lock_, &locked_);
        if (from_stream) stream_.Advance();
        from_stream = false;
        if (st.IsNotFound()) continue;
        SHALE_RETURN_IF_ERROR(st);
        value = locked_;
      }
      Status decoded = DecodeRow(value, row);
      if (from_stream) stream_.Advance();
      if (!decoded.ok()) return RowCorrupt(*op_.table, *def, decoded);
      return true;
    }
  }

 private:
  Engine* engine_;
  const PhysicalOperator& op_;
  const std::string filter_;
  EntryStream stream_;
  const std::optional<txn::LockMode> lock_;
  std::optional<std::deque<TailEntry>> tail_;  // reverse: the entries left, last first
  TailEntry entry_;     // reverse: the entry being returned
  std::string locked_;  // a locking read: the row as re-read under its lock
};

// Reads a secondary index's entries in its range(s) from every listed
// slice, merged into index-key order, and returns the primary-representation
// row each entry points to.
class IndexScanSource : public RowSource {
 public:
  IndexScanSource(Engine* engine, const PhysicalOperator& op)
      : engine_(engine), op_(op), stream_(engine, op, /*merge=*/true), lock_(LockingReadOf(*op.table)) {}
  Result<bool> Next(Row* row) override {
    const catalog::TableDef& table = *op_.table;
    while (true) {
      Row pk;
      Status decoded;
      if (op_.reverse) {
        if (!tail_) {
          SHALE_ASSIGN_OR_RETURN(auto tail, LastEntries(&stream_, op_.limit_hint));
          tail_ = std::move(tail);
        }
        if (tail_->empty()) return false;
        decoded = DecodeRow(tail_->back().value, &pk);
        const size_t slice_index = tail_->back().slice;
        tail_->pop_back();
        if (!decoded.ok()) return RowCorrupt(table, op_.slices[slice_index], decoded);
      } else {
        SHALE_ASSIGN_OR_RETURN(storage::SliceIterator * it, stream_.Current());
        if (it == nullptr) return false;
        decoded = DecodeRow(it->value(), &pk);
        if (!decoded.ok()) return RowCorrupt(table, stream_.current_slice(), decoded);
        stream_.Advance();
      }
      const catalog::SliceDef& def =
          table.primary.SliceForHash(catalog::DistributionHash(table.primary, pk));
      SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, LocalSlice(engine_, table, def));
      std::string value;
      const std::string pk_key = catalog::EncodeKey(pk);
      Status st = lock_ ? LockAndReadRow(table, slice, pk_key, *lock_, &value)
                        : ReadRow(slice, pk_key, /*latest=*/false, &value);
      if (st.IsNotFound()) continue;  // deleted since the index was read
      SHALE_RETURN_IF_ERROR(st);
      decoded = DecodeRow(value, row);
      if (!decoded.ok()) return RowCorrupt(table, def, decoded);
      return true;
    }
  }

 private:
  Engine* engine_;
  const PhysicalOperator& op_;
  EntryStream stream_;
  std::optional<std::deque<TailEntry>> tail_;  // reverse: the entries left, last first
  const std::optional<txn::LockMode> lock_;
};

class FilterSource : public RowSource {
 public:
  FilterSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child)
      : op_(op), child_(std::move(child)) {}
  Result<bool> Next(Row* row) override {
    while (true) {
      SHALE_ASSIGN_OR_RETURN(bool more, child_->Next(row));
      if (!more) return false;
      SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*op_.predicate, *row));
      if (sierra::IsTrue(v)) return true;
    }
  }

 private:
  const PhysicalOperator& op_;
  std::unique_ptr<RowSource> child_;
};

class ProjectSource : public RowSource {
 public:
  ProjectSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child)
      : op_(op), child_(std::move(child)) {}
  Result<bool> Next(Row* row) override {
    SHALE_ASSIGN_OR_RETURN(bool more, child_->Next(&input_));
    if (!more) return false;
    row->clear();
    for (const auto& e : op_.exprs) {
      SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*e, input_));
      row->push_back(std::move(v));
    }
    return true;
  }

 private:
  const PhysicalOperator& op_;
  std::unique_ptr<RowSource> child_;
  Row input_;
};

// NULL sorts first, as in MySQL; strings in the collation of `t`, ENUM
// values by their index.
int CompareForSort(const Value& a, const Value& b, const SqlType& t) {
  if (a.is_null() || b.is_null()) return a.is_null() == b.is_null() ? 0 : (a.is_null() ? -1 : 1);
  return CompareOfType(a, b, t);
}

// `values` (of `types`) in the form grouping and DISTINCT compare: equal
// under their collation means equal bytes (src/common/value.h KeyForm).
void EncodeGroupKey(const Row& values, const std::vector<sierra::ColumnInfo>& types, std::string* out) {
  Row keys;
  keys.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    keys.push_back(i < types.size() ? KeyForm(values[i], types[i].type) : values[i]);
  }
  EncodeRow(keys, out);
}

// ORDER BY: sorts its input within the statement's memory budget, spilling
// sorted runs to disk and merging them when it does not fit
// (ExternalSorter). Under a LIMIT of at most kMaxTopN rows (top_n) it keeps
// only the first top_n rows in a heap instead (top-N), ties in input order.
class SortSource : public RowSource {
 public:
  static constexpr uint64_t kMaxTopN = 10000;

  SortSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child, uint64_t top_n)
      : op_(op), child_(std::move(child)), top_n_(top_n <= kMaxTopN ? top_n : 0) {}
  Result<bool> Next(Row* row) override {
    if (!sorter_) SHALE_RETURN_IF_ERROR(Materialize());
    if (top_n_ != 0) {
      if (next_ >= heap_.size()) return false;
      *row = std::move(heap_[next_++].row);
      return true;
    }
    return sorter_->Next(row);
  }

 private:
  struct HeapEntry {
    Row keys;
    Row row;
    uint64_t seq;  // input order: ties keep it
  };

  // Top-N: a max-heap of the best top_n_ rows seen so far, under
  // `before` (the sort order, then input order).
  template <typename Before>
  void AddTopN(Row keys, Row row, const Before& before) {
    HeapEntry e{std::move(keys), std::move(row), seq_++};
    if (heap_.size() == top_n_) {
      if (!before(e, heap_.front())) return;  // not among the first top_n
      std::pop_heap(heap_.begin(), heap_.end(), before);
      heap_.back() = std::move(e);
    } else {
      memory_.ForceGrow(RowBytes(e.keys) + RowBytes(e.row));  // at most kMaxTopN rows
      heap_.push_back(std::move(e));
    }
    std::push_heap(heap_.begin(), heap_.end(), before);
  }

  Status Materialize() {
    // A string key is replaced by its weight string (KeyForm: their byte
    // order is the collation's order; ENUMs become their indexes), once per
    // row, so the O(n log n) comparisons are byte compares instead of
    // collation walks.
    std::vector<bool> key_form(op_.sort_keys.size(), false);
    for (size_t i = 0; i < op_.sort_keys.size(); ++i) key_form[i] = op_.sort_keys[i].expr->type.is_string();
    auto less = [this, key_form](const Row& a, const Row& b) {
      for (size_t i = 0; i < op_.sort_keys.size(); ++i) {
        const Value& x = a[i];
        const Value& y = b[i];
        int c;
        if (key_form[i]) {
          // NULL first; weight strings (and ENUM indexes) compare as bytes / numbers.
          c = x.is_null() || y.is_null() ? (x.is_null() == y.is_null() ? 0 : (x.is_null() ? -1 : 1))
                                         : CompareValuesCollated(x, y, kCollationBinary);
        } else {
          c = CompareForSort(x, y, op_.sort_keys[i].expr->type);
        }
        if (c != 0) return op_.sort_keys[i].desc ? c > 0 : c < 0;
      }
      return false;
    };
    auto before = [&less](const HeapEntry& a, const HeapEntry& b) {
      if (less(a.keys, b.keys)) return true;
      if (less(b.keys, a.keys)) return false;
      return a.seq < b.seq;
    };
    sorter_.emplace(less, StatementMemory(), StatementSpillDir());
    if (top_n_ != 0) heap_.reserve(top_n_);
    Row r;
    while (true) {
      SHALE_ASSIGN_OR_RETURN(bool more, child_->Next(&r));
      if (!more) break;
      Row keys;
      keys.reserve(op_.sort_keys.size());
      for (size_t i = 0; i < op_.sort_keys.size(); ++i) {
        SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*op_.sort_keys[i].expr, r));
        if (key_form[i] && v.is_string()) v = KeyForm(v, op_.sort_keys[i].expr->type);
        keys.push_back(std::move(v));
      }
      if (top_n_ != 0) {
        AddTopN(std::move(keys), std::move(r), before);
      } else {
        SHALE_RETURN_IF_ERROR(sorter_->Add(std::move(keys), std::move(r)));
      }
      r = Row();
    }
    if (top_n_ != 0) {
      std::sort_heap(heap_.begin(), heap_.end(), before);
      return Status::OK();
    }
    return sorter_->Finish();
  }

  const PhysicalOperator& op_;
  std::unique_ptr<RowSource> child_;
  const uint64_t top_n_;
  std::optional<ExternalSorter> sorter_;
  std::vector<HeapEntry> heap_;  // top-N
  size_t next_ = 0;
  uint64_t seq_ = 0;
  MemoryReservation memory_{StatementMemory()};  // top-N rows
};

class DistinctSource : public RowSource {
 public:
  DistinctSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child)
      : op_(op), child_(std::move(child)) {}
  Result<bool> Next(Row* row) override {
    while (true) {
      SHALE_ASSIGN_OR_RETURN(bool more, child_->Next(row));
      if (!more) return false;
      std::string key;
      EncodeGroupKey(*row, op_.columns, &key);
      const uint64_t bytes = key.capacity() + kHashEntryBytes;
      if (seen_.insert(std::move(key)).second) {
        SHALE_RETURN_IF_ERROR(memory_.Grow(bytes, "#sql-distinct"));
        return true;
      }
    }
  }

 private:
  const PhysicalOperator& op_;
  std::unique_ptr<RowSource> child_;
  std::unordered_set<std::string> seen_;
  MemoryReservation memory_{StatementMemory()};
};

class LimitSource : public RowSource {
 public:
  LimitSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child)
      : op_(op), child_(std::move(child)) {}
  Result<bool> Next(Row* row) override {
    while (skipped_ < op_.offset) {
      SHALE_ASSIGN_OR_RETURN(bool more, child_->Next(row));
      if (!more) return false;
      ++skipped_;
    }
    if (returned_ >= op_.limit) return false;
    SHALE_ASSIGN_OR_RETURN(bool more, child_->Next(row));
    if (!more) return false;
    ++returned_;
    return true;
  }

 private:
  const PhysicalOperator& op_;
  std::unique_ptr<RowSource> child_;
  uint64_t skipped_ = 0;
  uint64_t returned_ = 0;
};

// The GROUP BY values of input row `r` (*keys) and their encoded key forms
// (*encoded): rows with equal encodings are one group (equal under the
// columns' collations).
Status GroupKey(const std::vector<sierra::ExprPtr>& group_by, const Row& r, Row* keys, std::string* encoded) {
  Row key_forms;
  keys->clear();
  for (const auto& e : group_by) {
    SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*e, r));
    key_forms.push_back(KeyForm(v, e->type));
    keys->push_back(std::move(v));
  }
  encoded->clear();
  EncodeRow(key_forms, encoded);
  return Status::OK();
}

// GROUP BY over input that arrives grouped (planner: kStreamAggregate):
// aggregates one group at a time and returns it when the next one begins,
// so it keeps no table of groups and needs no memory budget for them.
class StreamAggregateSource : public RowSource {
 public:
  StreamAggregateSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child)
      : op_(op), child_(std::move(child)) {}
  Result<bool> Next(Row* row) override {
    Row r, keys;
    std::string encoded;
    while (!input_done_) {
      SHALE_ASSIGN_OR_RETURN(bool more, child_->Next(&r));
      if (!more) {
        input_done_ = true;
        break;
      }
      SHALE_RETURN_IF_ERROR(GroupKey(op_.group_by, r, &keys, &encoded));
      if (have_group_ && encoded == current_) {
        for (sierra::Accumulator& a : accumulators_) SHALE_RETURN_IF_ERROR(a.Add(r));
        continue;
      }
      const bool finished = have_group_;
      if (finished) *row = Finish();
      current_ = std::move(encoded);
      keys_ = std::move(keys);
      accumulators_.clear();
      for (const auto& call : op_.aggregates) accumulators_.emplace_back(call);
      for (sierra::Accumulator& a : accumulators_) SHALE_RETURN_IF_ERROR(a.Add(r));
      have_group_ = true;
      if (finished) return true;
    }
    if (!have_group_) return false;
    *row = Finish();
    have_group_ = false;
    return true;
  }

 private:
  Row Finish() {
    Row out = std::move(keys_);
    for (const sierra::Accumulator& a : accumulators_) out.push_back(a.Result());
    return out;
  }

  const PhysicalOperator& op_;
  std::unique_ptr<RowSource> child_;
  bool input_done_ = false;
  bool have_group_ = false;
  std::string current_;  // the encoded key of the group being aggregated
  Row keys_;
  std::vector<sierra::Accumulator> accumulators_;
};

// GROUP BY and aggregates: reads its whole input into a hash table of groups
// (in order of first appearance), then returns one row per group.
class HashAggregateSource : public RowSource {
 public:
  HashAggregateSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child)
      : op_(op), child_(std::move(child)) {}
  Result<bool> Next(Row* row) override {
    if (!done_) {
      SHALE_RETURN_IF_ERROR(Materialize());
      done_ = true;
    }
    if (next_ >= groups_.size()) return false;
    Group& g = groups_[next_++];
    *row = std::move(g.keys);
    for (const sierra::Accumulator& a : g.accumulators) row->push_back(a.Result());
    return true;
  }

 private:
  struct Group {
    Row keys;
    std::vector<sierra::Accumulator> accumulators;
  };

  Group NewGroup(Row keys) {
    Group g;
    g.keys = std::move(keys);
    for (const auto& call : op_.aggregates) g.accumulators.emplace_back(call);
    return g;
  }

  Status Materialize() {
    std::unordered_map<std::string, size_t> index;
    Row r;
    while (true) {
      SHALE_ASSIGN_OR_RETURN(bool more, child_->Next(&r));
      if (!more) break;
      Row keys;
      std::string encoded;
      SHALE_RETURN_IF_ERROR(GroupKey(op_.group_by, r, &keys, &encoded));
      const uint64_t key_bytes = encoded.capacity();
      auto [it, added] = index.emplace(std::move(encoded), groups_.size());
      if (added) {
        SHALE_RETURN_IF_ERROR(memory_.Grow(RowBytes(keys) + key_bytes + kHashEntryBytes +
                                               op_.aggregates.size() * sizeof(sierra::Accumulator),
                                           "#sql-group-by"));
        groups_.push_back(NewGroup(std::move(keys)));
      }
      for (sierra::Accumulator& a : groups_[it->second].accumulators) {
        SHALE_RETURN_IF_ERROR(a.Add(r));
      }
    }
    // Without GROUP BY there is one group even when there are no rows.
    if (op_.group_by.empty() && groups_.empty()) groups_.push_back(NewGroup({}));
    return Status::OK();
  }

  const PhysicalOperator& op_;
  std::unique_ptr<RowSource> child_;
  std::vector<Group> groups_;
  size_t next_ = 0;
  bool done_ = false;
  MemoryReservation memory_{StatementMemory()};
};

// A kHashAggregate whose filter and partial aggregation run where the
// slices are (src/exec/pushdown.h): each remote slice sends its partial
// rows (txn::DataRouter::AggregateSlice); a slice read here, or a remote
// one this transaction has written (its rows need the transaction's
// overlay), is aggregated here from its rows. Slices are taken in the
// order the unpushed plan reads them (each range, its slices one after
// another), so groups come out in the same order with the same values.
class PushedAggregateSource : public RowSource {
 public:
  PushedAggregateSource(Engine* engine, const PhysicalOperator& op, Pushdown pushed)
      : engine_(engine), op_(op), pushed_(pushed), groups_(&op.group_by, &op.aggregates) {}
  Result<bool> Next(Row* row) override {
    if (!done_) {
      SHALE_RETURN_IF_ERROR(Materialize());
      done_ = true;
    }
    if (next_ >= rows_.size()) return false;
    *row = std::move(rows_[next_++]);
    return true;
  }

 private:
  Status Materialize() {
    const PhysicalOperator& scan = *pushed_.scan;
    const catalog::TableDef& table = *scan.table;
    txn::Transaction* t = CurrentTxn();
    const size_t range_count = scan.ranges.empty() ? 1 : scan.ranges.size();
    std::vector<std::string> partials;
    Row row;
    for (size_t r = 0; r < range_count; ++r) {
      const storage::KeyRange& range = scan.ranges.empty() ? scan.range : scan.ranges[r];
      for (const catalog::SliceDef& def : scan.slices) {
        SHALE_RETURN_IF_ERROR(CheckInterrupted());
        SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, LocalSlice(engine_, table, def));
        if (slice.remote() && (t == nullptr || !t->HasWritesIn(def.id))) {
          if (fragment_.empty()) fragment_ = SerializeFragment(pushed_);
          uint64_t snapshot = storage::kLatestSnapshot;
          if (t != nullptr) {
            SHALE_ASSIGN_OR_RETURN(snapshot, t->Snapshot());
          }
          partials.clear();
          SHALE_RETURN_IF_ERROR(
              slice.router->AggregateSlice(slice.ranking(), def.id, range, snapshot, fragment_, &partials));
          for (const std::string& p : partials) SHALE_RETURN_IF_ERROR(groups_.MergePartial(p));
        } else {
          auto it = ReadRange(slice, range, /*latest=*/false);
          for (; it->Valid(); it->Next()) {
            SHALE_RETURN_IF_ERROR(CheckInterrupted());
            Status decoded = DecodeRow(it->value(), &row);
            if (!decoded.ok()) return RowCorrupt(table, def, decoded);
            if (pushed_.filter != nullptr) {
              SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*pushed_.filter->predicate, row));
              if (!sierra::IsTrue(v)) continue;
            }
            SHALE_RETURN_IF_ERROR(groups_.AddRow(row));
            SHALE_RETURN_IF_ERROR(Reserve());
          }
          SHALE_RETURN_IF_ERROR(it->status());
        }
        SHALE_RETURN_IF_ERROR(Reserve());
      }
    }
    rows_ = groups_.Results();
    return Status::OK();
  }
  // The groups held count against the statement's memory budget.
  Status Reserve() {
    if (groups_.bytes() <= reserved_) return Status::OK();
    SHALE_RETURN_IF_ERROR(memory_.Grow(groups_.bytes() - reserved_, "#sql-group-by"));
    reserved_ = groups_.bytes();
    return Status::OK();
  }

  Engine* engine_;
  const PhysicalOperator& op_;
  const Pushdown pushed_;
  GroupTable groups_;
  std::string fragment_;  // serialized on the first remote slice
  std::vector<Row> rows_;
  size_t next_ = 0;
  bool done_ = false;
  uint64_t reserved_ = 0;
  MemoryReservation memory_{StatementMemory()};
};

// What every join shares: for each left row, the joined rows with the
// right rows Candidates() names that pass the ON predicate, and for a LEFT
// join the left row with NULLs when none does. Subclasses say where the
// candidates come from.
class JoinSource : public RowSource {
 public:
  Result<bool> Next(Row* row) final {
    SHALE_RETURN_IF_ERROR(Prepare());
    while (true) {
      if (!have_left_) {
        SHALE_ASSIGN_OR_RETURN(bool more, left_->Next(&left_row_));
        if (!more) return false;
        have_left_ = true;
        matched_ = false;
        next_right_ = 0;
        SHALE_RETURN_IF_ERROR(FindCandidates());
      }
      while (next_right_ < CandidateCount()) {
        SHALE_RETURN_IF_ERROR(CheckInterrupted());
        const Row& right = Candidate(next_right_++);
        *row = left_row_;
        row->insert(row->end(), right.begin(), right.end());
        if (!op_.predicate) {
          matched_ = true;
          return true;
        }
        SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*op_.predicate, *row));
        if (sierra::IsTrue(v)) {
          matched_ = true;
          return true;
        }
      }
      have_left_ = false;
      if (!matched_ && op_.join_kind == sierra::JoinKind::kLeft) {
        *row = left_row_;
        row->resize(row->size() + right_width_);  // NULLs
        return true;
      }
    }
  }

 protected:
  JoinSource(const PhysicalOperator& op, std::unique_ptr<RowSource> left)
      : op_(op), left_(std::move(left)), right_width_(op.columns.size() - op.children[0]->columns.size()) {}
  // Called before each row; reads what the join needs once.
  virtual Status Prepare() { return Status::OK(); }
  // Sets the candidates for left_row_.
  virtual Status FindCandidates() = 0;
  virtual size_t CandidateCount() const = 0;
  virtual const Row& Candidate(size_t i) const = 0;

  const PhysicalOperator& op_;
  std::unique_ptr<RowSource> left_;
  const size_t right_width_;
  Row left_row_;

 private:
  bool have_left_ = false;
  bool matched_ = false;
  size_t next_right_ = 0;
};

// Joins by scanning the (materialized) right input once per left row, or
// with hash keys only the right rows whose keys equal the left row's.
class NestedLoopJoinSource : public JoinSource {
 public:
  NestedLoopJoinSource(const PhysicalOperator& op, std::unique_ptr<RowSource> left,
                       std::unique_ptr<RowSource> right)
      : JoinSource(op, std::move(left)), right_(std::move(right)) {}

 private:
  Status Prepare() override {
    if (right_read_) return Status::OK();
    Row r;
    while (true) {
      SHALE_ASSIGN_OR_RETURN(bool more, right_->Next(&r));
      if (!more) break;
      uint64_t bytes = RowBytes(r) + sizeof(size_t);
      if (!op_.hash_keys.empty()) {
        SHALE_ASSIGN_OR_RETURN(std::optional<std::string> key, HashKey(r, /*left=*/false));
        if (key) {
          bytes += key->capacity() + kHashEntryBytes;
          buckets_[*key].push_back(right_rows_.size());
        }
      }
      SHALE_RETURN_IF_ERROR(memory_.Grow(bytes, op_.hash_keys.empty() ? "#sql-join-buffer" : "#sql-hash-join"));
      right_rows_.push_back(std::move(r));
      r = Row();
    }
    right_read_ = true;
    for (size_t i = 0; i < right_rows_.size(); ++i) all_.push_back(i);
    return Status::OK();
  }

  Status FindCandidates() override {
    candidates_ = &all_;
    if (!op_.hash_keys.empty()) {
      static const std::vector<size_t> kNone;
      SHALE_ASSIGN_OR_RETURN(std::optional<std::string> key, HashKey(left_row_, /*left=*/true));
      auto it = key ? buckets_.find(*key) : buckets_.end();
      candidates_ = it == buckets_.end() ? &kNone : &it->second;
    }
    return Status::OK();
  }
  size_t CandidateCount() const override { return candidates_->size(); }
  const Row& Candidate(size_t i) const override { return right_rows_[(*candidates_)[i]]; }

  // The encoded hash-key values of a left or right row; nullopt when one is
  // NULL (an equality with NULL is never true).
  Result<std::optional<std::string>> HashKey(const Row& row, bool left) {
    Row values;
    for (const auto& [l, r] : op_.hash_keys) {
      SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(left ? *l : *r, row));
      if (v.is_null()) return std::optional<std::string>();
      // Strings hash by their weight under the pair's collation.
      if (v.is_string()) v = Value::String(SortKey(v.as_string(), sierra::ComparisonCollation({l, r})));
      values.push_back(std::move(v));
    }
    std::string key;
    EncodeRow(values, &key);
    return std::optional<std::string>(std::move(key));
  }

  std::unique_ptr<RowSource> right_;
  std::vector<Row> right_rows_;
  std::unordered_map<std::string, std::vector<size_t>> buckets_;  // hash key -> right rows
  std::vector<size_t> all_;                                       // every right row
  const std::vector<size_t>* candidates_ = &all_;
  bool right_read_ = false;
  MemoryReservation memory_{StatementMemory()};
};

uint64_t RowsBytes(const std::vector<Row>& rows) {
  uint64_t bytes = rows.capacity() * sizeof(Row);
  for (const Row& r : rows) bytes += RowBytes(r);
  return bytes;
}

// Every row of `source`.
Result<std::vector<Row>> Drain(RowSource* source) {
  std::vector<Row> rows;
  Row r;
  while (true) {
    SHALE_ASSIGN_OR_RETURN(bool more, source->Next(&r));
    if (!more) break;
    rows.push_back(std::move(r));
    r = Row();
  }
  return rows;
}

// The rows of a plan with outer references, per outer row: the plan with
// the row's values substituted is planned (so key predicates become point
// gets and index ranges) and run once per key, and the rows kept by key
// within the statement's memory budget — emptied past kMaxEntries or when
// the budget is full; one result over the whole budget is 1114 naming
// `table`.
class OuterResultCache {
 public:
  OuterResultCache(Engine* engine, const sierra::LogicalOperator* plan, const char* table)
      : engine_(engine), plan_(plan), table_(table) {}

  Result<const std::vector<Row>*> Get(std::string key, const Row& outer) {
    auto it = entries_.find(key);
    if (it != entries_.end()) return &it->second;
    sierra::LogicalPtr logical = sierra::SubstituteOuter(*plan_, outer);
    SHALE_ASSIGN_OR_RETURN(auto physical, planner::Plan(*logical));
    SHALE_ASSIGN_OR_RETURN(auto source, Build(engine_, *physical));
    SHALE_ASSIGN_OR_RETURN(std::vector<Row> rows, Drain(source.get()));
    const uint64_t bytes = RowsBytes(rows) + key.capacity() + kHashEntryBytes;
    if (entries_.size() > kMaxEntries || !memory_.TryGrow(bytes)) {
      entries_.clear();
      memory_.ReleaseAll();
      SHALE_RETURN_IF_ERROR(memory_.Grow(bytes, table_));
    }
    return &entries_.emplace(std::move(key), std::move(rows)).first->second;
  }

 private:
  static constexpr size_t kMaxEntries = 100000;

  Engine* engine_;
  const sierra::LogicalOperator* plan_;
  const char* table_;
  std::unordered_map<std::string, std::vector<Row>> entries_;  // key -> rows
  MemoryReservation memory_{StatementMemory()};                // the rows held
};

// Each input row with the value of a subquery appended (sierra kApply). An
// uncorrelated subquery runs once; a correlated one runs per distinct set
// of outer values (memoized), re-planned with the values substituted, so
// its key predicates become point gets and index scans.
class ApplySource : public RowSource {
 public:
  ApplySource(Engine* engine, const PhysicalOperator& op, std::unique_ptr<RowSource> child)
      : engine_(engine), op_(op), child_(std::move(child)), memo_(engine, op.subquery, "#sql-subquery") {}
  Result<bool> Next(Row* row) override {
    SHALE_ASSIGN_OR_RETURN(bool more, child_->Next(row));
    if (!more) return false;
    const std::vector<Row>* result = nullptr;
    if (!op_.correlated) {
      if (!uncorrelated_) {
        SHALE_ASSIGN_OR_RETURN(auto sub, Build(engine_, *op_.children[1]));
        SHALE_ASSIGN_OR_RETURN(std::vector<Row> rows, Drain(sub.get()));
        SHALE_RETURN_IF_ERROR(memory_.Grow(RowsBytes(rows), "#sql-subquery"));
        uncorrelated_ = std::move(rows);
      }
      result = &*uncorrelated_;
    } else {
      std::string key;
      EncodeRow(*row, &key);
      SHALE_ASSIGN_OR_RETURN(result, memo_.Get(std::move(key), *row));
    }
    SHALE_ASSIGN_OR_RETURN(Value v, Compute(*row, *result));
    row->push_back(std::move(v));
    return true;
  }

 private:
  Result<Value> Compute(const Row& row, const std::vector<Row>& rows) {
    using sierra::ApplyKind;
    switch (op_.apply_kind) {
      case ApplyKind::kScalar:
        if (rows.size() > 1) return SqlError(ErrorCode::kSubqueryNo1Row, "Subquery returns more than 1 row");
        return rows.empty() ? Value::Null() : rows[0][0];
      case ApplyKind::kExists:
        return Value::Int(rows.empty() ? 0 : 1);
      case ApplyKind::kIn:
      case ApplyKind::kAny:
      case ApplyKind::kAll: {
        // x IN S is x = ANY S. ANY: true if some comparison is true, else
        // NULL if some is NULL, else false. ALL: false if some comparison
        // is false, else NULL if some is NULL, else true.
        const bool all = op_.apply_kind == ApplyKind::kAll;
        const sierra::CompareOp cmp = op_.apply_kind == ApplyKind::kIn ? sierra::CompareOp::kEq : op_.compare_op;
        if (rows.empty()) return Value::Int(all ? 1 : 0);
        SHALE_ASSIGN_OR_RETURN(Value lhs, sierra::Evaluate(*op_.exprs[0], row));
        bool saw_null = false;
        for (const Row& r : rows) {
          auto c = sierra::Expr::Compare(cmp, sierra::Expr::Constant(lhs), sierra::Expr::Constant(r[0]));
          SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*c, {}));
          if (v.is_null()) {
            saw_null = true;
          } else if (sierra::IsTrue(v) != all) {
            return Value::Int(all ? 0 : 1);
          }
        }
        if (saw_null) return Value::Null();
        return Value::Int(all ? 1 : 0);
      }
    }
    return Status::Internal("bad apply kind");
  }

  Engine* engine_;
  const PhysicalOperator& op_;
  std::unique_ptr<RowSource> child_;
  std::optional<std::vector<Row>> uncorrelated_;
  MemoryReservation memory_{StatementMemory()};  // uncorrelated_
  OuterResultCache memo_;                        // correlated: outer row -> subquery rows
};

// Index-lookup join: for each left row, the right rows whose keys equal its
// keys, read by planning the right side with the left row substituted
// (planner kLookupJoin: a point get or index range per distinct left key,
// cached like a correlated subquery's results).
class LookupJoinSource : public JoinSource {
 public:
  LookupJoinSource(Engine* engine, const PhysicalOperator& op, std::unique_ptr<RowSource> left)
      : JoinSource(op, std::move(left)), matches_by_key_(engine, op.lookup.get(), "#sql-join-buffer") {}

 private:
  Status FindCandidates() override {
    SHALE_ASSIGN_OR_RETURN(matches_, Matches());
    return Status::OK();
  }
  size_t CandidateCount() const override { return matches_->size(); }
  const Row& Candidate(size_t i) const override { return (*matches_)[i]; }

  // The right rows for left_row_'s keys (none when a key is NULL).
  Result<const std::vector<Row>*> Matches() {
    static const std::vector<Row> kNone;
    Row keys;
    for (const auto& key : op_.hash_keys) {
      SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*key.first, left_row_));
      if (v.is_null()) return &kNone;
      keys.push_back(std::move(v));
    }
    std::string encoded;
    EncodeRow(keys, &encoded);
    return matches_by_key_.Get(std::move(encoded), left_row_);
  }

  OuterResultCache matches_by_key_;  // left keys -> right rows
  const std::vector<Row>* matches_ = nullptr;
};

// Which right columns of each lookup join of a plan the operators above it
// read (through their expressions), with the join's own predicate, keys and
// right filter; a join missing from the map reads them all. Only what the
// plan's root is built or explained with (LookupColumnsScope) is known:
// plans built later, per outer row, read every column.
using LookupColumns = std::unordered_map<const PhysicalOperator*, std::vector<bool>>;
thread_local const LookupColumns* t_lookup_columns = nullptr;

// Marks the columns (+ shift) `e` reads.
void MarkColumns(const sierra::Expr* e, size_t shift, std::vector<bool>* cols) {
  if (e == nullptr) return;
  if (e->kind == sierra::ExprKind::kColumnRef && e->column >= 0) {
    const size_t c = static_cast<size_t>(e->column) + shift;
    if (c < cols->size()) {
      (*cols)[c] = true;
    } else {
      cols->assign(cols->size(), true);  // not a row this analysis knows: all
    }
  }
  for (const sierra::ExprPtr& child : e->children) MarkColumns(child.get(), shift, cols);
}

// Notes in *out, for each lookup join under `op`, the right columns read
// when `needed` are the columns of `op`'s output read above it. Operators
// it does not list (writes, unions, applies, scans) read every column.
void NoteLookupColumns(const PhysicalOperator& op, std::vector<bool> needed, LookupColumns* out) {
  auto all = [](const PhysicalOperator& c) { return std::vector<bool>(c.columns.size(), true); };
  if (needed.size() != op.columns.size()) needed = all(op);
  auto none = [](const PhysicalOperator& c) { return std::vector<bool>(c.columns.size(), false); };
  if (op.children.empty()) return;
  switch (op.kind) {
    case PhysicalKind::kFilter:
    case PhysicalKind::kSort:
    case PhysicalKind::kLimit: {
      const PhysicalOperator& child = *op.children[0];
      if (child.columns.size() != op.columns.size()) break;
      MarkColumns(op.predicate.get(), 0, &needed);
      for (const sierra::SortKey& k : op.sort_keys) MarkColumns(k.expr.get(), 0, &needed);
      NoteLookupColumns(child, std::move(needed), out);
      return;
    }
    case PhysicalKind::kProject: {
      std::vector<bool> child = none(*op.children[0]);
      for (const sierra::ExprPtr& e : op.exprs) MarkColumns(e.get(), 0, &child);
      NoteLookupColumns(*op.children[0], std::move(child), out);
      return;
    }
    case PhysicalKind::kHashAggregate:
    case PhysicalKind::kStreamAggregate: {
      std::vector<bool> child = none(*op.children[0]);
      for (const sierra::ExprPtr& e : op.group_by) MarkColumns(e.get(), 0, &child);
      for (const sierra::AggregateCall& a : op.aggregates) {
        for (const sierra::ExprPtr& e : a.Exprs()) MarkColumns(e.get(), 0, &child);
      }
      NoteLookupColumns(*op.children[0], std::move(child), out);
      return;
    }
    case PhysicalKind::kNestedLoopJoin:
    case PhysicalKind::kHashJoin:
    case PhysicalKind::kLookupJoin: {
      const size_t left_width = op.children[0]->columns.size();
      if (left_width > needed.size()) break;
      MarkColumns(op.predicate.get(), 0, &needed);
      for (const auto& [l, r] : op.hash_keys) {
        MarkColumns(l.get(), 0, &needed);
        MarkColumns(r.get(), left_width, &needed);
      }
      std::vector<bool> left(needed.begin(), needed.begin() + static_cast<std::ptrdiff_t>(left_width));
      std::vector<bool> right(needed.begin() + static_cast<std::ptrdiff_t>(left_width), needed.end());
      NoteLookupColumns(*op.children[0], std::move(left), out);
      if (op.kind == PhysicalKind::kLookupJoin) {
        MarkColumns(op.lookup_filter.get(), 0, &right);
        (*out)[&op] = std::move(right);
      } else if (op.children.size() > 1) {
        NoteLookupColumns(*op.children[1], std::move(right), out);
      }
      return;
    }
    default:
      break;
  }
  for (const planner::PhysicalPtr& child : op.children) NoteLookupColumns(*child, all(*child), out);
}

// While alive, BatchedLookupOf knows the columns read of `plan`'s lookup
// joins (every column of the root is read).
class LookupColumnsScope {
 public:
  explicit LookupColumnsScope(const PhysicalOperator& plan) : outer_(t_lookup_columns) {
    NoteLookupColumns(plan, std::vector<bool>(plan.columns.size(), true), &columns_);
    t_lookup_columns = &columns_;
  }
  ~LookupColumnsScope() { t_lookup_columns = outer_; }
  LookupColumnsScope(const LookupColumnsScope&) = delete;
  LookupColumnsScope& operator=(const LookupColumnsScope&) = delete;

 private:
  LookupColumns columns_;
  const LookupColumns* outer_;
};

// How a lookup join runs batched (BatchedLookupJoinSource): the
// representation of the right table its left keys are routed to, and which
// join key gives each of its leading key columns.
struct BatchedLookup {
  // The table's primary key, or one of its secondary indexes.
  const catalog::RepresentationDef* rep = nullptr;
  // `rep` is a secondary index: its entries name rows by primary key, read
  // in a second batched hop.
  bool index = false;
  // The keys are the whole primary key: one row at most per key (a point
  // read); otherwise every entry under the key prefix.
  bool whole_key = false;
  // `rep` is an index of signed integer columns holding every right column
  // the plan reads (its key columns and signed integer primary-key columns:
  // their stored keys are their values): the rows are made from the
  // entries, with no second hop.
  bool covering = false;
  // Per leading key column of `rep` (at least its distribution columns),
  // the index of the join key equal to it in op.hash_keys.
  std::vector<size_t> key_order;

  // EXPLAIN's mark: "[pushed: batched lookup...]".
  std::string Describe(bool filter) const {
    std::string s = "[pushed: batched lookup";
    if (index) s += " (index " + rep->name + (covering ? ", covering)" : ")");
    else if (!whole_key) s += " (key prefix)";
    if (filter) s += ", filter";
    return s + "]";
  }
};

// Whether the lookup join `op` may run batched: its right side is a
// (filtered) scan of a table and its right keys are the leading key
// columns of a representation of it — the whole primary key, a prefix of
// it, or the leading columns of a secondary index — at least the columns
// it is distributed on, so each left row's keys name the one slice holding
// every match. The primary key is preferred (no second hop), then the
// index with the most leading columns keyed. A key column counts only when
// its equality compares as its keys are stored: a string column under its
// own collation (keys hold its weight strings). The right filter must also
// be PushableExpr (it runs where the slices are).
std::optional<BatchedLookup> BatchedLookupOf(const PhysicalOperator& op) {
  if (op.kind != PhysicalKind::kLookupJoin || !op.lookup) return std::nullopt;
  const sierra::LogicalOperator* scan = op.lookup.get();
  if (scan->kind == sierra::LogicalKind::kFilter) scan = scan->children[0].get();
  if (scan->kind != sierra::LogicalKind::kScan || scan->table == nullptr) return std::nullopt;
  if (op.lookup_filter && !PushableExpr(*op.lookup_filter)) return std::nullopt;
  const catalog::TableDef& table = *scan->table;
  auto key_of = [&](int column) -> std::optional<size_t> {
    for (size_t i = 0; i < op.hash_keys.size(); ++i) {
      const auto& [l, r] = op.hash_keys[i];
      if (r->kind != sierra::ExprKind::kColumnRef || r->column != column) continue;
      const SqlType& t = table.columns[static_cast<size_t>(column)].type;
      if (t.is_string() && sierra::ComparisonCollation({l, r}) != t.Collation()) continue;
      return i;
    }
    return std::nullopt;
  };
  auto leading = [&](const catalog::RepresentationDef& rep) {
    std::vector<size_t> order;
    for (int c : rep.key_columns) {
      std::optional<size_t> k = key_of(c);
      if (!k) break;
      order.push_back(*k);
    }
    // Routable only when the distribution columns are all keyed.
    if (order.size() < static_cast<size_t>(std::max(1, rep.distribution_columns))) order.clear();
    return order;
  };
  BatchedLookup b;
  b.key_order = leading(table.primary);
  if (!b.key_order.empty()) {
    b.rep = &table.primary;
    b.whole_key = b.key_order.size() == table.primary.key_columns.size();
    return b;
  }
  for (const catalog::RepresentationDef& index : table.indexes) {
    std::vector<size_t> order = leading(index);
    if (order.size() > b.key_order.size()) {
      b.key_order = std::move(order);
      b.rep = &index;
      b.index = true;
    }
  }
  if (b.rep == nullptr) return std::nullopt;
  // Covering: every column read is in the entries as its value.
  const std::vector<bool>* read = nullptr;
  if (t_lookup_columns != nullptr) {
    auto it = t_lookup_columns->find(&op);
    if (it != t_lookup_columns->end() && it->second.size() == table.columns.size()) read = &it->second;
  }
  auto signed_integer = [&](int c) {
    const SqlType& t = table.columns[static_cast<size_t>(c)].type;
    return t.is_integer() && !t.is_unsigned;
  };
  if (read != nullptr && b.index && std::all_of(b.rep->key_columns.begin(), b.rep->key_columns.end(), signed_integer)) {
    b.covering = true;
    for (size_t c = 0; c < read->size() && b.covering; ++c) {
      if (!(*read)[c]) continue;
      const int column = static_cast<int>(c);
      const bool in_entry =
          std::find(b.rep->key_columns.begin(), b.rep->key_columns.end(), column) != b.rep->key_columns.end() ||
          std::find(table.primary.key_columns.begin(), table.primary.key_columns.end(), column) !=
              table.primary.key_columns.end();
      b.covering = in_entry && signed_integer(column);
    }
  }
  return b;
}

// An index-lookup join pushed to the slices (docs/cluster.md "Query
// path"): the left rows are taken in batches of up to
// DataRouter::kMaxLookupKeys; their keys are grouped by the slice of the
// representation that holds them (the distribution hash, as a point select
// routes) and each remote slice gets ONE Fragment request with its
// distinct keys:
// - the whole primary key: the rows with those keys that pass the right
//   side's own filter (LookupFiltered);
// - a primary-key prefix: every row under each prefix that passes it
//   (LookupPrefixes);
// - a secondary index's leading columns: every index entry under each
//   prefix (LookupPrefixes), then the rows those entries name, batched
//   again per primary slice with the filter (LookupFiltered).
// Slices read here (no network) and slices this transaction wrote (their
// rows need its overlay) are read here through the transaction, prefix by
// prefix or row by row, and filtered here; the entries and rows of the
// others are at the statement's snapshot, which the transaction's view
// equals there. Per left row the result is what LookupJoinSource finds;
// keys it cannot answer that way take LookupJoinSource's path: whole keys
// of slices read here or written, and left values key order does not
// answer (planner::KeyConstant: another type class, out of range).
class BatchedLookupJoinSource : public JoinSource {
 public:
  BatchedLookupJoinSource(Engine* engine, const PhysicalOperator& op, std::unique_ptr<RowSource> left,
                          BatchedLookup lookup)
      : JoinSource(op, std::unique_ptr<RowSource>(new Batches(this, std::move(left)))),
        engine_(engine),
        lookup_(std::move(lookup)),
        matches_by_key_(engine, op.lookup.get(), "#sql-join-buffer") {
    const sierra::LogicalOperator* scan = op.lookup.get();
    if (scan->kind == sierra::LogicalKind::kFilter) scan = scan->children[0].get();
    table_ = scan->table;
  }

 private:
  // The left input a batch at a time: reads a batch, has the join fetch
  // its right rows, then hands its rows out one by one.
  class Batches : public RowSource {
   public:
    Batches(BatchedLookupJoinSource* join, std::unique_ptr<RowSource> input)
        : join_(join), input_(std::move(input)) {}
    Result<bool> Next(Row* row) override {
      if (pos_ == rows_.size()) {
        rows_.clear();
        pos_ = 0;
        Row r;
        while (rows_.size() < txn::DataRouter::kMaxLookupKeys) {
          SHALE_ASSIGN_OR_RETURN(bool more, input_->Next(&r));
          if (!more) break;
          rows_.push_back(std::move(r));
        }
        if (rows_.empty()) return false;
        SHALE_RETURN_IF_ERROR(join_->Fetch(rows_));
      }
      current_ = pos_;
      *row = rows_[pos_++];
      return true;
    }
    size_t current() const { return current_; }

   private:
    BatchedLookupJoinSource* join_;
    std::unique_ptr<RowSource> input_;
    std::vector<Row> rows_;
    size_t pos_ = 0;
    size_t current_ = 0;
  };

  // How a left row of the batch finds its right rows.
  struct LeftKey {
    enum class How { kNone, kFetched, kUnbatched } how = How::kNone;
    std::string key;  // kFetched: the encoded key (or key prefix) looked up
  };

  // (ranking node, slice) -> distinct keys, in first-seen order.
  using Requests = std::map<std::pair<std::string, storage::SliceId>, std::vector<std::string>>;

  // The handle of slice `def` (one per slice per batch).
  Result<const txn::SliceHandle*> Handle(const catalog::SliceDef& def) {
    auto h = handles_.find(def.id);
    if (h == handles_.end()) {
      SHALE_ASSIGN_OR_RETURN(txn::SliceHandle handle, LocalSlice(engine_, *table_, def));
      h = handles_.emplace(def.id, std::move(handle)).first;
      defs_.emplace(def.id, &def);
    }
    return &h->second;
  }
  // Whether the slice is read remotely in a batch: ranked on another node
  // and not written by this transaction (whose writes only it sees).
  static bool Batched(const txn::SliceHandle& h, storage::SliceId id) {
    txn::Transaction* t = CurrentTxn();
    return h.remote() && !(t != nullptr && t->HasWritesIn(id));
  }

  // Index of the prefix among `prefixes` (from *at on) that `key` starts
  // with: the answers of a prefix lookup come prefix after prefix.
  static Result<size_t> PrefixOf(std::string_view key, const std::vector<std::string>& prefixes, size_t* at) {
    while (*at < prefixes.size() && key.compare(0, prefixes[*at].size(), prefixes[*at]) != 0) ++*at;
    if (*at == prefixes.size()) return Status::Internal("batched lookup: an answer under no prefix sent");
    return *at;
  }

  // The answers of one request, held until the batch is joined: they
  // count against the statement's memory budget as they arrive (a key
  // prefix may match many rows, an index key many entries).
  Status Hold(const std::vector<std::pair<std::string, std::string>>& found) {
    uint64_t bytes = 0;
    for (const auto& [key, value] : found) bytes += key.capacity() + value.capacity() + kHashEntryBytes;
    return memory_.Grow(bytes, "#sql-join-buffer");
  }

  Status Keep(const std::string& key, Row row) {
    // A batch's rows count against the statement's memory budget.
    SHALE_RETURN_IF_ERROR(memory_.Grow(RowBytes(row) + key.capacity() + kHashEntryBytes, "#sql-join-buffer"));
    fetched_[key].push_back(std::move(row));
    return Status::OK();
  }

  Status Fetch(const std::vector<Row>& rows) {
    const catalog::TableDef& table = *table_;
    const catalog::RepresentationDef& rep = *lookup_.rep;
    txn::Transaction* t = CurrentTxn();
    keys_.assign(rows.size(), LeftKey{});
    fetched_.clear();
    handles_.clear();
    defs_.clear();
    memory_.ReleaseAll();
    Requests requests;  // remote slices, one batched request each
    Requests here;      // prefix lookups of the other slices: read here, through the transaction
    std::unordered_set<std::string> asked;
    for (size_t i = 0; i < rows.size(); ++i) {
      std::vector<Value> eq;
      bool null_key = false, keyable = true;
      for (size_t k = 0; k < lookup_.key_order.size(); ++k) {
        SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*op_.hash_keys[lookup_.key_order[k]].first, rows[i]));
        if (v.is_null()) {
          null_key = true;  // NULL never equals
          break;
        }
        std::optional<Value> kv =
            planner::KeyConstant(v, table.columns[static_cast<size_t>(rep.key_columns[k])].type);
        if (!kv) {
          keyable = false;
          continue;
        }
        eq.push_back(std::move(*kv));
      }
      if (null_key) continue;
      if (!keyable) {
        keys_[i].how = LeftKey::How::kUnbatched;
        continue;
      }
      const catalog::SliceDef& def = rep.SliceForHash(catalog::DistributionHash(rep, eq));
      SHALE_ASSIGN_OR_RETURN(const txn::SliceHandle* h, Handle(def));
      const bool batched = Batched(*h, def.id);
      if (!batched && lookup_.whole_key) {
        keys_[i].how = LeftKey::How::kUnbatched;
        continue;
      }
      keys_[i].how = LeftKey::How::kFetched;
      keys_[i].key = catalog::EncodeKey(eq);
      if (!asked.insert(keys_[i].key).second) continue;
      if (batched) {
        requests[{h->ranking(), def.id}].push_back(keys_[i].key);
      } else {
        here[{std::string(), def.id}].push_back(keys_[i].key);
      }
    }
    if (requests.empty() && here.empty()) return Status::OK();
    if (fragment_.empty()) fragment_ = SerializeLookupFragment(table_, op_.lookup_filter);
    uint64_t snapshot = storage::kLatestSnapshot;
    if (t != nullptr) {
      SHALE_ASSIGN_OR_RETURN(snapshot, t->Snapshot());
    }
    if (lookup_.index) return FetchThroughIndex(requests, here, snapshot);
    std::vector<std::pair<std::string, std::string>> found;
    for (const Requests* from : {&requests, &here}) {
      const bool remote = from == &requests;
      for (const auto& [where, keys] : *from) {
        SHALE_RETURN_IF_ERROR(CheckInterrupted());
        found.clear();
        const txn::SliceHandle& handle = handles_.at(where.second);
        if (!remote) {
          SHALE_RETURN_IF_ERROR(ReadHere(handle, keys, &found));
        } else if (lookup_.whole_key) {
          SHALE_RETURN_IF_ERROR(
              handle.router->LookupFiltered(where.first, where.second, keys, snapshot, fragment_, &found));
        } else {
          SHALE_RETURN_IF_ERROR(
              handle.router->LookupPrefixes(where.first, where.second, keys, snapshot, fragment_, &found));
        }
        if (!lookup_.whole_key) SHALE_RETURN_IF_ERROR(Hold(found));
        size_t at = 0;
        for (auto& [key, value] : found) {
          Row row;
          Status decoded = DecodeRow(value, &row);
          if (!decoded.ok()) return RowCorrupt(table, *defs_.at(where.second), decoded);
          if (lookup_.whole_key) {
            SHALE_RETURN_IF_ERROR(Keep(key, std::move(row)));
            continue;
          }
          SHALE_ASSIGN_OR_RETURN(size_t p, PrefixOf(key, keys, &at));
          // Rows read here are filtered here (remote ones were, there).
          if (!remote) {
            SHALE_ASSIGN_OR_RETURN(bool pass, Passes(row));
            if (!pass) continue;
          }
          SHALE_RETURN_IF_ERROR(Keep(keys[p], std::move(row)));
        }
      }
    }
    return Status::OK();
  }

  // Whether a right row passes the right side's own filter.
  Result<bool> Passes(const Row& row) const {
    if (!op_.lookup_filter) return true;
    SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*op_.lookup_filter, row));
    return sierra::IsTrue(v);
  }

  // The entries under each of `prefixes` of a slice read here: through the
  // transaction (its snapshot and its own writes), prefix after prefix.
  static Status ReadHere(const txn::SliceHandle& slice, const std::vector<std::string>& prefixes,
                         std::vector<std::pair<std::string, std::string>>* found) {
    for (const std::string& prefix : prefixes) {
      storage::KeyRange range;
      range.has_start = true;
      range.start = prefix;
      range.start_inclusive = true;
      // No encoded key component starts with 0xFF (src/common/value.h).
      range.has_end = true;
      range.end = prefix + '\xff';
      range.end_inclusive = false;
      auto it = ReadRange(slice, range, /*latest=*/false);
      for (; it->Valid(); it->Next()) found->emplace_back(std::string(it->key()), std::string(it->value()));
      SHALE_RETURN_IF_ERROR(it->status());
    }
    return Status::OK();
  }

  // The index entries under each requested prefix, then the rows they name.
  Status FetchThroughIndex(const Requests& requests, const Requests& here, uint64_t snapshot) {
    const catalog::TableDef& table = *table_;
    if (index_fragment_.empty()) index_fragment_ = SerializeLookupFragment(table_, nullptr);
    // (prefix, encoded primary key) per entry, in the order answered.
    std::vector<std::pair<std::string, std::string>> entries;
    Requests row_requests;
    std::unordered_set<std::string> asked;
    std::unordered_map<std::string, Row> rows;  // encoded primary key -> its row, if it exists and passes
    std::vector<std::pair<std::string, std::string>> found;
    for (const Requests* from : {&requests, &here}) {
      for (const auto& [where, prefixes] : *from) {
        SHALE_RETURN_IF_ERROR(CheckInterrupted());
        found.clear();
        const txn::SliceHandle& handle = handles_.at(where.second);
        if (from == &requests) {
          SHALE_RETURN_IF_ERROR(
              handle.router->LookupPrefixes(where.first, where.second, prefixes, snapshot, index_fragment_, &found));
        } else {
          SHALE_RETURN_IF_ERROR(ReadHere(handle, prefixes, &found));
        }
        SHALE_RETURN_IF_ERROR(Hold(found));
        size_t at = 0;
        for (const auto& [key, value] : found) {
          SHALE_ASSIGN_OR_RETURN(size_t p, PrefixOf(key, prefixes, &at));
          Row pk;
          Status decoded = DecodeRow(value, &pk);
          if (!decoded.ok()) return RowCorrupt(table, *defs_.at(where.second), decoded);
          if (lookup_.covering) {
            // The row from the entry: its index key, then its primary key;
            // the columns nothing reads stay NULL.
            Row row(table.columns.size());
            std::string_view in = key;
            for (int c : lookup_.rep->key_columns) {
              decoded = DecodeKey(&in, table.columns[static_cast<size_t>(c)].type, &row[static_cast<size_t>(c)]);
              if (!decoded.ok()) return RowCorrupt(table, *defs_.at(where.second), decoded);
            }
            if (pk.size() != table.primary.key_columns.size()) {
              return RowCorrupt(table, *defs_.at(where.second), Status::Corruption("index entry: primary key width"));
            }
            for (size_t i = 0; i < pk.size(); ++i) row[static_cast<size_t>(table.primary.key_columns[i])] = pk[i];
            SHALE_ASSIGN_OR_RETURN(bool pass, Passes(row));
            if (pass) SHALE_RETURN_IF_ERROR(Keep(prefixes[p], std::move(row)));
            continue;
          }
          std::string pk_key = catalog::EncodeKey(pk);
          const catalog::SliceDef& def = table.primary.SliceForHash(catalog::DistributionHash(table.primary, pk));
          SHALE_ASSIGN_OR_RETURN(const txn::SliceHandle* h, Handle(def));
          if (asked.insert(pk_key).second) {
            if (Batched(*h, def.id)) {
              row_requests[{h->ranking(), def.id}].push_back(pk_key);
            } else {
              // Read here, through the transaction, and filtered here.
              std::string stored;
              Status st = ReadRow(*h, pk_key, /*latest=*/false, &stored);
              if (!st.IsNotFound()) {
                SHALE_RETURN_IF_ERROR(st);
                Row row;
                decoded = DecodeRow(stored, &row);
                if (!decoded.ok()) return RowCorrupt(table, def, decoded);
                SHALE_ASSIGN_OR_RETURN(bool pass, Passes(row));
                if (pass) rows.emplace(pk_key, std::move(row));
              }
            }
          }
          entries.emplace_back(prefixes[p], std::move(pk_key));
        }
      }
    }
    // The second hop: each primary slice's keys, at most kMaxLookupKeys a request.
    for (const auto& [where, keys] : row_requests) {
      txn::DataRouter* router = handles_.at(where.second).router;
      for (size_t from = 0; from < keys.size(); from += txn::DataRouter::kMaxLookupKeys) {
        SHALE_RETURN_IF_ERROR(CheckInterrupted());
        const size_t to = std::min(keys.size(), from + txn::DataRouter::kMaxLookupKeys);
        const std::vector<std::string> chunk(keys.begin() + static_cast<std::ptrdiff_t>(from),
                                             keys.begin() + static_cast<std::ptrdiff_t>(to));
        found.clear();
        SHALE_RETURN_IF_ERROR(router->LookupFiltered(where.first, where.second, chunk, snapshot, fragment_, &found));
        SHALE_RETURN_IF_ERROR(Hold(found));
        for (auto& [key, value] : found) {
          Row row;
          Status decoded = DecodeRow(value, &row);
          if (!decoded.ok()) return RowCorrupt(table, *defs_.at(where.second), decoded);
          rows.emplace(std::move(key), std::move(row));
        }
      }
    }
    // Each prefix's rows in the order of its entries (as an index scan
    // reads them); an entry whose row is gone or fails the filter adds none.
    for (const auto& [prefix, pk_key] : entries) {
      auto it = rows.find(pk_key);
      if (it != rows.end()) SHALE_RETURN_IF_ERROR(Keep(prefix, it->second));
    }
    return Status::OK();
  }

  Status FindCandidates() override {
    static const std::vector<Row> kNone;
    const LeftKey& k = keys_[static_cast<Batches*>(left_.get())->current()];
    switch (k.how) {
      case LeftKey::How::kNone: matches_ = &kNone; break;
      case LeftKey::How::kFetched: {
        auto it = fetched_.find(k.key);
        matches_ = it == fetched_.end() ? &kNone : &it->second;
        break;
      }
      case LeftKey::How::kUnbatched: {
        Row keys;
        for (const auto& key : op_.hash_keys) {
          SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*key.first, left_row_));
          keys.push_back(std::move(v));
        }
        std::string encoded;
        EncodeRow(keys, &encoded);
        SHALE_ASSIGN_OR_RETURN(matches_, matches_by_key_.Get(std::move(encoded), left_row_));
        break;
      }
    }
    return Status::OK();
  }
  size_t CandidateCount() const override { return matches_->size(); }
  const Row& Candidate(size_t i) const override { return (*matches_)[i]; }

  Engine* engine_;
  std::shared_ptr<const catalog::TableDef> table_;
  const BatchedLookup lookup_;
  std::string fragment_;                                           // the right filter; serialized once
  std::string index_fragment_;                                     // index entries: passes every entry
  std::vector<LeftKey> keys_;                                      // per left row of the batch
  std::unordered_map<std::string, std::vector<Row>> fetched_;      // encoded key (prefix) -> its rows
  std::map<storage::SliceId, txn::SliceHandle> handles_;           // the batch's slices
  std::map<storage::SliceId, const catalog::SliceDef*> defs_;      // for messages
  OuterResultCache matches_by_key_;                                // the unbatched left rows
  const std::vector<Row>* matches_ = nullptr;
  MemoryReservation memory_{StatementMemory()};                    // fetched_
};

class UnionAllSource : public RowSource {
 public:
  UnionAllSource(Engine* engine, const PhysicalOperator& op) : engine_(engine), op_(op) {}
  Result<bool> Next(Row* row) override {
    while (next_ <= op_.children.size()) {
      if (!current_) {
        if (next_ == op_.children.size()) return false;
        SHALE_ASSIGN_OR_RETURN(current_, Build(engine_, *op_.children[next_]));
        ++next_;
      }
      SHALE_ASSIGN_OR_RETURN(bool more, current_->Next(row));
      if (more) return true;
      current_.reset();
    }
    return false;
  }

 private:
  Engine* engine_;
  const PhysicalOperator& op_;
  size_t next_ = 0;
  std::unique_ptr<RowSource> current_;
};

Result<std::unique_ptr<RowSource>> Build(Engine* engine, const PhysicalOperator& op, uint64_t top_n) {
  if (op.kind == PhysicalKind::kUnionAll) return std::unique_ptr<RowSource>(new UnionAllSource(engine, op));
  if (Pushdown pushed = PushdownHere(op); pushed.kind != Pushdown::Kind::kNone) {
    if (pushed.kind == Pushdown::Kind::kAggregate) {
      return std::unique_ptr<RowSource>(new PushedAggregateSource(engine, op, pushed));
    }
    // Only remote slices use the fragment; none: nothing to serialize.
    std::string filter;
    if (engine->txn()->router() != nullptr) filter = SerializeFragment(pushed);
    return std::unique_ptr<RowSource>(
        new FilterSource(op, std::unique_ptr<RowSource>(new SliceScanSource(engine, *pushed.scan, std::move(filter)))));
  }
  std::unique_ptr<RowSource> child;
  if (!op.children.empty()) {
    // A LIMIT reads at most offset + limit rows; a projection passes the
    // bound through (one row out per row in).
    uint64_t child_top_n = 0;
    if (op.kind == PhysicalKind::kLimit && op.limit <= SortSource::kMaxTopN && op.offset <= SortSource::kMaxTopN) {
      child_top_n = op.offset + op.limit;
    } else if (op.kind == PhysicalKind::kProject) {
      child_top_n = top_n;
    }
    SHALE_ASSIGN_OR_RETURN(child, Build(engine, *op.children[0], child_top_n));
  }
  switch (op.kind) {
    case PhysicalKind::kValues: return std::unique_ptr<RowSource>(new ValuesSource(op));
    case PhysicalKind::kPointGet: return std::unique_ptr<RowSource>(new PointGetSource(engine, op));
    case PhysicalKind::kSliceScan: return std::unique_ptr<RowSource>(new SliceScanSource(engine, op));
    case PhysicalKind::kIndexScan: return std::unique_ptr<RowSource>(new IndexScanSource(engine, op));
    case PhysicalKind::kFilter: return std::unique_ptr<RowSource>(new FilterSource(op, std::move(child)));
    case PhysicalKind::kProject: return std::unique_ptr<RowSource>(new ProjectSource(op, std::move(child)));
    case PhysicalKind::kSort: return std::unique_ptr<RowSource>(new SortSource(op, std::move(child), top_n));
    case PhysicalKind::kDistinct: return std::unique_ptr<RowSource>(new DistinctSource(op, std::move(child)));
    case PhysicalKind::kLimit: return std::unique_ptr<RowSource>(new LimitSource(op, std::move(child)));
    case PhysicalKind::kHashAggregate:
      return std::unique_ptr<RowSource>(new HashAggregateSource(op, std::move(child)));
    case PhysicalKind::kStreamAggregate:
      return std::unique_ptr<RowSource>(new StreamAggregateSource(op, std::move(child)));
    case PhysicalKind::kNestedLoopJoin:
    case PhysicalKind::kHashJoin: {
      SHALE_ASSIGN_OR_RETURN(auto right, Build(engine, *op.children[1]));
      return std::unique_ptr<RowSource>(
          new NestedLoopJoinSource(op, std::move(child), std::move(right)));
    }
    case PhysicalKind::kApply:
      return std::unique_ptr<RowSource>(new ApplySource(engine, op, std::move(child)));
    case PhysicalKind::kLookupJoin:
      // Batched in a cluster unless shale_pushdown is off or the right table
      // is read with locks (each row is locked and re-read here).
      if (engine->txn()->router() != nullptr && (t_statement == nullptr || t_statement->pushdown)) {
        if (auto lookup = BatchedLookupOf(op)) {
          const sierra::LogicalOperator* scan = op.lookup.get();
          if (scan->kind == sierra::LogicalKind::kFilter) scan = scan->children[0].get();
          if (!LockingReadOf(*scan->table)) {
            return std::unique_ptr<RowSource>(
                new BatchedLookupJoinSource(engine, op, std::move(child), std::move(*lookup)));
          }
        }
      }
      return std::unique_ptr<RowSource>(new LookupJoinSource(engine, op, std::move(child)));
    case PhysicalKind::kUnionAll:
    case PhysicalKind::kInsert:
    case PhysicalKind::kUpdate:
    case PhysicalKind::kDelete: break;
  }
  return Status::Internal("executor: operator cannot produce rows");
}

// "1" or "1-abc" as in MySQL's ER_DUP_ENTRY message.
std::string DupEntryText(const std::vector<Value>& key) {
  std::string out;
  for (size_t i = 0; i < key.size(); ++i) out += (i ? "-" : "") + key[i].ToText();
  return out;
}

// Converts every column of `row` to its column type and checks NOT NULL, as
// a write of row number `n` of the statement (for messages).
// Whether the statement runs in a strict sql_mode (errors for values that
// do not fit their column; else they are adjusted with warnings).
bool StrictMode() { return t_statement == nullptr || t_statement->strict_mode; }

Result<Value> CoerceForMode(const Value& v, const catalog::ColumnDef& col, uint64_t row) {
  if (StrictMode()) return CoerceToColumn(v, col.type, col.name);
  return CoerceToColumnNonStrict(v, col.type, col.name, row);
}

Status CoerceRow(const catalog::TableDef& table, uint64_t n, Row* row) {
  for (size_t c = 0; c < table.columns.size(); ++c) {
    const catalog::ColumnDef& col = table.columns[c];
    auto v = CoerceForMode((*row)[c], col, n);
    if (!v.ok()) {
      // Messages from CoerceToColumn say "at row 1"; name the real row.
      std::string msg = v.status().message();
      auto at = msg.rfind("at row 1");
      if (at != std::string::npos) msg = msg.substr(0, at) + fmt::format("at row {}", n);
      return Status::Sql(v.status().mysql_code(), msg);
    }
    if (v->is_null() && !col.nullable) {
      return SqlError(ErrorCode::kBadNull, "Column '{}' cannot be null", col.name);
    }
    (*row)[c] = std::move(v).value();
  }
  return Status::OK();
}

// The index of the column holding a table's hidden row id, or -1.
int HiddenRowIdColumn(const catalog::TableDef& table) {
  for (size_t c = 0; c < table.columns.size(); ++c) {
    if (table.columns[c].hidden) return static_cast<int>(c);
  }
  return -1;
}

bool HasNull(const std::vector<Value>& values) {
  return std::any_of(values.begin(), values.end(), [](const Value& v) { return v.is_null(); });
}

// The slice of `rep` that owns a key starting with `key_values`.
size_t SliceIndexOf(const catalog::RepresentationDef& rep, const std::vector<Value>& key_values) {
  const catalog::SliceDef& s = rep.SliceForHash(catalog::DistributionHash(rep, key_values));
  return static_cast<size_t>(&s - rep.slices.data());
}

// The writes of one statement to one table: every representation (0 is the
// primary, i + 1 secondary index i) gets a map of pending changes that
// overlays the stored slices, so checks see the statement's own earlier
// rows; Commit() writes one batch per slice.
//
// While an online index build lets writes go on (TableDef::
// ddl_allows_writes, src/exec/online_ddl.h), the pending indexes follow the
// published ones (1 + indexes.size() + i is pending index i): every change
// writes their entries too, but no UNIQUE check or lock reads them.
class TableWriter {
 public:
  TableWriter(Engine* engine, const catalog::TableDef& table)
      : engine_(engine), table_(table), published_(1 + table.indexes.size()),
        changes_(published_ + (table.ddl_allows_writes ? table.pending_indexes.size() : 0)),
        slices_(changes_.size()) {
    for (size_t r = 0; r < slices_.size(); ++r) slices_[r].resize(Rep(r).slices.size());
  }

  const catalog::RepresentationDef& Rep(size_t r) const {
    if (r == 0) return table_.primary;
    return r < published_ ? table_.indexes[r - 1] : table_.pending_indexes[r - published_];
  }

  // Whether primary key `key` (in slice `slice_index`) holds a row.
  Result<bool> RowExists(const std::string& key, size_t slice_index) {
    auto it = changes_[0].find(key);
    if (it != changes_[0].end()) return it->second.value.has_value();
    SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, SliceAt(0, slice_index));
    std::string existing;
    Status st = ReadRow(slice, key, /*latest=*/true, &existing);
    if (st.ok()) return true;
    if (st.IsNotFound()) return false;
    return st;
  }

  // The row stored under primary key `pk`, as the statement's writes so far
  // leave it, or nullopt.
  Result<std::optional<Row>> GetRow(const std::vector<Value>& pk) {
    std::string key = catalog::EncodeKey(pk);
    std::string value;
    auto it = changes_[0].find(key);
    if (it != changes_[0].end()) {
      if (!it->second.value) return std::optional<Row>();
      value = *it->second.value;
    } else {
      size_t index = SliceIndexOf(table_.primary, pk);
      SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, SliceAt(0, index));
      Status st = ReadRow(slice, key, /*latest=*/true, &value);
      if (st.IsNotFound()) return std::optional<Row>();
      SHALE_RETURN_IF_ERROR(st);
    }
    Row row;
    Status decoded = DecodeRow(value, &row);
    if (!decoded.ok()) return RowCorrupt(table_, table_.primary.slices[0], decoded);
    return std::optional<Row>(std::move(row));
  }

  // A UNIQUE index (its position r in 1..) with an entry, other than those
  // the statement deleted, holding the index key values of `row` (none
  // NULL), and that entry's primary-key values; nullopt if none.
  struct Conflict {
    size_t rep;
    std::vector<Value> pk;
  };
  Result<std::optional<Conflict>> UniqueConflict(const Row& row) {
    for (size_t r = 1; r < published_; ++r) {
      const catalog::RepresentationDef& rep = Rep(r);
      if (!rep.unique) continue;
      std::vector<Value> values = catalog::RepresentationKeyValues(table_, rep, row);
      if (HasNull(values)) continue;
      std::string prefix = catalog::EncodeKey(values);
      std::string end = prefix + '\xff';  // no key component starts with 0xFF
      auto& pending = changes_[r];
      std::optional<std::string> found;  // the entry's value: encoded pk
      for (auto it = pending.lower_bound(prefix); !found && it != pending.end() && it->first < end; ++it) {
        if (it->second.value) found = *it->second.value;
      }
      if (!found) {
        SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, SliceAt(r, SliceIndexOf(rep, values)));
        storage::KeyRange range;
        range.has_start = true;
        range.start = prefix;
        range.has_end = true;
        range.end = end;
        range.end_inclusive = false;
        auto it = ReadRange(slice, range, /*latest=*/true);
        for (; it->Valid(); it->Next()) {
          auto c = pending.find(std::string(it->key()));
          if (c == pending.end() || c->second.value) {
            found = std::string(it->value());
            break;
          }
        }
        SHALE_RETURN_IF_ERROR(it->status());
      }
      if (found) {
        Conflict conflict{r, {}};
        Status decoded = DecodeRow(*found, &conflict.pk);
        if (!decoded.ok()) return RowCorrupt(table_, rep.slices[0], decoded);
        return std::optional<Conflict>(std::move(conflict));
      }
    }
    return std::optional<Conflict>();
  }

  // ER_DUP_ENTRY for `row`'s key in representation r.
  Status DupEntry(size_t r, const Row& row) const {
    const catalog::RepresentationDef& rep = Rep(r);
    return SqlError(ErrorCode::kDupEntry, "Duplicate entry '{}' for key '{}.{}'",
                    DupEntryText(catalog::RepresentationKeyValues(rep, row)), table_.name, rep.name);
  }

  // ER_DUP_ENTRY if a UNIQUE index already has an entry with the index key
  // values of `row` (none NULL).
  Status CheckUnique(const Row& row) {
    SHALE_ASSIGN_OR_RETURN(auto conflict, UniqueConflict(row));
    if (conflict) return DupEntry(conflict->rep, row);
    return Status::OK();
  }

  // Adds or removes `row` (a full, converted table row) in every
  // representation.
  void Put(const Row& row) { Change(row, true); }
  void Delete(const Row& row) { Change(row, false); }

  // Exclusive locks on `row`'s primary key and on its values in every
  // UNIQUE index (none NULL), held to the end of the transaction: taken
  // before a row is checked and written, so concurrent writers of one key
  // (or one unique value) go one after the other.
  Status LockRowKeys(const Row& row) {
    if (!CurrentTxn()) return Status::OK();
    // Each lock lives at the ranking replica's node of the slice it names.
    std::vector<Value> pk = catalog::PrimaryKeyValues(table_, row);
    SHALE_ASSIGN_OR_RETURN(txn::SliceHandle pk_slice, SliceAt(0, SliceIndexOf(table_.primary, pk)));
    SHALE_RETURN_IF_ERROR(AcquireLock(LockName('R', table_.id, catalog::EncodeKey(pk)), txn::LockMode::kExclusive,
                                      &pk_slice));
    for (size_t r = 1; r < published_; ++r) {
      const catalog::RepresentationDef& rep = Rep(r);
      if (!rep.unique || rep.slices.empty()) continue;
      std::vector<Value> values = catalog::RepresentationKeyValues(rep, row);
      if (HasNull(values)) continue;
      SHALE_ASSIGN_OR_RETURN(txn::SliceHandle lock_slice, SliceAt(r, 0));
      SHALE_RETURN_IF_ERROR(AcquireLock(LockName('U', rep.slices[0].id, catalog::EncodeKey(values)),
                                        txn::LockMode::kExclusive, &lock_slice));
    }
    return Status::OK();
  }

  Status Commit() {
    if (txn::Transaction* t = CurrentTxn()) {
      // Into the transaction's write set; it reaches the slices at COMMIT.
      bool any = false;
      for (size_t r = 0; r < changes_.size(); ++r) {
        for (auto& [key, change] : changes_[r]) {
          SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, SliceAt(r, change.slice_index));
          if (change.value) {
            t->Put(slice, key, std::move(*change.value));
          } else {
            t->Delete(slice, key);
          }
          any = true;
        }
      }
      if (any && t_statement->written_tables) {
        auto current = engine_->catalog()->GetTable(table_.db, table_.name);
        if (current.ok() && (*current)->id == table_.id) {
          // The rows were routed with table_ (its slice map): if the
          // definition changed while the statement ran (the rebalancer
          // added or promoted a replica), COMMIT must not take the new
          // one for the one written with.
          if (current->get() != &table_) {
            if (catalog::OnlyPlacementDiffers(**current, table_)) {
              return SqlError(ErrorCode::kUnknownCom,
                              "Cluster metadata changed while the statement ran (the slice map of {}.{} changed); "
                              "the statement was not run, retry it",
                              table_.db, table_.name);
            }
            return SqlError(ErrorCode::kTableDefChanged, "Table definition has changed, please retry transaction");
          }
          t_statement->written_tables->emplace(table_.id, *current);
        }
      }
      return Status::OK();
    }
    // Every representation's batches (primary key and indexes) go to the
    // store as one atomic write: one WAL record for the whole statement.
    std::vector<std::vector<storage::WriteBatch>> batches(changes_.size());
    std::vector<std::pair<storage::SliceId, const storage::WriteBatch*>> writes;
    txn::Placement placement;
    for (size_t r = 0; r < changes_.size(); ++r) {
      batches[r].resize(Rep(r).slices.size());
      for (auto& [key, change] : changes_[r]) {
        if (change.value) {
          batches[r][change.slice_index].Put(key, std::move(*change.value));
        } else {
          batches[r][change.slice_index].Delete(key);
        }
      }
    }
    for (size_t r = 0; r < batches.size(); ++r) {
      for (size_t i = 0; i < batches[r].size(); ++i) {
        if (batches[r][i].empty()) continue;
        SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, SliceAt(r, i));
        writes.emplace_back(slice.id, &batches[r][i]);
        if (slice.replicas) placement[slice.id] = *slice.replicas;
      }
    }
    if (writes.empty()) return Status::OK();
    return engine_->txn()->CommitBatches(writes, &placement);
  }

 private:
  struct PendingChange {
    size_t slice_index;
    std::optional<std::string> value;  // nullopt: delete
  };

  Result<txn::SliceHandle> SliceAt(size_t r, size_t index) {
    std::optional<txn::SliceHandle>& s = slices_[r][index];
    if (!s) {
      SHALE_ASSIGN_OR_RETURN(s, LocalSlice(engine_, table_, Rep(r).slices[index]));
    }
    return *s;
  }

  void Change(const Row& row, bool put) {
    std::vector<Value> pk = catalog::PrimaryKeyValues(table_, row);
    std::optional<std::string> value;
    if (put) {
      value.emplace();
      EncodeRow(row, &*value);
    }
    changes_[0][catalog::EncodeKey(pk)] = PendingChange{SliceIndexOf(table_.primary, pk), value};
    std::string pk_row;
    EncodeRow(pk, &pk_row);
    for (size_t r = 1; r < changes_.size(); ++r) {
      std::vector<Value> values = catalog::RepresentationKeyValues(table_, Rep(r), row);
      changes_[r][catalog::IndexEntryKey(values, pk)] =
          PendingChange{SliceIndexOf(Rep(r), values), put ? std::optional<std::string>(pk_row) : std::nullopt};
    }
  }

  Engine* engine_;
  const catalog::TableDef& table_;
  const size_t published_;  // the primary and the published indexes
  // std::map keeps each batch in key order.
  std::vector<std::map<std::string, PendingChange>> changes_;
  std::vector<std::vector<std::optional<txn::SliceHandle>>> slices_;
};

// A write runs against the definition it was planned with: if an index was
// added or dropped since, it would miss or write stale index entries.
// ON UPDATE CURRENT_TIMESTAMP: a changed row's columns with the attribute
// that the statement does not assign take the statement's time.
void ApplyOnUpdateNow(const catalog::TableDef& table, const std::vector<int>& assigned, Row* row) {
  for (size_t col = 0; col < table.columns.size(); ++col) {
    const catalog::ColumnDef& def = table.columns[col];
    if (!def.on_update_now) continue;
    if (std::find(assigned.begin(), assigned.end(), static_cast<int>(col)) != assigned.end()) continue;
    const TemporalContext ctx = CurrentTemporalContext();
    auto now = CoerceToColumn(MakeTemporal(TypeId::kDatetime, UtcToLocal(ctx.now_micros, ctx), 6), def.type,
                              def.name);
    if (now.ok()) (*row)[col] = std::move(now).value();
  }
}

Status CheckTableUnchanged(Engine* engine, const PhysicalOperator& op) {
  auto current = engine->catalog()->GetTable(op.table->db, op.table->name);
  if (!current.ok() || *current != op.table) {
    return SqlError(ErrorCode::kTableDefChanged, "Table definition has changed, please retry transaction");
  }
  return CheckNotFenced(**current);  // an online DDL is changing the table
}

Result<StatementResult> ExecuteInsert(Engine* engine, const PhysicalOperator& op) {
  const catalog::TableDef& table = *op.table;
  SHALE_ASSIGN_OR_RETURN(auto source, Build(engine, *op.children[0]));

  // 1. Convert and check every row.
  std::vector<Row> rows;
  Row row;
  while (true) {
    SHALE_ASSIGN_OR_RETURN(bool more, source->Next(&row));
    if (!more) break;
    rows.push_back(std::move(row));
    row = Row();
  }
  // A table without a primary key: every row gets a fresh hidden row id.
  int row_id_col = HiddenRowIdColumn(table);
  if (row_id_col >= 0 && !rows.empty()) {
    SHALE_ASSIGN_OR_RETURN(int64_t first, engine->catalog()->AllocateRowIds(
                                              table.id, static_cast<int64_t>(rows.size())));
    for (size_t i = 0; i < rows.size(); ++i) {
      rows[i][row_id_col] = Value::Int(first + static_cast<int64_t>(i));
    }
  }
  SHALE_ASSIGN_OR_RETURN(AutoIncrementRows auto_increment,
                         AutoIncrementRows::Assign(engine->catalog(), table, &rows));
  for (size_t i = 0; i < rows.size(); ++i) SHALE_RETURN_IF_ERROR(CoerceRow(table, i + 1, &rows[i]));

  // 2. Check keys and write. In a transaction each row's keys are locked
  //    first (TableWriter::LockRowKeys), so no concurrent writer can slip a
  //    duplicate between the check and the commit; without one (DDL
  //    helpers) the table's write lock serializes writers.
  std::unique_lock<std::mutex> lock;
  if (!CurrentTxn()) lock = std::unique_lock<std::mutex>(engine->TableWriteMutex(table.id));
  SHALE_RETURN_IF_ERROR(CheckTableUnchanged(engine, op));
  TableWriter writer(engine, table);
  using sierra::InsertConflict;
  uint64_t affected = 0;
  uint64_t duplicates = 0;  // for the OK info: StatementResult::duplicates
  uint64_t unchanged = 0;   // ON DUPLICATE KEY UPDATE rows left as they were
  // The row holding a key of `r` (primary first, then the UNIQUE indexes in
  // order) and the representation it conflicts in.
  auto find_conflict = [&](const Row& r, size_t* rep) -> Result<std::optional<Row>> {
    *rep = 0;
    SHALE_ASSIGN_OR_RETURN(std::optional<Row> existing, writer.GetRow(catalog::PrimaryKeyValues(table, r)));
    if (existing) return existing;
    SHALE_ASSIGN_OR_RETURN(auto conflict, writer.UniqueConflict(r));
    if (!conflict) return std::optional<Row>();
    *rep = conflict->rep;
    SHALE_ASSIGN_OR_RETURN(existing, writer.GetRow(conflict->pk));
    if (!existing) return Status::Corruption(fmt::format("index {} of {}.{} names a missing row",
                                                         table.indexes[*rep - 1].name, table.db, table.name));
    return existing;
  };
  // The conflicting row, locked and re-read after the lock (it may have
  // changed meanwhile).
  auto lock_conflict = [&](const Row& r, size_t* rep) -> Result<std::optional<Row>> {
    SHALE_ASSIGN_OR_RETURN(std::optional<Row> existing, find_conflict(r, rep));
    for (int attempt = 0; existing && CurrentTxn() && attempt < 100; ++attempt) {
      SHALE_RETURN_IF_ERROR(writer.LockRowKeys(*existing));
      SHALE_ASSIGN_OR_RETURN(std::optional<Row> again, find_conflict(r, rep));
      bool same = again && catalog::PrimaryKeyValues(table, *again) == catalog::PrimaryKeyValues(table, *existing);
      existing = std::move(again);
      if (same || !existing) break;
    }
    return existing;
  };
  for (size_t row_index = 0; row_index < rows.size(); ++row_index) {
    const Row& r = rows[row_index];
    size_t rep = 0;
    SHALE_RETURN_IF_ERROR(writer.LockRowKeys(r));
    std::optional<Row> existing;
    if (op.insert_conflict == InsertConflict::kError || op.insert_conflict == InsertConflict::kIgnore) {
      SHALE_ASSIGN_OR_RETURN(existing, find_conflict(r, &rep));
    } else {
      SHALE_ASSIGN_OR_RETURN(existing, lock_conflict(r, &rep));
    }
    if (!existing) {
      writer.Put(r);
      auto_increment.Inserted(row_index, r);
      ++affected;
      continue;
    }
    switch (op.insert_conflict) {
      case InsertConflict::kError:
        if (rep == 0) {
          return SqlError(ErrorCode::kDupEntry, "Duplicate entry '{}' for key '{}.PRIMARY'",
                          DupEntryText(catalog::RepresentationKeyValues(table.primary, r)), table.name);
        }
        return writer.DupEntry(rep, r);
      case InsertConflict::kIgnore: {
        // MySQL: a 1062 warning; the row is skipped.
        Status dup = rep == 0 ? SqlError(ErrorCode::kDupEntry, "Duplicate entry '{}' for key '{}.PRIMARY'",
                                         DupEntryText(catalog::RepresentationKeyValues(table.primary, r)),
                                         table.name)
                              : writer.DupEntry(rep, r);
        PushWarning("Warning", dup.mysql_code(), dup.message());
        ++duplicates;
        break;
      }
      case InsertConflict::kReplace:
        // Every row holding one of the new row's keys goes, then it is inserted.
        while (existing) {
          writer.Delete(*existing);
          ++affected;
          ++duplicates;
          SHALE_ASSIGN_OR_RETURN(existing, lock_conflict(r, &rep));
        }
        writer.Put(r);
        auto_increment.Inserted(row_index, r);
        ++affected;
        break;
      case InsertConflict::kUpdate: {
        Row updated = *existing;
        for (size_t i = 0; i < op.exprs.size(); ++i) {
          Row input = updated;
          input.insert(input.end(), r.begin(), r.end());
          SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*op.exprs[i], input));
          const catalog::ColumnDef& def = table.columns[op.update_columns[i]];
          if (v.is_null() && !def.nullable) {
            return SqlError(ErrorCode::kBadNull, "Column '{}' cannot be null", def.name);
          }
          SHALE_ASSIGN_OR_RETURN(updated[op.update_columns[i]], CoerceToColumn(v, def.type, def.name));
        }
        if (updated == *existing) {  // MySQL counts 0 for an unchanged row (1 with CLIENT_FOUND_ROWS)
          ++unchanged;
          break;
        }
        ApplyOnUpdateNow(table, op.update_columns, &updated);
        SHALE_RETURN_IF_ERROR(writer.LockRowKeys(updated));
        writer.Delete(*existing);
        std::vector<Value> new_pk = catalog::PrimaryKeyValues(table, updated);
        if (new_pk != catalog::PrimaryKeyValues(table, *existing)) {
          SHALE_ASSIGN_OR_RETURN(std::optional<Row> taken, writer.GetRow(new_pk));
          if (taken) {
            return SqlError(ErrorCode::kDupEntry, "Duplicate entry '{}' for key '{}.PRIMARY'",
                            DupEntryText(catalog::RepresentationKeyValues(table.primary, updated)), table.name);
          }
        }
        SHALE_RETURN_IF_ERROR(writer.CheckUnique(updated));
        writer.Put(updated);
        auto_increment.Updated(updated);
        affected += 2;
        ++duplicates;
        break;
      }
    }
  }
  SHALE_RETURN_IF_ERROR(writer.Commit());
  StatementResult result;
  result.affected_rows = affected;
  result.records = rows.size();
  result.duplicates = duplicates;
  if (op.insert_conflict == InsertConflict::kUpdate) result.found_rows = affected + unchanged;
  result.last_insert_id = auto_increment.insert_id();
  if (auto_increment.generated()) result.generated_insert_id = *auto_increment.generated();
  return result;
}

// UPDATE and DELETE. The whole statement runs under the table's write lock:
// read the target rows, compute every change and check every new key, then
// write one batch per slice. Rows are processed in the child's order and
// keys are checked as if each row were written before the next is read, so
// `SET id = id + 1` fails on a duplicate exactly where MySQL's row-by-row
// execution does; but nothing is written unless every row passes.
// Multi-table UPDATE and DELETE: the child's rows are the target table's
// columns followed by other values (the assignments' values). A target row
// met several times (it joined several rows) is changed once, by its first
// match, as in MySQL; a row with NULL key values (the missing side of a
// LEFT JOIN) is no row at all.
std::vector<Row> FirstMatchPerRow(const catalog::TableDef& table, std::vector<Row> rows) {
  std::unordered_set<std::string> seen;
  std::vector<Row> out;
  for (Row& r : rows) {
    std::vector<Value> pk = catalog::PrimaryKeyValues(table, r);
    if (std::any_of(pk.begin(), pk.end(), [](const Value& v) { return v.is_null(); })) continue;
    if (seen.insert(catalog::EncodeKey(pk)).second) out.push_back(std::move(r));
  }
  return out;
}

Result<StatementResult> ApplyModify(Engine* engine, const PhysicalOperator& op, std::vector<Row> targets,
                                    uint64_t* matched_rows = nullptr);
Result<StatementResult> ExecuteStackedModify(Engine* engine, const PhysicalOperator& op);

// Reads every row `plan` yields as a locking read (InnoDB): inside a
// transaction each row of table `lock_table_id` (0: of every table read) is
// locked exclusively and read at its newest committed version, so
// concurrent `SET n = n + 1` lose no increment.
Status ReadRowsToWrite(Engine* engine, const PhysicalOperator& plan, uint64_t lock_table_id, std::vector<Row>* out) {
  std::optional<txn::LockMode> saved_mode;
  uint64_t saved_table = 0;
  if (CurrentTxn()) {
    saved_mode = t_statement->locking_read;
    saved_table = t_statement->lock_table_id;
    t_statement->locking_read = txn::LockMode::kExclusive;
    t_statement->lock_table_id = lock_table_id;
  }
  auto drain = [&]() -> Status {
    SHALE_ASSIGN_OR_RETURN(auto source, Build(engine, plan));
    Row row;
    while (true) {
      SHALE_ASSIGN_OR_RETURN(bool more, source->Next(&row));
      if (!more) break;
      out->push_back(std::move(row));
      row = Row();
    }
    return Status::OK();
  };
  Status drained = drain();
  if (CurrentTxn()) {
    t_statement->locking_read = saved_mode;
    t_statement->lock_table_id = saved_table;
  }
  return drained;
}

Result<StatementResult> ExecuteModify(Engine* engine, const PhysicalOperator& op) {
  if (op.stacked_target) return ExecuteStackedModify(engine, op);
  const catalog::TableDef& table = *op.table;
  std::unique_lock<std::mutex> lock;
  if (!CurrentTxn()) lock = std::unique_lock<std::mutex>(engine->TableWriteMutex(table.id));
  SHALE_RETURN_IF_ERROR(CheckTableUnchanged(engine, op));

  std::vector<Row> targets;
  SHALE_RETURN_IF_ERROR(ReadRowsToWrite(engine, *op.children[0], table.id, &targets));
  return ApplyModify(engine, op, std::move(targets));
}

// The changes of one UPDATE or DELETE to its table, from the target rows
// read (REQUIRES: the caller holds what ExecuteModify takes: the table's
// write lock without a transaction, the rows' locks with one).
Result<StatementResult> ApplyModify(Engine* engine, const PhysicalOperator& op, std::vector<Row> targets,
                                    uint64_t* matched_rows) {
  const catalog::TableDef& table = *op.table;
  const bool is_update = op.kind == PhysicalKind::kUpdate;
  const size_t width = table.columns.size();
  const bool multi_table = !targets.empty() && targets[0].size() > width;
  if (multi_table) targets = FirstMatchPerRow(table, std::move(targets));

  TableWriter writer(engine, table);
  uint64_t matched = 0;
  uint64_t changed = 0;
  for (Row& old_row : targets) {
    ++matched;
    if (!is_update) {
      if (multi_table) old_row.resize(width);
      SHALE_RETURN_IF_ERROR(writer.LockRowKeys(old_row));
      writer.Delete(old_row);
      ++changed;
      continue;
    }
    Row new_row = old_row;
    for (size_t i = 0; i < op.exprs.size(); ++i) {
      SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*op.exprs[i], new_row));
      const int col = op.update_columns[i];
      const catalog::ColumnDef& def = table.columns[col];
      if (v.is_null() && !def.nullable) {
        return SqlError(ErrorCode::kBadNull, "Column '{}' cannot be null", def.name);
      }
      // Converted at once, so later assignments see the stored value.
      auto coerced = CoerceForMode(v, def, matched);
      if (!coerced.ok()) {
        std::string msg = coerced.status().message();
        auto at = msg.rfind("at row 1");
        if (at != std::string::npos) msg = msg.substr(0, at) + fmt::format("at row {}", matched);
        return Status::Sql(coerced.status().mysql_code(), msg);
      }
      new_row[col] = std::move(coerced).value();
    }
    if (multi_table) {
      new_row.resize(width);
      old_row.resize(width);
    }
    if (new_row == old_row) continue;  // matched, not changed
    ApplyOnUpdateNow(table, op.update_columns, &new_row);
    ++changed;
    std::vector<Value> old_pk = catalog::PrimaryKeyValues(table, old_row);
    std::vector<Value> new_pk = catalog::PrimaryKeyValues(table, new_row);
    // The old row's entries go first, so the new row may reuse its keys.
    SHALE_RETURN_IF_ERROR(writer.LockRowKeys(old_row));
    SHALE_RETURN_IF_ERROR(writer.LockRowKeys(new_row));
    writer.Delete(old_row);
    if (new_pk != old_pk) {
      SHALE_ASSIGN_OR_RETURN(bool taken, writer.RowExists(catalog::EncodeKey(new_pk),
                                                          SliceIndexOf(table.primary, new_pk)));
      if (taken) {
        return SqlError(ErrorCode::kDupEntry, "Duplicate entry '{}' for key '{}.PRIMARY'",
                        DupEntryText(catalog::RepresentationKeyValues(table.primary, new_row)), table.name);
      }
    }
    SHALE_RETURN_IF_ERROR(writer.CheckUnique(new_row));
    writer.Put(new_row);
  }
  SHALE_RETURN_IF_ERROR(writer.Commit());
  StatementResult result;
  result.affected_rows = changed;
  if (is_update) {
    result.info = fmt::format("Rows matched: {}  Changed: {}  Warnings: 0", matched, changed);
    result.found_rows = matched;
  }
  if (matched_rows != nullptr) *matched_rows = matched;
  return result;
}

// A multi-table UPDATE or DELETE writing several tables (stacked target
// operators, sierra/logical.h): the joined rows are read once, as a locking
// read, then each table is changed from its slice of them, all in the
// statement's transaction (so all or none).
Result<StatementResult> ExecuteStackedModify(Engine* engine, const PhysicalOperator& op) {
  std::vector<const PhysicalOperator*> ops;  // the first target first
  const PhysicalOperator* rows_plan = &op;
  while (rows_plan->stacked_target) {
    ops.insert(ops.begin(), rows_plan);
    rows_plan = rows_plan->children[0].get();
  }
  std::vector<std::unique_lock<std::mutex>> locks;
  if (!CurrentTxn()) {
    std::vector<uint64_t> ids;
    for (const PhysicalOperator* o : ops) ids.push_back(o->table->id);
    std::sort(ids.begin(), ids.end());
    for (uint64_t id : ids) locks.emplace_back(engine->TableWriteMutex(id));
  }
  for (const PhysicalOperator* o : ops) SHALE_RETURN_IF_ERROR(CheckTableUnchanged(engine, *o));
  std::vector<Row> rows;
  // Lock table 0: the rows of every table joined.
  SHALE_RETURN_IF_ERROR(ReadRowsToWrite(engine, *rows_plan, 0, &rows));
  uint64_t matched = 0;
  uint64_t changed = 0;
  for (const PhysicalOperator* o : ops) {
    std::vector<Row> targets;
    targets.reserve(rows.size());
    for (const Row& r : rows) {
      const auto begin = r.begin() + static_cast<std::ptrdiff_t>(o->offset);
      targets.emplace_back(begin, begin + static_cast<std::ptrdiff_t>(o->limit));
    }
    uint64_t m = 0;
    SHALE_ASSIGN_OR_RETURN(StatementResult r, ApplyModify(engine, *o, std::move(targets), &m));
    matched += m;
    changed += r.affected_rows;
  }
  StatementResult result;
  result.affected_rows = changed;
  if (op.kind == PhysicalKind::kUpdate) {
    result.info = fmt::format("Rows matched: {}  Changed: {}  Warnings: 0", matched, changed);
    result.found_rows = matched;
  }
  return result;
}

}  // namespace

StatementScope::StatementScope(StatementContext* context) : previous_(t_statement) { t_statement = context; }

StatementScope::~StatementScope() { t_statement = previous_; }

InterruptScope::InterruptScope(const std::atomic<bool>* flag) : previous_(t_interrupt) {
  t_interrupt = flag;
}

InterruptScope::~InterruptScope() { t_interrupt = previous_; }

Result<StatementResult> ExecutePlan(Engine* engine, const PhysicalOperator& plan) {
  profile::ModuleScope profile_scope(profile::Module::kExecute);
  // Strict mode with ERROR_FOR_DIVISION_BY_ZERO: INSERT (not IGNORE),
  // REPLACE and UPDATE fail on a division by zero; DELETE and SELECT warn.
  const bool division_error = t_statement != nullptr && t_statement->division_by_zero_error;
  if (plan.kind == PhysicalKind::kInsert) {
    sierra::ScopedDivisionByZeroError scope(division_error && plan.insert_conflict != sierra::InsertConflict::kIgnore);
    return ExecuteInsert(engine, plan);
  }
  if (plan.kind == PhysicalKind::kUpdate || plan.kind == PhysicalKind::kDelete) {
    sierra::ScopedDivisionByZeroError scope(division_error && plan.kind == PhysicalKind::kUpdate);
    return ExecuteModify(engine, plan);
  }
  std::unique_ptr<RowSource> source;
  {
    LookupColumnsScope lookup_columns(plan);
    SHALE_ASSIGN_OR_RETURN(source, Build(engine, plan));
  }
  StatementResult result;
  result.is_result_set = true;
  result.columns = plan.columns;
  Row row;
  while (true) {
    SHALE_ASSIGN_OR_RETURN(bool more, source->Next(&row));
    if (!more) break;
    result.rows.push_back(std::move(row));
    row = Row();
  }
  return result;
}

}  // namespace shale::exec

namespace shale::exec {

namespace {

// The entries of secondary index `index` (slice by slice: entry key ->
// encoded primary key) for `rows`, or else for the rows of `table`'s
// primary representation: their newest committed versions, or those
// visible at `reader`'s snapshot when it is given. ER_DUP_ENTRY (1062) if
// `index` is UNIQUE and two rows have equal key values without NULLs.
Result<std::vector<std::map<std::string, std::string>>> IndexEntries(Engine* engine, const catalog::TableDef& table,
                                                                     const catalog::RepresentationDef& index,
                                                                     const std::vector<Row>* rows,
                                                                     txn::Transaction* reader) {
  std::vector<std::map<std::string, std::string>> entries(index.slices.size());
  std::set<std::string> unique_seen;  // encoded key values
  auto add = [&](const Row& row) -> Status {
    std::vector<Value> values = catalog::RepresentationKeyValues(table, index, row);
    std::vector<Value> pk = catalog::PrimaryKeyValues(table, row);
    if (index.unique && !HasNull(values)) {
      if (!unique_seen.insert(catalog::EncodeKey(values)).second) {
        return SqlError(ErrorCode::kDupEntry, "Duplicate entry '{}' for key '{}.{}'",
                        DupEntryText(catalog::RepresentationKeyValues(index, row)), table.name, index.name);
      }
    }
    std::string pk_row;
    EncodeRow(pk, &pk_row);
    entries[SliceIndexOf(index, values)][catalog::IndexEntryKey(values, pk)] = std::move(pk_row);
    return Status::OK();
  };
  if (rows) {
    for (const Row& row : *rows) SHALE_RETURN_IF_ERROR(add(row));
    return entries;
  }
  for (const catalog::SliceDef& def : table.primary.slices) {
    SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, LocalSlice(engine, table, def));
    auto it = reader ? reader->NewIterator(slice, storage::KeyRange::All(), /*latest=*/false)
                     : txn::ScanLatest(slice, storage::KeyRange::All());
    for (; it->Valid(); it->Next()) {
      Row row;
      Status decoded = DecodeRow(it->value(), &row);
      if (!decoded.ok()) return RowCorrupt(table, def, decoded);
      SHALE_RETURN_IF_ERROR(add(row));
    }
    SHALE_RETURN_IF_ERROR(it->status());
  }
  return entries;
}

// Entries per Apply request of a backfill (keeps gRPC messages small).
constexpr size_t kBackfillBatchEntries = 4096;

}  // namespace

Status BuildIndex(Engine* engine, const catalog::TableDef& table,
                  const catalog::RepresentationDef& index, const std::vector<Row>* rows) {
  SHALE_ASSIGN_OR_RETURN(auto entries, IndexEntries(engine, table, index, rows, nullptr));
  // All of the index's slices in one atomic write.
  std::vector<storage::WriteBatch> batches(entries.size());
  std::vector<std::pair<storage::SliceId, const storage::WriteBatch*>> writes;
  txn::Placement placement;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].empty()) continue;
    for (auto& [key, value] : entries[i]) batches[i].Put(key, std::move(value));
    SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, LocalSlice(engine, table, index.slices[i]));
    writes.emplace_back(slice.id, &batches[i]);
    if (slice.replicas) placement[slice.id] = *slice.replicas;
  }
  if (writes.empty()) return Status::OK();
  return engine->txn()->CommitBatches(writes, &placement);
}

Status BackfillIndex(Engine* engine, const catalog::TableDef& table, const catalog::RepresentationDef& index,
                     txn::Transaction* reader) {
  SHALE_ASSIGN_OR_RETURN(const uint64_t ts, reader->Snapshot());
  SHALE_ASSIGN_OR_RETURN(auto entries, IndexEntries(engine, table, index, nullptr, reader));
  txn::DataRouter* router = engine->txn()->router();
  const std::string& self = engine->options().node_name;
  // Per replica node, in batches; every version at the snapshot timestamp.
  for (size_t i = 0; i < entries.size(); ++i) {
    const catalog::SliceDef& slice = index.slices[i];
    auto it = entries[i].begin();
    while (it != entries[i].end()) {
      txn::WriteSet batch;
      txn::SliceWrites& keys = batch[slice.id];
      for (; it != entries[i].end() && keys.size() < kBackfillBatchEntries; ++it) keys.emplace(it->first, it->second);
      for (const std::string& node : slice.WriteReplicas()) {
        Status st = node == self || router == nullptr ? engine->txn()->ApplyAt(ts, batch)
                                                      : router->Apply(node, nullptr, ts, batch, {});
        SHALE_RETURN_IF_ERROR(st);
      }
    }
  }
  return Status::OK();
}

Status CheckUniqueEntries(Engine* engine, const catalog::TableDef& table, const catalog::RepresentationDef& index) {
  if (!index.unique) return Status::OK();
  for (const catalog::SliceDef& def : index.slices) {
    SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, LocalSlice(engine, table, def));
    auto it = txn::ScanLatest(slice, storage::KeyRange::All());
    std::string previous;  // the encoded key values of the last entry without NULLs
    for (; it->Valid(); it->Next()) {
      std::string_view rest = it->key();
      bool has_null = false;
      for (int column : index.key_columns) {
        Value v;
        Status decoded = DecodeKey(&rest, table.columns[column].type, &v);
        if (!decoded.ok()) return RowCorrupt(table, def, decoded);
        has_null = has_null || v.is_null();
      }
      if (has_null) continue;
      std::string values(it->key().substr(0, it->key().size() - rest.size()));
      if (values == previous) {
        // Two rows hold these values: name them as the row of this entry.
        Row pk;
        Status decoded = DecodeRow(it->value(), &pk);
        if (!decoded.ok()) return RowCorrupt(table, def, decoded);
        std::string text = "?";
        SHALE_ASSIGN_OR_RETURN(txn::SliceHandle pk_slice,
                               LocalSlice(engine, table, table.primary.slices[SliceIndexOf(table.primary, pk)]));
        std::string row_value;
        Row row;
        if (txn::ReadLatest(pk_slice, catalog::EncodeKey(pk), &row_value).ok() && DecodeRow(row_value, &row).ok()) {
          text = DupEntryText(catalog::RepresentationKeyValues(index, row));
        }
        return SqlError(ErrorCode::kDupEntry, "Duplicate entry '{}' for key '{}.{}'", text, table.name, index.name);
      }
      previous = std::move(values);
    }
    SHALE_RETURN_IF_ERROR(it->status());
  }
  return Status::OK();
}

}  // namespace shale::exec

namespace shale::exec {
namespace {

// Upper bound on the rows `op` produces, or nullopt.
std::optional<uint64_t> EstimateRows(Engine* engine, const PhysicalOperator& op) {
  auto child = [&](size_t i) { return EstimateRows(engine, *op.children[i]); };
  auto slice_rows = [&]() -> std::optional<uint64_t> {
    uint64_t rows = 0;
    for (const catalog::SliceDef& def : op.slices) {
      auto slice = engine->slices()->GetSlice(def.id);
      if (!slice.ok()) return std::nullopt;
      rows += (*slice)->GetStats().rows;
    }
    return rows;
  };
  switch (op.kind) {
    case PhysicalKind::kValues: return op.rows.size();
    case PhysicalKind::kPointGet: return 1;
    case PhysicalKind::kSliceScan:
    case PhysicalKind::kIndexScan: return slice_rows();
    case PhysicalKind::kFilter:
    case PhysicalKind::kProject:
    case PhysicalKind::kSort:
    case PhysicalKind::kDistinct:
    case PhysicalKind::kHashAggregate:
    case PhysicalKind::kStreamAggregate:
    case PhysicalKind::kApply: {
      auto in = child(0);
      if (op.kind == PhysicalKind::kHashAggregate && op.group_by.empty()) return 1;
      return in;
    }
    case PhysicalKind::kLimit: {
      auto in = child(0);
      return in ? std::min(*in, op.limit) : op.limit;
    }
    case PhysicalKind::kLookupJoin: return std::nullopt;  // per left row, unknown
    case PhysicalKind::kNestedLoopJoin:
    case PhysicalKind::kHashJoin: {
      auto l = child(0), r = child(1);
      if (!l || !r) return std::nullopt;
      uint64_t product = *r == 0 ? 0 : (*l > UINT64_MAX / *r ? UINT64_MAX : *l * *r);
      if (op.join_kind == sierra::JoinKind::kLeft) product = std::max(product, *l);
      return product;
    }
    case PhysicalKind::kUnionAll: {
      uint64_t total = 0;
      for (size_t i = 0; i < op.children.size(); ++i) {
        auto c = child(i);
        if (!c) return std::nullopt;
        total += *c;
      }
      return total;
    }
    case PhysicalKind::kInsert:
    case PhysicalKind::kUpdate:
    case PhysicalKind::kDelete: return child(0);
  }
  return std::nullopt;
}

void ExplainRows(Engine* engine, const PhysicalOperator& op, int depth, bool pushdown, std::vector<Row>* rows) {
  auto est = EstimateRows(engine, op);
  std::string line = std::string(static_cast<size_t>(depth) * 2, ' ') + op.Describe();
  // A locking read pushes nothing, but EXPLAIN runs outside the statement
  // and shows what the plan would push.
  if (pushdown) {
    const Pushdown pushed = PushdownOf(op);
    if (pushed.kind != Pushdown::Kind::kNone) line += "  [" + pushed.Describe() + "]";
    if (engine->txn()->router() != nullptr) {
      if (auto lookup = BatchedLookupOf(op)) line += "  " + lookup->Describe(op.lookup_filter != nullptr);
    }
  }
  rows->push_back({Value::String(std::move(line)),
                   est ? Value::Int(static_cast<int64_t>(std::min<uint64_t>(*est, INT64_MAX))) : Value::Null()});
  for (const auto& c : op.children) ExplainRows(engine, *c, depth + 1, pushdown, rows);
}

}  // namespace

Result<StatementResult> ExplainPlan(Engine* engine, const PhysicalOperator& plan, bool tree, bool pushdown) {
  LookupColumnsScope lookup_columns(plan);
  StatementResult result;
  result.is_result_set = true;
  if (tree) {
    std::vector<Row> rows;
    ExplainRows(engine, plan, 0, pushdown, &rows);
    std::string text;
    for (const Row& r : rows) {
      const std::string& line = r[0].as_string();
      size_t depth = line.find_first_not_of(' ') / 2;
      text += fmt::format("{}-> {}  (rows={})\n", std::string(depth * 4, ' '), line.substr(depth * 2),
                          r[1].is_null() ? std::string("?") : r[1].ToText());
    }
    if (!text.empty()) text.pop_back();
    sierra::ColumnInfo col;
    col.name = "EXPLAIN";
    col.type = SqlType::Varchar(65535);
    col.nullable = false;
    result.columns = {col};
    result.rows.push_back({Value::String(std::move(text))});
    return result;
  }
  sierra::ColumnInfo op_col;
  op_col.name = "operator";
  op_col.type = SqlType::Varchar(1024);
  op_col.nullable = false;
  sierra::ColumnInfo rows_col;
  rows_col.name = "est_rows";
  rows_col.type = SqlType::BigInt();
  rows_col.nullable = true;
  result.columns = {op_col, rows_col};
  ExplainRows(engine, plan, 0, pushdown, &result.rows);
  return result;
}

}  // namespace shale::exec
