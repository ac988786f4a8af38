#include "src/exec/auto_increment.h"

#include <algorithm>
#include <limits>

#include "planner/planner.h"
#include "sierra/logical.h"
#include "src/common/errors.h"
#include "src/exec/engine.h"
#include "src/exec/executor.h"

namespace shale::exec {
namespace {

// The largest value of integer column type `t`.
int64_t IntegerMax(const SqlType& t) {
  int64_t lo = 0, hi = 0;
  IntegerRange(t, &lo, &hi);
  return hi;
}

Status ReadFailed() {
  return SqlError(ErrorCode::kAutoincReadFailed, "Failed to read auto-increment value from storage engine");
}

}  // namespace

Result<AutoIncrementRows> AutoIncrementRows::Assign(catalog::Catalog* catalog, const catalog::TableDef& table,
                                                    std::vector<Row>* rows) {
  AutoIncrementRows out;
  out.column_ = table.AutoIncrementColumn();
  if (out.column_ < 0 || rows->empty()) return out;
  const catalog::ColumnDef& col = table.columns[out.column_];
  const int64_t max = IntegerMax(col.type);
  out.was_generated_.assign(rows->size(), false);
  // Rows still to come that need a value, so one reservation covers them.
  size_t pending = 0;
  for (size_t i = 0; i < rows->size(); ++i) {
    Value& v = (*rows)[i][out.column_];
    if (!v.is_null()) {
      // A value that does not convert is left for the row's conversion to
      // report (with its row number).
      auto converted = CoerceToColumn(v, col.type, col.name);
      if (converted.ok()) v = std::move(converted).value();
    }
    if (v.is_null() || (v.is_int() && v.as_int() == 0)) ++pending;
  }
  int64_t next = 0;   // the next value of the statement's reservation
  int64_t limit = 0;  // the first value past it
  for (size_t i = 0; i < rows->size(); ++i) {
    Value& v = (*rows)[i][out.column_];
    if (v.is_null() || (v.is_int() && v.as_int() == 0)) {
      if (next == limit) {
        SHALE_ASSIGN_OR_RETURN(next, catalog->ReserveIds(table.id, catalog::IdCounter::kAutoIncrement,
                                                         static_cast<int64_t>(pending)));
        limit = next + static_cast<int64_t>(pending);
      }
      --pending;
      if (next > max) return ReadFailed();
      v = Value::Int(next++);
      out.was_generated_[i] = true;
      continue;
    }
    if (!v.is_int()) continue;
    const int64_t explicit_value = v.as_int();
    if (explicit_value < next) continue;
    // At or past the reservation: later generated values continue after it.
    next = limit = 0;
    const int64_t after = explicit_value == std::numeric_limits<int64_t>::max() ? explicit_value : explicit_value + 1;
    SHALE_RETURN_IF_ERROR(catalog->AdvanceIds(table.id, catalog::IdCounter::kAutoIncrement, after));
  }
  return out;
}

void AutoIncrementRows::Inserted(size_t index, const Row& row) {
  if (column_ < 0) return;
  if (index < was_generated_.size() && was_generated_[index] && !generated_) {
    generated_ = static_cast<uint64_t>(row[column_].as_int());
  }
  Updated(row);
}

void AutoIncrementRows::Updated(const Row& row) {
  if (column_ < 0 || !row[column_].is_int()) return;
  last_written_ = static_cast<uint64_t>(row[column_].as_int());
}

uint64_t AutoIncrementRows::insert_id() const { return generated_ ? *generated_ : last_written_; }

Status StartAutoIncrement(Engine* engine, const std::string& db, const std::string& table, int64_t first) {
  SHALE_ASSIGN_OR_RETURN(auto def, engine->catalog()->GetTable(db, table));
  return engine->catalog()->SetNextId(def->id, catalog::IdCounter::kAutoIncrement, first);
}

Status AlterAutoIncrement(Engine* engine, const std::string& db, const std::string& table, int64_t next) {
  SHALE_ASSIGN_OR_RETURN(auto def, engine->catalog()->GetTable(db, table));
  const int column = def->AutoIncrementColumn();
  if (column >= 0) {
    // The largest value stored: MAX(column) over the table's rows.
    std::vector<sierra::ColumnInfo> out(1);
    out[0].name = def->columns[column].name;
    out[0].type = def->columns[column].type;
    sierra::AggregateCall call;
    call.kind = sierra::AggregateKind::kMax;
    call.arg = sierra::Expr::ColumnRef(column, def->columns[column].name, def->columns[column].type, false);
    call.type = def->columns[column].type;
    std::vector<sierra::AggregateCall> calls;
    calls.push_back(std::move(call));
    auto plan = sierra::LogicalOperator::Aggregate(sierra::LogicalOperator::Scan(def, ""), {}, std::move(calls),
                                                   std::move(out));
    SHALE_ASSIGN_OR_RETURN(auto physical, planner::Plan(*plan));
    SHALE_ASSIGN_OR_RETURN(StatementResult r, ExecutePlan(engine, *physical));
    if (!r.rows.empty() && r.rows[0][0].is_int()) {
      const int64_t largest = r.rows[0][0].as_int();
      if (largest != std::numeric_limits<int64_t>::max()) next = std::max(next, largest + 1);
    }
  }
  return engine->catalog()->SetNextId(def->id, catalog::IdCounter::kAutoIncrement, next);
}

Status ResetAutoIncrement(Engine* engine, const std::string& db, const std::string& table) {
  SHALE_ASSIGN_OR_RETURN(auto def, engine->catalog()->GetTable(db, table));
  if (def->AutoIncrementColumn() < 0) return Status::OK();
  return engine->catalog()->SetNextId(def->id, catalog::IdCounter::kAutoIncrement, 1);
}

}  // namespace shale::exec
