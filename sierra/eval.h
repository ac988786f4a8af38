// The reference interpreter of Sierra scalar expressions: the semantics every
// executor (interpreted now, JIT-compiled later) must match.
//
// SQL three-valued logic: comparisons with NULL yield NULL; AND/OR follow
// Kleene logic; a predicate passes a row only when it is true (not NULL).
//
// Thread-safety: pure functions.
#pragma once

#include "shale/status.h"
#include "sierra/expr.h"
#include "src/common/value.h"

namespace shale::sierra {

// Evaluates `e` over `row` (the input row of the operator holding `e`).
// Errors: ER_DATA_OUT_OF_RANGE (1690) on BIGINT overflow.
Result<Value> Evaluate(const Expr& e, const Row& row);

// Whether `v` counts as true in a WHERE clause (non-NULL and non-zero).
bool IsTrue(const Value& v);

}  // namespace shale::sierra
