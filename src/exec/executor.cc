#include "src/exec/executor.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_set>

#include "sierra/eval.h"
#include "src/common/datetime.h"
#include "src/common/errors.h"
#include "src/common/warnings.h"
#include "src/exec/auto_increment.h"
#include "src/exec/online_ddl.h"
#include "src/exec/operator.h"
#include "src/exec/pushdown.h"
#include "src/common/module_profile.h"

namespace shale::exec::internal {

// Declared in operator.h.
constinit thread_local const std::atomic<bool>* t_interrupt = nullptr;
constinit thread_local StatementContext* t_statement = nullptr;

namespace {

using planner::PhysicalKind;
using planner::PhysicalOperator;

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

}  // namespace shale::exec::internal

namespace shale::exec {

using internal::BatchedLookupOf;
using internal::Build;
using internal::DupEntryText;
using internal::ExecuteInsert;
using internal::ExecuteModify;
using internal::HasNull;
using internal::LocalSlice;
using internal::LookupColumnsScope;
using internal::RowCorrupt;
using internal::RowSource;
using internal::SliceIndexOf;
using internal::t_interrupt;
using internal::t_statement;
using planner::PhysicalKind;
using planner::PhysicalOperator;

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
