// ExecutePlan and ExplainPlan (executor.h): a plan runs as an operator
// tree (operator.h, op_*.cc), or as a write statement
// (execute_write.h); EXPLAIN describes the tree.
#include "src/exec/executor.h"

#include <algorithm>

#include "sierra/eval.h"
#include "src/common/module_profile.h"
#include "src/exec/execute_write.h"
#include "src/exec/operator.h"
#include "src/exec/pushdown.h"

namespace shale::exec {
namespace internal {

// Declared in operator.h.
constinit thread_local const std::atomic<bool>* t_interrupt = nullptr;
constinit thread_local StatementContext* t_statement = nullptr;

}  // namespace internal

using internal::BatchedLookupOf;
using internal::Build;
using internal::ExecuteInsert;
using internal::ExecuteModify;
using internal::LookupColumnsScope;
using internal::RowSource;
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
    case PhysicalKind::kValues: return op.values_count();
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
