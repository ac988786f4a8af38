// The write statements of a plan (execute_write.cc): INSERT (with IGNORE,
// REPLACE, ON DUPLICATE KEY UPDATE) and UPDATE/DELETE, single- and
// multi-table. Each statement reads its rows through the row operators
// (operator.h), converts and checks every change, and writes through a
// TableWriter per table only when all pass, so a failing statement changes
// nothing. Run by ExecutePlan (executor.h).
//
// Thread-safety: as ExecutePlan; one statement per thread.
#pragma once

#include "planner/physical.h"
#include "shale/status.h"
#include "src/exec/engine.h"
#include "src/exec/session.h"

namespace shale::exec::internal {

// INSERT, INSERT IGNORE, REPLACE and INSERT ... ON DUPLICATE KEY UPDATE
// (`op` is a kInsert).
Result<StatementResult> ExecuteInsert(Engine* engine, const planner::PhysicalOperator& op);

// UPDATE and DELETE (`op` is a kUpdate or kDelete, stacked for a
// multi-table statement writing several tables).
Result<StatementResult> ExecuteModify(Engine* engine, const planner::PhysicalOperator& op);

}  // namespace shale::exec::internal
