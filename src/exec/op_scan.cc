// The operators that produce rows from the slices (or from literal
// VALUES): point gets, slice scans and secondary index scans (operator.h).
#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>

#include "sierra/eval.h"
#include "src/exec/operator.h"

namespace shale::exec::internal {
namespace {

using planner::PhysicalOperator;

class ValuesSource : public RowSource {
 public:
  explicit ValuesSource(const PhysicalOperator& op) : op_(op) {}
  Result<bool> Next(Row* row) override {
    if (next_ >= op_.rows.size()) {
      const size_t i = next_ - op_.rows.size();
      if (op_.value_rows == nullptr || i >= op_.value_rows->size()) return false;
      ++next_;
      *row = (*op_.value_rows)[i];
      return true;
    }
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

// A filter pushed to the slices a scan reads, serialized the first time a
// remote slice is read: reads of this node's own slices never need it.
class LazyFragment {
 public:
  explicit LazyFragment(const Pushdown& pushed) : pushed_(pushed) {}
  // The fragment to send with a read of `slice` (null: none).
  const std::string* For(const txn::SliceHandle& slice) {
    if (pushed_.kind == Pushdown::Kind::kNone || !slice.remote()) return nullptr;
    if (text_.empty()) text_ = SerializeFragment(pushed_);
    return &text_;
  }

 private:
  const Pushdown pushed_;
  std::string text_;
};

// The stored entries an access path reads: for each of its key ranges in
// order (`ranges`, else `range`), the entries of every listed slice —
// merged into key order when `merge`, else one slice after another.
class EntryStream {
 public:
  // `filter` (null: none): a pushed filter for remote slices.
  EntryStream(Engine* engine, const PhysicalOperator& op, bool merge, LazyFragment* filter = nullptr)
      : engine_(engine), op_(op), merge_(merge), latest_(LockingReadOf(*op.table).has_value()), filter_(filter) {}

  // The iterator positioned at the next entry, or null at the end. The
  // caller reads key() and value(), then calls Advance().
  Result<storage::SliceIterator*> Current() {
    const size_t range_count = op_.ranges.empty() ? 1 : op_.ranges.size();
    while (true) {
      if (next_range_ >= range_count) return nullptr;
      const storage::KeyRange& range = op_.ranges.empty() ? op_.range : op_.ranges[next_range_];
      if (!open_) {
        if (!opened_at_) opened_at_ = engine_->txn()->applied_commits();
        // Merging needs every slice's iterator; otherwise one at a time.
        for (size_t i = 0; i < (merge_ ? op_.slices.size() : std::min<size_t>(1, op_.slices.size())); ++i) {
          SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, LocalSlice(engine_, *op_.table, op_.slices[i]));
          iters_.push_back(ReadRange(slice, range, latest_, FilterFor(slice)));
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
            iters_.push_back(ReadRange(slice, range, latest_, FilterFor(slice)));
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
  // Whether no commit was applied on this node since the stream opened its
  // first iterator (TxnManager::applied_commits).
  bool NoCommitSinceOpen() const { return opened_at_ && *opened_at_ == engine_->txn()->applied_commits(); }

 private:
  const std::string* FilterFor(const txn::SliceHandle& slice) { return filter_ ? filter_->For(slice) : nullptr; }

  Engine* engine_;
  const PhysicalOperator& op_;
  const bool merge_;
  // Locking reads read the newest committed versions (InnoDB).
  const bool latest_;
  LazyFragment* const filter_;
  bool open_ = false;
  size_t next_range_ = 0;
  size_t pos_ = 0;
  std::vector<std::unique_ptr<storage::SliceIterator>> iters_;
  storage::SliceIterator* current_ = nullptr;
  size_t current_slice_ = 0;
  std::optional<uint64_t> opened_at_;  // applied_commits() before the first iterator opened
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
  // `pushed`: a filter pushed to remote slices (the Filter above still
  // applies it).
  SliceScanSource(Engine* engine, const PhysicalOperator& op, const Pushdown& pushed)
      : engine_(engine),
        op_(op),
        filter_(pushed),
        stream_(engine, op, op.ordered || op.reverse, &filter_),
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
        // Unless no commit was applied on this node since the stream
        // opened (its slices rank here, so every writer of the row applies
        // here before releasing the lock just granted): then the row read
        // is still the newest.
        SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, LocalSlice(engine_, *op_.table, *def));
        SHALE_RETURN_IF_ERROR(LockRow(*op_.table, slice, key, *lock_));
        if (!from_stream || slice.remote() || !stream_.NoCommitSinceOpen()) {
          Status st = ReadRow(slice, key, /*latest=*/true, &locked_);
          if (from_stream) stream_.Advance();
          from_stream = false;
          if (st.IsNotFound()) continue;
          SHALE_RETURN_IF_ERROR(st);
          value = locked_;
        }
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
  LazyFragment filter_;
  EntryStream stream_;
  const std::optional<txn::LockMode> lock_;
  std::optional<std::deque<TailEntry>> tail_;  // reverse: the entries left, last first
  TailEntry entry_;     // reverse: the entry being returned
  std::string locked_;  // a locking read: the row as re-read under its lock
};

// Reads a secondary index's entries in its range(s) from every listed
// slice, merged into index-key order, and returns the primary-representation
// row each entry points to, found by its primary key. A plain (not locking) forward read fetches the rows a batch
// at a time: the rows of a remote slice (without this transaction's own
// writes in it) come in one batched lookup per slice at the transaction's
// snapshot (DataRouter::LookupFiltered), not one Get per row; the batches
// start at the LIMIT hint (or 16 rows) and grow fourfold up to 256, so a
// LIMIT 1 reads one row and a long scan few requests. Locking reads lock
// and read each row in turn; descending ones look up the last rows only.
class IndexScanSource : public RowSource {
 public:
  IndexScanSource(Engine* engine, const PhysicalOperator& op)
      : engine_(engine), op_(op), stream_(engine, op, /*merge=*/true), lock_(LockingReadOf(*op.table)),
        batch_rows_(std::clamp<uint64_t>(op.limit_hint, 1, kFirstBatch)) {}
  Result<bool> Next(Row* row) override {
    if (!lock_ && !op_.reverse) return NextBatched(row);
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
  static constexpr uint64_t kFirstBatch = 16;
  static constexpr uint64_t kMaxBatch = 256;  // <= DataRouter::kMaxLookupKeys

  Result<bool> NextBatched(Row* row) {
    while (ready_.empty()) {
      if (exhausted_) return false;
      SHALE_RETURN_IF_ERROR(FetchBatch());
    }
    *row = std::move(ready_.front());
    ready_.pop_front();
    return true;
  }

  // The next batch of index entries, and their rows (in index order) into
  // ready_; a row deleted since its entry was read is left out.
  Status FetchBatch() {
    const catalog::TableDef& table = *op_.table;
    struct Entry {
      std::string key;  // encoded primary key
      const catalog::SliceDef* def;
    };
    std::vector<Entry> entries;
    while (entries.size() < batch_rows_) {
      SHALE_ASSIGN_OR_RETURN(storage::SliceIterator * it, stream_.Current());
      if (it == nullptr) {
        exhausted_ = true;
        break;
      }
      Row pk;
      Status decoded = DecodeRow(it->value(), &pk);
      if (!decoded.ok()) return RowCorrupt(table, stream_.current_slice(), decoded);
      stream_.Advance();
      entries.push_back(Entry{catalog::EncodeKey(pk),
                              &table.primary.SliceForHash(catalog::DistributionHash(table.primary, pk))});
    }
    batch_rows_ = std::min(batch_rows_ * 4, kMaxBatch);
    if (entries.empty()) return Status::OK();
    SHALE_RETURN_IF_ERROR(CheckInterrupted());
    txn::Transaction* t = CurrentTxn();
    // The keys of each remote slice, for one lookup each; the rows found.
    std::map<std::pair<std::string, storage::SliceId>, std::vector<std::string>> remote;
    std::unordered_map<std::string, std::optional<std::string>> found;  // key -> value (nullopt: no row)
    std::unordered_map<storage::SliceId, txn::SliceHandle> handles;
    for (const Entry& e : entries) {
      auto [at, added] = handles.try_emplace(e.def->id);
      if (added) {
        SHALE_ASSIGN_OR_RETURN(at->second, LocalSlice(engine_, table, *e.def));
      }
      const txn::SliceHandle& slice = at->second;
      if (!found.emplace(e.key, std::nullopt).second) continue;  // the same row twice (overlapping ranges)
      if (slice.remote() && !(t != nullptr && t->HasWritesIn(slice.id))) {
        remote[{slice.ranking(), slice.id}].push_back(e.key);
        continue;
      }
      std::string value;
      Status st = ReadRow(slice, e.key, /*latest=*/false, &value);
      if (st.ok()) {
        found[e.key] = std::move(value);
      } else if (!st.IsNotFound()) {
        return st;
      }
    }
    if (!remote.empty()) {
      uint64_t snapshot = storage::kLatestSnapshot;
      if (t != nullptr) {
        SHALE_ASSIGN_OR_RETURN(snapshot, t->Snapshot());
      }
      std::vector<std::pair<std::string, std::string>> rows;
      for (const auto& [where, keys] : remote) {
        rows.clear();
        const txn::SliceHandle& h = handles.at(where.second);
        // No fragment: every row found comes back.
        SHALE_RETURN_IF_ERROR(h.router->LookupFiltered(where.first, where.second, keys, snapshot, "", &rows));
        for (auto& [key, value] : rows) found[key] = std::move(value);
      }
    }
    for (size_t i = 0; i < entries.size(); ++i) {
      const std::optional<std::string>& value = found[entries[i].key];
      if (!value) continue;  // deleted since the index was read
      Row out;
      Status decoded = DecodeRow(*value, &out);
      if (!decoded.ok()) return RowCorrupt(table, *entries[i].def, decoded);
      ready_.push_back(std::move(out));
    }
    return Status::OK();
  }

  Engine* engine_;
  const PhysicalOperator& op_;
  EntryStream stream_;
  std::optional<std::deque<TailEntry>> tail_;  // reverse: the entries left, last first
  const std::optional<txn::LockMode> lock_;
  // Batched reads: the rows fetched and not returned yet, in index order;
  // the next batch's size; whether the index was read to its end.
  std::deque<Row> ready_;
  uint64_t batch_rows_;
  bool exhausted_ = false;
};

}  // namespace

std::unique_ptr<RowSource> NewValuesSource(const PhysicalOperator& op) {
  return std::unique_ptr<RowSource>(new ValuesSource(op));
}

std::unique_ptr<RowSource> NewPointGetSource(Engine* engine, const PhysicalOperator& op) {
  return std::unique_ptr<RowSource>(new PointGetSource(engine, op));
}

std::unique_ptr<RowSource> NewSliceScanSource(Engine* engine, const PhysicalOperator& op, const Pushdown& pushed) {
  return std::unique_ptr<RowSource>(new SliceScanSource(engine, op, pushed));
}

std::unique_ptr<RowSource> NewIndexScanSource(Engine* engine, const PhysicalOperator& op) {
  return std::unique_ptr<RowSource>(new IndexScanSource(engine, op));
}

}  // namespace shale::exec::internal
