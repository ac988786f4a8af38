// INSERT, UPDATE and DELETE: the statements that write rows, through a
// TableWriter per table (execute_write.h).
#include "src/exec/execute_write.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <unordered_set>

#include "sierra/eval.h"
#include "src/common/datetime.h"
#include "src/common/errors.h"
#include "src/common/warnings.h"
#include "src/exec/auto_increment.h"
#include "src/exec/online_ddl.h"
#include "src/exec/operator.h"
#include "src/exec/table_writer.h"

namespace shale::exec::internal {
namespace {

using planner::PhysicalKind;
using planner::PhysicalOperator;

// The index of the column holding a table's hidden row id, or -1.
int HiddenRowIdColumn(const catalog::TableDef& table) {
  for (size_t c = 0; c < table.columns.size(); ++c) {
    if (table.columns[c].hidden) return static_cast<int>(c);
  }
  return -1;
}

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

// A write runs against the definition it was planned with: if an index was
// added or dropped since, it would miss or write stale index entries.
Status CheckTableUnchanged(Engine* engine, const PhysicalOperator& op) {
  auto current = engine->catalog()->GetTable(op.table->db, op.table->name);
  if (!current.ok() || *current != op.table) {
    return SqlError(ErrorCode::kTableDefChanged, "Table definition has changed, please retry transaction");
  }
  return CheckNotFenced(**current);  // an online DDL is changing the table
}

}  // namespace

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
  std::unique_lock<WriterFirstSharedMutex> lock;
  if (!CurrentTxn()) lock = std::unique_lock<WriterFirstSharedMutex>(engine->TableWriteMutex(table.id));
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
      // find_conflict read no row under r's key, with r's lock held: new.
      writer.Put(r, /*fresh=*/true);
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

namespace {

// Whether two full rows of `table` have one primary key: equal values in
// its columns, or else equal key forms (values equal under the columns'
// collations, as 'a' and 'A').
bool SamePrimaryKey(const catalog::TableDef& table, const Row& a, const Row& b) {
  bool equal = true;
  for (int c : table.primary.key_columns) equal = equal && a[c] == b[c];
  return equal || catalog::PrimaryKeyValues(table, a) == catalog::PrimaryKeyValues(table, b);
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

// `read_locked`: every target row was read by a locking read of the table
// (ReadRowsToWrite), so its primary key's lock is held already.
Result<StatementResult> ApplyModify(Engine* engine, const PhysicalOperator& op, std::vector<Row> targets,
                                    bool read_locked, uint64_t* matched_rows = nullptr);
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

}  // namespace

Result<StatementResult> ExecuteModify(Engine* engine, const PhysicalOperator& op) {
  if (op.stacked_target) return ExecuteStackedModify(engine, op);
  const catalog::TableDef& table = *op.table;
  std::unique_lock<WriterFirstSharedMutex> lock;
  if (!CurrentTxn()) lock = std::unique_lock<WriterFirstSharedMutex>(engine->TableWriteMutex(table.id));
  SHALE_RETURN_IF_ERROR(CheckTableUnchanged(engine, op));

  std::vector<Row> targets;
  SHALE_RETURN_IF_ERROR(ReadRowsToWrite(engine, *op.children[0], table.id, &targets));
  return ApplyModify(engine, op, std::move(targets), CurrentTxn() != nullptr);
}

namespace {

// The changes of one UPDATE or DELETE to its table, from the target rows
// read (REQUIRES: the caller holds what ExecuteModify takes: the table's
// write lock without a transaction, the rows' locks with one).
Result<StatementResult> ApplyModify(Engine* engine, const PhysicalOperator& op, std::vector<Row> targets,
                                    bool read_locked, uint64_t* matched_rows) {
  const catalog::TableDef& table = *op.table;
  const bool is_update = op.kind == PhysicalKind::kUpdate;
  const size_t width = table.columns.size();
  const bool multi_table = !targets.empty() && targets[0].size() > width;
  if (multi_table) targets = FirstMatchPerRow(table, std::move(targets));
  // Rows of a join may come from elsewhere than the table's locking scan.
  const TableWriter::Held held = read_locked && !multi_table ? TableWriter::Held::kPrimaryKey : TableWriter::Held::kNone;

  TableWriter writer(engine, table);
  uint64_t matched = 0;
  uint64_t changed = 0;
  for (Row& old_row : targets) {
    ++matched;
    if (!is_update) {
      if (multi_table) old_row.resize(width);
      SHALE_RETURN_IF_ERROR(writer.LockRowKeys(old_row, held));
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
    const bool same_pk = SamePrimaryKey(table, old_row, new_row);
    // The old row's entries go first, so the new row may reuse its keys
    // (its primary key's lock, just taken or held, when that is the same).
    SHALE_RETURN_IF_ERROR(writer.LockRowKeys(old_row, held));
    SHALE_RETURN_IF_ERROR(
        writer.LockRowKeys(new_row, same_pk ? TableWriter::Held::kPrimaryKey : TableWriter::Held::kNone, &old_row));
    if (same_pk) {
      SHALE_RETURN_IF_ERROR(writer.CheckUnique(new_row, &old_row));
      writer.Update(old_row, new_row);
      continue;
    }
    writer.Delete(old_row);
    const std::vector<Value> new_pk = catalog::PrimaryKeyValues(table, new_row);
    SHALE_ASSIGN_OR_RETURN(bool taken,
                           writer.RowExists(catalog::EncodeKey(new_pk), SliceIndexOf(table.primary, new_pk)));
    if (taken) {
      return SqlError(ErrorCode::kDupEntry, "Duplicate entry '{}' for key '{}.PRIMARY'",
                      DupEntryText(catalog::RepresentationKeyValues(table.primary, new_row)), table.name);
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
  std::vector<std::unique_lock<WriterFirstSharedMutex>> locks;
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
    SHALE_ASSIGN_OR_RETURN(StatementResult r, ApplyModify(engine, *o, std::move(targets), /*read_locked=*/false, &m));
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
