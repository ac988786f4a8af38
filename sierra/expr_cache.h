// ExprCache: what an evaluator keeps across the rows of one expression (see
// Expr::cache). Today the compiled pattern of a REGEXP function: a constant
// pattern is compiled on the first row and reused; a pattern that changes
// from row to row is compiled again when it changes.
//
// Thread-safety: internally synchronized (RegexCache); one expression may be
// evaluated by several threads at once.
#pragma once

#include "sierra/expr.h"
#include "src/common/regex.h"

namespace shale::sierra {

struct ExprCache {
  RegexCache regex;
};

// Whether expressions of function `f` carry an ExprCache.
inline bool FunctionUsesCache(ScalarFunction f) {
  return f == ScalarFunction::kRegexpLike || f == ScalarFunction::kRegexpInstr ||
         f == ScalarFunction::kRegexpSubstr || f == ScalarFunction::kRegexpReplace;
}

}  // namespace shale::sierra
