// TableWriter and the conversion of rows to their columns (table_writer.h).
#include "src/exec/table_writer.h"

#include <algorithm>

#include "src/common/appending_map.h"
#include "src/common/errors.h"
#include "src/exec/operator.h"

namespace shale::exec::internal {
namespace {

// Whether the statement runs in a strict sql_mode (errors for values that
// do not fit their column; else they are adjusted with warnings).
bool StrictMode() { return t_statement == nullptr || t_statement->strict_mode; }

}  // namespace

std::string DupEntryText(const std::vector<Value>& key) {
  std::string out;
  for (size_t i = 0; i < key.size(); ++i) out += (i ? "-" : "") + key[i].ToText();
  return out;
}

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

bool HasNull(const std::vector<Value>& values) {
  return std::any_of(values.begin(), values.end(), [](const Value& v) { return v.is_null(); });
}

size_t SliceIndexOf(const catalog::RepresentationDef& rep, const std::vector<Value>& key_values) {
  const catalog::SliceDef& s = rep.SliceForHash(catalog::DistributionHash(rep, key_values));
  return static_cast<size_t>(&s - rep.slices.data());
}

TableWriter::TableWriter(Engine* engine, const catalog::TableDef& table)
    : engine_(engine), table_(table), published_(1 + table.indexes.size()),
      changes_(published_ + (table.ddl_allows_writes ? table.pending_indexes.size() : 0)),
      slices_(changes_.size()) {
  for (size_t r = 0; r < slices_.size(); ++r) {
    slices_[r].resize(Rep(r).slices.size());
    changes_[r].resize(Rep(r).slices.size());
    // Only the primary key (RowExists, GetRow) and the published UNIQUE
    // indexes (UniqueConflict) are read back during the statement.
    const bool write_only = r >= published_ || (r > 0 && !Rep(r).unique);
    for (SliceState& state : changes_[r]) state.write_only = write_only;
  }
}

Result<bool> TableWriter::RowExists(const std::string& key, size_t slice_index) {
  SliceChanges& pending = changes_[0][slice_index].changes;
  auto it = FindAppending(pending, key);
  if (it != pending.end()) return it->second.has_value();
  SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, SliceAt(0, slice_index));
  std::string existing;
  Status st = ReadRow(slice, key, /*latest=*/true, &existing);
  if (st.ok()) return true;
  if (st.IsNotFound()) return false;
  return st;
}

Result<std::optional<Row>> TableWriter::GetRow(const std::vector<Value>& pk) {
  std::string key = catalog::EncodeKey(pk);
  std::string value;
  const size_t index = SliceIndexOf(table_.primary, pk);
  SliceChanges& pending = changes_[0][index].changes;
  auto it = FindAppending(pending, key);
  if (it != pending.end()) {
    if (!it->second) return std::optional<Row>();
    value = *it->second;
  } else {
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

Result<std::optional<TableWriter::Conflict>> TableWriter::UniqueConflict(const Row& row, const Row* replaced) {
  for (size_t r = 1; r < published_; ++r) {
    const catalog::RepresentationDef& rep = Rep(r);
    if (!rep.unique) continue;
    std::vector<Value> values = catalog::RepresentationKeyValues(table_, rep, row);
    if (HasNull(values)) continue;
    if (replaced != nullptr && values == catalog::RepresentationKeyValues(table_, rep, *replaced)) continue;
    std::string prefix = catalog::EncodeKey(values);
    std::string end = prefix + '\xff';  // no key component starts with 0xFF
    const size_t slice_index = SliceIndexOf(rep, values);
    SliceChanges& pending = changes_[r][slice_index].changes;
    std::optional<std::string> found;  // the entry's value: encoded pk
    for (auto it = pending.lower_bound(prefix); !found && it != pending.end() && it->first < end; ++it) {
      if (it->second) found = *it->second;
    }
    if (!found) {
      SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, SliceAt(r, slice_index));
      storage::KeyRange range;
      range.has_start = true;
      range.start = prefix;
      range.has_end = true;
      range.end = end;
      range.end_inclusive = false;
      auto it = ReadRange(slice, range, /*latest=*/true);
      for (; it->Valid(); it->Next()) {
        auto c = pending.find(std::string(it->key()));
        if (c == pending.end() || c->second) {
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

Status TableWriter::DupEntry(size_t r, const Row& row) const {
  const catalog::RepresentationDef& rep = Rep(r);
  return SqlError(ErrorCode::kDupEntry, "Duplicate entry '{}' for key '{}.{}'",
                  DupEntryText(catalog::RepresentationKeyValues(rep, row)), table_.name, rep.name);
}

Status TableWriter::CheckUnique(const Row& row, const Row* replaced) {
  SHALE_ASSIGN_OR_RETURN(auto conflict, UniqueConflict(row, replaced));
  if (conflict) return DupEntry(conflict->rep, row);
  return Status::OK();
}

Status TableWriter::LockRowKeys(const Row& row, Held held, const Row* locked) {
  if (!CurrentTxn()) return Status::OK();
  // Each lock lives at the ranking replica's node of the slice it names.
  if (held != Held::kPrimaryKey) {
    std::vector<Value> pk = catalog::PrimaryKeyValues(table_, row);
    if (locked == nullptr || pk != catalog::PrimaryKeyValues(table_, *locked)) {
      SHALE_ASSIGN_OR_RETURN(txn::SliceHandle pk_slice, SliceAt(0, SliceIndexOf(table_.primary, pk)));
      // The row's newest version comes back with a remote lock: the key
      // checks (GetRow, RowExists) read it next.
      const std::string key = catalog::EncodeKey(pk);
      SHALE_RETURN_IF_ERROR(AcquireLock(LockName('R', table_.id, key), txn::LockMode::kExclusive, &pk_slice, &key));
    }
  }
  for (size_t r = 1; r < published_; ++r) {
    const catalog::RepresentationDef& rep = Rep(r);
    if (!rep.unique || rep.slices.empty()) continue;
    std::vector<Value> values = catalog::RepresentationKeyValues(rep, row);
    if (HasNull(values)) continue;
    if (locked != nullptr && values == catalog::RepresentationKeyValues(rep, *locked)) continue;
    SHALE_ASSIGN_OR_RETURN(txn::SliceHandle lock_slice, SliceAt(r, 0));
    SHALE_RETURN_IF_ERROR(AcquireLock(LockName('U', rep.slices[0].id, catalog::EncodeKey(values)),
                                      txn::LockMode::kExclusive, &lock_slice));
  }
  return Status::OK();
}

Status TableWriter::Commit() {
  if (txn::Transaction* t = CurrentTxn()) {
    // Into the transaction's write set; it reaches the slices at COMMIT.
    bool any = false;
    for (size_t r = 0; r < changes_.size(); ++r) {
      for (size_t i = 0; i < changes_[r].size(); ++i) {
        SliceState& state = changes_[r][i];
        MergeDeferred(state);
        if (state.changes.empty()) continue;
        SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, SliceAt(r, i));
        t->PutAll(slice, std::move(state.changes), std::move(state.fresh));
        state.changes.clear();
        state.fresh.clear();
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
    for (size_t i = 0; i < changes_[r].size(); ++i) {
      MergeDeferred(changes_[r][i]);
      batches[r][i].Reserve(changes_[r][i].changes.size());
      for (auto& [key, change] : changes_[r][i].changes) {
        if (change) {
          batches[r][i].Put(key, std::move(*change));
        } else {
          batches[r][i].Delete(key);
        }
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

Result<txn::SliceHandle> TableWriter::SliceAt(size_t r, size_t index) {
  std::optional<txn::SliceHandle>& s = slices_[r][index];
  if (!s) {
    SHALE_ASSIGN_OR_RETURN(s, LocalSlice(engine_, table_, Rep(r).slices[index]));
  }
  return *s;
}

void TableWriter::Set(SliceState& slice, std::string key, std::optional<std::string> value, bool fresh) {
  if (slice.write_only && !slice.changes.empty() && !(std::prev(slice.changes.end())->first < key)) {
    slice.deferred.push_back(Deferred{std::move(key), std::move(value), fresh});
    return;
  }
  // A key changed before keeps the freshness of its first change: what is
  // stored under it is what that change saw.
  auto [it, added] = TryEmplaceAppending(slice.changes, std::move(key));
  it->second = std::move(value);
  if (added && fresh) slice.fresh.push_back(it->first);
}

void TableWriter::MergeDeferred(SliceState& slice) {
  if (slice.deferred.empty()) return;
  // Stable: a key's changes stay in the order made, the last one wins.
  std::stable_sort(slice.deferred.begin(), slice.deferred.end(),
                   [](const Deferred& a, const Deferred& b) { return a.key < b.key; });
  SliceChanges& changes = slice.changes;
  auto at = changes.begin();  // walks the map once, alongside the sorted changes
  for (Deferred& d : slice.deferred) {
    while (at != changes.end() && at->first < d.key) ++at;
    if (at != changes.end() && at->first == d.key) {
      at->second = std::move(d.value);  // a later change: the first one's freshness stays
      continue;
    }
    at = changes.emplace_hint(at, std::move(d.key), std::move(d.value));
    if (d.fresh) slice.fresh.push_back(at->first);
  }
  slice.deferred.clear();
}

void TableWriter::Change(const Row& row, bool put, bool fresh) {
  std::vector<Value> pk = catalog::PrimaryKeyValues(table_, row);
  std::optional<std::string> value;
  if (put) {
    value.emplace();
    EncodeRow(row, &*value);
  }
  Set(changes_[0][SliceIndexOf(table_.primary, pk)], catalog::EncodeKey(pk), std::move(value), fresh);
  std::string pk_row;
  EncodeRow(pk, &pk_row);
  for (size_t r = 1; r < changes_.size(); ++r) {
    std::vector<Value> values = catalog::RepresentationKeyValues(table_, Rep(r), row);
    Set(changes_[r][SliceIndexOf(Rep(r), values)], catalog::IndexEntryKey(values, pk),
        put ? std::optional<std::string>(pk_row) : std::nullopt, fresh);
  }
}

void TableWriter::Update(const Row& old_row, const Row& new_row) {
  std::vector<Value> pk = catalog::PrimaryKeyValues(table_, new_row);
  std::string value;
  EncodeRow(new_row, &value);
  Set(changes_[0][SliceIndexOf(table_.primary, pk)], catalog::EncodeKey(pk), std::move(value), false);
  std::string pk_row;
  for (size_t r = 1; r < changes_.size(); ++r) {
    std::vector<Value> old_values = catalog::RepresentationKeyValues(table_, Rep(r), old_row);
    std::vector<Value> new_values = catalog::RepresentationKeyValues(table_, Rep(r), new_row);
    std::string old_key = catalog::IndexEntryKey(old_values, pk);
    std::string new_key = catalog::IndexEntryKey(new_values, pk);
    if (r < published_ && old_key == new_key) continue;
    if (pk_row.empty()) EncodeRow(pk, &pk_row);
    Set(changes_[r][SliceIndexOf(Rep(r), old_values)], std::move(old_key), std::nullopt, false);
    Set(changes_[r][SliceIndexOf(Rep(r), new_values)], std::move(new_key), pk_row, false);
  }
}

}  // namespace shale::exec::internal
