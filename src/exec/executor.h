// Executor: runs a physical plan against the node's slices.
//
// Operators are pull-based iterators (RowSource): Next() yields one row at a
// time. Sort and Distinct materialize; everything else streams. INSERT is
// executed as a whole statement: every row is converted and checked first
// and written only when all pass, so a failing INSERT changes nothing.
//
// Thread-safety: one plan execution per thread; the engine is shared.
#pragma once

#include "planner/physical.h"
#include "shale/status.h"
#include "src/exec/engine.h"
#include "src/exec/session.h"

namespace shale::exec {

// Runs `plan` and returns its result set (or, for kInsert, the affected rows).
Result<StatementResult> ExecutePlan(Engine* engine, const planner::PhysicalOperator& plan);

// Fills the empty slices of secondary index `index` of `table` (which need
// not be in `table.indexes` yet) with an entry per row of the primary
// representation. ER_DUP_ENTRY (1062) if `index` is UNIQUE and two rows
// have equal key values without NULLs; then nothing is written.
// REQUIRES: the caller holds the table's write lock (Engine::TableWriteMutex).
Status BuildIndex(Engine* engine, const catalog::TableDef& table,
                  const catalog::RepresentationDef& index);

}  // namespace shale::exec
