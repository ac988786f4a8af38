// The string and numeric functions from kRegexpLike (43) to kPeriodDiff (82)
// of expr.h: regular expressions, hashes, base64, trigonometry, UUID() and
// the rest of MySQL's common functions. Part of the reference interpreter
// (eval.h), split out of eval.cc.
//
// Thread-safety: pure functions, except UUID()/UUID_SHORT() (internally
// synchronized counters) and SLEEP().
#pragma once

#include <vector>

#include "shale/status.h"
#include "sierra/expr.h"
#include "src/common/value.h"

namespace shale::sierra {

// Whether `f` is evaluated by EvaluateScalarFunction.
inline bool IsLibraryFunction(ScalarFunction f) {
  const int i = static_cast<int>(f);
  return i >= static_cast<int>(ScalarFunction::kRegexpLike) && i <= static_cast<int>(ScalarFunction::kPeriodDiff);
}

// Whether `f` sees NULL arguments itself (FIELD, ELT, MAKE_SET, CHAR, QUOTE)
// instead of being NULL when any argument is NULL.
bool FunctionTakesNulls(ScalarFunction f);

// `e` (a kFunction with IsLibraryFunction) over its evaluated arguments.
Result<Value> EvaluateLibraryFunction(const Expr& e, const std::vector<Value>& args);

}  // namespace shale::sierra
