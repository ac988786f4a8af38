// Build: the operator tree of a physical plan (operator.h), choosing the
// pushed-down and batched forms where they apply.
#include "src/exec/operator.h"

namespace shale::exec::internal {
namespace {

using planner::PhysicalKind;
using planner::PhysicalOperator;

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

}  // namespace

Result<std::unique_ptr<RowSource>> Build(Engine* engine, const PhysicalOperator& op, uint64_t top_n) {
  if (op.kind == PhysicalKind::kUnionAll) return NewUnionAllSource(engine, op);
  if (Pushdown pushed = PushdownHere(op); pushed.kind != Pushdown::Kind::kNone) {
    if (pushed.kind == Pushdown::Kind::kAggregate) {
      return NewPushedAggregateSource(engine, op, pushed);
    }
    return NewFilterSource(op, NewSliceScanSource(engine, *pushed.scan, pushed));
  }
  std::unique_ptr<RowSource> child;
  if (!op.children.empty()) {
    // A LIMIT reads at most offset + limit rows; a projection passes the
    // bound through (one row out per row in).
    uint64_t child_top_n = 0;
    if (op.kind == PhysicalKind::kLimit && op.limit <= kSortMaxTopN && op.offset <= kSortMaxTopN) {
      child_top_n = op.offset + op.limit;
    } else if (op.kind == PhysicalKind::kProject) {
      child_top_n = top_n;
    }
    SHALE_ASSIGN_OR_RETURN(child, Build(engine, *op.children[0], child_top_n));
  }
  switch (op.kind) {
    case PhysicalKind::kValues: return NewValuesSource(op);
    case PhysicalKind::kPointGet: return NewPointGetSource(engine, op);
    case PhysicalKind::kSliceScan: return NewSliceScanSource(engine, op);
    case PhysicalKind::kIndexScan: return NewIndexScanSource(engine, op);
    case PhysicalKind::kFilter: return NewFilterSource(op, std::move(child));
    case PhysicalKind::kProject: return NewProjectSource(op, std::move(child));
    case PhysicalKind::kSort: return NewSortSource(op, std::move(child), top_n);
    case PhysicalKind::kDistinct: return NewDistinctSource(op, std::move(child));
    case PhysicalKind::kLimit: return NewLimitSource(op, std::move(child));
    case PhysicalKind::kHashAggregate:
      return NewHashAggregateSource(op, std::move(child));
    case PhysicalKind::kStreamAggregate:
      return NewStreamAggregateSource(op, std::move(child));
    case PhysicalKind::kNestedLoopJoin:
    case PhysicalKind::kHashJoin: {
      SHALE_ASSIGN_OR_RETURN(auto right, Build(engine, *op.children[1]));
      return NewNestedLoopJoinSource(op, std::move(child), std::move(right));
    }
    case PhysicalKind::kApply:
      return NewApplySource(engine, op, std::move(child));
    case PhysicalKind::kLookupJoin:
      // Batched in a cluster unless shale_pushdown is off or the right table
      // is read with locks (each row is locked and re-read here).
      if (engine->txn()->router() != nullptr && (t_statement == nullptr || t_statement->pushdown)) {
        if (auto lookup = BatchedLookupOf(op)) {
          const sierra::LogicalOperator* scan = op.lookup.get();
          if (scan->kind == sierra::LogicalKind::kFilter) scan = scan->children[0].get();
          if (!LockingReadOf(*scan->table)) {
            return NewBatchedLookupJoinSource(engine, op, std::move(child), std::move(*lookup));
          }
        }
      }
      return NewLookupJoinSource(engine, op, std::move(child));
    case PhysicalKind::kUnionAll:
    case PhysicalKind::kInsert:
    case PhysicalKind::kUpdate:
    case PhysicalKind::kDelete: break;
  }
  return Status::Internal("executor: operator cannot produce rows");
}

}  // namespace shale::exec::internal
